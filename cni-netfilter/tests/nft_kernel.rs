//! The nftables backend against the kernel, each test in namespaces of its
//! own, checked with `nft -j list ruleset` (needs root).

mod common;

use cni_netfilter::{
    Action, Backend, Chain, CommentMatch, CtState as Ct, Family, FilterError, Match, Protocol as P,
    Rule, Set, SetElement, SetKey, Table, Transaction,
};
use common::{netns, rules, ruleset, run_in, try_nft, with_nft};

include!("fixtures/described.rs");

/// The tables, chains and set the fixture's rules go into.
fn skeleton(family: Family) -> Transaction {
    let mut tx = Transaction::new(Table::new(family, "t"));
    tx.ensure_table()
        .ensure_chain(Chain::new("c"))
        .ensure_chain(Chain::new("other"));
    if family == Family::Inet {
        tx.push(cni_netfilter::Op::AddSet(Set::new(
            "allowed",
            SetKey::Ipv4Addr,
        )));
    }
    tx
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn every_kind_of_rule_is_held_by_the_kernel_as_nft_makes_it_comments_included() {
    let ours = netns("nf-ours");
    let theirs = netns("nf-theirs");
    let mut script = String::new();
    for family in ["ip", "ip6", "inet"] {
        script +=
            &format!("add table {family} t\nadd chain {family} t c\nadd chain {family} t other\n");
    }
    script += "add set inet t allowed { type ipv4_addr ; }\n";
    for (text, ..) in described() {
        script += &format!("add rule {text}\n");
    }
    run_in(&theirs, "nft", &["-f", "-"], &script);

    with_nft(&ours, |nft| {
        for family in [Family::Ip, Family::Ip6, Family::Inet] {
            let mut tx = skeleton(family);
            for (_, _, rule) in described().into_iter().filter(|(_, f, _)| *f == family) {
                tx.add_rule(rule);
            }
            nft.apply(&tx)?;
        }
        Ok(())
    });
    let held = ruleset(&ours);
    assert_eq!(held, ruleset(&theirs));
    let comments = rules(&held)
        .iter()
        .filter(|r| r["comment"] == "abc")
        .count();
    assert_eq!(comments, 5, "{held:#}");
}

fn tagged(chain: &str, comment: &str) -> Rule {
    Rule::new(chain).counted().comment(comment)
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn rules_are_found_and_deleted_by_comment_and_the_others_stay() {
    let ns = netns("nf-comment");
    let table = Table::new(Family::Ip, "cni_hostport");
    let mut add = Transaction::new(table.clone());
    add.ensure_table().ensure_chain(Chain::new("hostports"));
    for comment in ["ctr-1", "ctr-2", "ctr-1", "ctr-10"] {
        add.add_rule(tagged("hostports", comment));
    }
    let left = with_nft(&ns, |nft| {
        nft.apply(&add)?;
        let exact = CommentMatch::Exact("ctr-1".into());
        assert_eq!(nft.find_rules(&table, "hostports", &exact)?.len(), 2);
        let prefix = CommentMatch::Prefix("ctr-1".into());
        assert_eq!(nft.find_rules(&table, "hostports", &prefix)?.len(), 3);
        let mut del = Transaction::new(table.clone());
        del.delete_rules_by_comment("hostports", exact)
            // A chain that is not there has nothing to delete.
            .delete_rules_by_comment("absent", CommentMatch::Prefix(String::new()));
        nft.apply(&del)?;
        Ok(nft.list_rules(&table, "hostports")?)
    });
    let comments: Vec<_> = left.iter().map(|r| r.comment.as_deref()).collect();
    assert_eq!(comments, [Some("ctr-2"), Some("ctr-10")]);
    let held: Vec<_> = rules(&ruleset(&ns))
        .iter()
        .map(|r| r["comment"].clone())
        .collect();
    assert_eq!(held, ["ctr-2", "ctr-10"]);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_batch_refused_half_way_changes_nothing_and_names_what_failed() {
    let ns = netns("nf-atomic");
    let mut tx = Transaction::new(Table::new(Family::Inet, "t"));
    tx.ensure_table()
        .ensure_chain(Chain::new("c"))
        .add_rule(tagged("c", "first"))
        .add_rule(
            Rule::new("c")
                .then(Action::Jump("missing".into()))
                .comment("second"),
        );
    let err = try_nft(&ns, |nft| nft.apply(&tx)).unwrap_err();
    let FilterError::Kernel { op, object, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(
        (*op, object.as_str()),
        ("add rule to", "chain inet t c (comment \"second\")")
    );
    assert_eq!(err.errno(), Some(2), "ENOENT: {err}");
    assert_eq!(ruleset(&ns), serde_json::json!({"nftables": []}));
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn ensuring_tables_and_chains_again_keeps_them_and_their_rules() {
    let ns = netns("nf-ensure");
    let ensure = || {
        let mut tx = Transaction::new(Table::new(Family::Ip, "t").with_comment("mine"));
        tx.ensure_table().ensure_chain(
            cni_netfilter::Chain::base(
                "prerouting",
                cni_netfilter::BaseChain::new(
                    cni_netfilter::ChainType::Nat,
                    cni_netfilter::Hook::Prerouting,
                    cni_netfilter::priority::DSTNAT,
                ),
            )
            .with_comment("dnat"),
        );
        tx.ensure_chain(cni_netfilter::Chain::base(
            "forward",
            cni_netfilter::BaseChain {
                policy: Some(cni_netfilter::Policy::Drop),
                ..cni_netfilter::BaseChain::new(
                    cni_netfilter::ChainType::Filter,
                    cni_netfilter::Hook::Forward,
                    cni_netfilter::priority::FILTER,
                )
            },
        ));
        tx
    };
    let mut first = ensure();
    first.add_rule(tagged("prerouting", "kept"));
    with_nft(&ns, |nft| Ok(nft.apply(&first)?));
    let once = ruleset(&ns);
    with_nft(&ns, |nft| Ok(nft.apply(&ensure())?));
    assert_eq!(ruleset(&ns), once);
    let text = run_in(&ns, "nft", &["list", "ruleset"], "");
    assert!(
        text.contains("comment \"mine\"") && text.contains("comment \"dnat\""),
        "{text}"
    );
    assert!(
        text.contains("type nat hook prerouting priority dstnat; policy accept;"),
        "{text}"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn tables_of_the_same_name_in_each_family_are_separate() {
    let ns = netns("nf-family");
    with_nft(&ns, |nft| {
        for (family, comment) in [
            (Family::Ip, "v4"),
            (Family::Ip6, "v6"),
            (Family::Inet, "both"),
        ] {
            let mut tx = Transaction::new(Table::new(family, "same"));
            tx.ensure_table()
                .ensure_chain(Chain::new("c"))
                .add_rule(tagged("c", comment));
            nft.apply(&tx)?;
        }
        let mut del = Transaction::new(Table::new(Family::Ip6, "same"));
        del.delete_rules_by_comment("c", CommentMatch::Prefix(String::new()));
        nft.apply(&del)?;
        let mut gone = Transaction::new(Table::new(Family::Inet, "same"));
        gone.push(cni_netfilter::Op::DeleteTable);
        nft.apply(&gone)?;
        nft.apply(&gone)?; // a table that is gone is no error
        Ok(())
    });
    let held = ruleset(&ns);
    let tables: Vec<_> = held["nftables"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o.get("table").map(|t| t["family"].clone()))
        .collect();
    assert_eq!(tables, ["ip", "ip6"]);
    let comments: Vec<_> = rules(&held).iter().map(|r| r["comment"].clone()).collect();
    assert_eq!(comments, ["v4"]);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_checked_transaction_changes_nothing_and_nftables_counts_as_usable() {
    let ns = netns("nf-check");
    let usable = with_nft(&ns, |nft| {
        let mut tx = skeleton(Family::Inet);
        tx.add_rule(tagged("c", "x"));
        nft.check(&tx)?;
        let mut bad = skeleton(Family::Ip);
        bad.add_rule(Rule::new("c").then(Action::Goto("missing".into())));
        assert_eq!(nft.check(&bad).unwrap_err().errno(), Some(2));
        Ok(cni_netfilter::nftables_usable())
    });
    assert!(usable);
    assert_eq!(ruleset(&ns), serde_json::json!({"nftables": []}));
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn set_elements_come_and_go_without_touching_the_rule_that_looks_them_up() {
    let ns = netns("nf-set");
    let table = Table::new(Family::Ip, "t");
    let set = Set::new("blocked", SetKey::Ipv4Addr);
    let addr = |a: &str| SetElement::Addr(a.parse().unwrap());
    with_nft(&ns, |nft| {
        let mut tx = Transaction::new(table.clone());
        tx.ensure_table()
            .ensure_chain(Chain::new("c"))
            .push(cni_netfilter::Op::AddSet(set.clone()))
            .push(cni_netfilter::Op::AddElements {
                set: set.clone(),
                elements: vec![addr("10.0.0.1"), addr("10.0.0.2")],
            })
            .add_rule(
                Rule::new("c")
                    .matching(Match::SourceInSet {
                        set: "blocked".into(),
                        family: cni_types::IpFamily::V4,
                        negate: false,
                    })
                    .then(Action::Drop),
            );
        nft.apply(&tx)?;
        let mut del = Transaction::new(table.clone());
        del.push(cni_netfilter::Op::DeleteElements {
            set: set.clone(),
            elements: vec![addr("10.0.0.1")],
        });
        nft.apply(&del)?;
        let mut wrong = Transaction::new(table.clone());
        wrong.push(cni_netfilter::Op::AddElements {
            set: set.clone(),
            elements: vec![SetElement::Port(80)],
        });
        assert!(matches!(
            nft.apply(&wrong),
            Err(FilterError::Invalid { .. })
        ));
        Ok(())
    });
    let text = run_in(&ns, "nft", &["list", "ruleset"], "");
    assert!(
        text.contains("type ipv4_addr") && text.contains("elements = { 10.0.0.2 }"),
        "{text}"
    );
    assert!(text.contains("ip saddr @blocked drop"), "{text}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_invalid_rule_anywhere_in_a_transaction_is_refused_before_the_first_change() {
    let ns = netns("nf-invalid");
    let mut tx = Transaction::new(Table::new(Family::Ip, "t"));
    tx.ensure_table()
        .ensure_chain(Chain::new("c"))
        .add_rule(tagged("c", "fine"))
        .add_rule(
            Rule::new("c")
                .matching(Match::source(net("fd00::1")))
                .comment("v6 in ip"),
        );
    let err = try_nft(&ns, |nft| nft.apply(&tx)).unwrap_err();
    assert!(matches!(err, FilterError::Invalid { .. }), "{err:?}");
    assert_eq!(
        cni_types::Error::from(err).code,
        cni_types::Code::INVALID_NETWORK_CONFIG
    );
    assert_eq!(ruleset(&ns), serde_json::json!({"nftables": []}));
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_rule_given_as_expressions_lands_as_written_with_its_comment() {
    use cni_netfilter::nft::{CmpOp, CtKey, Expr, Register, Verdict};
    let ns = netns("nf-raw");
    let mut tx = skeleton(Family::Ip);
    tx.push(cni_netfilter::Op::AddNftRule {
        chain: "c".into(),
        exprs: vec![
            Expr::Ct {
                key: CtKey::Mark,
                dreg: Register::R1,
            },
            Expr::Cmp {
                op: CmpOp::Eq,
                sreg: Register::R1,
                data: 1u32.to_ne_bytes().to_vec(),
            },
            Expr::Counter,
            Expr::Verdict(Verdict::Accept),
        ],
        comment: Some("raw".into()),
    });
    with_nft(&ns, |nft| Ok(nft.apply(&tx)?));
    let text = run_in(&ns, "nft", &["list", "ruleset"], "");
    assert!(
        text.contains("ct mark 0x00000001 counter packets 0 bytes 0 accept comment \"raw\""),
        "{text}"
    );
}

/// What `nft monitor` in `ns` prints while `during` runs: started, seen
/// to print (a marker table comes and goes), then stopped once a second
/// marker shows that everything before it was printed.
fn monitored(ns: &cni_net::testing::TempNetns, during: impl FnOnce()) -> String {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut monitor = Command::new("ip")
        .args(["netns", "exec", ns.name(), "nft", "monitor"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(monitor.stdout.take().unwrap()).lines();
    let mut wait_for = |marker: &str| {
        let mut seen = String::new();
        loop {
            // Until the monitor is listening, the marker goes unseen: add
            // it again after each line that is not it.
            run_in(ns, "nft", &["add", "table", "ip", marker], "");
            run_in(ns, "nft", &["delete", "table", "ip", marker], "");
            let line = lines.next().unwrap().unwrap();
            if line.contains(marker) {
                return seen;
            }
            seen.push_str(&line);
            seen.push('\n');
        }
    };
    wait_for("start_marker");
    during();
    let seen = wait_for("end_marker");
    let _ = monitor.kill();
    let _ = monitor.wait();
    seen
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn ensuring_chains_that_are_there_as_declared_sends_no_chain_update() {
    // An update of a chain that is there makes the plugin wait an RCU grace
    // period as it exits (bench/process/podman.sh).
    let ns = netns("nf-ensure-quiet");
    let forward = |policy| {
        let mut tx = Transaction::new(Table::new(Family::Inet, "t"));
        tx.ensure_table()
            .ensure_chain(Chain::new("c"))
            .ensure_chain(Chain::base(
                "forward",
                cni_netfilter::BaseChain {
                    policy,
                    ..cni_netfilter::BaseChain::new(
                        cni_netfilter::ChainType::Filter,
                        cni_netfilter::Hook::Forward,
                        cni_netfilter::priority::FILTER,
                    )
                },
            ))
            .add_rule(tagged("c", "one more"));
        tx
    };
    with_nft(&ns, |nft| Ok(nft.apply(&forward(None))?));
    let seen = monitored(&ns, || with_nft(&ns, |nft| Ok(nft.apply(&forward(None))?)));
    assert!(!seen.lines().any(|l| l.starts_with("add chain")), "{seen}");
    assert!(seen.contains("one more"), "the rule was added: {seen}");
    // A policy that differs is still set, as `add chain` sets it.
    with_nft(&ns, |nft| {
        Ok(nft.apply(&forward(Some(cni_netfilter::Policy::Drop)))?)
    });
    let text = run_in(&ns, "nft", &["list", "chain", "inet", "t", "forward"], "");
    assert!(text.contains("policy drop;"), "{text}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_chain_is_found_by_name_only_in_its_own_table_and_family() {
    let ns = netns("nf-haschain");
    let table = Table::new(Family::Ip, "nat");
    let found = with_nft(&ns, |nft| {
        let absent_table = nft.has_chain(&table, "CNI-DN-1")?;
        let mut add = Transaction::new(table.clone());
        add.ensure_table().ensure_chain(Chain::new("CNI-DN-1"));
        nft.apply(&add)?;
        Ok([
            absent_table,
            nft.has_chain(&table, "CNI-DN-1")?,
            nft.has_chain(&table, "CNI-DN-2")?,
            nft.has_chain(&Table::new(Family::Ip6, "nat"), "CNI-DN-1")?,
            nft.has_chain(&Table::new(Family::Ip, "filter"), "CNI-DN-1")?,
        ])
    });
    assert_eq!(found, [false, true, false, false, false]);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn deleting_a_table_removes_it_with_its_chains_and_leaves_the_others() {
    let ns = netns("nf-deltable");
    let ours = Table::new(Family::Inet, "cni_gone");
    let kept = Table::new(Family::Inet, "cni_kept");
    let tables = with_nft(&ns, |nft| {
        for table in [&ours, &kept] {
            let mut add = Transaction::new(table.clone());
            add.ensure_table()
                .ensure_chain(Chain::new("c"))
                .add_rule(tagged("c", "ctr-1"));
            nft.apply(&add)?;
        }
        let mut delete = Transaction::new(ours.clone());
        delete.delete_table();
        nft.apply(&delete)?;
        // Gone already: DEL may run again.
        nft.apply(&delete)?;
        assert!(nft.list_chains(&ours)?.is_empty());
        Ok(nft.list_tables(Family::Inet)?)
    });
    assert_eq!(tables, ["cni_kept"]);
    let held: Vec<_> = rules(&ruleset(&ns))
        .iter()
        .map(|r| r["table"].clone())
        .collect();
    assert_eq!(held, ["cni_kept"]);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn each_listed_rule_is_the_rule_it_was_written_as_and_no_other() {
    let ns = netns("nf-content");
    let table = Table::new(Family::Ip, "cni_content");
    let written = [
        Rule::new("c")
            .matching(Match::source("10.1.2.3/32".parse().unwrap()))
            .then(Action::Accept)
            .comment("ctr-1"),
        Rule::new("c")
            .matching(Match::Protocol(P::Tcp))
            .matching(Match::DestinationPort(8080))
            .then(Action::Drop)
            .comment("ctr-1"),
    ];
    let listed = with_nft(&ns, |nft| {
        let mut add = Transaction::new(table.clone());
        add.ensure_table().ensure_chain(Chain::new("c"));
        for rule in &written {
            add.add_rule(rule.clone());
        }
        nft.apply(&add)?;
        Ok(nft.list_rules(&table, "c")?)
    });
    assert_eq!(listed.len(), 2);
    for (i, listed) in listed.iter().enumerate() {
        for (j, rule) in written.iter().enumerate() {
            assert_eq!(
                listed.is(rule, Family::Ip).unwrap(),
                i == j,
                "listed {i}, written {j}"
            );
        }
    }
    // Same comment, another address: not the rule CHECK expects.
    let moved = Rule::new("c")
        .matching(Match::source("10.1.2.4/32".parse().unwrap()))
        .then(Action::Accept)
        .comment("ctr-1");
    assert!(!listed[0].is(&moved, Family::Ip).unwrap());
}
