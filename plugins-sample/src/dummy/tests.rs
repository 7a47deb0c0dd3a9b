//! dummy in-process. Bad input without root; with root, in a namespace
//! of the test's own, a link made (on a kernel with the dummy driver) or
//! refused naming the missing support, and nothing left either way.

use cni_net::testing::TempNetns;
use cni_net::LinkKind;
use cni_skel::TestRequest;
use cni_types::Code;
use cni_version::PluginInfo;
use serde_json::json;

use super::*;

#[test]
fn without_ipam_add_is_code_7_naming_ipam_type() {
    let err = TestRequest::new("ADD")
        .env("CNI_CONTAINERID", "c1")
        .env("CNI_NETNS", "/run/netns/cni-rs-dummy-does-not-exist")
        .env("CNI_IFNAME", "eth0")
        .stdin(r#"{"cniVersion": "1.0.0", "name": "d", "type": "dummy"}"#)
        .run(&Dummy, &PluginInfo::all())
        .error()
        .expect("an error");
    assert_eq!((err.code, err.msg.as_str()), (Code(7), "invalid ipam.type"));
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_dummy_is_made_with_ipams_addresses_or_refused_naming_the_driver() {
    let container = TempNetns::new("dummy").unwrap();
    let ipam = tempfile::tempdir().unwrap();
    let c = json!({"cniVersion": "1.0.0", "name": "dnet", "type": "dummy",
                   "ipam": {"type": "host-local", "dataDir": ipam.path(),
                            "ranges": [[{"subnet": "10.9.53.0/24"}]]}});
    let run = |command: &str, conf: &serde_json::Value| {
        container
            .request(command, "dummy0")
            .env("CNI_PATH", "/usr/lib/cni")
            .stdin(conf.to_string())
            .run(&Dummy, &PluginInfo::all())
    };
    let add = run("ADD", &c);
    match add.error() {
        None => {
            let result = add.json();
            assert_eq!(result["ips"][0]["address"], "10.9.53.2/24");
            let link = container.socket().unwrap().link("dummy0").unwrap();
            assert_eq!(link.kind, Some(LinkKind::Dummy));
            let mut with_prev = c.clone();
            with_prev["prevResult"] = result;
            assert_eq!(run("CHECK", &with_prev).error(), None);
            crate::test_support::assert_prev_result_missing(
                &run("CHECK", &c),
                "dummy: Required prevResult missing",
            );
        }
        Some(err) => {
            assert_eq!(err.code, Code::INTERNAL);
            assert_eq!(
                err.msg,
                "the kernel has no dummy support: failed to create dummy link \"dummy0\""
            );
        }
    }
    assert_eq!(run("DEL", &c).error(), None);
    assert!(container
        .socket()
        .unwrap()
        .find_link("dummy0")
        .unwrap()
        .is_none());
    let held = cni_net::testing::held_addresses(ipam.path(), "dnet");
    assert_eq!(held, Vec::<String>::new(), "no reservation left");
}
