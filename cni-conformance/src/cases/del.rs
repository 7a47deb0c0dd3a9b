//! DEL (SPEC-1.0.0 §2 DEL), read from each version's lifecycle.

use std::sync::Arc;

use cni_types::SpecVersion;

use crate::call::Call;
use crate::case::{Case, Finding, Level, Verdict};
use crate::cases::add::failure;
use crate::cases::lifecycle::{lifecycle, result_of, Lifecycle};
use crate::session::Session;
use crate::target::Kind;

/// A finding for every version whose `pick`ed call did not succeed;
/// skipped when no version has one.
fn each_succeeds(s: &Session, pick: impl Fn(&Lifecycle) -> Option<&Arc<Call>>) -> Verdict {
    let mut findings = Vec::new();
    let mut ran = false;
    for version in s.versions() {
        let life = lifecycle(s, version);
        let Some(call) = pick(&life) else {
            continue;
        };
        ran = true;
        if !call.succeeded() {
            findings.push(Finding::on(
                call,
                format!("{}: {}", call.step, call.outcome()),
            ));
        }
    }
    if !ran {
        return Verdict::Skip("not applicable to the versions exercised".into());
    }
    Verdict::from_findings(findings)
}

fn succeeds(s: &Session) -> Verdict {
    each_succeeds(s, |life| Some(&life.del))
}

fn again(s: &Session) -> Verdict {
    each_succeeds(s, |life| Some(&life.del_again))
}

fn without_prev_result(s: &Session) -> Verdict {
    each_succeeds(s, |life| {
        (life.version >= SpecVersion::V0_4_0 && life.add_again.succeeded())
            .then_some(&life.del_no_prev)
    })
}

fn netns_gone(s: &Session) -> Verdict {
    if !s.owns_netns() {
        return Verdict::Skip("needs --netns auto".into());
    }
    each_succeeds(s, |life| {
        let (add, del) = life.gone.as_ref()?;
        add.succeeded().then_some(del)
    })
}

fn add_after_del(s: &Session) -> Verdict {
    let findings = s
        .versions()
        .iter()
        .filter_map(|v| {
            let life = lifecycle(s, v);
            let call = &life.add_again;
            (life.result.is_some() && result_of(call).is_none())
                .then(|| Finding::on(call, format!("{v}: {}", failure(call))))
        })
        .collect();
    Verdict::from_findings(findings)
}

fn no_leftover_link(s: &Session) -> Verdict {
    if s.kind() != Kind::Interface {
        return Verdict::Skip("for interface plugins".into());
    }
    let mut findings = Vec::new();
    for version in s.versions() {
        let life = lifecycle(s, version);
        let Some(links) = &life.links else {
            return Verdict::Skip(
                "cannot list the namespace's links (needs a named namespace)".into(),
            );
        };
        let left: Vec<&String> = links
            .after_del
            .iter()
            .filter(|l| !links.before.contains(l))
            .collect();
        if life.del.succeeded() && !left.is_empty() {
            findings.push(Finding::on(
                &life.del,
                format!("{version}: after DEL the namespace still holds {left:?}"),
            ));
        }
    }
    Verdict::from_findings(findings)
}

/// The cases of this section.
pub const CASES: [Case; 6] = [
    Case {
        id: "DEL-SUCCEEDS",
        spec: "SPEC-1.0.0 §2 DEL",
        quote: "Plugins MUST accept multiple `DEL` calls for the same (`CNI_CONTAINERID`, `CNI_IFNAME`) pair, and return success if the interface in question, or any modifications added, are missing.",
        level: Level::Must,
        ipam_level: None,
        check: succeeds,
    },
    Case {
        id: "DEL-AGAIN",
        spec: "SPEC-1.0.0 §2 DEL",
        quote: "Plugins MUST accept multiple `DEL` calls for the same (`CNI_CONTAINERID`, `CNI_IFNAME`) pair, and return success if the interface in question, or any modifications added, are missing.",
        level: Level::Must,
        ipam_level: None,
        check: again,
    },
    Case {
        id: "DEL-NO-PREVRESULT",
        spec: "SPEC-0.4.0 Network Configuration Lists",
        quote: "For the CHECK and DEL actions, the runtime MUST (except that it may be omitted for DEL if not available) add a prevResult field",
        level: Level::Must,
        ipam_level: None,
        check: without_prev_result,
    },
    Case {
        id: "DEL-NETNS-GONE",
        spec: "SPEC-1.0.0 §2 DEL",
        quote: "Plugins should generally complete a `DEL` action without error even if some resources are missing. For example, an IPAM plugin should generally release an IP allocation and return success even if the container network namespace no longer exists",
        level: Level::Should,
        ipam_level: None,
        check: netns_gone,
    },
    Case {
        id: "ADD-AFTER-DEL",
        spec: "SPEC-1.0.0 §2 ADD, DEL",
        quote: "A runtime should not call `ADD` twice (without an intervening DEL) for the same `(CNI_CONTAINERID, CNI_IFNAME)` tuple. ... A CNI plugin, upon receiving a `DEL` command, should either delete the interface ... or undo any modifications",
        level: Level::Must,
        ipam_level: None,
        check: add_after_del,
    },
    Case {
        id: "DEL-NO-LEFTOVER",
        spec: "SPEC-1.0.0 §2 DEL",
        quote: "A CNI plugin, upon receiving a `DEL` command, should either delete the interface defined by `CNI_IFNAME` inside the container at `CNI_NETNS`, or undo any modifications applied in the plugin's `ADD` functionality",
        level: Level::Should,
        ipam_level: None,
        check: no_leftover_link,
    },
];
