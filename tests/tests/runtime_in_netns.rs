//! Our runtime (`cnitool`) driving Debian's reference plugins against a real
//! network namespace, compared with the same scenario through the reference
//! runtime library (`libcni`, via `cnidriver`): the kernel state after each
//! step (`ip -n NS -j addr`, host links, host-local's reservations) and the
//! runtimes' answers must agree.
//!
//! Needs root and iproute2 (`ip`): without them every test here fails with
//! a message saying so (CI runs as root). Each run creates the namespace
//! `cni-rs-test-<pid>-<tag>` and deletes it, and the bridge it made, in a
//! drop guard ([`tests::NetNs`]), even when the test panics.

use serde_json::{json, Value};
use tests::sandbox::{NetDirs, Via};
use tests::{global_addrs, host_link, link_is_up, reference_plugin_dir, NetNs};

const CID: &str = "netns-c1";

fn sandbox() -> NetDirs {
    NetDirs::new("cni-netns-", vec![reference_plugin_dir()])
}

/// The names of host-local's reservations for `net`.
fn reserved(dirs: &NetDirs, net: &str) -> Vec<String> {
    dirs.reservations(net)
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// A link as `ip -j addr` shows it, reduced to what is stable: name,
/// whether it is up, and its addresses (`a.b.c.d/len`), link-local IPv6
/// ones left out (derived from a random MAC).
fn link_state(link: Option<Value>) -> Value {
    let Some(link) = link else {
        return Value::Null;
    };
    json!({"ifname": link["ifname"], "up": link_is_up(&link), "addrs": global_addrs(&link)})
}

/// Replaces what the kernel picks at random in a result (MAC addresses,
/// the host-side veth name) with placeholders.
fn redact_random(result: &mut Value) {
    for iface in result["interfaces"].as_array_mut().into_iter().flatten() {
        if iface.get("mac").is_some() && iface["mac"] != "00:00:00:00:00:00" {
            iface["mac"] = json!("<mac>");
        }
        if iface["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("veth"))
        {
            iface["name"] = json!("<veth>");
        }
    }
}

/// `text` with every MAC address (`xx:xx:xx:xx:xx:xx`) replaced by `<mac>`.
fn redact_macs(text: &str) -> String {
    let is_mac = |w: &str| {
        let parts: Vec<&str> = w.split(':').collect();
        parts.len() == 6
            && parts
                .iter()
                .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()))
    };
    text.split(' ')
        .map(|w| if is_mac(w) { "<mac>" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The reference `loopback` plugin (list version 1.0.0, ifname `lo`):
/// ADD brings `lo` up with 127.0.0.1/8 and reports it; CHECK passes; DEL
/// takes it down; DEL again succeeds. Ours and libcni alike.
#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn loopback_in_a_namespace() {
    let dirs = sandbox();
    let list = json!({"cniVersion": "1.0.0", "name": "lonet", "plugins": [{"type": "loopback"}]});
    let mut observations = Vec::new();
    for via in [Via::Cnitool, Via::Libcni] {
        let ns = NetNs::create("lo");
        dirs.reset(&list);
        assert_eq!(
            link_state(ns.link("lo"))["up"],
            false,
            "a new namespace's lo is down"
        );

        let add = dirs.run(via, "add", "lonet", &ns, CID, "lo");
        assert_eq!(add["ok"], true, "{via:?}: {add}");
        let result = &add["result"];
        assert_eq!(result["cniVersion"], "1.0.0");
        assert_eq!(
            result["interfaces"],
            json!([{"name": "lo", "mac": "00:00:00:00:00:00", "sandbox": ns.path()}]),
            "{via:?}"
        );
        assert_eq!(
            result["ips"][0],
            json!({"interface": 0, "address": "127.0.0.1/8"}),
            "{via:?}"
        );
        let lo_after_add = link_state(ns.link("lo"));
        assert_eq!(lo_after_add["up"], true, "{via:?}: {lo_after_add}");
        assert_eq!(lo_after_add["addrs"][0], "127.0.0.1/8", "{via:?}");

        let check = dirs.run(via, "check", "lonet", &ns, CID, "lo");
        assert_eq!(check, json!({"ok": true, "result": null}), "{via:?}");

        let del = dirs.run(via, "del", "lonet", &ns, CID, "lo");
        assert_eq!(del, json!({"ok": true, "result": null}), "{via:?}");
        let lo_after_del = link_state(ns.link("lo"));
        assert_eq!(lo_after_del["up"], false, "{via:?}: {lo_after_del}");
        let del_again = dirs.run(via, "del", "lonet", &ns, CID, "lo");
        assert_eq!(del_again, json!({"ok": true, "result": null}), "{via:?}");

        observations.push(json!({
            "add": add, "loAfterAdd": lo_after_add, "check": check,
            "del": del, "loAfterDel": lo_after_del, "delAgain": del_again
        }));
    }
    assert_eq!(
        observations[0], observations[1],
        "cnitool (left) and libcni (right) agree"
    );
}

/// The reference `bridge` plugin (`isGateway`, IPAM by host-local on a
/// private test subnet) in a list of version 1.0.0: ADD creates the
/// bridge with the gateway address on the host and `eth0` with the first
/// address in the namespace, reserved by host-local; CHECK passes; DEL
/// removes `eth0` (and its host-side veth) and the reservation; DEL again
/// succeeds. Ours and libcni alike.
#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn bridge_with_host_local_in_a_namespace() {
    let dirs = sandbox();
    let bridge = format!("cnirs{}", std::process::id() % 1000);
    let list = json!({
        "cniVersion": "1.0.0",
        "name": "brnet",
        "plugins": [{
            "type": "bridge", "bridge": bridge, "isGateway": true,
            "ipam": {"type": "host-local", "dataDir": dirs.ipam(),
                     "ranges": [[{"subnet": "10.213.99.0/24"}]]}
        }]
    });
    let mut observations = Vec::new();
    for via in [Via::Cnitool, Via::Libcni] {
        let ns = NetNs::create("br");
        ns.delete_link_on_drop(&bridge);
        dirs.reset(&list);

        let mut add = dirs.run(via, "add", "brnet", &ns, CID, "eth0");
        assert_eq!(add["ok"], true, "{via:?}: {add}");
        let veth = add["result"]["interfaces"][1]["name"]
            .as_str()
            .expect("the host-side veth")
            .to_owned();
        redact_random(&mut add["result"]);
        assert_eq!(
            add["result"],
            json!({
                "cniVersion": "1.0.0",
                "interfaces": [
                    {"name": bridge, "mac": "<mac>"},
                    {"name": "<veth>", "mac": "<mac>"},
                    {"name": "eth0", "mac": "<mac>", "sandbox": ns.path()}
                ],
                "ips": [{"interface": 2, "address": "10.213.99.2/24", "gateway": "10.213.99.1"}]
            }),
            "{via:?}"
        );
        let eth0_after_add = link_state(ns.link("eth0"));
        assert_eq!(
            eth0_after_add,
            json!({"ifname": "eth0", "up": true, "addrs": ["10.213.99.2/24"]}),
            "{via:?}"
        );
        let bridge_state = link_state(host_link(&bridge));
        assert_eq!(
            bridge_state["addrs"],
            json!(["10.213.99.1/24"]),
            "{via:?}: the gateway is on the bridge"
        );
        assert!(host_link(&veth).is_some(), "{via:?}: {veth} on the host");
        assert_eq!(reserved(&dirs, "brnet"), ["10.213.99.2"], "{via:?}");

        let check = dirs.run(via, "check", "brnet", &ns, CID, "eth0");
        assert_eq!(check, json!({"ok": true, "result": null}), "{via:?}");

        let del = dirs.run(via, "del", "brnet", &ns, CID, "eth0");
        assert_eq!(del, json!({"ok": true, "result": null}), "{via:?}");
        assert_eq!(ns.link("eth0"), None, "{via:?}: eth0 is gone");
        assert!(host_link(&veth).is_none(), "{via:?}: {veth} is gone");
        assert_eq!(reserved(&dirs, "brnet"), Vec::<String>::new(), "{via:?}");
        let del_again = dirs.run(via, "del", "brnet", &ns, CID, "eth0");
        assert_eq!(del_again, json!({"ok": true, "result": null}), "{via:?}");

        observations.push(json!({
            "add": add, "eth0AfterAdd": eth0_after_add, "bridge": bridge_state,
            "check": check, "del": del, "delAgain": del_again
        }));
        // `ns` dropped here: the namespace and the bridge are deleted, so
        // the next runtime starts from the same state.
    }
    assert_eq!(host_link(&bridge), None, "the guard deleted the bridge");
    assert_eq!(
        observations[0], observations[1],
        "cnitool (left) and libcni (right) agree"
    );
}

/// CHECK notices what the kernel lost: after `eth0` is deleted behind the
/// runtime's back, the bridge plugin's CHECK fails in both runtimes with
/// the same code and message (the reference bridge notices first that the
/// bridge's MAC changed, as its last port went away), and DEL still cleans
/// up.
#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn check_fails_in_both_when_the_interface_is_gone() {
    let dirs = sandbox();
    let bridge = format!("cnirs{}c", std::process::id() % 1000);
    let list = json!({
        "cniVersion": "1.0.0",
        "name": "brgone",
        "plugins": [{
            "type": "bridge", "bridge": bridge,
            "ipam": {"type": "host-local", "dataDir": dirs.ipam(),
                     "ranges": [[{"subnet": "10.213.98.0/24"}]]}
        }]
    });
    let mut errors = Vec::new();
    for via in [Via::Cnitool, Via::Libcni] {
        let ns = NetNs::create("gone");
        ns.delete_link_on_drop(&bridge);
        dirs.reset(&list);
        assert_eq!(dirs.run(via, "add", "brgone", &ns, CID, "eth0")["ok"], true);
        let out = tests::ip(&["-n", ns.name(), "link", "del", "eth0"]);
        assert!(out.success(), "{out:?}");
        let check = dirs.run(via, "check", "brgone", &ns, CID, "eth0");
        assert_eq!(check["ok"], false, "{via:?}: {check}");
        let mut error = check["error"].clone();
        error["msg"] = redact_macs(error["msg"].as_str().unwrap_or_default()).into();
        errors.push(error);
        let del = dirs.run(via, "del", "brgone", &ns, CID, "eth0");
        assert_eq!(del, json!({"ok": true, "result": null}), "{via:?}");
        assert_eq!(reserved(&dirs, "brgone"), Vec::<String>::new());
    }
    assert_eq!(errors[0], errors[1], "cnitool (left) and libcni (right)");
    assert_eq!(
        errors[0],
        json!({"code": 999, "msg": format!("Bridge interface {bridge} Mac doesn't match: <mac>")})
    );
}
