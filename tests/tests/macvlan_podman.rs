//! Podman 4.3.1 (Debian, CNI backend) on a network it made itself with
//! `podman network create -d macvlan --subnet`, its configuration list
//! unedited, and only our binaries on the plugin path (our `macvlan` and
//! our `host-local`): two busybox containers get their addresses on the
//! master's wire and reach each other, and after `podman rm` nothing is
//! left: no container link, no reservation, no libcni cache entry, no
//! namespace. (The ipvlan half needs a kernel with ipvlan: the VM.)
//!
//! Needs root, Podman, runc, conmon and busybox-static
//! (`scripts/install-test-deps.sh`); fails, never skips, without them.

use std::net::IpAddr;

use serde_json::json;
use tests::podman::Podman;
use tests::{ip, plugin_bin_dir, StdoutJson};

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn podman_runs_containers_on_its_own_macvlan_network_and_leaves_nothing() {
    let podman = Podman::new("mv", &[plugin_bin_dir()]);
    let master = podman.host_link("mv");
    let peer = format!("{master}p");
    for args in [
        &[
            "link", "add", &master, "type", "veth", "peer", "name", &peer,
        ][..],
        &["link", "set", &master, "up"],
        &["link", "set", &peer, "up"],
    ] {
        let out = ip(args);
        assert!(out.success(), "ip {args:?}: {out:?}");
    }
    let net = podman.network_name("mv");
    let store = std::path::PathBuf::from(format!("/var/lib/cni/networks/{net}"));
    let _store = RemoveOnDrop(store.clone());
    let create = podman.podman(&[
        "network",
        "create",
        "-d",
        "macvlan",
        "-o",
        &format!("parent={master}"),
        "--subnet",
        "10.215.60.0/24",
        &net,
    ]);
    assert!(create.success(), "podman network create: {create:?}");
    let inspect = podman.podman(&["network", "inspect", &net]);
    assert!(inspect.success(), "{inspect:?}");
    let list = &inspect.stdout_json()[0];
    assert_eq!(list["driver"], "macvlan", "{list}");

    let a = podman.start(&net, &[]);
    let b = podman.start(&net, &[]);
    let (addr_a, addr_b) = (a.address(&net), b.address(&net));
    for addr in [&addr_a, &addr_b] {
        let ip: IpAddr = addr.parse().unwrap_or_else(|e| panic!("{addr:?}: {e}"));
        assert!(ip.to_string().starts_with("10.215.60."), "{addr}");
    }
    // Busybox's `ip` has no details: read the link from the host.
    let netns = a.netns.file_name().unwrap().to_string_lossy().into_owned();
    let link = ip(&["-n", &netns, "-d", "-j", "link", "show", "eth0"]);
    assert!(link.success(), "{link:?}");
    let info = &link.stdout_json()[0]["linkinfo"];
    assert_eq!(
        (&info["info_kind"], &info["info_data"]["mode"]),
        (&json!("macvlan"), &json!("bridge"))
    );
    let ping = podman.exec(&b, &format!("ping -c 1 -W 5 {addr_a}"));
    assert!(ping.success(), "b -> a: {ping:?}");

    podman.remove(&a);
    podman.remove(&b);
    assert!(!a.netns_exists() && !b.netns_exists(), "namespaces left");
    assert_eq!(podman.cache_entries(&net), Vec::<std::path::PathBuf>::new());
    let held: Vec<String> = std::fs::read_dir(&store)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.parse::<IpAddr>().is_ok())
        .collect();
    assert_eq!(held, Vec::<String>::new(), "reservations left");
    let rm = podman.podman(&["network", "rm", &net]);
    assert!(rm.success(), "{rm:?}");
}

/// host-local's store of the network (which `podman network rm` leaves),
/// removed also when the test fails.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
