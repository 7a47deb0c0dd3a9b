//! tap in-process, in namespaces of the tests' own (the plugin runs in a
//! "host" namespace, the tap goes into the container's). IPAM is the
//! reference host-local. Root tests are marked; each cleans up by
//! dropping its namespaces. The reference binary is not shipped by
//! Debian, so what is expected of the device is the reference source's
//! behaviour: with both `owner` and `group`, netlink's `Tuntap` with
//! `vnet_hdr` and packet information; otherwise `ip tuntap add mode tap`.

use cni_net::testing::TempNetns;
use cni_net::NetError;
use cni_skel::{Outcome, TestRequest};
use cni_types::Code;
use cni_version::PluginInfo;
use serde_json::{json, Value};

use super::*;

fn run(host: &TempNetns, container: &TempNetns, command: &str, conf: &Value) -> Outcome {
    let req = container
        .request(command, "tap0")
        .env("CNI_PATH", "/usr/lib/cni")
        .stdin(conf.to_string());
    host.run(|_| Ok::<_, NetError>(req.run(&Tap, &PluginInfo::all())))
        .unwrap()
}

/// `ip -d -j link show NAME` in `ns`: the kernel's view of the device.
fn details(ns: &TempNetns, name: &str) -> Value {
    ns.link_details(name).unwrap()
}

fn namespaces() -> (TempNetns, TempNetns) {
    (
        TempNetns::new("tap-host").unwrap(),
        TempNetns::new("tap-cont").unwrap(),
    )
}

#[test]
fn an_owner_or_group_the_kernel_reads_as_unset_is_refused_naming_it() {
    for field in ["owner", "group"] {
        let mut c = json!({"cniVersion": "1.0.0", "name": "t", "type": "tap",
                           "owner": 107, "group": 107});
        c[field] = json!(4294967295u32);
        let err = TestRequest::new("ADD")
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", "/run/netns/cni-rs-tap-does-not-exist")
            .env("CNI_IFNAME", "tap0")
            .stdin(c.to_string())
            .run(&Tap, &PluginInfo::all())
            .error()
            .expect("an error");
        let msg = format!("invalid {field}");
        assert_eq!(
            (err.code, err.msg.as_str()),
            (Code(7), msg.as_str()),
            "{err:?}"
        );
    }
}

#[test]
fn an_id_outside_the_user_namespaces_map_is_not_one_the_kernel_takes() {
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("uid_map");
    std::fs::write(&map, "         0     100000      65536\n").unwrap();
    assert!(super::mapped(0, &map) && super::mapped(65535, &map));
    assert!(!super::mapped(65536, &map) && !super::mapped(u32::MAX, &map));
    std::fs::write(&map, "         0          0 4294967295\n").unwrap();
    assert!(super::mapped(u32::MAX - 1, &map) && !super::mapped(u32::MAX, &map));
}

#[test]
fn an_selinux_context_or_bad_mtu_is_refused_naming_it() {
    for (extra, code, msg) in [
        (
            json!({"selinuxContext": "system_u:system_r:container_t:s0"}),
            Code(2),
            "selinuxContext is not supported: this plugin runs no `ip` command to label",
        ),
        (json!({"mtu": 20}), Code(7), "invalid mtu"),
        (
            json!({"mac": "01:00:5e:00:00:01"}),
            Code(7),
            "invalid MAC address in mac",
        ),
    ] {
        let mut c = json!({"cniVersion": "1.0.0", "name": "t", "type": "tap"});
        c.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let err = TestRequest::new("ADD")
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", "/run/netns/cni-rs-tap-does-not-exist")
            .env("CNI_IFNAME", "tap0")
            .stdin(c.to_string())
            .run(&Tap, &PluginInfo::all())
            .error()
            .expect("an error");
        assert_eq!((err.code, err.msg.as_str()), (code, msg), "{err:?}");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn with_owner_and_group_a_vnet_hdr_tap_persists_with_the_mac_and_mtu_asked() {
    let (host, container) = namespaces();
    let c = json!({"cniVersion": "1.0.0", "name": "vm", "type": "tap", "owner": 107,
                   "group": 108, "mtu": 1400, "runtimeConfig": {"mac": "0a:58:0a:09:34:05"}});
    let add = run(&host, &container, "ADD", &c);
    assert_eq!(add.error(), None);
    let result = add.json();
    assert_eq!(
        result,
        json!({"cniVersion": "1.0.0",
               "interfaces": [{"name": "tap0", "mac": "0a:58:0a:09:34:05",
                               "sandbox": container.path()}]})
    );
    let d = details(&container, "tap0");
    assert_eq!(
        (d["mtu"].as_u64(), d["operstate"].as_str()),
        (Some(1400), Some("DOWN"))
    );
    assert!(d["flags"].as_array().unwrap().contains(&json!("UP")), "{d}");
    let data = &d["linkinfo"]["info_data"];
    assert_eq!(
        (
            &data["type"],
            &data["pi"],
            &data["vnet_hdr"],
            &data["multi_queue"],
            &data["persist"]
        ),
        (
            &json!("tap"),
            &json!(true),
            &json!(true),
            &json!(false),
            &json!(true)
        ),
        "{data}"
    );
    assert_eq!(
        (data["user"].as_u64(), data["group"].as_u64()),
        (Some(107), Some(108))
    );

    let mut with_prev = c.clone();
    with_prev["prevResult"] = result;
    assert_eq!(run(&host, &container, "CHECK", &with_prev).error(), None);
    crate::test_support::assert_prev_result_missing(
        &run(&host, &container, "CHECK", &c),
        "Required prevResult missing",
    );
    for _ in 0..2 {
        assert_eq!(run(&host, &container, "DEL", &c).error(), None);
    }
    assert!(container
        .socket()
        .unwrap()
        .find_link("tap0")
        .unwrap()
        .is_none());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_multi_queue_tap_joins_the_bridge_with_ipams_address() {
    let (host, container) = namespaces();
    let bridge = container
        .socket()
        .unwrap()
        .ensure_bridge("br0", None)
        .unwrap();
    let ipam = tempfile::tempdir().unwrap();
    let c = json!({"cniVersion": "0.4.0", "name": "vmnet", "type": "tap", "multiQueue": true,
                   "bridge": "br0",
                   "ipam": {"type": "host-local", "dataDir": ipam.path(),
                            "ranges": [[{"subnet": "10.9.52.0/24"}]]}});
    let add = run(&host, &container, "ADD", &c);
    assert_eq!(add.error(), None);
    let result = add.json();
    assert_eq!(result["ips"][0]["address"], "10.9.52.2/24");
    let link = container.socket().unwrap().link("tap0").unwrap();
    assert_eq!(link.master, Some(bridge.index));
    let data = &details(&container, "tap0")["linkinfo"]["info_data"];
    assert_eq!(
        (&data["pi"], &data["vnet_hdr"], &data["multi_queue"]),
        (&json!(false), &json!(false), &json!(true)),
        "ip tuntap's flags: {data}"
    );
    let mut with_prev = c.clone();
    with_prev["prevResult"] = result;
    assert_eq!(run(&host, &container, "CHECK", &with_prev).error(), None);
    assert_eq!(run(&host, &container, "DEL", &c).error(), None);
    assert!(container
        .socket()
        .unwrap()
        .find_link("tap0")
        .unwrap()
        .is_none());
    assert_eq!(
        std::fs::read_dir(ipam.path().join("vmnet"))
            .unwrap()
            .count(),
        2,
        "lock, last"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_bridge_that_is_missing_or_not_a_bridge_is_code_7_and_changes_nothing() {
    let (host, container) = namespaces();
    container.add_veth("notbr0", "notbr1", None).unwrap();
    for (bridge, detail) in [
        ("br9", "link \"br9\" not found in the container's namespace"),
        (
            "notbr0",
            "link \"notbr0\" in the container's namespace is not a bridge",
        ),
    ] {
        let c = json!({"cniVersion": "1.0.0", "name": "vm", "type": "tap", "bridge": bridge});
        let err = run(&host, &container, "ADD", &c).error().unwrap();
        assert_eq!(
            (err.code, err.msg.as_str(), err.details.as_str()),
            (Code(7), "invalid bridge", detail)
        );
    }
    assert_eq!(
        container.socket().unwrap().links().unwrap().len(),
        3,
        "lo and the pair"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_repeated_add_fails_and_leaves_the_live_tap_alone() {
    let (host, container) = namespaces();
    let c = json!({"cniVersion": "1.0.0", "name": "vm", "type": "tap"});
    assert_eq!(run(&host, &container, "ADD", &c).error(), None);
    let live = container.socket().unwrap().link("tap0").unwrap();
    let err = run(&host, &container, "ADD", &c).error().unwrap();
    assert!(err.msg.contains("rename"), "{err:?}");
    let mut inside = container.socket().unwrap();
    assert_eq!(inside.link("tap0").unwrap().index, live.index, "tap0 kept");
    assert_eq!(inside.links().unwrap().len(), 2, "lo and tap0, no leftover");
}
