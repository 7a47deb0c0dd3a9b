//! An ADD's chains and rules written through nf_tables directly
//! (`IptablesBackend::ensure_directly`) are the rules iptables-nft's own
//! `iptables-restore` writes: the same `iptables-save` text, the same
//! expressions byte for byte, found by `iptables -C`; and whatever the
//! direct path cannot be certain of is left to the restore. Each case
//! runs in two namespaces of the test's own, one written each way. Needs
//! root and iptables-nft (Debian's default).

mod common;

use cni_net::testing::TempNetns;
use cni_netfilter::iptables::{IptablesBackend, Variant};
use cni_netfilter::nft::NftBackend;
use cni_netfilter::{
    Action, Backend, Chain, CtState, Family, ListedRule, Match, Op, Protocol, Rule, RuleContent,
    Table, Transaction,
};
use cni_types::IpNetwork;
use common::{netns, run_in, BoxError};

fn net(text: &str) -> IpNetwork {
    text.parse().unwrap()
}

/// What an earlier ADD left: the shared chains and their entry rules,
/// written by `iptables-restore` in both namespaces.
fn shared(family: Family) -> Vec<Transaction> {
    let mut nat = Transaction::new(Table::new(family, "nat"));
    nat.ensure_chain(Chain::new("CNI-HOSTPORT-SETMARK"))
        .ensure_rule(
            Rule::new("CNI-HOSTPORT-SETMARK")
                .comment("CNI portfwd masquerade mark")
                .then(Action::SetMark {
                    value: 0x2000,
                    mask: 0x2000,
                }),
        )
        .ensure_chain(Chain::new("CNI-HOSTPORT-MASQ"))
        .ensure_rule(
            Rule::new("CNI-HOSTPORT-MASQ")
                .matching(Match::Mark {
                    value: 0x2000,
                    mask: 0x2000,
                })
                .then(Action::Masquerade),
        )
        .push(Op::EnsureRule {
            rule: Rule::new("POSTROUTING")
                .comment("CNI portfwd requiring masquerade")
                .then(Action::Jump("CNI-HOSTPORT-MASQ".into())),
            first: true,
        });
    nat.ensure_chain(Chain::new("CNI-HOSTPORT-DNAT"));
    for entry in ["PREROUTING", "OUTPUT"] {
        nat.ensure_rule(
            Rule::new(entry)
                .matching(Match::LocalDestination)
                .then(Action::Jump("CNI-HOSTPORT-DNAT".into())),
        );
    }
    let mut filter = Transaction::new(Table::new(family, "filter"));
    filter
        .ensure_chain(Chain::new("CNI-FORWARD"))
        .ensure_chain(Chain::new("CNI-ADMIN"))
        .push(Op::EnsureRule {
            rule: Rule::new("FORWARD")
                .comment("CNI firewall plugin rules")
                .then(Action::Jump("CNI-FORWARD".into())),
            first: true,
        })
        .push(Op::EnsureRule {
            rule: Rule::new("CNI-FORWARD")
                .comment("CNI firewall plugin admin overrides")
                .then(Action::Jump("CNI-ADMIN".into())),
            first: true,
        });
    vec![nat, filter]
}

/// A container's chain in `nat` as portmap writes it, with the rule
/// shapes of every plugin's ADD, and the firewall's rules of an address
/// in `filter`.
fn attachment(family: Family, id: &str) -> Vec<Transaction> {
    let v4 = family == Family::Ip;
    let (subnet, odd, addr, host, other) = if v4 {
        (
            "10.217.9.0/24",
            "10.80.0.0/12",
            "10.217.9.3",
            "192.0.2.1/32",
            "224.0.0.0/4",
        )
    } else {
        (
            "fd00:9::/64",
            "fd00::/61",
            "fd00:9::3",
            "fd00::1/128",
            "ff00::/8",
        )
    };
    let chain = format!("CNI-DN-{id}");
    let mut nat = Transaction::new(Table::new(family, "nat"));
    nat.ensure_chain(Chain::new(chain.clone()));
    let port = |p| {
        Rule::new(chain.clone())
            .matching(Match::Protocol(Protocol::Tcp))
            .matching(Match::DestinationPort(p))
    };
    nat.ensure_rule(
        port(8080)
            .matching(Match::source(net(subnet)))
            .then(Action::Jump("CNI-HOSTPORT-SETMARK".into())),
    );
    if v4 {
        nat.ensure_rule(
            port(8080)
                .matching(Match::source(net("127.0.0.1/32")))
                .then(Action::Jump("CNI-HOSTPORT-SETMARK".into())),
        );
    }
    nat.ensure_rule(port(8080).then(Action::Dnat {
        addr: addr.parse().unwrap(),
        port: Some(80),
    }))
    .ensure_rule(
        port(9090)
            .matching(Match::destination(net(host)))
            .then(Action::Dnat {
                addr: addr.parse().unwrap(),
                port: None,
            }),
    )
    .ensure_rule(
        Rule::new(chain.clone())
            .matching(Match::Protocol(Protocol::Udp))
            .matching(Match::SourcePort(53))
            .matching(Match::source(net(odd)))
            .then(Action::Return),
    );
    // Masquerading, entered from POSTROUTING as the bridge's is.
    let masq = format!("CNI-MQ-{id}");
    let host_addr = net(&format!("{addr}/{}", if v4 { 32 } else { 128 }));
    nat.ensure_chain(Chain::new(masq.clone()))
        .ensure_rule(
            Rule::new(masq.clone())
                .matching(Match::not_destination(net(other)))
                .comment("masquerade, \"quoted\"")
                .then(Action::Masquerade),
        )
        .ensure_rule(
            Rule::new(masq.clone())
                .matching(Match::Mark {
                    value: 0x4000,
                    mask: u32::MAX,
                })
                .then(Action::Goto("CNI-HOSTPORT-MASQ".into())),
        )
        .ensure_rule(
            Rule::new("POSTROUTING")
                .matching(Match::source(host_addr))
                .comment(format!("name: \"net\" id: \"{id}\""))
                .then(Action::Jump(masq)),
        );
    for protocol in [Protocol::Tcp, Protocol::Udp] {
        nat.ensure_rule(
            Rule::new("CNI-HOSTPORT-DNAT")
                .matching(Match::Protocol(protocol))
                .matching(Match::DestinationPorts(vec![8080, 9090, 53]))
                .comment(format!("dnat name: \"net\" id: \"{id}\""))
                .then(Action::Jump(chain.clone())),
        );
    }
    let mut filter = Transaction::new(Table::new(family, "filter"));
    let [back, out] = accepted(host_addr);
    filter.ensure_rule(back).ensure_rule(out).ensure_rule(
        Rule::new("CNI-FORWARD")
            .matching(Match::source(host_addr))
            .matching(Match::InInterface {
                name: "cni-podman1".into(),
                negate: false,
            })
            .matching(Match::OutInterface {
                name: "cni-podman1".into(),
                negate: true,
            })
            .matching(Match::CtState(vec![CtState::New, CtState::Invalid]))
            .then(Action::Drop),
    );
    filter.ensure_rule(
        Rule::new("CNI-FORWARD")
            .matching(Match::Unicast)
            .matching(Match::destination(host_addr))
            .then(Action::Accept),
    );
    vec![nat, filter]
}

/// A namespace of the test's own where an earlier ADD left the shared
/// chains ([`shared`]), written by `iptables-restore`.
fn node(tag: &str, family: Family) -> TempNetns {
    let ns = netns(tag);
    laid_by_restore(&ns, &shared(family));
    ns
}

/// `txs` applied in `ns` by `iptables-restore`, never directly.
fn laid_by_restore(ns: &TempNetns, txs: &[Transaction]) {
    ns.run(|_| {
        let mut backend = IptablesBackend::new().with_direct_writes(false);
        for tx in txs {
            backend.apply(tx)?;
        }
        Ok::<_, BoxError>(())
    })
    .unwrap();
}

/// Whether [`IptablesBackend::ensure_directly`] wrote `tx` in `ns`.
fn written_directly(ns: &TempNetns, tx: &Transaction) -> bool {
    ns.run(|_| Ok::<_, BoxError>(IptablesBackend::new().ensure_directly(tx)))
        .unwrap()
}

/// `iptables-save -t TABLE` without its dated comments and counters.
fn saved(ns: &TempNetns, family: Family, table: &str) -> String {
    let program = if family == Family::Ip {
        "iptables-save"
    } else {
        "ip6tables-save"
    };
    run_in(ns, program, &["-t", table], "")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.replace(" [0:0]", ""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every rule of `table` as nf_tables lists it, chain by chain.
fn expressions(ns: &TempNetns, table: &Table) -> Vec<(String, Vec<u8>)> {
    ns.run(|_| {
        let mut nft = NftBackend::open()?;
        let mut all = Vec::new();
        let mut chains = nft.list_chains(table)?;
        chains.sort();
        for chain in chains {
            for ListedRule { content, .. } in nft.list_rules(table, &chain)? {
                if let RuleContent::Nft(exprs) = content {
                    all.push((chain.clone(), exprs));
                }
            }
        }
        Ok::<_, BoxError>(all)
    })
    .unwrap()
}

/// `iptables -C` of each rule: iptables' own reading of what is there.
fn checked_by_iptables(ns: &TempNetns, family: Family, tx: &Transaction) {
    let program = if family == Family::Ip {
        "iptables"
    } else {
        "ip6tables"
    };
    let table = tx.table().name.clone();
    let lines = tx.ops().iter().filter_map(|op| match op {
        Op::EnsureRule { rule, .. } => Some(rule),
        _ => None,
    });
    for rule in lines {
        let spec = cni_netfilter::iptables::rule_words(rule, family).unwrap();
        let mut args = vec![
            "-t".to_string(),
            table.clone(),
            "-C".into(),
            rule.chain.clone(),
        ];
        args.extend(spec);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_in(ns, program, &args, "");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_add_written_through_nf_tables_is_what_iptables_restore_writes() {
    for family in [Family::Ip, Family::Ip6] {
        let direct = node("direct", family);
        let restored = node("restored", family);
        for id in ["a", "b"] {
            for tx in attachment(family, id) {
                assert!(
                    written_directly(&direct, &tx),
                    "{family}: written directly: {tx:?}"
                );
                laid_by_restore(&restored, std::slice::from_ref(&tx));
                checked_by_iptables(&direct, family, &tx);
            }
        }
        for table in ["nat", "filter"] {
            assert_eq!(
                saved(&direct, family, table),
                saved(&restored, family, table),
                "{family} {table}: iptables-save of the direct writes, then of the restore's"
            );
            let table = Table::new(family, table);
            assert_eq!(
                expressions(&direct, &table),
                expressions(&restored, &table),
                "{table}: the same expressions"
            );
        }
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_add_repeated_directly_adds_nothing_twice() {
    let ns = node("direct-again", Family::Ip);
    let before = saved(&ns, Family::Ip, "filter");
    for round in 0..2 {
        for tx in attachment(Family::Ip, "a") {
            assert!(written_directly(&ns, &tx), "round {round}: {tx:?}");
        }
    }
    let after = saved(&ns, Family::Ip, "filter");
    assert_eq!(
        after.lines().count(),
        before.lines().count() + 4,
        "four rules added once:\n{after}"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn what_the_direct_path_cannot_be_sure_of_is_left_to_iptables_restore() {
    let ns = node("direct-unsure", Family::Ip);
    let filter = || Transaction::new(Table::new(Family::Ip, "filter"));
    // Another rule naming the address: the one ensured may be there in
    // another encoding.
    run_in(
        &ns,
        "iptables",
        &["-A", "CNI-FORWARD", "-d", "10.217.9.3/32", "-j", "DROP"],
        "",
    );
    let mut names_the_address = filter();
    names_the_address.ensure_rule(
        Rule::new("CNI-FORWARD")
            .matching(Match::destination(net("10.217.9.3/32")))
            .then(Action::Accept),
    );
    // A rule of a shared chain with no address of its own.
    let mut no_address = filter();
    no_address.ensure_rule(
        Rule::new("CNI-FORWARD")
            .matching(Match::InInterface {
                name: "cni0".into(),
                negate: false,
            })
            .then(Action::Accept),
    );
    // A chain that does not exist and is not made here.
    let mut no_chain = filter();
    no_chain.ensure_rule(Rule::new("CNI-NOWHERE").then(Action::Accept));
    // A table iptables has not made yet.
    let mut no_table = Transaction::new(Table::new(Family::Ip, "mangle"));
    no_table.ensure_chain(Chain::new("CNI-X"));
    // What has no form here: an SCTP port.
    let mut sctp = filter();
    sctp.ensure_rule(
        Rule::new("CNI-FORWARD")
            .matching(Match::destination(net("10.217.9.4/32")))
            .matching(Match::Protocol(Protocol::Sctp))
            .matching(Match::DestinationPort(80))
            .then(Action::Accept),
    );
    let before = saved(&ns, Family::Ip, "filter");
    for (what, tx) in [
        ("another rule names the address", names_the_address),
        ("no address to look for", no_address),
        ("no such chain", no_chain),
        ("no such table", no_table),
        ("an SCTP port", sctp),
    ] {
        assert!(
            !written_directly(&ns, &tx),
            "{what}: left to iptables-restore"
        );
    }
    assert_eq!(saved(&ns, Family::Ip, "filter"), before, "nothing changed");
    // On a host whose iptables is iptables-legacy, never.
    let mut fresh = Transaction::new(Table::new(Family::Ip, "nat"));
    fresh.ensure_chain(Chain::new("CNI-DN-legacy"));
    let wrote = ns
        .run(|_| {
            Ok::<_, BoxError>(
                IptablesBackend::with_variant(Variant::Legacy).ensure_directly(&fresh),
            )
        })
        .unwrap();
    assert!(!wrote, "legacy iptables: left to its restore");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn rules_iptables_wrote_are_deleted_directly_as_iptables_d_deletes_them() {
    let ns = netns("direct-del");
    for family in [Family::Ip, Family::Ip6] {
        let attachment = attachment(family, "a");
        let filter = &attachment[1];
        laid_by_restore(&ns, &shared(family));
        laid_by_restore(&ns, std::slice::from_ref(filter));
        let rules: Vec<Rule> = filter
            .ops()
            .iter()
            .filter_map(|op| match op {
                Op::EnsureRule { rule, .. } => Some(rule.clone()),
                _ => None,
            })
            .collect();
        // The first rule twice, as a repeated `iptables -A` leaves it.
        let program = if family == Family::Ip {
            "iptables"
        } else {
            "ip6tables"
        };
        let mut args = vec!["-A".to_string(), "CNI-FORWARD".into()];
        args.extend(cni_netfilter::iptables::rule_words(&rules[0], family).unwrap());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_in(&ns, program, &args, "");
        let table = Table::new(family, "filter");
        let before = saved(&ns, family, "filter");
        let mut absent = rules[1].clone();
        absent.action = Some(Action::Drop);
        let deleted = |rules: Vec<Rule>| {
            ns.run(|_| Ok::<_, BoxError>(IptablesBackend::new().delete_directly(&table, &rules)))
                .unwrap()
        };
        assert!(
            !deleted(vec![rules[1].clone(), absent]),
            "{family}: one rule absent: nothing deleted"
        );
        assert_eq!(saved(&ns, family, "filter"), before);
        assert!(deleted(rules.clone()), "{family}: all there");
        let after = saved(&ns, family, "filter");
        let spec = cni_netfilter::iptables::rule_words(&rules[0], family)
            .unwrap()
            .join(" ");
        assert_eq!(
            after.lines().count(),
            before.lines().count() - 4,
            "{family}: four rules deleted, the first once:\n{after}"
        );
        assert!(after.contains(&spec), "{family}: its twin is left: {after}");
    }
}

/// A pod's rules in a burst: its own chain in `nat`, entered from the
/// shared `CNI-HOSTPORT-DNAT` by its comment, and two `CNI-FORWARD`
/// rules naming its own address.
fn pod(w: u8) -> Vec<Transaction> {
    let id = format!("pod-{w}");
    let chain = format!("CNI-DN-{id}");
    let addr = net(&format!("10.217.10.{}/32", w + 2));
    let mut nat = Transaction::new(Table::new(Family::Ip, "nat"));
    nat.ensure_chain(Chain::new(chain.clone()))
        .ensure_rule(
            Rule::new(chain.clone())
                .matching(Match::Protocol(Protocol::Tcp))
                .matching(Match::DestinationPort(8080))
                .then(Action::Dnat {
                    addr: addr.addr(),
                    port: Some(80),
                }),
        )
        .ensure_rule(
            Rule::new("CNI-HOSTPORT-DNAT")
                .matching(Match::Protocol(Protocol::Tcp))
                .comment(format!("dnat name: \"net\" id: \"{id}\""))
                .then(Action::Jump(chain)),
        );
    let mut filter = Transaction::new(Table::new(Family::Ip, "filter"));
    for rule in accepted(addr) {
        filter.ensure_rule(rule);
    }
    vec![nat, filter]
}

/// A pod's masquerading as bridge's `ipMasq` lays it in `nat`, before
/// anything else of its ADD: its own chain, entered from `POSTROUTING` by
/// its address, written without a listing (`apply_to_absent`).
fn masquerade(w: u8) -> Transaction {
    let chain = format!("CNI-MQ-pod-{w}");
    let comment = format!("name: \"net\" id: \"pod-{w}\"");
    let mut nat = Transaction::new(Table::new(Family::Ip, "nat"));
    nat.ensure_chain(Chain::new(chain.clone()))
        .ensure_rule(
            Rule::new(chain.clone())
                .matching(Match::destination(net("10.217.10.0/24")))
                .then(Action::Accept)
                .comment(comment.clone()),
        )
        .ensure_rule(
            Rule::new(chain.clone())
                .matching(Match::not_destination(net("224.0.0.0/4")))
                .then(Action::Masquerade)
                .comment(comment.clone()),
        )
        .ensure_rule(
            Rule::new("POSTROUTING")
                .matching(Match::source(net(&format!("10.217.10.{}/32", w + 2))))
                .then(Action::Jump(chain))
                .comment(comment),
        );
    nat
}

/// The firewall's two `CNI-FORWARD` rules accepting an address's traffic:
/// replies to it, and what it sends.
fn accepted(addr: IpNetwork) -> [Rule; 2] {
    [
        Rule::new("CNI-FORWARD")
            .matching(Match::destination(addr))
            .matching(Match::CtState(vec![CtState::Related, CtState::Established]))
            .then(Action::Accept),
        Rule::new("CNI-FORWARD")
            .matching(Match::source(addr))
            .then(Action::Accept),
    ]
}

/// How many lines of `saved` are exactly `line`.
fn lines_equal(saved: &str, line: &str) -> usize {
    saved.lines().filter(|l| *l == line).count()
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_burst_of_first_adds_and_dels_lands_each_shared_rule_once_and_loses_no_pods_rule() {
    // A node whose nat and filter tables exist (another tool's chain in
    // each) but hold none of CNI's chains yet, nor the base chains they
    // enter from, and twelve pods' first ADDs at once: while the base
    // chains are missing the direct path declines and the writers wait
    // for their turn; the first one's restore makes them, and the others
    // write through nf_tables in theirs. Writers that find a shared chain
    // made by another since their listing list again and write directly.
    // The pods' own chains and rules go through nf_tables beside one
    // another, and every other pod deletes its own again (one batch
    // each) while the rest still write.
    let ns = netns("direct-burst");
    let mut other = Vec::new();
    for table in ["nat", "filter"] {
        let mut tx = Transaction::new(Table::new(Family::Ip, table));
        tx.ensure_chain(Chain::new("OTHER-TOOL"));
        other.push(tx);
    }
    laid_by_restore(&ns, &other);
    let commands = burst_of_first_adds(&ns);
    assert_eq!(
        lines_equal(&saved(&ns, Family::Ip, "nat"), ":OTHER-TOOL -"),
        1
    );
    assert_eq!(
        lines_equal(&saved(&ns, Family::Ip, "filter"), ":OTHER-TOOL -"),
        1
    );
    // At most a save and a restore for each table or base chain
    // iptables has to make (5 measured); 16 to 32 while every writer
    // that found one missing, or lost a race to make a shared chain, ran
    // its own.
    assert!(
        commands <= 8,
        "{commands} iptables commands for 60 ADD transactions"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_burst_of_first_adds_on_a_fresh_node_runs_iptables_for_the_tables_and_writes_the_rest_directly()
{
    // No nat or filter table at all, as in a new node namespace: only
    // iptables makes a table, so the first writer of each runs its save
    // and restore; every other transaction goes through nf_tables.
    let ns = netns("direct-fresh");
    let commands = burst_of_first_adds(&ns);
    assert!(
        commands <= 8,
        "{commands} iptables commands for 60 ADD transactions"
    );
}

/// Twelve pods' first ADDs in `ns` at once (their masquerading, then the
/// shared chains' and their own, in nat and filter), every other one's
/// rules but its masquerading deleted again while the rest still write;
/// asserts each shared rule landed once and each pod's rules are there
/// exactly while it lives. How many iptables commands the writers
/// started.
fn burst_of_first_adds(ns: &TempNetns) -> usize {
    let writers = 12u8;
    let start = std::sync::Barrier::new(usize::from(writers));
    let commands = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for w in 0..writers {
            let (ns, start, commands) = (ns, &start, &commands);
            scope.spawn(move || {
                ns.run(|_| {
                    let mut backend = IptablesBackend::new();
                    start.wait();
                    backend.apply_to_absent(&masquerade(w))?;
                    for tx in shared(Family::Ip).iter().chain(&pod(w)) {
                        backend.apply(tx)?;
                    }
                    let started = backend.commands_started();
                    commands.fetch_add(started, std::sync::atomic::Ordering::Relaxed);
                    if w % 2 == 0 {
                        let filter = Table::new(Family::Ip, "filter");
                        let addr = net(&format!("10.217.10.{}/32", w + 2));
                        assert!(
                            backend.delete_expected(&filter, &accepted(addr))?,
                            "writer {w}: its rules were there to delete"
                        );
                        let chain = format!("CNI-DN-pod-{w}");
                        let nat = Table::new(Family::Ip, "nat");
                        let removed = backend
                            .remove_chains_directly(&nat, &[(&chain, "CNI-HOSTPORT-DNAT")])?;
                        assert!(removed, "writer {w}: its chain removed through nf_tables");
                    }
                    Ok::<_, BoxError>(())
                })
                .unwrap_or_else(|e| panic!("writer {w}: {e}"));
            });
        }
    });
    let (nat, filter) = (
        saved(ns, Family::Ip, "nat"),
        saved(ns, Family::Ip, "filter"),
    );
    for (saved, line) in [
        (&nat, "-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT"),
        (&nat, "-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT"),
        (&nat, "-A POSTROUTING -m comment --comment \"CNI portfwd requiring masquerade\" -j CNI-HOSTPORT-MASQ"),
        (&nat, "-A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE"),
        (&filter, "-A FORWARD -m comment --comment \"CNI firewall plugin rules\" -j CNI-FORWARD"),
        (&filter, "-A CNI-FORWARD -m comment --comment \"CNI firewall plugin admin overrides\" -j CNI-ADMIN"),
    ] {
        assert_eq!(lines_equal(saved, line), 1, "once: {line}\n{nat}\n{filter}");
    }
    for w in 0..writers {
        let held = usize::from(w % 2 == 1);
        let addr = format!("10.217.10.{}/32", w + 2);
        assert_eq!(
            lines_equal(&filter, &format!("-A CNI-FORWARD -s {addr} -j ACCEPT")),
            held,
            "writer {w}:\n{filter}"
        );
        assert_eq!(
            lines_equal(&nat, &format!(":CNI-DN-pod-{w} -")),
            held,
            "writer {w}:\n{nat}"
        );
        let entries = nat
            .lines()
            .filter(|l| {
                l.starts_with("-A CNI-HOSTPORT-DNAT") && l.ends_with(&format!("-j CNI-DN-pod-{w}"))
            })
            .count();
        assert_eq!(entries, held, "writer {w}'s entry rule:\n{nat}");
        let masquerading = nat
            .lines()
            .filter(|l| {
                l.starts_with("-A POSTROUTING") && l.ends_with(&format!("-j CNI-MQ-pod-{w}"))
            })
            .count();
        assert_eq!(masquerading, 1, "writer {w}'s masquerading:\n{nat}");
        assert_eq!(
            lines_equal(&nat, &format!(":CNI-MQ-pod-{w} -")),
            1,
            "writer {w}:\n{nat}"
        );
    }
    commands.into_inner()
}
