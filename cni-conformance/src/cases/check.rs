//! CHECK (SPEC-1.0.0 §2 CHECK, introduced by 0.4.0), read from each
//! version's lifecycle.

use cni_types::SpecVersion;

use crate::case::{Case, Finding, Level, Verdict};
use crate::cases::lifecycle::lifecycle;
use crate::session::Session;

fn passes_after_add(s: &Session) -> Verdict {
    let mut findings = Vec::new();
    let mut ran = false;
    for version in s.versions().iter().filter(|v| **v >= SpecVersion::V0_4_0) {
        let life = lifecycle(s, version);
        if life.result.is_none() {
            continue;
        }
        ran = true;
        if !life.check.succeeded() {
            findings.push(Finding::on(
                &life.check,
                format!(
                    "{version}: CHECK right after ADD failed ({})",
                    life.check.outcome()
                ),
            ));
        }
    }
    if !ran {
        return Verdict::Skip("no successful ADD at 0.4.0 or later".into());
    }
    Verdict::from_findings(findings)
}

fn refused_before_0_4_0(s: &Session) -> Verdict {
    let mut findings = Vec::new();
    let mut ran = false;
    for version in s.versions().iter().filter(|v| **v < SpecVersion::V0_4_0) {
        let life = lifecycle(s, version);
        if life.result.is_none() {
            continue;
        }
        ran = true;
        if life.check.succeeded() {
            findings.push(Finding::on(
                &life.check,
                format!("CHECK with a {version} configuration succeeded"),
            ));
        }
    }
    if !ran {
        return Verdict::Skip("no successful ADD below 0.4.0".into());
    }
    Verdict::from_findings(findings)
}

/// The cases of this section.
pub const CASES: [Case; 2] = [
    Case {
        id: "CHECK-AFTER-ADD",
        spec: "SPEC-1.0.0 §2 CHECK",
        quote: "The plugin must consult the `prevResult` to determine the expected interfaces and addresses. ... The plugin must handle `CHECK` being called immediately after an `ADD`",
        level: Level::Must,
        ipam_level: None,
        check: passes_after_add,
    },
    Case {
        id: "CHECK-REFUSED-BEFORE-0.4.0",
        spec: "SPEC-0.4.0 (CHECK introduced); SPEC-1.0.0 §2 Errors",
        quote: "spec-v0.4.0: Introduce the CHECK command ... A plugin must exit with a return code of 0 on success, and non-zero on failure.",
        level: Level::Must,
        ipam_level: None,
        check: refused_before_0_4_0,
    },
];
