//! Our `dhcp` (plugin and daemon) beside Debian's reference `dhcp` 1.1.1
//! (its plugin and its daemon), run by the reference runtime library
//! (libcni, via `cnidriver`) with the same configuration list against the
//! same dnsmasq: the same results at 0.3.1, 0.4.0 and 1.0.0 (the leased
//! address normalised: each side is a different client), the same CHECK
//! and DEL verdicts, and both leases released.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tests::{plugin_bin_dir, reference_plugin_dir, Driver};

use crate::server::{start_daemon, DhcpNet, Logged};

const VERSIONS: [&str; 3] = ["0.3.1", "0.4.0", "1.0.0"];

/// The reference daemon logs nothing when it is ready: wait until its
/// socket accepts a connection.
fn start_reference_daemon(socket: &Path) -> Logged {
    let mut cmd = std::process::Command::new(reference_plugin_dir().join("dhcp"));
    cmd.arg("daemon").arg("-socketpath").arg(socket);
    let daemon = Logged::spawn(cmd);
    let end = Instant::now() + Duration::from_secs(20);
    while UnixStream::connect(socket).is_err() {
        assert!(
            Instant::now() < end,
            "the reference daemon never listened:\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    daemon
}

/// ADD, CHECK, DEL and DEL again of a list holding only `dhcp` on one side;
/// returns the normalised reports and the leased address.
fn run(
    net: &DhcpNet,
    dir: &Path,
    bin_dir: PathBuf,
    socket: &Path,
    version: &str,
    side: &str,
) -> (Value, String) {
    let conflist = dir.join(format!("{side}-{version}.conflist"));
    let list = json!({"cniVersion": version, "name": "dhcpnet", "plugins": [
        {"type": "dhcp", "ipam": {"type": "dhcp", "daemonSocketPath": socket}}]});
    std::fs::write(&conflist, list.to_string()).unwrap();
    let driver = Driver::new([bin_dir], dir.join(format!("cache-{side}")))
        .with_container_id(&format!("{side}-{version}-{}", std::process::id()))
        .with_netns(&net.container.path().display().to_string());
    let mut add = driver.add(&conflist);
    assert_eq!(add["ok"], true, "{side} ADD at {version}: {add}");
    let address = add["result"]["ips"][0]["address"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        address.starts_with("10.77.0."),
        "{side} at {version}: {add}"
    );
    add["result"]["ips"][0]["address"] = json!("<leased>/24");
    add["cachedResult"] = Value::Null;
    let check = driver.check(&conflist);
    let del = driver.del(&conflist);
    let again = driver.del(&conflist);
    let report =
        json!({"add": add["result"], "check": check["ok"], "del": del["ok"], "again": again["ok"]});
    (report, address.trim_end_matches("/24").to_string())
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn dhcp_through_libcni_gives_the_references_results_at_each_version() {
    let dir = tempfile::tempdir().unwrap();
    let net = DhcpNet::start(dir.path(), 60, &["eth0"]);
    let ours_socket = dir.path().join("ours.sock");
    let reference_socket = dir.path().join("reference.sock");
    let _ours = start_daemon(&plugin_bin_dir().join("dhcp"), &ours_socket);
    let _reference = start_reference_daemon(&reference_socket);
    for version in VERSIONS {
        let (ours, ours_ip) = run(
            &net,
            dir.path(),
            plugin_bin_dir(),
            &ours_socket,
            version,
            "ours",
        );
        let (reference, reference_ip) = run(
            &net,
            dir.path(),
            reference_plugin_dir(),
            &reference_socket,
            version,
            "reference",
        );
        assert_eq!(ours, reference, "at {version}");
        assert_eq!(
            ours["add"]["routes"],
            json!([{"dst": "0.0.0.0/0", "gw": crate::server::SERVER_IP}]),
            "at {version}: {ours}"
        );
        // Both released their lease on DEL, ours first.
        for ip in [ours_ip, reference_ip] {
            let released = format!("DHCPRELEASE(br0) {ip}");
            net.dnsmasq.wait_for(&released, Duration::from_secs(10));
        }
    }
}
