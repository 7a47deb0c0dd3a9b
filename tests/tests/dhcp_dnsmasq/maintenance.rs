//! The daemon keeping a lease as the reference's `DHCPLease.maintain`
//! does: it stops when the interface is gone, starts over after a
//! DHCPNAK, and brings the interface down when the lease expires.

use std::time::{Duration, Instant};

use cni_dhcp::client::Timing;
use cni_dhcp::daemon::{Daemon, DaemonOptions};
use cni_dhcp::rpc::{Answer, CmdArgs};

use super::server::{start_daemon, DhcpNet, SERVER_IP};
use super::{dhcp, stdout_json};
use tests::plugin_bin_dir;

/// The address ADD leased, without its prefix length.
fn leased(result: &serde_json::Value) -> String {
    let address = result["ips"][0]["address"].as_str().expect("an address");
    address.trim_end_matches("/24").to_string()
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn lease_maintenance_stops_when_the_interface_disappears() {
    let dir = tempfile::tempdir().unwrap();
    let net = DhcpNet::start(dir.path(), 3, &["eth0"]);
    let socket = dir.path().join("dhcp.sock");
    let daemon = start_daemon(&plugin_bin_dir().join("dhcp"), &socket);
    stdout_json(&dhcp("ADD", &net, &socket));

    net.container
        .run(|nl| nl.delete_link_if_present("eth0"))
        .expect("eth0 deleted");
    // At T1 (3 s) the keeper finds no eth0, and stops instead of renewing.
    daemon.wait_for("no longer exists", Duration::from_secs(30));
    assert!(!daemon.log().contains("renewed"), "{}", daemon.log());
    // DEL of the attachment whose interface is gone still succeeds.
    assert!(dhcp("DEL", &net, &socket).success());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_renewal_the_server_refuses_is_followed_by_a_new_lease() {
    let dir = tempfile::tempdir().unwrap();
    let mut net = DhcpNet::start(dir.path(), 3, &["eth0"]);
    let socket = dir.path().join("dhcp.sock");
    let daemon = start_daemon(&plugin_bin_dir().join("dhcp"), &socket);
    let result = stdout_json(&dhcp("ADD", &net, &socket));
    let old = leased(&result);
    net.put_on_eth0(result["ips"][0]["address"].as_str().unwrap());

    // The server no longer serves the old address: it NAKs the renewal
    // at T1, and the daemon acquires a new lease from the new range.
    net.restart_serving("10.77.0.200", "10.77.0.250");
    net.dnsmasq
        .wait_for(&format!("DHCPNAK(br0) {old}"), Duration::from_secs(30));
    let line = daemon.wait_for("new lease", Duration::from_secs(30));
    let new = line.rsplit(' ').next().unwrap_or_default();
    let last: u8 = new
        .strip_prefix("10.77.0.")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!((200..=250).contains(&last), "{line}");
    net.dnsmasq
        .wait_for(&format!("DHCPACK(br0) {new}"), Duration::from_secs(10));
    // ADD again (a runtime retrying) answers with the lease now held.
    let again = stdout_json(&dhcp("ADD", &net, &socket));
    assert_eq!(leased(&again), new, "{again}");
    assert!(dhcp("DEL", &net, &socket).success());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_lease_the_server_cannot_renew_by_unicast_is_rebound_by_broadcast_at_t2() {
    let dir = tempfile::tempdir().unwrap();
    let net = DhcpNet::start_with_t2(dir.path(), 2, 6, &["eth0"]);
    let socket = dir.path().join("dhcp.sock");
    let daemon = start_daemon(&plugin_bin_dir().join("dhcp"), &socket);
    let result = stdout_json(&dhcp("ADD", &net, &socket));
    let ip = leased(&result);
    net.put_on_eth0(result["ips"][0]["address"].as_str().unwrap());
    // The container drops what it sends to the server's own address: the
    // unicast renewals at T1 (2 s) are lost, the broadcast REQUEST at T2
    // (6 s) gets through. The table goes with the namespace.
    let rules = format!(
        "add table ip t{pid}\n\
         add chain ip t{pid} out {{ type filter hook output priority 0; }}\n\
         add rule ip t{pid} out ip daddr {SERVER_IP} udp dport 67 drop\n",
        pid = std::process::id()
    );
    let mut nft = std::process::Command::new("ip")
        .args(["netns", "exec", net.container.name(), "nft", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("nft");
    std::io::Write::write_all(&mut nft.stdin.take().unwrap(), rules.as_bytes()).unwrap();
    assert!(nft.wait().unwrap().success(), "nft refused {rules}");

    daemon.wait_for("lease rebound", Duration::from_secs(30));
    assert!(!daemon.log().contains("lease renewed"), "{}", daemon.log());
    // Two ACKs for the address: the ADD's and the rebinding's.
    for _ in 0..2 {
        net.dnsmasq
            .wait_for(&format!("DHCPACK(br0) {ip}"), Duration::from_secs(10));
    }
    assert!(dhcp("DEL", &net, &socket).success());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn del_does_not_wait_for_a_renewal_nobody_answers() {
    let dir = tempfile::tempdir().unwrap();
    let mut net = DhcpNet::start(dir.path(), 3, &["eth0"]);
    let socket = dir.path().join("dhcp.sock");
    let daemon = start_daemon(&plugin_bin_dir().join("dhcp"), &socket);
    let result = stdout_json(&dhcp("ADD", &net, &socket));
    net.put_on_eth0(result["ips"][0]["address"].as_str().unwrap());
    // Without a server, the renewal at T1 (3 s) would wait until T2
    // (102 s) for an answer.
    net.dnsmasq.kill();
    daemon.wait_for("renewing lease", Duration::from_secs(30));
    let started = Instant::now();
    let out = dhcp("DEL", &net, &socket);
    assert!(out.success(), "{}", out.excerpts(2000));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "DEL took {:?}",
        started.elapsed()
    );
    daemon.wait_for("releasing lease", Duration::from_secs(10));
}

/// One call of the test's network to an in-process daemon.
fn call(daemon: &Daemon, method: &str, net: &DhcpNet) -> Answer {
    let config = serde_json::json!({
        "cniVersion": "1.0.0", "name": "dhcpnet", "type": "macvlan",
        "ipam": {"type": "dhcp"}
    });
    daemon.handle(
        method,
        &CmdArgs {
            container_id: net.container.name().to_string(),
            netns: net.container.path().display().to_string(),
            ifname: "eth0".to_string(),
            stdin_data: config.to_string().into_bytes(),
            ..CmdArgs::default()
        },
    )
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_expired_lease_brings_the_interface_down() {
    let dir = tempfile::tempdir().unwrap();
    let mut net = DhcpNet::start(dir.path(), 60, &["eth0"]);
    // The daemon's clock: dnsmasq's two-minute lease lasts 8 s.
    let daemon = Daemon::new(DaemonOptions {
        socket_path: dir.path().join("unused.sock"),
        timing: Timing {
            timeout: Duration::from_secs(1),
            lease_time_cap: Some(Duration::from_secs(8)),
            ..Timing::default()
        },
        ..DaemonOptions::default()
    });
    let added = call(&daemon, "DHCP.Allocate", &net);
    assert!(added.is_ok(), "{added:?}");

    // No server renews or rebinds it: at expiry eth0 goes down.
    net.dnsmasq.kill();
    let end = Instant::now() + Duration::from_secs(40);
    let up = || net.container.run(|nl| nl.link("eth0")).expect("eth0").up;
    while up() {
        assert!(Instant::now() < end, "eth0 is still up 40 s after ADD");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(call(&daemon, "DHCP.Release", &net).is_ok());
}
