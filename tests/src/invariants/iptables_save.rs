//! `iptables_save`: the output of `iptables-save` as the iptables backend
//! reads it (`cni_netfilter::fuzzing::iptables_save`).
//!
//! Input: the output's bytes; like the backend, they are read as UTF-8
//! lossily, and the sections of `nat`, `filter` and every table the text
//! names are parsed. Checked:
//! - nothing panics;
//! - every chain listed has a `:CHAIN` line of its table, every rule is an
//!   `-A CHAIN SPEC` line of the text as it stands (what `-D` sends back
//!   must be what was saved), and there are no more rules than lines;
//! - a rule's comment is the word after its `--comment`, and there is none
//!   without one;
//! - a spec's words, joined as an `iptables-restore` line is written and
//!   split again, are the same words.

use std::collections::HashSet;

use cni_netfilter::fuzzing::iptables_save::{line, parse, words};
use cni_netfilter::RuleHandle;

/// The target's name and corpus directory.
pub const TARGET: &str = "iptables_save";

/// Words of the format for the mutation runs.
pub const TOKENS: [&[u8]; 9] = [
    b"\n*nat\n",
    b"\n*filter\n",
    b"\n:CNI-X - [0:0]\n",
    b"\n-A ",
    b" -m comment --comment ",
    b"\"",
    b"\\",
    b"\nCOMMIT\n",
    b"\r",
];

/// The fuzz target: panics naming the violated invariant.
pub fn fuzz(data: &[u8]) {
    if let Err(why) = check(data) {
        super::fail(TARGET, data, why);
    }
}

/// The invariants above, for one output.
pub fn check(data: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(data);
    let lines: HashSet<&str> = text.lines().collect();
    let appends = text.lines().filter(|l| l.starts_with("-A ")).count();
    let declared: HashSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix(':')?.split_whitespace().next())
        .collect();
    let mut tables = vec!["nat", "filter"];
    for named in text.lines().filter_map(|l| l.strip_prefix('*')).take(4) {
        if !tables.contains(&named.trim()) {
            tables.push(named.trim());
        }
    }
    for table in tables {
        let saved = parse(&text, table);
        for chain in &saved.chains {
            if chain.is_empty() || !declared.contains(chain.as_str()) {
                return Err(format!("table {table}: chain {chain:?} has no ':' line"));
            }
        }
        if saved.rules.len() > appends {
            return Err(format!(
                "table {table}: {} rules from {appends} -A lines",
                saved.rules.len()
            ));
        }
        for rule in &saved.rules {
            let RuleHandle::Iptables(spec) = &rule.handle else {
                return Err(format!("table {table}: {rule:?} has no iptables spec"));
            };
            let as_saved = if spec.is_empty() {
                format!("-A {}", rule.chain)
            } else {
                format!("-A {} {spec}", rule.chain)
            };
            let trailing_space = format!("{as_saved} ");
            if !lines.contains(as_saved.as_str()) && !lines.contains(trailing_space.as_str()) {
                return Err(format!("table {table}: {as_saved:?} is not a line"));
            }
            let split = words(spec);
            let after = split
                .iter()
                .position(|w| w == "--comment")
                .and_then(|at| split.get(at + 1));
            if rule.comment.as_ref() != after {
                return Err(format!(
                    "table {table}: comment {:?} of {spec:?}, whose words say {after:?}",
                    rule.comment
                ));
            }
            let again = words(&line(&split));
            if again != split {
                return Err(format!(
                    "{split:?} written as {:?} reads back as {again:?}",
                    line(&split)
                ));
            }
        }
    }
    Ok(())
}

/// Generated seeds: the layouts of the reference's portmap and ipMasq as
/// the backend's own unit tests save them (the captured outputs are in
/// `fuzz/corpus/iptables_save/`).
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    vec![
        (
            "seed-masquerade".into(),
            b"*nat\n:POSTROUTING ACCEPT [0:0]\n:CNI-old - [0:0]\n\
              -A POSTROUTING -s 10.0.0.5/32 -m comment --comment \"id: c1\" -j CNI-old\nCOMMIT\n"
                .to_vec(),
        ),
        (
            "seed-escapes".into(),
            b"*filter\n:CNI-FORWARD - [0:0]\n\
              -A CNI-FORWARD -m comment --comment \"a \\\"b\\\" \\\\ c\" -j ACCEPT\n\
              -A CNI-FORWARD\nCOMMIT\n"
                .to_vec(),
        ),
    ]
}
