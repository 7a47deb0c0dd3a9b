//! ipvlan in-process. Bad input without root; with root, in namespaces
//! of the tests' own, a link made (on a kernel with ipvlan) or refused
//! naming the missing support, and nothing left either way.

use cni_net::testing::TempNetns;
use cni_net::{LinkKind, NetError};
use cni_skel::{Outcome, TestRequest};
use cni_types::Code;
use cni_version::PluginInfo;
use serde_json::{json, Value};

use super::*;

fn conf(extra: Value) -> Value {
    let mut c = json!({"cniVersion": "1.0.0", "name": "ipvnet", "type": "ipvlan",
                       "master": "par0", "ipam": {"type": "host-local"}});
    c.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    c
}

fn offline(conf: &Value) -> Outcome {
    TestRequest::new("ADD")
        .env("CNI_CONTAINERID", "c1")
        .env("CNI_NETNS", "/run/netns/cni-rs-ipvlan-does-not-exist")
        .env("CNI_IFNAME", "eth0")
        .stdin(conf.to_string())
        .run(&Ipvlan, &PluginInfo::all())
}

#[test]
fn a_mode_that_does_not_exist_or_nothing_to_address_from_is_code_7_naming_it() {
    let two = json!({"cniVersion": "1.0.0", "interfaces": [{"name": "a"}, {"name": "b"}],
                     "ips": [{"address": "10.1.1.2/24", "interface": 0}]});
    for (extra, msg, detail) in [
        (
            json!({"mode": "l4"}),
            "invalid mode",
            "unknown ipvlan mode \"l4\"",
        ),
        (
            json!({"ipam": {}}),
            "invalid ipam.type",
            "no prevResult addresses",
        ),
        (
            json!({"master": "", "prevResult": two}),
            "invalid master",
            "prevResult lacks a single named interface",
        ),
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
fn an_ipvlan_is_made_or_refused_naming_the_missing_support_and_nothing_is_left() {
    let host = TempNetns::new("ipv-host").unwrap();
    host.add_veth("par0", "par1", None).unwrap();
    let container = TempNetns::new("ipv-cont").unwrap();
    let ipam = tempfile::tempdir().unwrap();
    let c = conf(
        json!({"mode": "l3", "ipam": {"type": "host-local", "dataDir": ipam.path(),
                                              "ranges": [[{"subnet": "10.9.51.0/24"}]]}}),
    );
    let run = |command: &str, conf: &Value| {
        let req = container
            .request(command, "eth0")
            .env("CNI_PATH", "/usr/lib/cni")
            .stdin(conf.to_string());
        host.run(|_| Ok::<_, NetError>(req.run(&Ipvlan, &PluginInfo::all())))
            .unwrap()
    };
    let add = run("ADD", &c);
    match add.error() {
        None => {
            let mut inside = container.socket().unwrap();
            assert_eq!(inside.link("eth0").unwrap().kind, Some(LinkKind::Ipvlan));
            let mut with_prev = c.clone();
            with_prev["prevResult"] = add.json();
            assert_eq!(run("CHECK", &with_prev).error(), None);
            crate::test_support::assert_prev_result_missing(
                &run("CHECK", &c),
                "Required prevResult missing",
            );
            with_prev["mode"] = "l2".into();
            let err = run("CHECK", &with_prev).error().unwrap();
            assert_eq!(
                err.msg,
                "container ipvlan mode l3 does not match expected value: mode l2"
            );
        }
        Some(err) => {
            assert_eq!(err.code, Code::INTERNAL);
            let msg = &err.msg;
            assert!(
                msg.starts_with("the kernel has no ipvlan support: failed to create ipvlan link ")
                    && msg.ends_with(" on link \"par0\""),
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
    let held = cni_net::testing::held_addresses(ipam.path(), "ipvnet");
    assert_eq!(held, Vec::<String>::new(), "no reservation left");
}
