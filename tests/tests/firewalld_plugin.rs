//! Our `firewall` plugin's firewalld backend against a real firewalld on a
//! private bus (`tests::firewalld::PrivateFirewalld`, reached through
//! `DBUS_SYSTEM_BUS_ADDRESS`), and the reference plugin beside it: both
//! put the same sources in the zone. The plugin runs in a namespace of the
//! test's own, so no iptables or nftables rule of the host is touched.

use cni_netfilter::firewalld::Firewalld;
use serde_json::{json, Value};
use tests::firewalld::PrivateFirewalld;
use tests::{plugin_bin_dir, reference_plugin_dir, run_plugin_in_netns, NetNs, RawOutput};

/// The container's addresses in the previous result, and the sources
/// firewalld must get for them (the address alone).
const ADDRESSES: [(&str, &str); 2] = [
    ("10.232.0.5/24", "10.232.0.5/32"),
    ("fd00:232::5/64", "fd00:232::5/128"),
];

fn conf(patch: Value) -> Value {
    let mut conf = json!({
        "cniVersion": "0.4.0", "name": "fwd-net", "type": "firewall",
        "prevResult": {"cniVersion": "0.4.0",
            "interfaces": [{"name": "eth0", "sandbox": "/var/run/netns/none"}],
            "ips": [
                {"version": "4", "address": ADDRESSES[0].0, "interface": 0},
                {"version": "6", "address": ADDRESSES[1].0, "interface": 0}]}
    });
    for (k, v) in patch.as_object().unwrap() {
        conf[k] = v.clone();
    }
    conf
}

/// Runs the `firewall` of `dir` in `ns`, on the bus at `address`.
fn run(dir: &std::path::Path, ns: &NetNs, address: &str, command: &str, conf: &Value) -> RawOutput {
    let bin = dir.join("firewall");
    let env = [
        ("CNI_COMMAND", command),
        ("CNI_CONTAINERID", "fwd-plugin"),
        ("CNI_NETNS", "/var/run/netns/none"),
        ("CNI_IFNAME", "eth0"),
        ("CNI_PATH", dir.to_str().unwrap()),
        ("DBUS_SYSTEM_BUS_ADDRESS", address),
    ];
    run_plugin_in_netns(ns.name(), &bin, &env, conf.to_string().as_bytes())
}

fn ok(out: &RawOutput, what: &str) {
    assert!(
        out.exit.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The CNI error a failed run printed.
fn error(out: &RawOutput, what: &str) -> Value {
    assert!(!out.exit.success(), "{what} succeeded");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what}: {e}: {out:?}"))
}

/// Whether each container source is in `zone`.
fn in_zone(fw: &PrivateFirewalld, zone: &str) -> [bool; 2] {
    let conn = Firewalld::connect(fw.address()).unwrap().unwrap();
    ADDRESSES.map(|(_, source)| conn.query_source(zone, source).unwrap())
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn add_puts_the_container_addresses_in_the_zone_check_finds_them_del_takes_them_out() {
    let fw = PrivateFirewalld::start();
    let ns = NetNs::create("fwd-plugin");
    let dir = plugin_bin_dir();
    for (patch, zone) in [
        (json!({"backend": "firewalld"}), "trusted"),
        // The default backend is firewalld when it owns its name.
        (json!({}), "trusted"),
        (
            json!({"backend": "firewalld", "firewalldZone": "internal"}),
            "internal",
        ),
    ] {
        let c = conf(patch.clone());
        ok(
            &run(&dir, &ns, fw.address(), "ADD", &c),
            &format!("ADD {patch}"),
        );
        assert_eq!(in_zone(&fw, zone), [true, true], "{patch}");
        ok(
            &run(&dir, &ns, fw.address(), "CHECK", &c),
            &format!("CHECK {patch}"),
        );
        ok(
            &run(&dir, &ns, fw.address(), "DEL", &c),
            &format!("DEL {patch}"),
        );
        assert_eq!(in_zone(&fw, zone), [false, false], "{patch}");
        // CHECK after DEL fails, naming the missing address.
        let err = error(
            &run(&dir, &ns, fw.address(), "CHECK", &c),
            "CHECK after DEL",
        );
        assert!(
            err["msg"].as_str().unwrap().contains("10.232.0.5/32"),
            "{err}"
        );
        // A second DEL succeeds.
        ok(
            &run(&dir, &ns, fw.address(), "DEL", &c),
            &format!("DEL again {patch}"),
        );
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn ours_puts_the_same_sources_in_the_zone_as_the_reference() {
    let fw = PrivateFirewalld::start();
    let ns = NetNs::create("fwd-vs-ref");
    let c = conf(json!({"backend": "firewalld"}));
    for dir in [reference_plugin_dir(), plugin_bin_dir()] {
        ok(
            &run(&dir, &ns, fw.address(), "ADD", &c),
            &format!("ADD {}", dir.display()),
        );
        assert_eq!(in_zone(&fw, "trusted"), [true, true], "{}", dir.display());
        ok(
            &run(&dir, &ns, fw.address(), "DEL", &c),
            &format!("DEL {}", dir.display()),
        );
        assert_eq!(in_zone(&fw, "trusted"), [false, false], "{}", dir.display());
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_zone_firewalld_does_not_know_is_refused_naming_it() {
    let fw = PrivateFirewalld::start();
    let ns = NetNs::create("fwd-zone");
    let zone = format!("nosuch{}", std::process::id());
    let c = conf(json!({"backend": "firewalld", "firewalldZone": zone}));
    let err = error(&run(&plugin_bin_dir(), &ns, fw.address(), "ADD", &c), "ADD");
    assert_eq!(err["code"], 7, "{err}");
    assert!(err["msg"].as_str().unwrap().contains(&zone), "{err}");
    assert_eq!(in_zone(&fw, "trusted"), [false, false]);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn firewalld_asked_for_but_not_running_is_a_clear_error_and_del_still_succeeds() {
    let bus = PrivateFirewalld::bus_only();
    let ns = NetNs::create("fwd-absent");
    let dir = plugin_bin_dir();
    let c = conf(json!({"backend": "firewalld"}));
    let err = error(&run(&dir, &ns, bus.address(), "ADD", &c), "ADD");
    assert_eq!(err["code"], 11, "{err}");
    assert!(
        err["msg"]
            .as_str()
            .unwrap()
            .contains("firewalld is not running"),
        "{err}"
    );
    ok(&run(&dir, &ns, bus.address(), "DEL", &c), "DEL");
}
