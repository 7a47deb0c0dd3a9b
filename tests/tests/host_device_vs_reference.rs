//! Our `host-device`, `static` and `sbr` beside Debian's reference
//! plugins of those names, run by the reference runtime library (libcni, via
//! `cnidriver`) with the same configuration list: the same result and the
//! same kernel state (the device's name, MAC, flags, alias and addresses
//! in the container and in the host, the container's routes of every
//! table and its rules) after ADD,
//! the same CHECK verdict, the same state after DEL, at configuration
//! versions 0.3.1, 0.4.0 and 1.0.0.
//!
//! `host-device` runs inside a "host" namespace of the test (a wrapper
//! script, [`tests::in_host_namespace`]) where a veth end with a fixed
//! MAC is the device; IPAM is the reference `static` on both sides, so
//! only the plugin under test differs; `sbr` is chained after them.
//! `static` is also compared alone, as the
//! list's one plugin (it reads the `ipam` section of the whole
//! configuration). Needs root.

use std::path::PathBuf;

use serde_json::{json, Value};
use tests::sandbox::{NetDirs, Via};
use tests::StdoutJson;
use tests::{global_addrs, in_host_namespace, ip, plugin_bin_dir, reference_plugin_dir, NetNs};

const VERSIONS: [&str; 3] = ["0.3.1", "0.4.0", "1.0.0"];
/// The device's MAC, so results need no normalising.
const DEVICE_MAC: &str = "02:17:00:00:00:05";
/// The veth peer's, which stays in the host namespace.
const PEER_MAC: &str = "02:17:00:00:00:06";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Side {
    Ours,
    Reference,
}

impl Side {
    fn dir(self) -> PathBuf {
        match self {
            Side::Ours => plugin_bin_dir(),
            Side::Reference => reference_plugin_dir(),
        }
    }
}

/// What one side did.
#[derive(Debug, PartialEq)]
struct Run {
    add: Value,
    after_add: Value,
    check: Value,
    after_del: Value,
    /// A second DEL: ours succeeds, the reference's fails (the device is
    /// no longer in the container), so it is compared apart.
    del_again: Value,
}

/// The links of `ip ARGS` (`-j -d addr`): name, MAC, UP, alias,
/// global addresses.
fn links(ns: &NetNs) -> Value {
    let out = ip(&["-n", ns.name(), "-j", "-d", "addr"]);
    assert!(out.success(), "{out:?}");
    let mut links: Vec<Value> = out
        .stdout_json()
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| l["ifname"] != "lo")
        .map(|l| {
            let up = l["flags"]
                .as_array()
                .is_some_and(|f| f.iter().any(|x| x == "UP"));
            // Debian's host-device (1.1.1) leaves the alias on a returned
            // device, the same as its name; v1.9 clears it, as ours does.
            let alias = Some(&l["ifalias"]).filter(|a| **a != l["ifname"]);
            json!({"name": l["ifname"], "mac": l["address"], "up": up,
                   "alias": alias, "addrs": global_addrs(l)})
        })
        .collect();
    links.sort_by_key(|l| l["name"].to_string());
    json!(links)
}

/// The container's routes of one family, link-local ones left out.
fn routes(ns: &NetNs, family: &str) -> Value {
    let out = ip(&[
        "-n",
        ns.name(),
        "-j",
        family,
        "route",
        "show",
        "table",
        "all",
    ]);
    let mut routes: Vec<Value> = out
        .stdout_json()
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| !r["dst"].as_str().unwrap_or("").starts_with("fe80"))
        .filter(|r| r["type"] != "local" && r["type"] != "broadcast" && r["type"] != "multicast")
        .map(|r| {
            json!({"dst": r["dst"], "gateway": r["gateway"], "dev": r["dev"], "table": r["table"],
                   "prefsrc": r["prefsrc"], "protocol": r["protocol"], "scope": r["scope"]})
        })
        .collect();
    routes.sort_by_key(|r| r.to_string());
    json!(routes)
}

/// The container's policy routing rules of one family.
fn rules(ns: &NetNs, family: &str) -> Value {
    let out = ip(&["-n", ns.name(), "-j", family, "rule", "show"]);
    json!(out
        .stdout_json()
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| json!({"priority": r["priority"], "src": r["src"], "srclen": r["srclen"], "table": r["table"]}))
        .collect::<Vec<_>>())
}

fn kernel(host: &NetNs, container: &NetNs) -> Value {
    json!({
        "host": links(host),
        "container": links(container),
        "routes4": routes(container, "-4"),
        "routes6": routes(container, "-6"),
        "rules4": rules(container, "-4"),
        "rules6": rules(container, "-6"),
    })
}

/// ADD, CHECK, DEL, DEL of the list `plugins` at `version`, inside a
/// host namespace holding device `dev0`: `host-device` runs there (a
/// wrapper), the plugin named `under_test` is the side's, the others the
/// reference's.
fn run_list(
    side: Side,
    tag: &str,
    version: &str,
    ifname: &str,
    plugins: &Value,
    under_test: &str,
) -> Run {
    let host = NetNs::create(&format!("{tag}-host"));
    let container = NetNs::create(&format!("{tag}-ctr"));
    let made = ip(&[
        "-n",
        host.name(),
        "link",
        "add",
        "dev0",
        "address",
        DEVICE_MAC,
        "type",
        "veth",
        "peer",
        "name",
        "dev0p",
        "address",
        PEER_MAC,
    ]);
    assert!(made.success(), "{made:?}");
    assert!(ip(&["-n", host.name(), "link", "set", "dev0", "up"]).success());
    let wrappers = tempfile::tempdir().expect("a temporary directory");
    let device_dir = if under_test == "host-device" {
        side.dir()
    } else {
        std::os::unix::fs::symlink(
            side.dir().join(under_test),
            wrappers.path().join(under_test),
        )
        .expect("link the plugin under test");
        reference_plugin_dir()
    };
    in_host_namespace(wrappers.path(), &device_dir.join("host-device"), &host);
    let dirs = NetDirs::new(
        "hd-vs-reference-",
        vec![wrappers.path().to_path_buf(), reference_plugin_dir()],
    );
    let net = "hd-vs";
    dirs.reset(&json!({"cniVersion": version, "name": net, "plugins": plugins}));
    let cid = format!("hd-vs-{}", std::process::id());
    let add = dirs.run(Via::Libcni, "add", net, &container, &cid, ifname);
    assert_eq!(add["ok"], true, "{side:?} ADD at {version}: {add}");
    let after_add = kernel(&host, &container);
    let check = dirs.run(Via::Libcni, "check", net, &container, &cid, ifname);
    let del = dirs.run(Via::Libcni, "del", net, &container, &cid, ifname);
    assert_eq!(del["ok"], true, "{side:?} DEL at {version}: {del}");
    let after_del = kernel(&host, &container);
    let again = dirs.run(Via::Libcni, "del", net, &container, &cid, ifname);
    Run {
        add: add["result"].clone(),
        after_add,
        check: json!({"ok": check["ok"], "msg": check["error"]["msg"]}),
        after_del,
        del_again: again["ok"].clone(),
    }
}

/// ADD, CHECK, DEL of `static` alone at `version`.
fn run_static(side: Side, version: &str, plugin: &Value) -> Run {
    let container = NetNs::create("st-ctr");
    let dirs = NetDirs::new("st-vs-reference-", vec![side.dir()]);
    let net = "st-vs";
    dirs.reset(&json!({"cniVersion": version, "name": net, "plugins": [plugin]}));
    let cid = format!("st-vs-{}", std::process::id());
    let add = dirs.run(Via::Libcni, "add", net, &container, &cid, "eth0");
    assert_eq!(add["ok"], true, "{side:?} ADD at {version}: {add}");
    let check = dirs.run(Via::Libcni, "check", net, &container, &cid, "eth0");
    let del = dirs.run(Via::Libcni, "del", net, &container, &cid, "eth0");
    let again = dirs.run(Via::Libcni, "del", net, &container, &cid, "eth0");
    Run {
        add: add["result"].clone(),
        after_add: json!(null),
        check: json!({"ok": check["ok"], "msg": check["error"]["msg"]}),
        after_del: del["ok"].clone(),
        del_again: again["ok"].clone(),
    }
}

/// `ours_whole`: whether the list's CHECK and second DEL must succeed
/// (when `host-device` is ours: Debian's fails a second DEL).
fn compare(version: &str, mut ours: Run, mut reference: Run, ours_whole: bool) {
    tests::fill_ip_versions(&mut ours.add);
    tests::fill_ip_versions(&mut reference.add);
    // After sbr, host-device's CHECK (the reference's, first in the
    // list) finds its routes gone from the main table, on both sides.
    if version != "0.3.1" && ours_whole {
        assert_eq!(
            ours.check["ok"], true,
            "our CHECK at {version}: {}",
            ours.check
        );
    }
    tests::assert_same_steps(
        version,
        &[
            ("ADD result", &ours.add, &reference.add),
            ("kernel after ADD", &ours.after_add, &reference.after_add),
            ("CHECK", &ours.check, &reference.check),
            ("kernel after DEL", &ours.after_del, &reference.after_del),
        ],
    );
    if ours_whole {
        assert_eq!(ours.del_again, true, "our second DEL at {version}");
    }
}

fn same_as_reference(tag: &str, ifname: &str, plugins: Value, under_test: &str) {
    for version in VERSIONS {
        let ours = run_list(Side::Ours, tag, version, ifname, &plugins, under_test);
        let reference = run_list(Side::Reference, tag, version, ifname, &plugins, under_test);
        compare(version, ours, reference, under_test == "host-device");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn host_device_by_name_matches_the_reference() {
    same_as_reference(
        "hdn",
        "net1",
        json!([{"type": "host-device", "device": "dev0"}]),
        "host-device",
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn host_device_by_mac_with_static_addresses_matches_the_reference() {
    same_as_reference(
        "hdm",
        "eth0",
        json!([{"type": "host-device", "hwaddr": DEVICE_MAC,
               "ipam": {"type": "static",
                        "addresses": [{"address": "10.217.1.5/24", "gateway": "10.217.1.1"},
                                      {"address": "fd00:217:1::5/64"}],
                        "routes": [{"dst": "0.0.0.0/0", "gw": "10.217.1.1"}]},
               "dns": {"nameservers": ["10.217.1.53"]}}]),
        "host-device",
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn static_matches_the_reference() {
    let plugin = json!({"type": "static",
        "ipam": {"type": "static",
                 "addresses": [{"address": "10.217.2.5/24", "gateway": "10.217.2.1"},
                               {"address": "fd00:217:2::5/64", "gateway": "fd00:217:2::1"}],
                 "routes": [{"dst": "0.0.0.0/0"}, {"dst": "192.168.0.0/16", "gw": "10.217.2.1"}],
                 "dns": {"nameservers": ["10.217.2.53"], "domain": "example.com",
                         "search": ["example.com"], "options": ["ndots:2"]}}});
    for version in VERSIONS {
        let ours = run_static(Side::Ours, version, &plugin);
        let reference = run_static(Side::Reference, version, &plugin);
        compare(version, ours, reference, true);
    }
}

/// A device with an address of each family and a default route, as
/// `host-device` and `static` leave it, then `sbr`.
fn sbr_after_host_device(sbr: Value) -> Value {
    json!([{"type": "host-device", "device": "dev0",
            "ipam": {"type": "static",
                     "addresses": [{"address": "10.217.3.5/24", "gateway": "10.217.3.1"},
                                   {"address": "fd00:217:3::5/64", "gateway": "fd00:217:3::1"}],
                     "routes": [{"dst": "0.0.0.0/0"}, {"dst": "10.99.0.0/16"}]}},
           sbr])
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn sbr_with_a_table_per_address_matches_the_reference() {
    same_as_reference(
        "sbrt",
        "eth0",
        sbr_after_host_device(json!({"type": "sbr"})),
        "sbr",
    );
}

// Debian's sbr (1.1.1) predates `table`, `gateways` and `addSourceHints`
// (it ignores them), so those are compared with the v1.9 behaviour in
// `plugins_sample::sbr`'s own tests instead.
