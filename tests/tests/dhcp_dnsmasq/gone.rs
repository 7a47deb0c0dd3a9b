//! No work for a caller that has gone: an ADD the runtime killed while
//! the server was silent, then its DEL, leave no acquisition running (no
//! lease is taken when a server appears) and no thread behind; plugins
//! that connect and send nothing hold a bounded number of threads, each
//! for a bounded time.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cni_dhcp::daemon::MAX_CONNECTIONS;
use tests::plugin_bin_dir;

use super::dhcp;
use super::server::{start_daemon, DhcpNet, Logged};

/// How many threads the process `pid` runs.
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the daemon's tasks")
        .count()
}

/// How many threads the daemon runs once it has served a call (it says
/// it listens before its accepting thread starts).
fn threads_at_rest(daemon: &Logged, net: &DhcpNet, socket: &std::path::Path) -> usize {
    let del = dhcp("DEL", net, socket);
    assert!(del.success(), "{}", del.excerpts(2000));
    std::thread::sleep(Duration::from_millis(200));
    threads(daemon.pid())
}

/// Waits until `pid` runs `count` threads or fewer; panics after `limit`.
fn wait_for_threads(pid: u32, count: usize, limit: Duration) {
    let end = Instant::now() + limit;
    while threads(pid) > count {
        assert!(
            Instant::now() < end,
            "the daemon still runs {} threads, {count} before",
            threads(pid)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_killed_add_and_its_del_leave_no_acquisition_and_no_thread_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut net = DhcpNet::start(dir.path(), 60, &["eth0"]);
    net.dnsmasq.kill();
    let socket = dir.path().join("dhcp.sock");
    let daemon = start_daemon(&plugin_bin_dir().join("dhcp"), &socket);
    let before = threads_at_rest(&daemon, &net, &socket);

    // An ADD with nobody answering, killed by the runtime after a while.
    let conf = serde_json::json!({"cniVersion": "1.0.0", "name": "dhcpnet",
        "type": "macvlan", "ipam": {"type": "dhcp", "daemonSocketPath": socket}});
    let mut add = Command::new(plugin_bin_dir().join("dhcp"))
        .env("CNI_COMMAND", "ADD")
        .env("CNI_CONTAINERID", net.container.name())
        .env("CNI_NETNS", net.container.path())
        .env("CNI_IFNAME", "eth0")
        .env("CNI_PATH", "/nonexistent")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    add.stdin
        .take()
        .unwrap()
        .write_all(conf.to_string().as_bytes())
        .unwrap();
    daemon.wait_for("acquiring lease", Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(500));
    add.kill().unwrap();
    add.wait().unwrap();
    daemon.wait_for("went away", Duration::from_secs(5));
    let del = dhcp("DEL", &net, &socket);
    assert!(del.success(), "{}", del.excerpts(2000));
    wait_for_threads(daemon.pid(), before, Duration::from_secs(5));

    // A server appears: nothing asks it for a lease.
    net.restart_serving("10.77.0.10", "10.77.0.50");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(net.lease_file(), "", "a lease was taken:\n{}", daemon.log());
    assert!(
        !net.dnsmasq.log().contains("DHCPDISCOVER"),
        "the daemon still looks for a server:\n{}",
        net.dnsmasq.log()
    );
    assert!(!daemon.log().contains("lease acquired"), "{}", daemon.log());
    assert_eq!(threads(daemon.pid()), before);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn silent_connections_hold_a_bounded_number_of_threads_for_a_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    let net = DhcpNet::start(dir.path(), 60, &["eth0"]);
    let socket = dir.path().join("dhcp.sock");
    let daemon = start_daemon(&plugin_bin_dir().join("dhcp"), &socket);
    let before = threads_at_rest(&daemon, &net, &socket);
    let silent: Vec<UnixStream> = (0..MAX_CONNECTIONS + 4)
        .map(|_| UnixStream::connect(&socket).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        threads(daemon.pid()) <= before + MAX_CONNECTIONS,
        "{} threads for {} silent connections, {before} before",
        threads(daemon.pid()),
        silent.len()
    );
    // Each is hung up on after the read deadline; then a plugin is
    // served again, and the threads are gone.
    let started = Instant::now();
    let status = dhcp("DEL", &net, &socket);
    assert!(status.success(), "{}", status.excerpts(2000));
    assert!(
        started.elapsed() < cni_dhcp::rpc::READ_DEADLINE * 2,
        "served after {:?}",
        started.elapsed()
    );
    drop(silent);
    wait_for_threads(daemon.pid(), before, Duration::from_secs(15));
}
