//! The iptables backend with iptables-nft and iptables-legacy, each run in
//! a namespace of its own and checked with that variant's `iptables-save`
//! (needs root).

mod common;

use cni_netfilter::iptables::Variant;
use cni_netfilter::{
    Action, Backend, BaseChain, Chain, ChainType, CommentMatch, Family, FilterError, Hook, Match,
    Protocol, Rule, Table, Transaction,
};
use common::{netns, run_in, try_iptables};

const VARIANTS: [Variant; 2] = [Variant::Nft, Variant::Legacy];

/// Our chains and the table's rules as `iptables-save` prints them: the
/// chains sorted (legacy prints them by name, nft in creation order), the
/// rules in order.
fn saved(
    ns: &cni_net::testing::TempNetns,
    variant: Variant,
    family: Family,
    table: &str,
) -> Vec<String> {
    let text = run_in(ns, &variant.program(family, "save"), &["-t", table], "");
    let mut chains: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with(":CNI"))
        .map(String::from)
        .collect();
    chains.sort();
    chains.extend(
        text.lines()
            .filter(|l| l.starts_with("-A "))
            .map(String::from),
    );
    chains
}

/// portmap's iptables layout in miniature: a per-container chain reached
/// from a shared one, rules tagged with comments.
fn hostport(id: &str, port: u16, container: &str) -> Transaction {
    let chain = format!("CNI-DN-{id}");
    let mut tx = Transaction::new(Table::new(Family::Ip, "nat"));
    tx.ensure_chain(Chain::new("CNI-HOSTPORT-DNAT"))
        .ensure_chain(Chain::base(
            "PREROUTING",
            BaseChain::new(ChainType::Nat, Hook::Prerouting, -100),
        ))
        .ensure_chain(Chain::new(chain.clone()))
        .add_rule(
            Rule::new(chain.clone())
                .matching(Match::Protocol(Protocol::Tcp))
                .matching(Match::DestinationPort(port))
                .then(Action::Dnat {
                    addr: container.parse().unwrap(),
                    port: Some(80),
                }),
        )
        .add_rule(
            Rule::new("CNI-HOSTPORT-DNAT")
                .matching(Match::Protocol(Protocol::Tcp))
                .matching(Match::DestinationPorts(vec![port, port + 100]))
                .then(Action::Jump(chain))
                .comment(format!("dnat name: \"cni0\" id: \"{id}\"")),
        );
    tx
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn rules_land_as_iptables_save_prints_them_and_go_by_comment_with_both_variants() {
    for variant in VARIANTS {
        let ns = netns("nf-ipt");
        let table = Table::new(Family::Ip, "nat");
        let mut jump = Transaction::new(table.clone());
        jump.ensure_chain(Chain::new("CNI-HOSTPORT-DNAT")).add_rule(
            Rule::new("PREROUTING")
                .matching(Match::LocalDestination)
                .then(Action::Jump("CNI-HOSTPORT-DNAT".into())),
        );
        try_iptables(&ns, variant, |ipt| {
            ipt.apply(&jump)?;
            ipt.apply(&hostport("a", 8080, "10.88.0.5"))?;
            ipt.apply(&hostport("b", 8081, "10.88.0.6"))
        })
        .unwrap();
        assert_eq!(
            saved(&ns, variant, Family::Ip, "nat"),
            [
                ":CNI-DN-a - [0:0]",
                ":CNI-DN-b - [0:0]",
                ":CNI-HOSTPORT-DNAT - [0:0]",
                "-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
                "-A CNI-DN-a -p tcp -m tcp --dport 8080 -j DNAT --to-destination 10.88.0.5:80",
                "-A CNI-DN-b -p tcp -m tcp --dport 8081 -j DNAT --to-destination 10.88.0.6:80",
                "-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment \"dnat name: \\\"cni0\\\" id: \\\"a\\\"\" -m multiport --dports 8080,8180 -j CNI-DN-a",
                "-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment \"dnat name: \\\"cni0\\\" id: \\\"b\\\"\" -m multiport --dports 8081,8181 -j CNI-DN-b",
            ],
            "{variant:?}"
        );

        // DEL of container a: its jump by comment, then its chain.
        let found = try_iptables(&ns, variant, |ipt| {
            let mine = CommentMatch::Exact("dnat name: \"cni0\" id: \"a\"".into());
            let found = ipt.find_rules(&table, "CNI-HOSTPORT-DNAT", &mine)?;
            let mut del = Transaction::new(table.clone());
            del.delete_rules_by_comment("CNI-HOSTPORT-DNAT", mine)
                .delete_chain("CNI-DN-a");
            ipt.apply(&del)?;
            ipt.apply(&del)?; // again: nothing left to delete is no error
            Ok(found)
        })
        .unwrap();
        assert_eq!(found.len(), 1, "{variant:?}");
        let left = saved(&ns, variant, Family::Ip, "nat");
        assert!(
            left.iter().all(|line| !line.contains("CNI-DN-a")),
            "{variant:?}: {left:#?}"
        );
        assert_eq!(left.len(), 5, "{variant:?}: {left:#?}");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_restore_that_fails_changes_nothing_and_reports_the_commands_stderr() {
    for variant in VARIANTS {
        let ns = netns("nf-ipt-fail");
        let mut tx = Transaction::new(Table::new(Family::Ip6, "filter"));
        tx.ensure_chain(Chain::new("CNI-OK"))
            .add_rule(Rule::new("CNI-OK").then(Action::Accept).comment("first"))
            .add_rule(Rule::new("CNI-OK").then(Action::Jump("CNI-MISSING".into())));
        let err = try_iptables(&ns, variant, |ipt| ipt.apply(&tx)).unwrap_err();
        let FilterError::Command {
            command, stderr, ..
        } = &err
        else {
            panic!("{variant:?}: {err:?}");
        };
        assert_eq!(
            command,
            &format!(
                "{} --noflush -w 10",
                variant.program(Family::Ip6, "restore")
            )
        );
        assert!(!stderr.is_empty(), "{variant:?}: {err}");
        assert_eq!(
            saved(&ns, variant, Family::Ip6, "filter"),
            Vec::<String>::new(),
            "{variant:?}"
        );
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn ensuring_an_existing_chain_keeps_its_rules() {
    for variant in VARIANTS {
        let ns = netns("nf-ipt-ensure");
        let mut tx = Transaction::new(Table::new(Family::Ip, "nat"));
        tx.ensure_chain(Chain::new("CNI-MASQ"));
        let mut add = tx.clone();
        add.add_rule(
            Rule::new("CNI-MASQ")
                .then(Action::Masquerade)
                .comment("kept"),
        );
        try_iptables(&ns, variant, |ipt| {
            ipt.apply(&add)?;
            ipt.apply(&tx)
        })
        .unwrap();
        assert_eq!(
            saved(&ns, variant, Family::Ip, "nat"),
            [
                ":CNI-MASQ - [0:0]",
                "-A CNI-MASQ -m comment --comment kept -j MASQUERADE"
            ],
            "{variant:?}"
        );
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_iptables_nft_teardown_goes_through_nf_tables_and_a_legacy_one_is_left_to_the_commands() {
    let table = Table::new(Family::Ip, "nat");
    let a = [
        ("CNI-DN-a", "CNI-HOSTPORT-DNAT"),
        ("CNI-SN-a", "CNI-HOSTPORT-SNAT"),
    ];
    // iptables-nft: container a's jumps (its entry rule and a `-g` another
    // tool added) and chain go in one batch; b's stay as they were.
    let ns = netns("nf-ipt-direct");
    try_iptables(&ns, Variant::Nft, |ipt| {
        ipt.apply(&hostport("a", 8080, "10.88.0.5"))?;
        ipt.apply(&hostport("b", 8081, "10.88.0.6"))
    })
    .unwrap();
    let goto: Vec<&str> = "-t nat -A CNI-HOSTPORT-DNAT -p udp -g CNI-DN-a"
        .split(' ')
        .collect();
    run_in(&ns, "iptables-nft", &goto, "");
    let before = saved(&ns, Variant::Nft, Family::Ip, "nat");
    let removed = try_iptables(&ns, Variant::Default, |ipt| {
        Ok((
            ipt.remove_chains_directly(&table, &a)?,
            ipt.remove_chains_directly(&table, &a)?,
        ))
    });
    assert_eq!(removed.unwrap(), (true, false), "then nothing to remove");
    let left = saved(&ns, Variant::Nft, Family::Ip, "nat");
    let expected: Vec<&String> = before.iter().filter(|l| !l.contains("CNI-DN-a")).collect();
    assert_eq!(left.iter().collect::<Vec<_>>(), expected);
    assert_eq!(left.len(), 4, "{left:#?}");

    // iptables-legacy holds a nat table here: its rules are not nf_tables',
    // so the commands list and remove them, and nothing changes meanwhile.
    let ns = netns("nf-ipt-direct-legacy");
    try_iptables(&ns, Variant::Legacy, |ipt| {
        ipt.apply(&hostport("a", 8080, "10.88.0.5"))
    })
    .unwrap();
    let before = saved(&ns, Variant::Legacy, Family::Ip, "nat");
    for variant in [Variant::Default, Variant::Nft, Variant::Legacy] {
        let removed = try_iptables(&ns, variant, |ipt| ipt.remove_chains_directly(&table, &a));
        assert!(!removed.unwrap(), "{variant:?}");
    }
    assert_eq!(saved(&ns, Variant::Legacy, Family::Ip, "nat"), before);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn rules_expected_present_are_deleted_without_a_listing_and_a_missing_one_changes_nothing() {
    let table = Table::new(Family::Ip, "filter");
    let rule = |addr: &str| {
        Rule::new("CNI-FORWARD")
            .matching(Match::source(addr.parse().unwrap()))
            .then(Action::Accept)
    };
    for variant in VARIANTS {
        let ns = netns("nf-ipt-expected");
        let mut tx = Transaction::new(table.clone());
        tx.ensure_chain(Chain::new("CNI-FORWARD"))
            .add_rule(rule("10.88.0.5/32"))
            .add_rule(rule("10.88.0.6/32"));
        try_iptables(&ns, variant, |ipt| ipt.apply(&tx)).unwrap();
        let deleted = try_iptables(&ns, variant, |ipt| {
            // 10.88.0.7's rule is not there: nothing is deleted.
            let missing =
                ipt.delete_expected(&table, &[rule("10.88.0.5/32"), rule("10.88.0.7/32")])?;
            let left = saved(&ns, variant, Family::Ip, "filter");
            let present = ipt.delete_expected(&table, &[rule("10.88.0.5/32")])?;
            Ok((missing, left.len(), present))
        });
        assert_eq!(deleted.unwrap(), (false, 3, true), "{variant:?}");
        assert_eq!(
            saved(&ns, variant, Family::Ip, "filter"),
            [
                ":CNI-FORWARD - [0:0]",
                "-A CNI-FORWARD -s 10.88.0.6/32 -j ACCEPT"
            ],
            "{variant:?}"
        );
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn applying_to_absent_chains_that_turn_out_present_falls_back_to_the_listed_way() {
    // `apply_to_absent` writes `-N` and appends without a listing; when the
    // chain is there after all (another writer), the restore fails and the
    // transaction is applied from a listing: the chain kept, each ensured
    // rule once.
    for variant in VARIANTS {
        let ns = netns("nf-ipt-absent");
        let mut tx = Transaction::new(Table::new(Family::Ip, "nat"));
        tx.ensure_chain(Chain::new("CNI-ABSENT")).ensure_rule(
            Rule::new("CNI-ABSENT")
                .then(Action::Masquerade)
                .comment("once"),
        );
        try_iptables(&ns, variant, |ipt| {
            ipt.apply_to_absent(&tx)?;
            ipt.apply_to_absent(&tx)
        })
        .unwrap();
        assert_eq!(
            saved(&ns, variant, Family::Ip, "nat"),
            [
                ":CNI-ABSENT - [0:0]",
                "-A CNI-ABSENT -m comment --comment once -j MASQUERADE"
            ],
            "{variant:?}"
        );
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn iptables_counts_as_usable_where_it_runs() {
    let ns = netns("nf-ipt-usable");
    let usable = ns.run(|_| Ok::<_, common::BoxError>(cni_netfilter::iptables_usable()));
    assert!(usable.unwrap());
}

/// `may_mention` in `ns`.
fn mentions(
    ns: &cni_net::testing::TempNetns,
    family: Family,
    table: &str,
    needles: &[&[u8]],
) -> bool {
    ns.run(|_| {
        Ok::<_, common::BoxError>(cni_netfilter::iptables::may_mention(family, table, needles))
    })
    .unwrap()
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_teardown_skips_iptables_only_where_no_rule_of_either_variant_names_what_it_removes() {
    let address: &[u8] = &[10, 88, 0, 5];
    // iptables-nft: its rules are nf_tables rules carrying the interface
    // name, the address's bytes and the chain names as they are.
    let ns = netns("nf-ipt-mention-nft");
    assert!(!mentions(&ns, Family::Ip, "filter", &[b"cni-br9", address]));
    run_in(
        &ns,
        "iptables-nft",
        &["-t", "filter", "-N", "CNI-FORWARD"],
        "",
    );
    assert!(!mentions(&ns, Family::Ip, "filter", &[b"cni-br9", address]));
    run_in(
        &ns,
        "iptables-nft",
        &["-A", "CNI-FORWARD", "-i", "cni-br9", "-j", "ACCEPT"],
        "",
    );
    assert!(mentions(&ns, Family::Ip, "filter", &[b"cni-br9"]));
    assert!(!mentions(&ns, Family::Ip, "filter", &[b"cni-br8", address]));
    run_in(
        &ns,
        "iptables-nft",
        &["-A", "CNI-FORWARD", "-s", "10.88.0.5/32", "-j", "ACCEPT"],
        "",
    );
    assert!(mentions(&ns, Family::Ip, "filter", &[b"cni-br8", address]));
    // Each needle answered alone, from the same look.
    let each = ns
        .run(|_| {
            Ok::<_, common::BoxError>(cni_netfilter::iptables::may_mention_each(
                Family::Ip,
                "filter",
                &[b"cni-br8", address, b"cni-br9", b"CNI-FORWARD", b""],
            ))
        })
        .unwrap();
    assert_eq!(each, [false, true, true, true, false]);
    assert!(!mentions(
        &ns,
        Family::Ip6,
        "filter",
        &[b"cni-br9", address]
    ));
    run_in(
        &ns,
        "iptables-nft",
        &["-t", "nat", "-N", "CNI-0123abcd"],
        "",
    );
    assert!(
        mentions(&ns, Family::Ip, "nat", &[b"CNI-0123abcd"]),
        "an empty chain of that name"
    );
    let comment = "name: \"pods\" id: \"c1\"";
    run_in(
        &ns,
        "iptables-nft",
        &[
            "-t",
            "nat",
            "-A",
            "POSTROUTING",
            "-m",
            "comment",
            "--comment",
            comment,
            "-j",
            "ACCEPT",
        ],
        "",
    );
    assert!(
        mentions(&ns, Family::Ip, "nat", &[comment.as_bytes()]),
        "a comment"
    );
    // iptables-legacy: its table, once there, may hold anything.
    let ns = netns("nf-ipt-mention-legacy");
    assert!(!mentions(&ns, Family::Ip6, "filter", &[b"cni-br9"]));
    run_in(
        &ns,
        "ip6tables-legacy",
        &["-t", "filter", "-N", "CNI-FORWARD"],
        "",
    );
    assert!(mentions(&ns, Family::Ip6, "filter", &[b"cni-br9"]));
    assert!(!mentions(&ns, Family::Ip, "filter", &[b"cni-br9"]));
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn deleting_a_table_is_refused_and_changes_nothing_while_listed_rules_compare_by_content() {
    for variant in VARIANTS {
        let ns = netns("nf-ipt-deltable");
        let table = Table::new(Family::Ip, "nat");
        let rule = Rule::new("CNI-KEEP")
            .matching(Match::source("10.1.2.3/32".parse().unwrap()))
            .then(Action::Masquerade)
            .comment("kept");
        let mut add = Transaction::new(table.clone());
        add.ensure_chain(Chain::new("CNI-KEEP"))
            .add_rule(rule.clone());
        let mut delete = Transaction::new(table.clone());
        delete.flush_chain("CNI-KEEP").delete_table();
        let (refused, listed) = try_iptables(&ns, variant, |ipt| {
            ipt.apply(&add)?;
            let refused = ipt.apply(&delete);
            Ok::<_, FilterError>((refused, ipt.list_rules(&table, "CNI-KEEP")?))
        })
        .unwrap();
        assert!(
            matches!(refused, Err(FilterError::Unsupported { .. })),
            "{variant:?}: {refused:?}"
        );
        // The flush before it did not happen either.
        assert_eq!(listed.len(), 1, "{variant:?}");
        assert!(
            listed[0].is(&rule, Family::Ip).unwrap(),
            "{variant:?}: {listed:?}"
        );
        let other = Rule::new("CNI-KEEP")
            .matching(Match::source("10.1.2.4/32".parse().unwrap()))
            .then(Action::Masquerade)
            .comment("kept");
        assert!(!listed[0].is(&other, Family::Ip).unwrap(), "{variant:?}");
    }
}
