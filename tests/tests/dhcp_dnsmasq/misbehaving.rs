//! A scripted DHCP server (a UDP responder on port 67 in the server's
//! namespace, in place of dnsmasq) offering leases that make no sense:
//! each is refused, the client keeps trying, and the ADD fails with code
//! 11 naming the server and what was wrong; an acknowledged one is
//! declined (DHCPDECLINE). No lease is held, no address is configured.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use cni_dhcp::client::Timing;
use cni_dhcp::daemon::{Daemon, DaemonOptions};
use cni_dhcp::message::{code, Message, MessageType};
use cni_dhcp::rpc::CmdArgs;
use cni_net::NetError;

use super::server::{DhcpNet, SERVER_IP};

/// What the scripted server puts in a reply: the address, the mask and
/// the router.
#[derive(Debug, Clone, Copy)]
struct Lease {
    address: [u8; 4],
    mask: [u8; 4],
    router: [u8; 4],
}

const SOUND: Lease = Lease {
    address: [10, 77, 0, 20],
    mask: [255, 255, 255, 0],
    router: [10, 77, 0, 1],
};

/// One client's script: its MAC, what it is offered, what acknowledged.
type Script = ([u8; 6], Lease, Lease);

/// What the server received: from which MAC, of which kind.
type Seen = Arc<Mutex<Vec<([u8; 6], MessageType)>>>;

/// The scripted server: answers a client's DISCOVER with its script's
/// offer, its REQUEST with the script's ack, and records the kinds of
/// message each client sent.
struct Scripted {
    stop: Arc<AtomicBool>,
    seen: Seen,
    thread: Option<JoinHandle<()>>,
}

impl Scripted {
    fn start(net: &DhcpNet, scripts: Vec<Script>) -> Scripted {
        let socket = net
            .server_netns()
            .run(|_| Ok::<_, NetError>(UdpSocket::bind("0.0.0.0:67")))
            .unwrap()
            .expect("port 67 in the server's namespace");
        socket.set_broadcast(true).unwrap();
        // The namespace has no default route: broadcasts leave by br0.
        bind_to_device(&socket, "br0");
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (stopped, log) = (Arc::clone(&stop), Arc::clone(&seen));
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 1500];
            while !stopped.load(Ordering::SeqCst) {
                let Ok(n) = socket.recv(&mut buf) else {
                    continue;
                };
                let Ok(m) = Message::decode(&buf[..n]) else {
                    continue;
                };
                log.lock().unwrap().push((m.chaddr, m.kind));
                let Some((_, offer, ack)) = scripts.iter().find(|(mac, _, _)| *mac == m.chaddr)
                else {
                    continue;
                };
                let (kind, lease) = match m.kind {
                    MessageType::Discover => (MessageType::Offer, offer),
                    MessageType::Request => (MessageType::Ack, ack),
                    _ => continue,
                };
                let mut reply = Message::client(kind, m.xid, m.chaddr);
                reply.op = 2;
                reply.flags = m.flags;
                reply.yiaddr = Ipv4Addr::from(lease.address);
                reply.set_option(
                    code::SERVER_ID,
                    SERVER_IP.parse::<Ipv4Addr>().unwrap().octets().to_vec(),
                );
                reply.set_option(code::LEASE_TIME, 120u32.to_be_bytes().to_vec());
                reply.set_option(code::SUBNET_MASK, lease.mask.to_vec());
                reply.set_option(code::ROUTER, lease.router.to_vec());
                let to = SocketAddrV4::new(Ipv4Addr::BROADCAST, 68);
                let _ = socket.send_to(&reply.encode(), to);
            }
        });
        Scripted {
            stop,
            seen,
            thread: Some(thread),
        }
    }

    /// The kinds of message the client with `mac` sent.
    fn seen(&self, mac: [u8; 6]) -> Vec<MessageType> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|(m, _)| *m == mac)
            .map(|(_, k)| *k)
            .collect()
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn bind_to_device(socket: &UdpSocket, ifname: &str) {
    use std::os::fd::AsRawFd;
    // SAFETY: the option's value is the name's bytes, of the length given.
    #[allow(unsafe_code)]
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_BINDTODEVICE,
            ifname.as_ptr().cast(),
            ifname.len() as libc::socklen_t,
        )
    };
    assert_eq!(
        rc,
        0,
        "SO_BINDTODEVICE {ifname}: {}",
        std::io::Error::last_os_error()
    );
}

fn allocate(daemon: &Daemon, net: &DhcpNet, ifname: &str) -> Result<String, String> {
    let config = serde_json::json!({"cniVersion": "1.0.0", "name": "dhcpnet",
        "type": "macvlan", "ipam": {"type": "dhcp"}});
    let args = CmdArgs {
        container_id: net.container.name().to_string(),
        netns: net.container.path().display().to_string(),
        ifname: ifname.to_string(),
        stdin_data: config.to_string().into_bytes(),
        ..CmdArgs::default()
    };
    daemon
        .handle("DHCP.Allocate", &args)
        .map(|(_, v)| format!("{v:?}"))
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn leases_that_make_no_sense_are_refused_naming_the_server_and_why() {
    let with = |address, mask, router| Lease {
        address,
        mask,
        router,
    };
    let (m24, gw) = (SOUND.mask, SOUND.router);
    let cases = [
        (
            with([0, 0, 0, 0], m24, gw),
            SOUND,
            "0.0.0.0, the unspecified address",
        ),
        (
            with([255; 4], m24, gw),
            SOUND,
            "255.255.255.255, the broadcast address",
        ),
        (
            with([127, 0, 0, 1], m24, gw),
            SOUND,
            "127.0.0.1, a loopback address",
        ),
        (
            with([224, 0, 0, 1], m24, gw),
            SOUND,
            "224.0.0.1, a multicast address",
        ),
        (with([240, 0, 0, 5], m24, gw), SOUND, "class E"),
        (
            with(SOUND.address, [0; 4], gw),
            SOUND,
            "subnet mask of 0.0.0.0",
        ),
        (
            with(SOUND.address, [255, 0, 255, 0], gw),
            SOUND,
            "non-contiguous subnet mask 255.0.255.0",
        ),
        (
            with([10, 77, 0, 0], m24, gw),
            SOUND,
            "network address of 10.77.0.0/24",
        ),
        (
            with([10, 77, 0, 255], m24, gw),
            SOUND,
            "broadcast address of 10.77.0.0/24",
        ),
        (
            with(SOUND.address, m24, [10, 99, 0, 1]),
            SOUND,
            "router outside it, 10.99.0.1",
        ),
        // A sound offer, an acknowledgement that is not: declined.
        (
            SOUND,
            with([0, 0, 0, 0], m24, gw),
            "0.0.0.0, the unspecified address",
        ),
    ];
    let names: Vec<String> = (1..=cases.len()).map(|i| format!("eth{i}")).collect();
    let ifnames: Vec<&str> = names.iter().map(String::as_str).collect();
    let dir = tempfile::tempdir().unwrap();
    let mut net = DhcpNet::start(dir.path(), 60, &ifnames);
    net.dnsmasq.kill();
    let mac = |ifname: &str| {
        let link = net.container.run(|nl| nl.link(ifname)).unwrap();
        link.mac.expect("a MAC").0
    };
    let scripts = cases
        .iter()
        .zip(&ifnames)
        .map(|((offer, ack, _), ifname)| (mac(ifname), *offer, *ack))
        .collect();
    let server = Scripted::start(&net, scripts);
    let daemon = Daemon::new(DaemonOptions {
        socket_path: dir.path().join("unused.sock"),
        timing: Timing {
            timeout: Duration::from_secs(1),
            resend_timeout: Duration::from_secs(5),
            ..Timing::default()
        },
        ..DaemonOptions::default()
    });
    // Every case at once, one interface each.
    let outcomes: Vec<Result<String, String>> = std::thread::scope(|s| {
        let runs: Vec<_> = ifnames
            .iter()
            .map(|ifname| {
                let (daemon, net) = (&daemon, &net);
                s.spawn(move || allocate(daemon, net, ifname))
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    for (((_, ack, why), ifname), outcome) in cases.iter().zip(&ifnames).zip(outcomes) {
        let err = outcome.expect_err(why);
        assert!(
            err.starts_with("no more tries: the DHCP server 10.77.0.1 offered ")
                && err.contains(why),
            "{why}: {err}"
        );
        let seen = server.seen(mac(ifname));
        let acknowledged_bad = ack.address != SOUND.address;
        assert_eq!(
            seen.contains(&MessageType::Decline),
            acknowledged_bad,
            "{why}: {seen:?}"
        );
        if !acknowledged_bad {
            let discovers = seen.iter().filter(|k| **k == MessageType::Discover).count();
            assert!(
                discovers >= 2,
                "{why}: the client did not keep trying: {seen:?}"
            );
            assert!(
                !seen.contains(&MessageType::Request),
                "{why}: requested: {seen:?}"
            );
        }
    }
    let addresses = net.container.run(|nl| nl.addresses(None)).unwrap();
    assert!(
        addresses
            .iter()
            .all(|a| !a.network.is_ipv4() || a.network.addr().is_loopback()),
        "{addresses:?}"
    );
}
