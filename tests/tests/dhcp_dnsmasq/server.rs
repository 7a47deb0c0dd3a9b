//! The peers of the dhcp tests: Debian's dnsmasq serving DHCP in a
//! namespace of its own, on one end of a veth pair whose other end is the
//! container's `eth0`, and a DHCP daemon as a process.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cni_net::testing::TempNetns;
use cni_net::Dad;
use cni_types::IpNetwork;

/// The server's address; it is also the router it hands out.
pub const SERVER_IP: &str = "10.77.0.1";

/// A process whose standard error is read line by line, killed and reaped
/// when dropped.
pub struct Logged {
    child: Child,
    lines: Mutex<Receiver<String>>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Logged {
    /// Starts `cmd` with its standard error piped.
    pub fn spawn(mut cmd: Command) -> Logged {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&seen);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                keep.lock().unwrap().push(line.clone());
                let _ = tx.send(line);
            }
        });
        Logged {
            child,
            lines: Mutex::new(lines),
            seen,
        }
    }

    /// Waits until the process logs a line containing `text` (lines
    /// logged before are also looked at once); panics after `limit`, with
    /// everything it logged.
    pub fn wait_for(&self, text: &str, limit: Duration) -> String {
        let end = Instant::now() + limit;
        let lines = self.lines.lock().unwrap();
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) if line.contains(text) => return line,
                Ok(_) => {}
                Err(_) => panic!(
                    "no line with {text:?} within {limit:?}; logged:\n{}",
                    self.log()
                ),
            }
        }
    }

    /// The process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything logged so far.
    pub fn log(&self) -> String {
        self.seen.lock().unwrap().join("\n")
    }

    /// Kills the process and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        self.kill();
    }
}

/// dnsmasq in a namespace of its own, on a bridge `br0`, serving
/// 10.77.0.10-50 with a
/// two-minute lease (dnsmasq's shortest) and a renewal time (T1) of
/// `t1_secs`, and the container namespace on the other end of the wire.
pub struct DhcpNet {
    /// The dnsmasq process (dropped before the namespaces).
    pub dnsmasq: Logged,
    /// dnsmasq's lease file.
    pub leases: PathBuf,
    /// The container's namespace; its `eth0` faces the server.
    pub container: TempNetns,
    server: Box<Server>,
}

/// What restarting dnsmasq needs (boxed: the conformance test keeps a
/// [`DhcpNet`] in a variant of an enum).
struct Server {
    netns: TempNetns,
    dir: PathBuf,
    /// T1 and T2 (when set).
    timers: (u32, Option<u32>),
}

/// dnsmasq in `server`'s namespace serving `range` (`FIRST,LAST`) on
/// `br0` with two-minute leases, T1 `t1_secs` and T2 `t2_secs` (when
/// given), its files in `dir`; returns when it says it serves the range.
fn dnsmasq(
    server: &TempNetns,
    dir: &Path,
    (t1_secs, t2_secs): (u32, Option<u32>),
    range: &str,
) -> Logged {
    let mut cmd = Command::new("ip");
    cmd.args([
        "netns",
        "exec",
        server.name(),
        "dnsmasq",
        "--keep-in-foreground",
        "--conf-file=/dev/null",
    ])
    .args([
        "--log-facility=-",
        "--log-dhcp",
        "--port=0",
        "--user=root",
        "--group=root",
    ])
    .args([
        "--interface=br0",
        "--bind-interfaces",
        "--dhcp-authoritative",
        "--no-ping",
    ])
    .arg(format!("--dhcp-range={range},255.255.255.0,2m"))
    .arg(format!("--dhcp-option=option:router,{SERVER_IP}"))
    .arg(format!("--dhcp-option=option:T1,{t1_secs}"))
    .args(t2_secs.map(|t2| format!("--dhcp-option=option:T2,{t2}")))
    .arg(format!(
        "--dhcp-leasefile={}",
        dir.join("dnsmasq.leases").display()
    ))
    .arg(format!("--pid-file={}", dir.join("dnsmasq.pid").display()));
    let dnsmasq = Logged::spawn(cmd);
    dnsmasq.wait_for("DHCP, IP range", Duration::from_secs(20));
    dnsmasq
}

impl DhcpNet {
    /// Starts it and waits until dnsmasq says it serves the range. Each
    /// of `ifnames` is a link in the container namespace whose peer is a
    /// port of the server's bridge `br0`, on which dnsmasq serves.
    pub fn start(dir: &Path, t1_secs: u32, ifnames: &[&str]) -> DhcpNet {
        DhcpNet::start_with_host_link(dir, t1_secs, ifnames, None)
    }

    /// [`DhcpNet::start`] with a rebinding time (T2) of `t2_secs` too.
    pub fn start_with_t2(dir: &Path, t1_secs: u32, t2_secs: u32, ifnames: &[&str]) -> DhcpNet {
        let mut net = DhcpNet::start(dir, t1_secs, ifnames);
        net.server.timers.1 = Some(t2_secs);
        net.restart_serving("10.77.0.10", "10.77.0.50");
        net
    }

    /// [`DhcpNet::start`], and a link `host_link` in the test's own
    /// namespace (up) that is one more port of the server's bridge: a
    /// master for macvlan.
    pub fn start_with_host_link(
        dir: &Path,
        t1_secs: u32,
        ifnames: &[&str],
        host_link: Option<&str>,
    ) -> DhcpNet {
        let server = TempNetns::new("dhcps").expect("server namespace");
        let container = TempNetns::new("dhcpc").expect("container namespace");
        let mut ports = Vec::new();
        for (i, ifname) in ifnames.iter().enumerate() {
            server
                .add_veth(&format!("srv{i}"), ifname, Some(&container))
                .expect("veth pair");
            ports.push(format!("srv{i}"));
        }
        if let Some(name) = host_link {
            let host = cni_net::Netns::current().expect("the test's namespace");
            server
                .add_veth("srvh", name, Some(&host))
                .expect("veth pair to the host");
            let mut nl = host.socket().expect("netlink");
            let link = nl.link(name).expect("the host end");
            nl.set_up(link.index).expect("host end up");
            ports.push("srvh".to_string());
        }
        server
            .run(|nl| {
                let bridge = nl.ensure_bridge("br0", None)?;
                let addr = IpNetwork::new(SERVER_IP.parse().unwrap(), 24).unwrap();
                nl.add_address(bridge.index, addr, Dad::Skip)?;
                nl.set_up(bridge.index)?;
                for port in &ports {
                    let port = nl.link(port.as_str())?;
                    nl.set_master(port.index, Some(bridge.index))?;
                    nl.set_up(port.index)?;
                }
                Ok::<_, cni_net::NetError>(())
            })
            .expect("server bridge");
        let leases = dir.join("dnsmasq.leases");
        let dnsmasq = dnsmasq(&server, dir, (t1_secs, None), "10.77.0.10,10.77.0.50");
        DhcpNet {
            dnsmasq,
            leases,
            container,
            server: Box::new(Server {
                netns: server,
                dir: dir.to_path_buf(),
                timers: (t1_secs, None),
            }),
        }
    }

    /// Stops dnsmasq, forgets its leases, and starts it again serving
    /// `first,last` instead: it NAKs a renewal of an address it no longer
    /// serves (it is authoritative).
    pub fn restart_serving(&mut self, first: &str, last: &str) {
        self.dnsmasq.kill();
        let _ = std::fs::remove_file(&self.leases);
        let range = format!("{first},{last}");
        self.dnsmasq = dnsmasq(
            &self.server.netns,
            &self.server.dir,
            self.server.timers,
            &range,
        );
    }

    /// The server's namespace, where `br0` has [`SERVER_IP`].
    pub fn server_netns(&self) -> &TempNetns {
        &self.server.netns
    }

    /// Puts `address` (`A.B.C.D/N`) on the container's `eth0`, as the
    /// interface plugin would after ADD.
    pub fn put_on_eth0(&self, address: &str) {
        let address: IpNetwork = address.parse().expect("an address with its prefix");
        self.container
            .run(|nl| {
                let eth0 = nl.link("eth0")?;
                nl.add_address(eth0.index, address, Dad::Skip)
            })
            .expect("address on eth0");
    }

    /// dnsmasq's lease file (empty when it holds none yet).
    pub fn lease_file(&self) -> String {
        std::fs::read_to_string(&self.leases).unwrap_or_default()
    }
}

/// `dhcp daemon -socketpath SOCKET` as a process, ready when it says it
/// listens.
pub fn start_daemon(bin: &Path, socket: &Path) -> Logged {
    let mut cmd = Command::new(bin);
    cmd.arg("daemon").arg("-socketpath").arg(socket);
    let daemon = Logged::spawn(cmd);
    daemon.wait_for("listening on", Duration::from_secs(20));
    daemon
}
