//! Podman's own `macvlan` and `ipvlan` networks on our plugins: one
//! scenario for both drivers (`podman network create -d DRIVER --subnet
//! SUBNET`, the configuration list Podman writes left as it is), used by
//! `tests/tests/macvlan_podman.rs` on this host and
//! `tests/vm/ipvlan_podman.rs` in the VM.

use std::net::IpAddr;
use std::path::PathBuf;

use serde_json::json;

use crate::podman::Podman;
use crate::{ip, plugin_bin_dir, StdoutJson};

/// How the network gets its master.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MasterBy {
    /// `-o parent=MASTER` (Podman 4.3.1 takes it for macvlan only).
    ParentOption,
    /// No master in the configuration: the plugin takes the host's
    /// default-route interface, which is the fresh master when the host
    /// has no default route (one is added through it, gone with it).
    DefaultRoute,
}

/// Podman with only our binaries on its plugin path makes a `driver`
/// network on a fresh master (named as `by` says) with `subnet` (a `/24`, written `a.b.c.0/24`),
/// runs two busybox containers on it whose link is of kind `driver` in
/// mode `mode` and which reach each other, and after `podman rm` nothing
/// is left: no namespace, no libcni cache entry, no reservation.
///
/// # Panics
/// On the first step that does not hold, or without Podman (naming
/// `scripts/install-test-deps.sh`).
pub fn containers_on_a_driver_network(driver: &str, by: MasterBy, mode: &str, subnet: &str) {
    let podman = Podman::new(driver, &[plugin_bin_dir()]);
    let master = podman.host_link("mst");
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
    let net = podman.network_name(driver);
    let store = PathBuf::from(format!("/var/lib/cni/networks/{net}"));
    let _store = RemoveOnDrop(store.clone());
    let parent = format!("parent={master}");
    let mut args = vec!["network", "create", "-d", driver, "--subnet", subnet, &net];
    match by {
        MasterBy::ParentOption => args.extend(["-o", &parent]),
        MasterBy::DefaultRoute => {
            let routes = ip(&["-j", "route", "show", "default"]).stdout_json();
            if routes.as_array().is_none_or(|r| r.is_empty()) {
                let out = ip(&["route", "add", "default", "dev", &master]);
                assert!(out.success(), "{out:?}");
            }
        }
    }
    let create = podman.podman(&args);
    assert!(create.success(), "podman network create: {create:?}");
    let inspect = podman.podman(&["network", "inspect", &net]);
    assert!(inspect.success(), "{inspect:?}");
    assert_eq!(inspect.stdout_json()[0]["driver"], driver);

    let a = podman.start(&net, &[]);
    let b = podman.start(&net, &[]);
    let prefix = subnet.trim_end_matches("0/24");
    let addr_a = a.address(&net);
    for addr in [&addr_a, &b.address(&net)] {
        let ip: IpAddr = addr.parse().unwrap_or_else(|e| panic!("{addr:?}: {e}"));
        assert!(ip.to_string().starts_with(prefix), "{addr} in {subnet}");
    }
    // Busybox's `ip` has no details: read the link from the host.
    let netns = a.netns.file_name().unwrap().to_string_lossy().into_owned();
    let link = ip(&["-n", &netns, "-d", "-j", "link", "show", "eth0"]);
    assert!(link.success(), "{link:?}");
    let info = &link.stdout_json()[0]["linkinfo"];
    assert_eq!(
        (&info["info_kind"], &info["info_data"]["mode"]),
        (&json!(driver), &json!(mode))
    );
    let ping = podman.exec(&b, &format!("ping -c 1 -W 5 {addr_a}"));
    assert!(ping.success(), "b -> a: {ping:?}");

    podman.remove(&a);
    podman.remove(&b);
    assert!(!a.netns_exists() && !b.netns_exists(), "namespaces left");
    assert_eq!(podman.cache_entries(&net), Vec::<PathBuf>::new());
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
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
