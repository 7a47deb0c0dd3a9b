//! GC (SPEC-1.1.0 "New operations: GC"): valid attachments survive it.

use cni_skel::Command;
use cni_types::{IpNetwork, SpecVersion};
use serde_json::json;

use crate::call::Call;
use crate::case::{Case, Finding, Level, Verdict};
use crate::cases::concurrency::addresses;
use crate::cases::lifecycle::result_of;
use crate::session::Session;

use crate::scenarios::GcOutcome;

fn run(s: &Session) -> GcOutcome {
    let v = SpecVersion::V1_1_0;
    let kept = ("cnic-gc-kept", format!("{}k", s.target().ifname));
    let other = ("cnic-gc-other", format!("{}o", s.target().ifname));
    let new = ("cnic-gc-new", format!("{}n", s.target().ifname));
    let add = |step: String, (id, ifname): &(&str, String), host: u8| {
        s.prepare_link(s.netns(), ifname);
        let config = s.add_config(&v, s.netns(), ifname, host);
        s.exec(
            step,
            &s.invocation(Command::Add, id, ifname),
            config.to_string().as_bytes(),
        )
    };
    let add_kept = add(format!("GC: ADD {}", kept.0), &kept, 20);
    let add_other = add(format!("GC: ADD {}", other.0), &other, 21);
    let valid = json!([{"containerID": kept.0, "ifname": kept.1}]);
    let mut config = s.config(&v, None);
    config["cni.dev/valid-attachments"] = valid.clone();
    // The name of an earlier draft, which the reference runtime sends too.
    config["cni.dev/attachments"] = valid;
    let gc = s.exec(
        "GC keeping one of two attachments",
        &s.invocation(Command::Gc, "", ""),
        config.to_string().as_bytes(),
    );
    let check = s.exec(
        format!("GC: CHECK {} after GC", kept.0),
        &s.invocation(Command::Check, kept.0, &kept.1),
        s.config(&v, result_of(&add_kept).as_ref())
            .to_string()
            .as_bytes(),
    );
    let add_new = add(format!("GC: ADD {} after GC", new.0), &new, 22);
    for (add, (id, ifname)) in [&add_kept, &add_other, &add_new]
        .into_iter()
        .zip([&kept, &other, &new])
    {
        let config = s.config(&v, result_of(add).as_ref());
        s.exec(
            format!("GC: DEL {id}"),
            &s.invocation(Command::Del, id, ifname),
            config.to_string().as_bytes(),
        );
    }
    GcOutcome {
        add_kept,
        add_other,
        gc,
        check,
        add_new,
    }
}

fn outcome(s: &Session) -> Option<&GcOutcome> {
    s.versions()
        .contains(&SpecVersion::V1_1_0)
        .then(|| s.gc.get_or_init(|| run(s)))
}

fn keeps_valid(s: &Session) -> Verdict {
    let Some(o) = outcome(s) else {
        return Verdict::Skip("1.1.0 is not exercised".into());
    };
    if result_of(&o.add_kept).is_none() {
        return Verdict::Skip("the ADD before GC failed (see ADD-SUCCEEDS)".into());
    }
    let mut findings = Vec::new();
    if !o.check.succeeded() {
        findings.push(Finding::on(
            &o.check,
            format!(
                "CHECK of an attachment GC was told to keep failed ({})",
                o.check.outcome()
            ),
        ));
    }
    let addresses_of = |add: &Call| result_of(add).map(|r| addresses(&r)).unwrap_or_default();
    let (kept, other, new) = (
        addresses_of(&o.add_kept),
        addresses_of(&o.add_other),
        addresses_of(&o.add_new),
    );
    // Only an address the kept attachment held alone says that GC freed
    // it: one a plugin gives to every attachment (a chained plugin's fixed
    // result) is CONCURRENT-ADD's matter, not GC's.
    let held_alone = |a: &IpNetwork| {
        kept.iter().any(|k| k.addr() == a.addr()) && !other.iter().any(|o| o.addr() == a.addr())
    };
    for address in new.iter().filter(|a| held_alone(a)) {
        findings.push(Finding::on(
            &o.add_new,
            format!("after GC, a new attachment was given {address}, which the kept one holds"),
        ));
    }
    Verdict::from_findings(findings)
}

fn succeeds(s: &Session) -> Verdict {
    let Some(o) = outcome(s) else {
        return Verdict::Skip("1.1.0 is not exercised".into());
    };
    if o.gc.succeeded() {
        Verdict::Pass
    } else {
        Verdict::Fail(vec![Finding::on(
            &o.gc,
            format!("GC failed ({})", o.gc.outcome()),
        )])
    }
}

/// The cases of this section.
pub const CASES: [Case; 2] = [
    Case {
        id: "GC-KEEPS-VALID",
        spec: "SPEC-1.1.0 GC",
        quote: "Lets the runtime state the set of attachments that are still valid; the plugin removes resources (IPAM reservations, firewall rules, ...) of any attachment not in that set.",
        // Checked two ways: CHECK of the kept attachment still passes, and
        // a new attachment is not given the kept one's addresses.
        level: Level::Must,
        ipam_level: None,
        check: keeps_valid,
    },
    Case {
        id: "GC-SUCCEEDS",
        spec: "SPEC-1.1.0 GC",
        quote: "Should complete without error where possible",
        level: Level::Should,
        ipam_level: None,
        check: succeeds,
    },
];
