//! `ipMasq`'s layouts built by `cni_netfilter::masquerade`, in namespaces
//! of the tests' own: nftables equal to the reference's fixture, iptables
//! as the reference's `ipmasq_iptables_linux.go` appends it; teardown,
//! check and GC. Needs root.

mod common;

use cni_netfilter::masquerade::{self, Attachment};
use cni_netfilter::BackendKind;
use cni_types::{IpNetwork, ValidAttachments};
use common::{netns, rules, ruleset, run_in, BoxError};

fn fixture(name: &str) -> serde_json::Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn nets(texts: &[&str]) -> Vec<IpNetwork> {
    texts.iter().map(|t| t.parse().unwrap()).collect()
}

const PODMAN: Attachment = Attachment {
    network: "podman",
    ifname: "eth0",
    container_id: "ctr-1",
};

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn nftables_masquerading_is_the_references_layout_and_teardown_leaves_only_the_skeleton() {
    let ns = netns("masq-nft");
    let addresses = nets(&["10.88.0.5/16", "fd00::5/64"]);
    let nft = Some(BackendKind::Nftables);
    ns.run(|_| {
        // Twice, as a repeated ADD: the stale rules are replaced, not doubled.
        masquerade::setup(nft, &addresses, &PODMAN)?;
        masquerade::setup(nft, &addresses, &PODMAN)?;
        masquerade::check(nft, &addresses, &PODMAN)?;
        Ok::<_, BoxError>(())
    })
    .unwrap();
    assert_eq!(ruleset(&ns), fixture("masquerade_nftables.json"));

    let checked = ns.run(|_| {
        masquerade::teardown(&addresses, &PODMAN)?;
        Ok::<_, BoxError>(masquerade::check(nft, &addresses, &PODMAN))
    });
    let err = checked.unwrap().unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
    let left = rules(&ruleset(&ns));
    assert_eq!(left.len(), 3, "the postrouting skeleton only: {left:?}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn gc_removes_the_nftables_rules_of_attachments_not_listed_and_nothing_without_a_list() {
    let ns = netns("masq-gc");
    let nft = Some(BackendKind::Nftables);
    let a = Attachment {
        container_id: "ctr-a",
        ..PODMAN
    };
    let b = Attachment {
        container_id: "ctr-b",
        ..PODMAN
    };
    let other_net = Attachment {
        network: "other",
        ..a
    };
    let comments = |ns| {
        let mut c: Vec<String> = rules(&ruleset(ns))
            .iter()
            .filter_map(|r| r["comment"].as_str().map(str::to_string))
            .collect();
        c.sort();
        c
    };
    ns.run(|_| {
        masquerade::setup(nft, &nets(&["10.88.0.5/16"]), &a)?;
        masquerade::setup(nft, &nets(&["10.88.0.6/16"]), &b)?;
        masquerade::setup(nft, &nets(&["10.89.0.6/16"]), &other_net)?;
        masquerade::gc("podman", &ValidAttachments::Unspecified)?;
        Ok::<_, BoxError>(())
    })
    .unwrap();
    assert_eq!(comments(&ns).len(), 3, "no list, nothing removed");

    let keep_a = ValidAttachments::List(vec![cni_types::Attachment {
        container_id: "ctr-a".into(),
        ifname: "eth0".into(),
    }]);
    ns.run(|_| Ok::<_, BoxError>(masquerade::gc("podman", &keep_a)?))
        .unwrap();
    let mut want = vec![
        masquerade::nft_comment(&a),
        masquerade::nft_comment(&other_net),
    ];
    want.sort();
    assert_eq!(comments(&ns), want, "b went; a and the other network stay");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn iptables_masquerading_is_appended_once_as_the_reference_does_and_torn_down() {
    let ns = netns("masq-ipt");
    let addresses = nets(&["10.88.0.5/16", "fd00::5/64"]);
    let ipt = Some(BackendKind::Iptables);
    ns.run(|_| {
        masquerade::setup(ipt, &addresses, &PODMAN)?;
        masquerade::setup(ipt, &addresses, &PODMAN)?;
        masquerade::check(ipt, &addresses, &PODMAN)?;
        Ok::<_, BoxError>(())
    })
    .unwrap();
    let chain = masquerade::chain_name("podman", "ctr-1");
    let comment = r#""name: \"podman\" id: \"ctr-1\"""#;
    let saved = |program: &str| -> Vec<String> {
        run_in(&ns, program, &["-t", "nat"], "")
            .lines()
            .filter(|l| l.starts_with("-A") || l.starts_with(&format!(":{chain}")))
            .map(str::to_string)
            .collect()
    };
    // What `ipt.AppendUnique` makes, in its order, as iptables-save prints it.
    let expected = |src: &str, subnet: &str, multicast: &str| {
        vec![
            format!(":{chain} - [0:0]"),
            format!("-A POSTROUTING -s {src} -m comment --comment {comment} -j {chain}"),
            format!("-A {chain} -d {subnet} -m comment --comment {comment} -j ACCEPT"),
            format!("-A {chain} ! -d {multicast} -m comment --comment {comment} -j MASQUERADE"),
        ]
    };
    assert_eq!(
        saved("iptables-save"),
        expected("10.88.0.5/32", "10.88.0.0/16", "224.0.0.0/4")
    );
    assert_eq!(
        saved("ip6tables-save"),
        expected("fd00::5/128", "fd00::/64", "ff00::/8")
    );

    // Teardown without addresses (a DEL whose namespace is gone).
    let checked = ns.run(|_| {
        masquerade::teardown(&[], &PODMAN)?;
        Ok::<_, BoxError>(masquerade::check(ipt, &addresses, &PODMAN))
    });
    assert!(checked.unwrap().is_err());
    assert_eq!(saved("iptables-save"), Vec::<String>::new());
    assert_eq!(saved("ip6tables-save"), Vec::<String>::new());
}

/// The handles of `chain`'s rules in `inet cni_plugins_masquerade`, as
/// `nft -a` lists them.
fn handles(ns: &cni_net::testing::TempNetns, table: &str, chain: &str) -> Vec<u64> {
    let json = run_in(
        ns,
        "nft",
        &["-j", "-a", "list", "chain", "inet", table, chain],
        "",
    );
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    value["nftables"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o.get("rule").map(|r| r["handle"].as_u64().unwrap()))
        .collect()
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn another_pods_setup_leaves_postrouting_as_it_is_when_it_holds_the_references_rules() {
    // Writing them again would delete rules, and the plugin would then wait
    // for the kernel to retire them as it exits.
    let ns = netns("masq-nft-keep");
    let nft = Some(BackendKind::Nftables);
    let second = Attachment {
        container_id: "ctr-2",
        ..PODMAN
    };
    ns.run(|_| Ok::<_, BoxError>(masquerade::setup(nft, &nets(&["10.88.0.5/16"]), &PODMAN)?))
        .unwrap();
    let before = handles(&ns, masquerade::NFT_TABLE, "postrouting");
    assert_eq!(before.len(), 3);
    ns.run(|_| Ok::<_, BoxError>(masquerade::setup(nft, &nets(&["10.88.0.6/16"]), &second)?))
        .unwrap();
    assert_eq!(handles(&ns, masquerade::NFT_TABLE, "postrouting"), before);
    // A chain that differs is written again, as the reference does.
    run_in(
        &ns,
        "nft",
        &[
            "flush",
            "chain",
            "inet",
            masquerade::NFT_TABLE,
            "postrouting",
        ],
        "",
    );
    ns.run(|_| Ok::<_, BoxError>(masquerade::setup(nft, &nets(&["10.88.0.6/16"]), &second)?))
        .unwrap();
    assert_eq!(handles(&ns, masquerade::NFT_TABLE, "postrouting").len(), 3);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn gc_removes_the_iptables_chains_of_containers_not_listed_in_both_families() {
    let ns = netns("masq-gc-ipt");
    let ipt = Some(BackendKind::Iptables);
    let at = |network, container_id| Attachment {
        network,
        ifname: "eth0",
        container_id,
    };
    let (a, b, c) = (
        at("podman", "ctr-a"),
        at("podman", "ctr-b"),
        at("podman", "ctr-c"),
    );
    let other_net = at("other", "ctr-b");
    // The container ids whose chains are in the nat table of a family.
    let chains = |program: &str| -> Vec<String> {
        let saved = run_in(&ns, program, &["-t", "nat"], "");
        let mut owners: Vec<String> = [&a, &b, &c, &other_net]
            .iter()
            .filter(|at| {
                let chain = masquerade::chain_name(at.network, at.container_id);
                saved.contains(&format!(":{chain} ")) || saved.contains(&format!("-j {chain}"))
            })
            .map(|at| format!("{}/{}", at.network, at.container_id))
            .collect();
        owners.sort();
        owners
    };
    let keep_a = ValidAttachments::List(vec![cni_types::Attachment {
        container_id: "ctr-a".into(),
        ifname: "eth0".into(),
    }]);
    ns.run(|_| {
        masquerade::setup(ipt, &nets(&["10.88.0.5/16", "fd00::5/64"]), &a)?;
        masquerade::setup(ipt, &nets(&["10.88.0.6/16", "fd00::6/64"]), &b)?;
        masquerade::setup(ipt, &nets(&["10.88.0.7/16"]), &c)?;
        masquerade::setup(ipt, &nets(&["10.89.0.6/16"]), &other_net)?;
        masquerade::gc("podman", &ValidAttachments::Unspecified)?;
        Ok::<_, BoxError>(())
    })
    .unwrap();
    let all = [
        "other/ctr-b",
        "podman/ctr-a",
        "podman/ctr-b",
        "podman/ctr-c",
    ];
    assert_eq!(chains("iptables-save"), all, "no list, nothing removed");

    ns.run(|_| Ok::<_, BoxError>(masquerade::gc("podman", &keep_a)?))
        .unwrap();
    assert_eq!(
        chains("iptables-save"),
        ["other/ctr-b", "podman/ctr-a"],
        "b and c went; a and the other network's b stay"
    );
    assert_eq!(chains("ip6tables-save"), ["podman/ctr-a"]);
    ns.run(|_| {
        masquerade::check(ipt, &nets(&["10.88.0.5/16", "fd00::5/64"]), &a)?;
        Ok::<_, BoxError>(())
    })
    .expect("the kept attachment's rules are all there");

    // `null` on the wire: the empty list.
    ns.run(|_| Ok::<_, BoxError>(masquerade::gc("podman", &ValidAttachments::List(vec![]))?))
        .unwrap();
    assert_eq!(chains("iptables-save"), ["other/ctr-b"]);
    assert_eq!(chains("ip6tables-save"), Vec::<String>::new());
}
