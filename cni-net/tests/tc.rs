//! Traffic control: an ifb, a tbf, the ingress qdisc and a redirecting
//! u32 filter are created, listed as `tc` shows them, and deleted. As
//! root, in namespaces the tests create and remove.

use std::process::Command;
use std::time::Duration;

use cni_net::tc::{Handle, Psched, QdiscKind, Redirect, Tbf};
use cni_net::testing::TempNetns;
use cni_net::LinkKind;
use serde_json::Value;

/// `tc -j ARGS` inside `ns`, parsed.
fn tc_json(ns: &TempNetns, args: &[&str]) -> Value {
    let out = Command::new("ip")
        .args(["netns", "exec", ns.name(), "tc", "-j"])
        .args(args)
        .output()
        .expect("run tc");
    assert!(out.status.success(), "tc {args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).expect("tc's JSON")
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_shaped_link_is_what_tc_shows_and_deleting_its_qdiscs_leaves_the_default() {
    let tmp = TempNetns::new("tc").unwrap_or_else(|e| panic!("this test needs root: {e}"));
    let mut nl = tmp.socket().unwrap();
    let veth = tmp.add_veth("veth0", "peer0", None).unwrap();
    let ifb = nl.add_ifb("ifb0", 1400).unwrap();
    assert_eq!(ifb.kind, Some(LinkKind::Ifb));
    assert!(ifb.up && ifb.mtu == 1400, "{ifb:?}");

    let clock = Psched::read().unwrap();
    let tbf = Tbf::with_latency(1_000_000, 10_000, Duration::from_millis(25)).unwrap();
    nl.add_tbf(veth.index, &tbf, &clock).unwrap();
    nl.add_ingress_qdisc(veth.index).unwrap();
    let redirect = Redirect {
        parent: Handle::new(0xffff, 0),
        priority: 1,
        flow_id: Handle::new(1, 1),
        to: ifb.index,
    };
    nl.add_redirect_filter(veth.index, &redirect).unwrap();

    let qdiscs = nl.qdiscs(veth.index).unwrap();
    let root = qdiscs.iter().find(|q| q.parent == Handle::ROOT).unwrap();
    assert_eq!(root.handle, Handle::new(1, 0));
    assert_eq!(root.kind, QdiscKind::Tbf(tbf.params()));
    let ingress = qdiscs.iter().find(|q| q.parent == Handle::INGRESS).unwrap();
    assert_eq!(
        (ingress.handle, &ingress.kind),
        (Handle::new(0xffff, 0), &QdiscKind::Ingress)
    );
    let shown = tc_json(&tmp, &["qdisc", "show", "dev", "veth0"]);
    let shown_tbf = &shown.as_array().unwrap()[0];
    assert_eq!(shown_tbf["kind"], "tbf");
    assert_eq!(shown_tbf["handle"], "1:");
    assert_eq!(shown_tbf["options"]["rate"], 1_000_000);
    assert_eq!(shown_tbf["options"]["burst"], 10_000);

    let filters = nl.filters(veth.index, Handle::new(0xffff, 0)).unwrap();
    let node = filters.iter().find(|f| !f.redirects_to.is_empty()).unwrap();
    assert_eq!(node.kind, "u32");
    assert_eq!((node.priority, node.protocol), (1, cni_net::tc::ETH_P_ALL));
    assert_eq!(node.flow_id, Some(Handle::new(1, 1)));
    assert!(node.matches_all);
    assert_eq!(node.redirects_to, [ifb.index]);
    let shown = tc_json(&tmp, &["filter", "show", "dev", "veth0", "ingress"]);
    let action = shown
        .as_array()
        .unwrap()
        .iter()
        .find_map(|f| f["options"]["actions"].get(0))
        .unwrap()
        .clone();
    assert_eq!(action["kind"], "mirred");
    assert_eq!(action["mirred_action"], "redirect");
    assert_eq!(action["to_dev"], "ifb0");
    assert_eq!(action["control_action"]["type"], "stolen");

    assert!(nl.delete_qdisc(veth.index, Handle::INGRESS).unwrap());
    assert!(nl.delete_qdisc(veth.index, Handle::ROOT).unwrap());
    assert!(!nl.delete_qdisc(veth.index, Handle::INGRESS).unwrap());
    assert!(!nl.delete_qdisc(veth.index, Handle::ROOT).unwrap());
    let left = nl.qdiscs(veth.index).unwrap();
    assert!(
        left.iter()
            .all(|q| matches!(&q.kind, QdiscKind::Other(k) if k == "noqueue")),
        "{left:?}"
    );
    assert!(nl.delete_link_if_present("ifb0").unwrap());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn replacing_the_root_tbf_changes_its_rate_and_deleting_it_restores_the_default() {
    let tmp = TempNetns::new("tcroot").unwrap_or_else(|e| panic!("this test needs root: {e}"));
    let mut nl = tmp.socket().unwrap();
    let link = tmp.add_veth("shaped0", "peer0", None).unwrap();
    let clock = Psched::read().unwrap();
    let root_kind = |nl: &mut cni_net::Netlink| {
        let qdiscs = nl.qdiscs(link.index).unwrap();
        qdiscs
            .into_iter()
            .find(|q| q.parent == Handle::ROOT)
            .map(|q| q.kind)
    };
    let latency = Duration::from_millis(25);

    // Over the link's default root qdisc, then over a tbf of its own.
    let slow = Tbf::from_bits(1_000_000, 80_000, latency).unwrap();
    nl.replace_root_tbf(link.index, &slow, &clock).unwrap();
    assert_eq!(root_kind(&mut nl), Some(QdiscKind::Tbf(slow.params())));
    let fast = Tbf::from_bits(8_000_000, 160_000, latency).unwrap();
    nl.replace_root_tbf(link.index, &fast, &clock).unwrap();
    assert_eq!(root_kind(&mut nl), Some(QdiscKind::Tbf(fast.params())));
    let shown = tc_json(&tmp, &["qdisc", "show", "dev", "shaped0", "root"]);
    assert_eq!(shown[0]["options"]["rate"], 1_000_000, "{shown}");

    assert!(nl.delete_root_qdisc(link.index).unwrap());
    assert!(!nl.delete_root_qdisc(link.index).unwrap());
    assert!(!matches!(root_kind(&mut nl), Some(QdiscKind::Tbf(_))));
}
