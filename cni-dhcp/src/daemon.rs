//! The lease daemon (`dhcp daemon`): holds one lease per attachment,
//! renews it at T1, rebinds at T2, releases it on DEL, and answers the
//! plugin over its Unix socket ([`crate::protocol`]).
//!
//! One thread per lease keeps its timers; one thread per connection
//! answers the plugin.
//!
//! Go: `DHCP`, `runDaemon` (plugins `plugins/ipam/dhcp/daemon.go`) and
//! `DHCPLease.maintain` (`lease.go`).

use std::collections::HashMap;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cni_net::Netns;
use cni_types::{Code, Error, Result100};

use crate::client::{Client, Timing};
use crate::config::{NetConfig, DEFAULT_SOCKET_PATH};
use crate::lease::Lease;
use crate::protocol::{self, Answer, Call};
use crate::DhcpError;

/// The daemon's flags, named and defaulted as the reference's.
///
/// Go: the flags of `dhcp daemon` (plugins `plugins/ipam/dhcp/main.go`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonOptions {
    /// `-socketpath`: where to listen (default `/run/cni/dhcp.sock`).
    pub socket_path: PathBuf,
    /// `-hostprefix`: prepended to the socket path and to every namespace
    /// path, for a daemon running in a container with the host's root
    /// mounted there.
    pub host_prefix: String,
    /// `-broadcast`: ask for broadcast replies when renewing too.
    pub broadcast: bool,
    /// `-timeout`, `-resendmax`, `-resendtimeout`.
    pub timing: Timing,
    /// `-pidfile`: an absolute path to write the daemon's pid to.
    pub pidfile: Option<PathBuf>,
}

impl Default for DaemonOptions {
    fn default() -> DaemonOptions {
        DaemonOptions {
            socket_path: PathBuf::from(DEFAULT_SOCKET_PATH),
            host_prefix: String::new(),
            broadcast: false,
            timing: Timing::default(),
            pidfile: None,
        }
    }
}

impl DaemonOptions {
    /// Reads the flags as Go's `flag` package does: `-name value`,
    /// `-name=value`, `--name`; booleans take no value unless written
    /// `-broadcast=false`; durations are Go's (`10s`, `1m30s`, `500ms`).
    /// An unknown flag or a bad value is [`DhcpError::Flag`] naming it.
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Result<DaemonOptions, DhcpError> {
        let mut out = DaemonOptions::default();
        let mut args = args.into_iter();
        let bad = |flag: &str, why: String| DhcpError::Flag {
            flag: flag.to_string(),
            why,
        };
        while let Some(arg) = args.next() {
            let Some(flag) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
                return Err(bad(&arg, "not a flag".into()));
            };
            let (name, inline) = match flag.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (flag, None),
            };
            if name == "broadcast" {
                out.broadcast = match inline.as_deref() {
                    None | Some("true" | "1" | "t" | "T" | "TRUE" | "True") => true,
                    Some("false" | "0" | "f" | "F" | "FALSE" | "False") => false,
                    Some(v) => return Err(bad(name, format!("{v:?} is not a boolean"))),
                };
                continue;
            }
            let value = match inline {
                Some(v) => v,
                None => args
                    .next()
                    .ok_or_else(|| bad(name, "needs a value".into()))?,
            };
            let duration = |v: &str| {
                parse_go_duration(v).ok_or_else(|| bad(name, format!("{v:?} is not a duration")))
            };
            match name {
                "socketpath" if !value.is_empty() => out.socket_path = PathBuf::from(value),
                "socketpath" => {}
                "hostprefix" => out.host_prefix = value,
                "pidfile" if value.is_empty() => out.pidfile = None,
                "pidfile" if !Path::new(&value).is_absolute() => {
                    return Err(bad(name, format!("{value:?} is not an absolute path")))
                }
                "pidfile" => out.pidfile = Some(PathBuf::from(value)),
                "timeout" => out.timing.timeout = duration(&value)?,
                "resendmax" => out.timing.resend_max = duration(&value)?,
                "resendtimeout" => out.timing.resend_timeout = duration(&value)?,
                _ => return Err(bad(name, "no such flag".into())),
            }
        }
        Ok(out)
    }

    /// The socket as the daemon opens it: the host prefix, then the path.
    pub fn listen_path(&self) -> PathBuf {
        PathBuf::from(format!(
            "{}{}",
            self.host_prefix,
            self.socket_path.display()
        ))
    }
}

/// A Go duration: a sequence of decimal numbers with units (`ns`, `us`,
/// `ms`, `s`, `m`, `h`), or `0`.
fn parse_go_duration(text: &str) -> Option<Duration> {
    if text == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = text;
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).ok()
}

/// A lease the daemon holds, and the thread that keeps it.
struct Held {
    /// The network's name, for GC.
    network: String,
    /// The attachment, for GC.
    container_id: String,
    ifname: String,
    result: Result100,
    stop: Sender<()>,
    keeper: JoinHandle<()>,
}

/// The daemon: its options and the leases it holds, by client id.
pub struct Daemon {
    options: DaemonOptions,
    leases: Mutex<HashMap<String, Held>>,
}

/// The client id of an attachment: `CONTAINERID/NETNAME/IFNAME`, cut to
/// 254 bytes (option 61's length is one byte, with its type byte).
///
/// Go: `generateClientID`.
pub fn client_id(container_id: &str, network: &str, ifname: &str) -> String {
    let mut id = format!("{container_id}/{network}/{ifname}");
    if id.len() > 254 {
        let mut cut = 254;
        while !id.is_char_boundary(cut) {
            cut -= 1;
        }
        id.truncate(cut);
    }
    id
}

impl Daemon {
    /// A daemon holding no lease.
    pub fn new(options: DaemonOptions) -> Daemon {
        Daemon {
            options,
            leases: Mutex::new(HashMap::new()),
        }
    }

    /// Opens the socket: its directory is created (0700) when missing, a
    /// stale socket nobody answers on is replaced, one a live daemon
    /// answers on is [`DhcpError::AlreadyRunning`]; the socket is 0600.
    /// Writes the pid file when one is configured.
    pub fn listen(&self) -> Result<UnixListener, DhcpError> {
        let path = self.options.listen_path();
        let io = |op: &'static str, source| DhcpError::Io {
            op,
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| io("create the directory of", e))?;
        }
        if path.exists() {
            if UnixStream::connect(&path).is_ok() {
                return Err(DhcpError::AlreadyRunning(path));
            }
            std::fs::remove_file(&path).map_err(|e| io("remove the stale socket", e))?;
        }
        let listener = UnixListener::bind(&path).map_err(|e| io("listen on", e))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| io("restrict", e))?;
        if let Some(pidfile) = &self.options.pidfile {
            std::fs::write(pidfile, std::process::id().to_string()).map_err(|source| {
                DhcpError::Io {
                    op: "write the pid file",
                    path: pidfile.clone(),
                    source,
                }
            })?;
        }
        Ok(listener)
    }

    /// Answers connections on `listener` until it fails, each on a
    /// thread of its own.
    pub fn serve(self: &Arc<Self>, listener: UnixListener) -> std::io::Result<()> {
        for stream in listener.incoming() {
            let stream = match stream {
                Ok(s) => s,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let daemon = Arc::clone(self);
            std::thread::spawn(move || {
                if let Err(e) = protocol::serve_one(stream, |call| daemon.handle(call)) {
                    eprintln!("dhcp daemon: a plugin's connection failed: {e}");
                }
            });
        }
        Ok(())
    }

    /// Removes what [`Daemon::listen`] created (the socket, the pid file).
    pub fn remove_files(&self) {
        let _ = std::fs::remove_file(self.options.listen_path());
        if let Some(pidfile) = &self.options.pidfile {
            let _ = std::fs::remove_file(pidfile);
        }
    }

    /// Answers one call.
    pub fn handle(&self, call: Call) -> Answer {
        let outcome = match call.command.as_str() {
            "ADD" => self.add(&call).map(Answer::Result),
            "DEL" => self.del(&call).map(Answer::Done),
            "CHECK" => self.check(&call).map(Answer::Done),
            "GC" => self.gc(&call).map(Answer::Done),
            "STATUS" => Ok(Answer::Done(())),
            other => Err(Error::invalid_env(
                "CNI_COMMAND",
                format!("the DHCP daemon does not serve {other:?}"),
            )),
        };
        outcome.unwrap_or_else(Answer::Error)
    }

    fn leases(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.leases.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn config(call: &Call) -> Result<NetConfig, Error> {
        serde_json::from_value(call.config.clone())
            .map_err(|e| Error::decoding("the network configuration", e))
    }

    /// A lease for the attachment: the one held, or a new one from the
    /// server; the result's routes get the configuration's `priority`.
    ///
    /// Go: `DHCP.Allocate`.
    fn add(&self, call: &Call) -> Result<serde_json::Value, Error> {
        let conf = Daemon::config(call)?;
        let ipam = conf.ipam.clone().unwrap_or_default();
        let options = ipam.client_options(&call.args)?;
        let id = client_id(&call.container_id, &conf.name, &call.ifname);
        if let Some(held) = self.leases().get(&id) {
            return serde_json::to_value(&held.result).map_err(|e| Error::internal(&e));
        }
        let netns_path = format!("{}{}", self.options.host_prefix, call.netns);
        let netns = Netns::open(&netns_path).map_err(Error::from)?;
        let client = Client::open(
            &netns,
            &call.ifname,
            &id,
            options,
            self.options.timing,
            self.options.broadcast,
        )?;
        eprintln!("dhcp daemon: {id}: acquiring lease");
        let lease = client.acquire()?;
        let result = lease.result(ipam.priority)?;
        eprintln!("dhcp daemon: {id}: lease acquired: {}", lease.address);
        let (stop, stopped) = mpsc::channel();
        let keeper_id = id.clone();
        let keeper = std::thread::spawn(move || keep(&keeper_id, client, lease, &stopped));
        let value = serde_json::to_value(&result).map_err(|e| Error::internal(&e))?;
        let held = Held {
            network: conf.name,
            container_id: call.container_id.clone(),
            ifname: call.ifname.clone(),
            result,
            stop,
            keeper,
        };
        // A concurrent ADD of the same attachment got there first: keep
        // its lease, and give this one back.
        let mut leases = self.leases();
        if let Some(first) = leases.get(&id) {
            let value = serde_json::to_value(&first.result).map_err(|e| Error::internal(&e));
            drop(leases);
            stop_keeping(held);
            return value;
        }
        leases.insert(id, held);
        Ok(value)
    }

    /// Stops keeping the attachment's lease and releases it; nothing held
    /// is success.
    ///
    /// Go: `DHCP.Release`.
    fn del(&self, call: &Call) -> Result<(), Error> {
        let conf = Daemon::config(call)?;
        let id = client_id(&call.container_id, &conf.name, &call.ifname);
        let held = self.leases().remove(&id);
        if let Some(held) = held {
            stop_keeping(held);
        }
        Ok(())
    }

    /// Releases the network's leases whose attachment is not in
    /// `cni.dev/valid-attachments`; without a list, releases nothing (see
    /// [`cni_types::ValidAttachments`]).
    fn gc(&self, call: &Call) -> Result<(), Error> {
        let conf = Daemon::config(call)?;
        let stale: Vec<Held> = {
            let mut leases = self.leases();
            let ids: Vec<String> = leases
                .iter()
                .filter(|(_, h)| {
                    h.network == conf.name
                        && !conf.valid_attachments.keeps(&h.container_id, &h.ifname)
                })
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| leases.remove(id)).collect()
        };
        stale.into_iter().for_each(stop_keeping);
        Ok(())
    }

    /// Succeeds when the daemon holds a lease for the attachment.
    fn check(&self, call: &Call) -> Result<(), Error> {
        let conf = Daemon::config(call)?;
        let id = client_id(&call.container_id, &conf.name, &call.ifname);
        if self.leases().contains_key(&id) {
            Ok(())
        } else {
            Err(Error::new(
                Code::INTERNAL,
                format!("the DHCP daemon holds no lease for {id}"),
            ))
        }
    }
}

/// Stops the thread keeping a lease, which releases it, and waits for it.
fn stop_keeping(held: Held) {
    let _ = held.stop.send(());
    let _ = held.keeper.join();
}

/// How long to wait after a failed renewal before the next try.
const RETRY_PAUSE: Duration = Duration::from_secs(5);

/// Keeps `lease` until told to stop, then releases it: renews at T1
/// (unicast to its server), rebinds at T2 (broadcast), and gives up when
/// it expires.
///
/// Go: `DHCPLease.maintain`.
fn keep(id: &str, client: Client, mut lease: Lease, stop: &mpsc::Receiver<()>) {
    let mut next = lease.renew_at();
    loop {
        let wait = next.saturating_duration_since(Instant::now());
        match stop.recv_timeout(wait) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                eprintln!("dhcp daemon: {id}: releasing lease {}", lease.address);
                if let Err(e) = client.release(&lease) {
                    eprintln!("dhcp daemon: {id}: failed to release: {e}");
                }
                return;
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        if now >= lease.expires_at() {
            eprintln!("dhcp daemon: {id}: lease {} expired", lease.address);
            return;
        }
        let rebinding = now >= lease.rebind_at();
        let until = if rebinding {
            lease.expires_at()
        } else {
            lease.rebind_at()
        };
        match client.extend(&lease, rebinding, until) {
            Ok(extended) => {
                lease = extended;
                next = lease.renew_at();
                let verb = if rebinding { "rebound" } else { "renewed" };
                eprintln!(
                    "dhcp daemon: {id}: lease {} {verb}, expires in {:?}",
                    lease.address, lease.lease_time
                );
            }
            Err(e) => {
                eprintln!("dhcp daemon: {id}: {e}");
                next = Instant::now() + RETRY_PAUSE;
            }
        }
    }
}

/// Runs the daemon until SIGTERM or SIGINT: listens, serves, and on the
/// signal removes its socket and pid file (leases are left to expire, as
/// in the reference).
///
/// Go: `runDaemon`.
pub fn run(options: DaemonOptions) -> Result<(), DhcpError> {
    use nix::sys::signal::{SigSet, Signal};
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGTERM);
    signals.add(Signal::SIGINT);
    // Blocked before any thread starts, so every thread inherits the mask
    // and only the sigwait below receives them.
    signals
        .thread_block()
        .map_err(|e| DhcpError::Signal(e.into()))?;
    let daemon = Arc::new(Daemon::new(options));
    let listener = daemon.listen()?;
    eprintln!(
        "dhcp daemon: listening on {}",
        daemon.options.listen_path().display()
    );
    let server = Arc::clone(&daemon);
    std::thread::spawn(move || {
        if let Err(e) = server.serve(listener) {
            eprintln!("dhcp daemon: stopped accepting: {e}");
        }
    });
    let signal = signals.wait().map_err(|e| DhcpError::Signal(e.into()));
    daemon.remove_files();
    signal.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<DaemonOptions, DhcpError> {
        DaemonOptions::from_args(list.iter().map(|s| s.to_string()))
    }

    #[test]
    fn the_daemon_takes_the_references_flags() {
        let o = args(&[
            "-socketpath",
            "/tmp/x.sock",
            "--hostprefix=/host",
            "-broadcast",
            "-timeout",
            "2s",
            "-resendmax=1m30s",
            "-resendtimeout",
            "500ms",
            "-pidfile",
            "/run/d.pid",
        ])
        .unwrap();
        assert_eq!(o.listen_path(), PathBuf::from("/host/tmp/x.sock"));
        assert!(o.broadcast);
        assert_eq!(o.timing.timeout, Duration::from_secs(2));
        assert_eq!(o.timing.resend_max, Duration::from_secs(90));
        assert_eq!(o.timing.resend_timeout, Duration::from_millis(500));
        assert_eq!(o.pidfile, Some(PathBuf::from("/run/d.pid")));
        assert_eq!(args(&[]).unwrap(), DaemonOptions::default());
    }

    #[test]
    fn a_bad_flag_is_refused_naming_it() {
        for (list, flag) in [
            (&["-timeout", "soon"][..], "timeout"),
            (&["-nosuch", "1"][..], "nosuch"),
            (&["-pidfile", "rel.pid"][..], "pidfile"),
            (&["-socketpath"][..], "socketpath"),
        ] {
            let err = args(list).unwrap_err().to_string();
            assert!(err.contains(flag), "{err}");
        }
    }

    #[test]
    fn the_client_id_is_the_references_cut_to_254_bytes() {
        assert_eq!(client_id("c1", "net", "eth0"), "c1/net/eth0");
        assert_eq!(client_id(&"x".repeat(300), "n", "e").len(), 254);
    }
}

#[cfg(test)]
mod listen_tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn daemon(dir: &Path) -> Daemon {
        Daemon::new(DaemonOptions {
            socket_path: dir.join("sub/dhcp.sock"),
            pidfile: Some(dir.join("dhcp.pid")),
            ..DaemonOptions::default()
        })
    }

    #[test]
    fn the_socket_is_private_and_the_pid_file_holds_the_pid() {
        let dir = tempfile::tempdir().unwrap();
        let d = daemon(dir.path());
        let _listener = d.listen().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("sub/dhcp.sock")), 0o600);
        assert_eq!(mode(&dir.path().join("sub")), 0o700);
        let pid = std::fs::read_to_string(dir.path().join("dhcp.pid")).unwrap();
        assert_eq!(pid, std::process::id().to_string());
        d.remove_files();
        assert!(!dir.path().join("sub/dhcp.sock").exists());
        assert!(!dir.path().join("dhcp.pid").exists());
    }

    #[test]
    fn a_stale_socket_is_replaced_and_a_live_daemons_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = daemon(dir.path());
        let live = d.listen().unwrap();
        assert!(matches!(d.listen(), Err(DhcpError::AlreadyRunning(_))));
        drop(live); // the file stays, nobody answers
        assert!(dir.path().join("sub/dhcp.sock").exists());
        d.listen().expect("a stale socket is replaced");
    }
}
