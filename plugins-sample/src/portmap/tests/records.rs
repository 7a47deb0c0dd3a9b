//! nftables DELs by the ADD's record of its rules' handles: exactly the
//! container's rules go; without a complete record (a killed ADD's mark)
//! by comment; GC forgets the records of containers it does not keep.

use cni_net::testing::TempNetns;
use cni_netfilter::nft::{Recorded, RuleRecord};
use serde_json::json;

use super::host::gc_in;
use super::{conf, exec_in, run_in};

/// The record of `id` in network `pmtest` in `host`.
fn record(host: &TempNetns, id: &str) -> Option<Recorded> {
    let id = id.to_string();
    host.run(move |_| Ok::<_, cni_net::NetError>(RuleRecord::here("pmtest", &id).unwrap().read()))
        .unwrap()
        .unwrap()
}

/// How many rules of `host`'s ruleset are commented `id`.
fn rules_of(host: &TempNetns, id: &str) -> usize {
    let ruleset = exec_in(host, "nft", &["list", "ruleset"]);
    ruleset
        .lines()
        .filter(|l| l.ends_with(&format!("comment \"{id}\"")))
        .count()
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_del_deletes_the_rules_its_add_recorded_and_by_comment_when_an_add_left_its_mark() {
    let host = TempNetns::new("pm-rec").unwrap();
    let c = conf(json!({"backend": "nftables"}));
    for id in ["ctr-1", "ctr-2", "ctr-3"] {
        assert_eq!(run_in(&host, "ADD", id, &c).exit_code, 0, "{id}");
    }
    // One DNAT rule and two masquerading rules each, all recorded.
    let recorded = record(&host, "ctr-1").expect("a record");
    assert!(!recorded.pending, "{recorded:?}");
    assert_eq!(recorded.rules.len(), 3, "{recorded:?}");
    assert_eq!(rules_of(&host, "ctr-1"), 3);

    assert_eq!(run_in(&host, "DEL", "ctr-1", &c).exit_code, 0);
    assert_eq!(rules_of(&host, "ctr-1"), 0);
    assert_eq!(record(&host, "ctr-1"), None, "the record goes with them");
    assert_eq!(rules_of(&host, "ctr-2"), 3, "another container's stay");

    // A second ADD of ctr-2 killed after its batch and before its record:
    // its mark stays, its rule is unrecorded; the DEL finds all by comment.
    host.run(|_| Ok::<_, cni_net::NetError>(RuleRecord::here("pmtest", "ctr-2").unwrap().begin()))
        .unwrap()
        .unwrap();
    exec_in(
        &host,
        "nft",
        &["add rule ip cni_hostport hostports tcp dport 9090 dnat to 10.88.0.5:90 comment \"ctr-2\""],
    );
    assert!(record(&host, "ctr-2").unwrap().pending);
    assert_eq!(rules_of(&host, "ctr-2"), 4);
    assert_eq!(run_in(&host, "DEL", "ctr-2", &c).exit_code, 0);
    assert_eq!(rules_of(&host, "ctr-2"), 0);
    assert_eq!(record(&host, "ctr-2"), None);

    // The table made again: ctr-3's recorded handles may now name other
    // rules, which its DEL leaves (checked by comment) before deleting
    // its own by comment.
    exec_in(&host, "nft", &["delete table ip cni_hostport"]);
    assert_eq!(run_in(&host, "ADD", "ctr-4", &c).exit_code, 0);
    assert_eq!(run_in(&host, "ADD", "ctr-3", &c).exit_code, 0);
    assert_eq!(run_in(&host, "DEL", "ctr-3", &c).exit_code, 0);
    assert_eq!(rules_of(&host, "ctr-3"), 0);
    assert_eq!(rules_of(&host, "ctr-4"), 3, "ctr-4's rules stay");

    // GC keeping ctr-5 only: ctr-4's record goes (its rules stay, as GC
    // leaves the nftables layout), ctr-5's stays.
    assert_eq!(run_in(&host, "ADD", "ctr-5", &c).exit_code, 0);
    gc_in(
        &host,
        "nftables",
        Some(json!([{"containerID": "ctr-5", "ifname": "eth0"}])),
    );
    assert_eq!(record(&host, "ctr-4"), None);
    assert!(record(&host, "ctr-5").is_some());
    assert_eq!(rules_of(&host, "ctr-4"), 3);
    for id in ["ctr-4", "ctr-5"] {
        assert_eq!(run_in(&host, "DEL", id, &c).exit_code, 0);
        assert_eq!(rules_of(&host, id), 0);
    }
}
