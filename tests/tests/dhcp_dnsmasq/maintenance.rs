//! The daemon keeping a lease as the reference's `DHCPLease.maintain`
//! does: it stops when the interface is gone, starts over after a
//! DHCPNAK, and brings the interface down when the lease expires.

use std::time::Duration;

use super::server::{start_daemon, DhcpNet};
use super::{dhcp, stdout_json};
use tests::plugin_bin_dir;

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
