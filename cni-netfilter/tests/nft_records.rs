//! Rules added with their handles echoed back (`apply_recording`) and
//! deleted by those handles (`delete_recorded`): exactly the owner's, and
//! nothing when a handle names a rule that is not the owner's any more.
//! Needs root.

mod common;

use cni_netfilter::nft::{AddedRule, MAX_RECORDED_RULES};
use cni_netfilter::{Action, Backend, Chain, Family, Match, Protocol, Rule, Table, Transaction};
use common::{netns, with_nft};

/// Table `records` with chain `c` and a rule per `(owner, port)`.
fn rules(table: &Table, owners: &[(&str, u16)]) -> Transaction {
    let mut tx = Transaction::new(table.clone());
    tx.ensure_table().ensure_chain(Chain::new("c"));
    for (owner, port) in owners {
        tx.add_rule(
            Rule::new("c")
                .matching(Match::Protocol(Protocol::Tcp))
                .matching(Match::DestinationPort(*port))
                .then(Action::Accept)
                .comment(*owner),
        );
    }
    tx
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn rules_recorded_at_add_are_deleted_by_handle_and_a_handle_of_another_rule_deletes_nothing() {
    let ns = netns("nft-records");
    let table = Table::new(Family::Ip, "records");
    with_nft(&ns, |nft| {
        let added = (nft.apply_recording(&rules(&table, &[("a", 1), ("b", 2), ("a", 3)]))?)
            .expect("every rule echoed back");
        let listed = nft.list_rules(&table, "c")?;
        let handles = |rules: &[AddedRule]| rules.iter().map(|r| r.handle).collect::<Vec<_>>();
        let listed_handles: Vec<u64> = (listed.iter())
            .map(|r| match r.handle {
                cni_netfilter::RuleHandle::Nft(h) => h,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            handles(&added),
            listed_handles,
            "the handles the kernel lists"
        );
        let comments: Vec<_> = added.iter().map(|r| r.comment.as_deref()).collect();
        assert_eq!(comments, [Some("a"), Some("b"), Some("a")]);
        let (a, b): (Vec<_>, Vec<_>) =
            (added.into_iter()).partition(|r| r.comment.as_deref() == Some("a"));

        // b's rule recorded under a's name: nothing is deleted.
        assert!(!nft.delete_recorded(&table, &[a[0].clone(), b[0].clone()], "a")?);
        assert_eq!(nft.list_rules(&table, "c")?.len(), 3);
        assert!(nft.delete_recorded(&table, &a, "a")?, "a's two rules");
        let left = nft.list_rules(&table, "c")?;
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].comment.as_deref(), Some("b"));
        assert!(
            !nft.delete_recorded(&table, &a, "a")?,
            "gone: nothing to do by handle"
        );

        // The table made again: its handles start over, so b's recorded
        // handle now names x's rule, which stays.
        let mut drop = Transaction::new(table.clone());
        drop.delete_table();
        nft.apply(&drop)?;
        let again = (nft.apply_recording(&rules(&table, &[("x", 1), ("x", 2), ("x", 3)]))?)
            .expect("echoed");
        assert!(
            handles(&again).contains(&b[0].handle),
            "a handle reused: {again:?} {b:?}"
        );
        assert!(!nft.delete_recorded(&table, &b, "b")?);
        assert_eq!(nft.list_rules(&table, "c")?.len(), 3);

        // More rules than are echoed: applied, not recorded.
        let owners: Vec<(&str, u16)> = (0..=MAX_RECORDED_RULES as u16)
            .map(|p| ("y", 100 + p))
            .collect();
        assert_eq!(nft.apply_recording(&rules(&table, &owners))?, None);
        assert_eq!(nft.list_rules(&table, "c")?.len(), 3 + owners.len());
        Ok(())
    });
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn deletions_by_record_in_a_burst_each_delete_by_handle_beside_other_writers() {
    // Each owner's batch is tied to the generation of its looks, and a
    // burst commits between them: the looks and the batch are made again,
    // so each deletion still goes by handle (true), never falls back.
    let ns = netns("nft-records-burst");
    let table = Table::new(Family::Ip, "records");
    let owners: Vec<String> = (0..12).map(|i| format!("pod-{i}")).collect();
    let recorded: Vec<Vec<AddedRule>> = owners
        .iter()
        .enumerate()
        .map(|(i, owner)| {
            let port = 1000 + 10 * i as u16;
            let tx = rules(
                &table,
                &[(owner, port), (owner, port + 1), (owner, port + 2)],
            );
            with_nft(&ns, |nft| Ok(nft.apply_recording(&tx)?.expect("echoed")))
        })
        .collect();
    let start = std::sync::Barrier::new(owners.len() + 1);
    std::thread::scope(|scope| {
        for (owner, rules) in owners.iter().zip(&recorded) {
            let (ns, table, start) = (&ns, &table, &start);
            scope.spawn(move || {
                let deleted = with_nft(ns, |nft| {
                    start.wait();
                    Ok(nft.delete_recorded(table, rules, owner)?)
                });
                assert!(deleted, "{owner}: deleted by handle");
            });
        }
        // Another writer adding rules all along.
        let (ns, table, start) = (&ns, &table, &start);
        scope.spawn(move || {
            with_nft(ns, |nft| {
                start.wait();
                for port in 0..24 {
                    nft.apply(&rules(table, &[("other", 5000 + port)]))?;
                }
                Ok(())
            })
        });
    });
    with_nft(&ns, |nft| {
        let left = nft.list_rules(&table, "c")?;
        assert_eq!(left.len(), 24, "only the other writer's rules");
        assert!(left.iter().all(|r| r.comment.as_deref() == Some("other")));
        Ok(())
    });
}

/// The destination ports of the rules with comment `comment`, in order,
/// as `nft -j` lists them.
fn ports_of(ns: &cni_net::testing::TempNetns, comment: &str) -> Vec<u64> {
    let ruleset = common::ruleset(ns);
    let mut ports = Vec::new();
    for rule in common::rules(&ruleset) {
        if rule["comment"] != comment {
            continue;
        }
        for expr in rule["expr"].as_array().unwrap() {
            if expr["match"]["left"]["payload"]["field"] == "dport" {
                ports.push(expr["match"]["right"].as_u64().unwrap());
            }
        }
    }
    ports
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_owners_rules_are_replaced_and_deleted_by_its_record_and_by_comment_without_one() {
    use cni_netfilter::nft::{OwnedRules, RuleRecord};
    use cni_netfilter::CommentMatch;
    let ns = netns("nft-owned");
    let table = Table::new(Family::Inet, "owned");
    let group = "owned-test";
    let owned = |who: &str| {
        let found_by = CommentMatch::Prefix(format!("{who} "));
        OwnedRules::here(group, who, format!("{who} rule"), found_by)
    };
    // An ADD as the firewall's: replaces the owner's earlier rules.
    let add = |nft: &mut cni_netfilter::nft::NftBackend, who: &str, ports: &[u16]| {
        let mut owner = owned(who);
        owner.begin()?;
        let mut tx = Transaction::new(table.clone());
        tx.ensure_table().ensure_chain(Chain::new("c"));
        owner.delete_earlier(nft, &mut tx, &["c"])?;
        for port in ports {
            tx.add_rule(
                Rule::new("c")
                    .matching(Match::Protocol(Protocol::Tcp))
                    .matching(Match::DestinationPort(*port))
                    .then(Action::Accept)
                    .comment(format!("{who} rule")),
            );
        }
        owner.apply(nft, &tx, true)
    };
    with_nft(&ns, |nft| {
        add(nft, "a", &[1, 2])?;
        add(nft, "b", &[3])?;
        add(nft, "a", &[4])?;
        assert_eq!(ports_of(&ns, "a rule"), [4], "a's earlier rules replaced");
        assert_eq!(ports_of(&ns, "b rule"), [3]);
        let record = RuleRecord::here(group, "a")
            .unwrap()
            .read()
            .unwrap()
            .unwrap();
        assert!(!record.pending);
        assert_eq!(record.of_table(&table).len(), 1, "{record:?}");

        // Rules of an owner without a record (the reference's): a DEL
        // finds them by comment.
        nft.apply(&rules(&table, &[("c rule", 5), ("c rule", 6)]))?;
        owned("c").delete(nft, &table, &["c"])?;
        assert_eq!(ports_of(&ns, "c rule"), Vec::<u64>::new());

        // An ADD killed after its mark: the next ADD deletes by comment.
        RuleRecord::here(group, "b").unwrap().begin().unwrap();
        nft.apply(&rules(&table, &[("b rule", 7)]))?;
        add(nft, "b", &[8])?;
        assert_eq!(ports_of(&ns, "b rule"), [8]);
        let record = RuleRecord::here(group, "b")
            .unwrap()
            .read()
            .unwrap()
            .unwrap();
        assert!(!record.pending, "made afresh: {record:?}");

        // The table made again: a's recorded handle may name b's rule
        // now, which its DEL leaves, deleting a's by comment.
        let mut drop = Transaction::new(table.clone());
        drop.delete_table();
        nft.apply(&drop)?;
        nft.apply(&rules(&table, &[("b rule", 9), ("a rule", 10)]))?;
        owned("a").delete(nft, &table, &["c"])?;
        owned("a").forget();
        assert_eq!(ports_of(&ns, "b rule"), [9]);
        assert_eq!(ports_of(&ns, "a rule"), Vec::<u64>::new());
        assert_eq!(RuleRecord::here(group, "a").unwrap().read().unwrap(), None);

        // GC forgets the records of owners it does not keep.
        OwnedRules::forget_unkept(group, |owner| owner == "a");
        assert_eq!(RuleRecord::here(group, "b").unwrap().read().unwrap(), None);
        let owners = RuleRecord::group_here(group).unwrap().owners().unwrap();
        assert!(owners.is_empty(), "{owners:?}");
        Ok(())
    });
}

#[test]
fn a_test_namespace_takes_its_records_with_it() {
    assert!(
        cni_net::testing::NAMESPACE_STATE_DIRS.contains(&cni_netfilter::nft::RECORD_DIR),
        "cni_net::testing::TempNetns removes the records of its namespace"
    );
}
