//! Every plugin of ours, and the reference plugins from Debian, through
//! `cni-conformance` with its default scenarios. Each entry names the
//! checks the plugin fails and warns about, exactly: ours fail none but
//! the noop test double's deliberate ones, and every reference finding is
//! listed, with the spec text it contradicts, in cni-conformance's README.
//!
//! Adding a plugin is one line in `SUBJECTS`. Needs root (the checker
//! makes namespaces).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use cni_conformance::{run, Kind, Selection, Status, Target};
use serde_json::json;
use tests::{plugin_bin_dir, reference_plugin_dir, NetNs};

/// Where a plugin comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// `plugins-sample`, built for the test.
    Ours,
    /// Debian's `containernetworking-plugins`.
    Reference,
}

/// A plugin and what the checker must say about it.
struct Subject {
    name: &'static str,
    from: Source,
    kind: Kind,
    /// Its own host network namespace: it puts links and addresses on
    /// the host side (bridge, ptp).
    own_host: bool,
    fails: &'static [&'static str],
    warns: &'static [&'static str],
}

/// The reference skel answers VERSION with its newest version and prints
/// its "about" text, exiting 0, when CNI_COMMAND is missing.
const REFERENCE_WARNS: &[&str] = &["VERSION-ECHO", "ENV-NO-COMMAND"];
/// Our skel does the latter too (run by hand, a plugin says what it is).
const OUR_WARNS: &[&str] = &["ENV-NO-COMMAND"];

#[rustfmt::skip]
const SUBJECTS: &[Subject] = &[
    Subject { name: "dns-mac", from: Source::Ours, kind: Kind::Chained, own_host: false, fails: &[], warns: OUR_WARNS },
    Subject { name: "delegator", from: Source::Ours, kind: Kind::Interface, own_host: false, fails: &[], warns: OUR_WARNS },
    Subject { name: "veth", from: Source::Ours, kind: Kind::Interface, own_host: true, fails: &[], warns: OUR_WARNS },
    Subject { name: "ipam-file", from: Source::Ours, kind: Kind::Ipam, own_host: false, fails: &[], warns: OUR_WARNS },
    // The noop test double mirrors the reference noop: without a debug
    // file it prints `{}` for every command, and it lists "0.-42.0"
    // among its versions for runtime test suites to trip on.
    Subject { name: "noop", from: Source::Ours, kind: Kind::Chained, own_host: false,
              fails: &["VERSION-LIST-VALID", "ADD-CNIVERSION", "ADD-PREVRESULT-KEPT"], warns: OUR_WARNS },
    Subject { name: "host-local", from: Source::Reference, kind: Kind::Ipam, own_host: false, fails: &[], warns: REFERENCE_WARNS },
    Subject { name: "bridge", from: Source::Reference, kind: Kind::Interface, own_host: true, fails: &[], warns: REFERENCE_WARNS },
    Subject { name: "ptp", from: Source::Reference, kind: Kind::Interface, own_host: true, fails: &[], warns: REFERENCE_WARNS },
    Subject { name: "tuning", from: Source::Reference, kind: Kind::Chained, own_host: false, fails: &[], warns: REFERENCE_WARNS },
    // Results of 0.1.0 to 0.4.0 in the 1.0.0 layout; `lo` configured and
    // reported whatever CNI_IFNAME asks (README: findings).
    Subject { name: "loopback", from: Source::Reference, kind: Kind::Interface, own_host: false,
              fails: &["ADD-LAYOUT", "ADD-IFNAME"], warns: REFERENCE_WARNS },
];

/// A script named like the plugin that runs it inside `host`, so the
/// plugin's host side lands in a namespace of the test.
fn in_host_namespace(dir: &Path, plugin: &Path, host: &NetNs) -> PathBuf {
    let name = plugin.file_name().expect("a file name");
    let wrapper = dir.join(name);
    let mut file = std::fs::File::create(&wrapper).expect("create the wrapper");
    writeln!(
        file,
        "#!/bin/sh\nexec ip netns exec {} {}",
        host.name(),
        plugin.display()
    )
    .expect("write the wrapper");
    drop(file);
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
        .expect("make the wrapper executable");
    wrapper
}

/// What differs from the subject's known findings, with the report.
fn check(subject: &Subject) -> Option<String> {
    let (dir, cni_path) = match subject.from {
        Source::Ours => {
            let ours = plugin_bin_dir();
            (ours.clone(), vec![ours, reference_plugin_dir()])
        }
        Source::Reference => (reference_plugin_dir(), vec![reference_plugin_dir()]),
    };
    let plugin = dir.join(subject.name);
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let host = subject.own_host.then(|| NetNs::create("conf-host"));
    let executable = match &host {
        Some(host) => in_host_namespace(scratch.path(), &plugin, host),
        None => plugin.clone(),
    };
    let mut target = Target::new(executable, subject.kind);
    target.cni_path = cni_path;
    if subject.from == Source::Ours && subject.kind == Kind::Interface {
        // host-local stops at 1.0.0; ours covers 1.1.0 (GC, STATUS) too.
        target.ipam = "ipam-file".into();
    }
    if subject.name == "bridge" {
        target.config = Some(json!({
            "name": "cni-conformance", "bridge": "cnicbr0", "isGateway": true,
            "ipam": {"type": "host-local", "subnet": cni_conformance::TEST_SUBNET,
                     "dataDir": scratch.path().join("ipam")}
        }));
    }
    let report = match run(&target, &Selection::all()) {
        Ok(report) => report,
        Err(e) => return Some(format!("{}: {e}", subject.name)),
    };
    let found = (report.ids(Status::Failed), report.ids(Status::Warning));
    let known = (subject.fails.to_vec(), subject.warns.to_vec());
    (found != known).then(|| {
        format!(
            "{}: (failed, warned) are {found:?}, known {known:?}\n{}",
            subject.name,
            report.text()
        )
    })
}

#[test]
fn every_plugin_shows_exactly_its_known_findings() {
    let mismatches: Vec<String> = SUBJECTS.iter().filter_map(check).collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n\n"));
}
