//! The tool is only as good as the defects it catches: for every check, a
//! plugin under `tests/plugins/` that breaks exactly that rule (a copy of
//! the correct `good.sh` with one function redefined), and a test that the
//! tool flags exactly that check. `good.sh` itself passes every check in
//! each of its three roles.
//!
//! A broken plugin is run at the version where its defect shows, with
//! the checks it breaks, the checks whose scenario makes the calls it
//! breaks (`needs`), and every output check, which judges each call made:
//! a run costs a second, not five, and one defect flagging another check
//! still shows. `good.sh` runs every check at three versions.
//!
//! Needs root (each run makes its own namespaces) and `jq`.

use std::path::PathBuf;
use std::time::Duration;

use cni_conformance::{cases, run, Kind, Report, Selection, Status, Target};
use cni_types::SpecVersion;
use serde_json::json;

/// A plugin of `tests/plugins/` and what the tool must say about it.
struct Broken {
    script: &'static str,
    kind: Kind,
    /// The version its defect shows at.
    at: &'static str,
    /// Checks whose scenario makes the calls it breaks, beside `fails`
    /// and `warns` (the output checks judge calls other checks make).
    needs: &'static [&'static str],
    /// The MUST checks that fail, and nothing else.
    fails: &'static [&'static str],
    /// The SHOULD checks that warn, and nothing else.
    warns: &'static [&'static str],
}

use Kind::{Chained, Interface, Ipam};

/// Every check's broken plugin (its first comment says what it breaks).
#[rustfmt::skip]
const BROKEN: &[Broken] = &[
    Broken { script: "bad-version-reply.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["VERSION-REPLY"], warns: &[] },
    Broken { script: "bad-version-list-valid.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["VERSION-LIST-VALID"], warns: &[] },
    Broken { script: "bad-version-echo.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &[], warns: &["VERSION-ECHO"] },
    Broken { script: "bad-version-no-stdin.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &[], warns: &["VERSION-NO-STDIN"] },
    Broken { script: "bad-version-unknown-command.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["VERSION-UNKNOWN-COMMAND"], warns: &[] },
    Broken { script: "bad-env-required.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["ENV-REQUIRED"], warns: &[] },
    Broken { script: "bad-env-no-command.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &[], warns: &["ENV-NO-COMMAND"] },
    Broken { script: "bad-env-names-variable.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &[], warns: &["ENV-NAMES-VARIABLE"] },
    Broken { script: "bad-env-malformed-stdin.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &[], warns: &["ENV-MALFORMED-STDIN"] },
    Broken { script: "bad-env-unsupported-version.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["ENV-UNSUPPORTED-VERSION"], warns: &[] },
    Broken { script: "bad-env-unsupported-version-code.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &[], warns: &["ENV-UNSUPPORTED-VERSION-CODE"] },
    Broken { script: "bad-add-succeeds.sh", kind: Ipam, at: "0.4.0", needs: &[], fails: &["ADD-SUCCEEDS"], warns: &[] },
    Broken { script: "bad-add-layout.sh", kind: Ipam, at: "0.4.0", needs: &[], fails: &["ADD-LAYOUT"], warns: &[] },
    Broken { script: "bad-add-cniversion.sh", kind: Ipam, at: "0.4.0", needs: &[], fails: &["ADD-CNIVERSION"], warns: &[] },
    Broken { script: "bad-add-addresses.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["ADD-ADDRESSES"], warns: &[] },
    Broken { script: "bad-add-interface-index.sh", kind: Interface, at: "1.1.0", needs: &[], fails: &["ADD-INTERFACE-INDEX"], warns: &[] },
    Broken { script: "bad-add-ifname.sh", kind: Interface, at: "1.1.0", needs: &[], fails: &["ADD-IFNAME"], warns: &[] },
    Broken { script: "bad-add-existing-interface.sh", kind: Interface, at: "1.1.0", needs: &[], fails: &["ADD-EXISTING-INTERFACE"], warns: &[] },
    Broken { script: "bad-add-sandbox.sh", kind: Interface, at: "1.1.0", needs: &[], fails: &[], warns: &["ADD-SANDBOX"] },
    Broken { script: "bad-add-ipam-abbreviated.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["ADD-IPAM-ABBREVIATED"], warns: &[] },
    Broken { script: "bad-add-prevresult-kept.sh", kind: Chained, at: "1.1.0", needs: &[], fails: &["ADD-PREVRESULT-KEPT"], warns: &[] },
    Broken { script: "bad-check-after-add.sh", kind: Ipam, at: "0.4.0", needs: &[], fails: &["CHECK-AFTER-ADD"], warns: &[] },
    Broken { script: "bad-check-refused-before-0.4.0.sh", kind: Ipam, at: "0.2.0", needs: &[], fails: &["CHECK-REFUSED-BEFORE-0.4.0"], warns: &[] },
    // The DEL after the namespace is gone carries prevResult too.
    Broken { script: "bad-del-succeeds.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["DEL-SUCCEEDS"], warns: &["DEL-NETNS-GONE"] },
    Broken { script: "bad-del-again.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["DEL-AGAIN"], warns: &[] },
    Broken { script: "bad-del-no-prevresult.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["DEL-NO-PREVRESULT"], warns: &[] },
    Broken { script: "bad-del-netns-gone.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &[], warns: &["DEL-NETNS-GONE"] },
    // The record DEL leaves behind names an address that was given to the
    // kept attachment since, and GC frees it.
    Broken { script: "bad-add-after-del.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["ADD-AFTER-DEL", "GC-KEEPS-VALID"], warns: &[] },
    Broken { script: "bad-del-no-leftover.sh", kind: Interface, at: "1.1.0", needs: &[], fails: &[], warns: &["DEL-NO-LEFTOVER"] },
    Broken { script: "bad-gc-keeps-valid.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["GC-KEEPS-VALID"], warns: &[] },
    Broken { script: "bad-gc-keeps-valid-unchecked.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["GC-KEEPS-VALID"], warns: &[] },
    Broken { script: "bad-gc-succeeds.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &[], warns: &["GC-SUCCEEDS"] },
    Broken { script: "bad-status-reply.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["STATUS-REPLY"], warns: &[] },
    Broken { script: "bad-concurrent-add.sh", kind: Ipam, at: "1.1.0", needs: &[], fails: &["CONCURRENT-ADD"], warns: &[] },
    Broken { script: "bad-output-one-document.sh", kind: Ipam, at: "1.1.0", needs: &["DEL-SUCCEEDS"], fails: &["OUTPUT-ONE-DOCUMENT"], warns: &[] },
    Broken { script: "bad-output-no-error-on-success.sh", kind: Ipam, at: "1.1.0", needs: &["STATUS-REPLY"], fails: &["OUTPUT-NO-ERROR-ON-SUCCESS"], warns: &[] },
    Broken { script: "bad-output-error-object.sh", kind: Ipam, at: "1.1.0", needs: &["VERSION-UNKNOWN-COMMAND"], fails: &[], warns: &["OUTPUT-ERROR-OBJECT"] },
    Broken { script: "bad-output-void-empty.sh", kind: Ipam, at: "1.1.0", needs: &["DEL-SUCCEEDS"], fails: &[], warns: &["OUTPUT-VOID-EMPTY"] },
    Broken { script: "bad-output-exits.sh", kind: Ipam, at: "1.1.0", needs: &["STATUS-REPLY"], fails: &["OUTPUT-EXITS"], warns: &[] },
];

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/plugins")
        .join(name)
}

/// `name`'s plugin as `kind`, at `versions`, through `selection`.
fn check(name: &str, kind: Kind, versions: Vec<SpecVersion>, selection: &Selection) -> Report {
    let data = tempfile::tempdir().expect("a temporary directory");
    let mode = match kind {
        Kind::Interface => "interface",
        Kind::Ipam => "ipam",
        Kind::Chained => "chained",
    };
    let mut target = Target::new(script(name), kind);
    target.config = Some(json!({"name": "t", "mode": mode, "dataDir": data.path()}));
    target.versions = Some(versions);
    // Each call starts a shell and jq: slow on a loaded machine.
    target.timeout = Duration::from_secs(20);
    run(&target, selection).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// What differs from what `broken` must be flagged for, with the report.
fn mismatch(broken: &Broken) -> Option<String> {
    let output = cases::all()
        .map(|c| c.id)
        .filter(|id| id.starts_with("OUTPUT-"));
    let selection = Selection {
        only: (broken.fails.iter().chain(broken.warns).chain(broken.needs))
            .copied()
            .chain(output)
            .map(str::to_owned)
            .collect(),
        ..Selection::all()
    };
    let version = SpecVersion::parse(broken.at).expect("a version");
    let report = check(broken.script, broken.kind, vec![version], &selection);
    let found = (report.ids(Status::Failed), report.ids(Status::Warning));
    let known = (broken.fails.to_vec(), broken.warns.to_vec());
    (found != known).then(|| {
        format!(
            "{}: (failed, warned) are {found:?}, it breaks {known:?}\n{}",
            broken.script,
            report.text()
        )
    })
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn every_broken_plugin_is_flagged_for_exactly_the_rule_it_breaks() {
    // Four runs at a time: they mostly wait for their shells.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mismatches = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                while let Some(broken) =
                    BROKEN.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                {
                    if let Some(m) = mismatch(broken) {
                        mismatches.lock().expect("no worker panicked").push(m);
                    }
                }
            });
        }
    });
    let mismatches = mismatches.into_inner().expect("no worker panicked");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n\n"));
}

#[test]
fn every_check_has_a_broken_plugin_that_it_flags() {
    let missing: Vec<&str> = cases::all()
        .map(|c| c.id)
        .filter(|id| {
            let script = format!("bad-{}.sh", id.to_lowercase());
            !BROKEN
                .iter()
                .any(|e| e.script == script && (e.fails.contains(id) || e.warns.contains(id)))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "checks without a broken plugin: {missing:?}"
    );
}

/// Three versions, one per result layout; every scenario (CHECK refused
/// below 0.4.0, GC and STATUS at 1.1.0) runs.
fn versions() -> Vec<SpecVersion> {
    vec![
        SpecVersion::V0_2_0,
        SpecVersion::V0_4_0,
        SpecVersion::V1_1_0,
    ]
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn the_correct_script_plugin_passes_every_check_in_each_role() {
    for kind in [Kind::Ipam, Kind::Interface, Kind::Chained] {
        let report = check("good.sh", kind, versions(), &Selection::all());
        assert_eq!(
            (report.failed(), report.warnings()),
            (0, 0),
            "{kind:?}\n{}",
            report.text()
        );
    }
}
