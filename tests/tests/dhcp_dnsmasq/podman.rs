//! Podman 4.3.1 (Debian, CNI backend) on a network it made itself with
//! `podman network create -d macvlan -o parent=MASTER` (no subnet, so its
//! list asks `dhcp` for addresses), the list unedited and only our
//! binaries on its plugin path (our `macvlan` and our `dhcp`, whose
//! daemon listens on the reference's default socket): two busybox
//! containers lease their addresses from dnsmasq on the master's wire,
//! reach each other, and their leases are released when they are
//! removed.

use std::path::Path;
use std::time::Duration;

use tests::plugin_bin_dir;
use tests::podman::Podman;

use crate::server::{start_daemon, DhcpNet};

/// Removes the daemon's socket at the default path, also when the test
/// fails (the daemon is killed, not stopped).
struct RemoveSocket(&'static str);

impl Drop for RemoveSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0);
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn podman_runs_containers_on_its_own_macvlan_network_with_leases_from_dhcp() {
    let podman = Podman::new("dhcp", &[plugin_bin_dir()]);
    let master = podman.host_link("dhm");
    let dir = tempfile::tempdir().unwrap();
    let net = DhcpNet::start_with_host_link(dir.path(), 60, &[], Some(&master));
    // The reference's default, which Podman's list leaves as it is.
    let socket = "/run/cni/dhcp.sock";
    let _socket = RemoveSocket(socket);
    let _daemon = start_daemon(&plugin_bin_dir().join("dhcp"), Path::new(socket));

    let name = podman.network_name("dhcp");
    let parent = format!("parent={master}");
    let create = podman.podman(&["network", "create", "-d", "macvlan", "-o", &parent, &name]);
    assert!(create.success(), "podman network create: {create:?}");
    let list = podman.network_list(&name);
    assert_eq!(list["plugins"][0]["ipam"]["type"], "dhcp", "{list}");

    let a = podman.start(&name, &[]);
    let b = podman.start(&name, &[]);
    let (addr_a, addr_b) = (a.address(&name), b.address(&name));
    for addr in [&addr_a, &addr_b] {
        assert!(
            addr.starts_with("10.77.0."),
            "{addr:?} not from dnsmasq: {}",
            a.networks
        );
    }
    let ping = podman.exec(&b, &format!("ping -c 1 -W 5 {addr_a}"));
    assert!(ping.success(), "b -> a: {ping:?}");

    podman.remove(&a);
    podman.remove(&b);
    for addr in [&addr_a, &addr_b] {
        net.dnsmasq
            .wait_for(&format!("DHCPRELEASE(br0) {addr}"), Duration::from_secs(10));
    }
    assert_eq!(
        podman.cache_entries(&name),
        Vec::<std::path::PathBuf>::new()
    );
}
