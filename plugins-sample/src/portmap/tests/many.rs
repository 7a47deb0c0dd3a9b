//! portmap with as many mappings as its configuration takes
//! ([`MAX_MAPPINGS`]): each ADD is one transaction (one nftables batch,
//! one `iptables-restore`), applied whole, and DEL removes all of it.

use cni_net::testing::TempNetns;
use serde_json::{json, Value};

use super::{conf, exec_in, mappings, run_in};
use crate::portmap::config::MAX_MAPPINGS;

/// `n` TCP mappings, host ports 10001.., container port 80.
fn many(n: usize, backend: &str) -> Value {
    let list: Vec<Value> = (0..n)
        .map(|i| json!({"hostPort": 10_001 + i, "containerPort": 80, "protocol": "tcp"}))
        .collect();
    let mut c = conf(mappings(json!(list)));
    c["backend"] = json!(backend);
    c["snat"] = json!(true);
    c
}

/// The DNAT rules of `ip cni_hostport hostports`.
fn dnat_rules(host: &TempNetns) -> usize {
    let chain = exec_in(host, "nft", &["list", "table", "ip", "cni_hostport"]);
    chain.lines().filter(|l| l.contains(" dnat to ")).count()
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn mappings_4096_under_iptables_are_added_checked_and_deleted() {
    // About 12,300 rules: ensuring and checking them once compared each
    // with every listed rule (26 s); a lookup now.
    let host = TempNetns::new("pm-many-ipt").unwrap();
    let c = many(MAX_MAPPINGS, "iptables");
    for command in ["ADD", "CHECK", "DEL"] {
        let out = run_in(&host, command, "ctr-many", &c);
        assert_eq!(
            out.exit_code,
            0,
            "{command}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let rules = exec_in(&host, "iptables-save", &["-t", "nat"]);
        let dnat = rules.lines().filter(|l| l.contains("-j DNAT")).count();
        assert_eq!(
            dnat,
            if command == "DEL" { 0 } else { MAX_MAPPINGS },
            "{command}"
        );
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn up_to_4096_mappings_are_added_checked_and_deleted_whole_under_nftables() {
    let host = TempNetns::new("pm-many").unwrap();
    for n in [300, 700, MAX_MAPPINGS] {
        let c = many(n, "nftables");
        let out = run_in(&host, "ADD", "ctr-many", &c);
        assert_eq!(
            out.exit_code,
            0,
            "{n}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(dnat_rules(&host), n);
        let out = run_in(&host, "CHECK", "ctr-many", &c);
        assert_eq!(
            out.exit_code,
            0,
            "{n}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let out = run_in(&host, "DEL", "ctr-many", &c);
        assert_eq!(
            out.exit_code,
            0,
            "{n}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(dnat_rules(&host), 0, "{n} mappings deleted");
    }
}
