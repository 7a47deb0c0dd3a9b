use cni_net::testing::TempNetns;
use cni_skel::TestRequest;
use cni_types::Code;
use cni_version::PluginInfo;
use serde_json::{json, Value};

use super::*;

fn conf(fields: Value) -> String {
    let mut conf = json!({"cniVersion": "1.0.0", "name": "vrf", "type": "vrf",
        "prevResult": {"cniVersion": "1.0.0", "ips": [{"address": "10.220.0.5/24"}]}});
    conf.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    conf.to_string()
}

#[test]
fn bad_configuration_is_code_7_naming_the_field() {
    let cases = [
        (json!({}), "invalid vrfname"),
        (json!({"vrfname": "a b"}), "invalid vrfname"),
        (
            json!({"vrfname": "blue", "prevResult": null}),
            "missing prevResult from earlier plugin",
        ),
    ];
    for (fields, msg) in cases {
        crate::test_support::assert_add_refused(&Vrf, conf(fields.clone()), &fields, msg);
    }
}

/// On a kernel without VRF support (this repository's test host), ADD
/// fails naming the missing support and leaves the interface as it was;
/// with it, the interface is the new VRF's port (`tests/vm/vrf.rs`
/// covers the rest there).
#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_kernel_without_vrf_names_the_missing_support_and_changes_nothing() {
    let ns = TempNetns::new("vrf").unwrap();
    ns.add_veth("eth0", "peer0", None).unwrap();
    let conf = conf(json!({"vrfname": "blue", "table": 1001}));
    let out = ns
        .request("ADD", "eth0")
        .stdin(conf.as_str())
        .run(&Vrf, &PluginInfo::all());
    let mut nl = ns.socket().unwrap();
    let eth0 = nl.link("eth0").unwrap();
    match out.error() {
        Some(err) => {
            assert!(err.msg.contains("the kernel has no vrf support"), "{err:?}");
            assert!(err.details.contains("not supported"), "{err:?}");
            assert!(nl.find_link("blue").unwrap().is_none());
            assert_eq!(eth0.master, None);
        }
        None => {
            let blue = nl.link("blue").unwrap();
            assert_eq!(eth0.master, Some(blue.index));
            let del = ns
                .request("DEL", "eth0")
                .stdin(conf.as_str())
                .run(&Vrf, &PluginInfo::all());
            assert_eq!(del.exit_code, 0);
            assert!(nl.find_link("blue").unwrap().is_none());
        }
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_link_of_that_name_that_is_not_a_vrf_is_refused() {
    let ns = TempNetns::new("vrf").unwrap();
    ns.add_veth("eth0", "blue", None).unwrap();
    let err = ns
        .request("ADD", "eth0")
        .stdin(conf(json!({"vrfname": "blue"})))
        .run(&Vrf, &PluginInfo::all())
        .error()
        .unwrap();
    assert_eq!(
        (err.code, err.msg.as_str()),
        (Code::INVALID_NETWORK_CONFIG, "invalid vrfname"),
        "{err:?}"
    );
    assert_eq!(ns.socket().unwrap().link("eth0").unwrap().master, None);
}

#[test]
fn del_succeeds_when_the_namespace_is_gone() {
    let out = TestRequest::del()
        .env("CNI_NETNS", "/run/netns/cni-rs-vrf-does-not-exist")
        .stdin(conf(json!({"vrfname": "blue"})))
        .run(&Vrf, &PluginInfo::all());
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
}
