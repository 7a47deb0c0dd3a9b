//! The reference plugins' nftables layouts, built with this crate: the
//! kernel must hold exactly what the reference's knftables commands make
//! (tests/fixtures/*_nftables.nft name the source file and commit read;
//! *_nftables.json is `nft -j list ruleset` after loading them). Needs root.

mod common;

use cni_netfilter::{
    priority, Action, Backend, BaseChain, Chain, ChainType, CommentMatch, Family, Hook, Match,
    Protocol, Rule, Table, Transaction,
};
use cni_types::IpNetwork;
use common::{netns, rules, ruleset, run_in, with_nft};

fn fixture(name: &str) -> serde_json::Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn script(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).unwrap()
}

fn net(text: &str) -> IpNetwork {
    text.parse().unwrap()
}

fn nat(name: &str, hook: Hook, priority: i32) -> Chain {
    Chain::base(name, BaseChain::new(ChainType::Nat, hook, priority))
}

/// portmap's `forwardPorts` for one IPv4 container, with snat.
fn portmap_add(id: &str, ip: &str) -> Transaction {
    let container: std::net::IpAddr = ip.parse().unwrap();
    let table = Table::new(Family::Ip, "cni_hostport").with_comment("CNI portmap plugin");
    let jump = |chain: &str, to: &str| Rule::new(chain).then(Action::Jump(to.into()));
    let local = |chain: &str| {
        Rule::new(chain)
            .matching(Match::LocalDestination)
            .then(Action::Jump("hostports_all".into()))
    };
    let masq = |from: &str| {
        Rule::new("masquerading")
            .matching(Match::source(net(&format!("{from}/32"))))
            .matching(Match::destination(net(&format!("{ip}/32"))))
            .then(Action::Masquerade)
            .comment(id)
    };
    let mut tx = Transaction::new(table);
    tx.ensure_table()
        .ensure_chain(Chain::new("hostports"))
        .ensure_chain(Chain::new("hostip_hostports"))
        .ensure_chain(Chain::new("hostports_all"))
        .flush_chain("hostports_all")
        .add_rule(jump("hostports_all", "hostip_hostports"))
        .add_rule(jump("hostports_all", "hostports"))
        .ensure_chain(nat("prerouting", Hook::Prerouting, priority::DSTNAT))
        .flush_chain("prerouting")
        .add_rule(local("prerouting"))
        .ensure_chain(nat("output", Hook::Output, priority::DSTNAT))
        .flush_chain("output")
        .add_rule(local("output"))
        .ensure_chain(nat("masquerading", Hook::Postrouting, priority::SRCNAT))
        .add_rule(
            Rule::new("hostports")
                .matching(Match::Protocol(Protocol::Tcp))
                .matching(Match::DestinationPort(8080))
                .then(Action::Dnat {
                    addr: container,
                    port: Some(80),
                })
                .comment(id),
        )
        .add_rule(
            Rule::new("hostports")
                .matching(Match::destination(net("192.168.1.1/32")))
                .matching(Match::Protocol(Protocol::Udp))
                .matching(Match::DestinationPort(5353))
                .then(Action::Dnat {
                    addr: container,
                    port: Some(53),
                })
                .comment(id),
        )
        .add_rule(masq(ip))
        .add_rule(masq("127.0.0.1"));
    tx
}

/// portmap's `unforwardPorts`: the container's rules in its three chains.
fn portmap_del(id: &str) -> Transaction {
    let mut tx = Transaction::new(Table::new(Family::Ip, "cni_hostport"));
    for chain in ["hostports", "hostip_hostports", "masquerading"] {
        tx.delete_rules_by_comment(chain, CommentMatch::Exact(id.into()));
    }
    tx
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn portmaps_nftables_layout_is_the_references_and_del_removes_only_its_container() {
    let ours = netns("nf-portmap");
    let theirs = netns("nf-portmap-ref");
    run_in(
        &theirs,
        "nft",
        &["-f", "-"],
        &script("portmap_nftables.nft"),
    );
    let text = |ns| run_in(ns, "nft", &["list", "ruleset"], "");

    with_nft(&ours, |nft| {
        Ok(nft.apply(&portmap_add("ctr-1", "10.88.0.5"))?)
    });
    assert_eq!(ruleset(&ours), fixture("portmap_nftables.json"));
    assert_eq!(
        ruleset(&theirs),
        fixture("portmap_nftables.json"),
        "the fixture is current"
    );
    // The JSON leaves table and chain comments out; the text has them.
    assert_eq!(text(&ours), text(&theirs));

    // A second container, then DEL of the first: only its rules go.
    with_nft(&ours, |nft| {
        nft.apply(&portmap_add("ctr-2", "10.88.0.6"))?;
        nft.apply(&portmap_del("ctr-1"))?;
        Ok(())
    });
    let left = rules(&ruleset(&ours));
    let comments: Vec<_> = left.iter().filter_map(|r| r["comment"].as_str()).collect();
    assert_eq!(comments, ["ctr-2"; 4]);
    assert_eq!(left.len(), 2 + 1 + 1 + 4, "the skeleton's four rules stay");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn the_masquerading_layout_of_bridge_and_ptp_is_the_references() {
    let ours = netns("nf-masq");
    let theirs = netns("nf-masq-ref");
    run_in(
        &theirs,
        "nft",
        &["-f", "-"],
        &script("masquerade_nftables.nft"),
    );
    let comment = "1d8721804f16f412-1c8f6ae798001240, net: podman, if: eth0, id: ctr-1";
    let table = Table::new(Family::Inet, "cni_plugins_masquerade")
        .with_comment("Masquerading for plugins from github.com/containernetworking/plugins");
    let mut tx = Transaction::new(table.clone());
    tx.ensure_table()
        .ensure_chain(Chain::new("masq_checks").with_comment(
            "Masquerade traffic from certain IPs to any (non-multicast) IP outside their subnet",
        ))
        .ensure_chain(nat("postrouting", Hook::Postrouting, priority::SRCNAT))
        .flush_chain("postrouting")
        .add_rule(
            Rule::new("postrouting")
                .matching(Match::destination(net("224.0.0.0/4")))
                .then(Action::Return),
        )
        .add_rule(
            Rule::new("postrouting")
                .matching(Match::destination(net("ff00::/8")))
                .then(Action::Return),
        )
        .add_rule(Rule::new("postrouting").then(Action::Goto("masq_checks".into())))
        // Stale rules of the same attachment go first, as in the reference.
        .delete_rules_by_comment("masq_checks", CommentMatch::Prefix(comment[..33].into()));
    for (addr, subnet) in [
        ("10.88.0.5/32", "10.88.0.0/16"),
        ("fd00::5/128", "fd00::/64"),
    ] {
        tx.add_rule(
            Rule::new("masq_checks")
                .matching(Match::source(net(addr)))
                .matching(Match::not_destination(net(subnet)))
                .then(Action::Masquerade)
                .comment(comment),
        );
    }
    // Twice, as a repeated ADD: the stale rules are replaced, not doubled.
    with_nft(&ours, |nft| {
        nft.apply(&tx)?;
        nft.apply(&tx)?;
        Ok(())
    });
    assert_eq!(ruleset(&ours), fixture("masquerade_nftables.json"));
    assert_eq!(
        ruleset(&theirs),
        fixture("masquerade_nftables.json"),
        "the fixture is current"
    );
    let text = |ns| run_in(ns, "nft", &["list", "ruleset"], "");
    assert_eq!(text(&ours), text(&theirs));
}
