//! vlan in-process. Bad input without root; with root, in namespaces of
//! the tests' own, a link made (on a kernel with 8021q) or refused
//! naming the missing support, and nothing left either way.

use cni_net::testing::TempNetns;
use cni_net::{LinkKind, NetError};
use cni_skel::{Outcome, TestRequest};
use cni_types::Code;
use cni_version::PluginInfo;
use serde_json::{json, Value};

use super::*;

fn conf(extra: Value) -> Value {
    let mut c = json!({"cniVersion": "1.0.0", "name": "vnet", "type": "vlan",
                       "master": "par0", "vlanId": 100, "ipam": {"type": "host-local"}});
    c.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    c
}

fn offline(conf: &Value) -> Outcome {
    TestRequest::new("ADD")
        .env("CNI_CONTAINERID", "c1")
        .env("CNI_NETNS", "/run/netns/cni-rs-vlan-does-not-exist")
        .env("CNI_IFNAME", "eth0")
        .stdin(conf.to_string())
        .run(&Vlan, &PluginInfo::all())
}

#[test]
fn a_vlan_id_of_0_or_4095_a_missing_master_or_ipam_is_code_7_naming_it() {
    for (extra, msg, detail) in [
        (
            json!({"vlanId": 0}),
            "invalid vlanId",
            "0: a VLAN id is between 1 and 4094",
        ),
        (json!({"vlanId": 4095}), "invalid vlanId", "4095: a VLAN id"),
        (json!({"vlanId": -3}), "invalid vlanId", "-3: a VLAN id"),
        (
            json!({"master": ""}),
            "invalid master",
            "\"master\" field is required",
        ),
        (json!({"ipam": {}}), "invalid ipam.type", "missing"),
    ] {
        let err = offline(&conf(extra.clone())).error().expect("an error");
        assert_eq!(
            (err.code, err.msg.as_str()),
            (Code(7), msg),
            "{extra}: {err:?}"
        );
        assert!(err.details.contains(detail), "{extra}: {err:?}");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_vlan_is_made_or_refused_naming_8021q_and_nothing_is_left() {
    let host = TempNetns::new("vl-host").unwrap();
    host.add_veth("par0", "par1", None).unwrap();
    let container = TempNetns::new("vl-cont").unwrap();
    let ipam = tempfile::tempdir().unwrap();
    let c = conf(
        json!({"ipam": {"type": "host-local", "dataDir": ipam.path(),
                                 "ranges": [[{"subnet": "10.9.50.0/24"}]]}}),
    );
    let run = |command: &str, conf: &Value| {
        let req = container
            .request(command, "eth0")
            .env("CNI_PATH", "/usr/lib/cni")
            .stdin(conf.to_string());
        host.run(|_| Ok::<_, NetError>(req.run(&Vlan, &PluginInfo::all())))
            .unwrap()
    };
    let add = run("ADD", &c);
    match add.error() {
        None => {
            let mut inside = container.socket().unwrap();
            assert_eq!(inside.link("eth0").unwrap().kind, Some(LinkKind::Vlan));
            let mut with_prev = c.clone();
            with_prev["prevResult"] = add.json();
            assert_eq!(run("CHECK", &with_prev).error(), None);
            crate::test_support::assert_prev_result_missing(
                &run("CHECK", &c),
                "vlan: Required prevResult missing",
            );
            with_prev["vlanId"] = 101.into();
            let err = run("CHECK", &with_prev).error().unwrap();
            assert!(err.msg.contains("vlan id 100"), "{err:?}");
        }
        Some(err) => {
            assert_eq!(err.code, Code::INTERNAL);
            let msg = &err.msg;
            assert!(
                msg.starts_with(
                    "the kernel has no vlan (8021q) support: failed to create vlan link "
                ) && msg.ends_with(" on link \"par0\""),
                "{err:?}"
            );
        }
    }
    let del = run("DEL", &c);
    assert_eq!(del.error(), None);
    assert!(container
        .socket()
        .unwrap()
        .find_link("eth0")
        .unwrap()
        .is_none());
    let held = cni_net::testing::held_addresses(ipam.path(), "vnet");
    assert_eq!(held, Vec::<String>::new(), "no reservation left");
}
