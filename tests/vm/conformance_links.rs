//! Our `ipvlan`, `vlan` and `dummy` through `cni-conformance` with its
//! default scenarios, in the VM (this host's kernel lacks the three link
//! kinds; `scripts/vm/run-tests.sh vm_conformance_links`): no check
//! fails, and the warnings are the one every plugin of ours has (run by
//! hand, it says what it is: ENV-NO-COMMAND), as in
//! `tests/tests/conformance.rs` for the others, and for `vlan`
//! CONCURRENT-ADD: the kernel holds one link per VLAN id and master, so
//! of concurrent attachments to one VLAN only the first gets it (the
//! reference's the same, `EEXIST`). Under QEMU's emulation a smaller
//! selection runs, sized to the link kinds the guest is for
//! (`guest_conformance.rs`).

use cni_conformance::{run, Kind, Selection, Status, Target};
use serde_json::json;
use tests::{in_host_namespace, ip, plugin_bin_dir, reference_plugin_dir, NetNs};

#[path = "guest_conformance.rs"]
mod guest_conformance;

/// The findings of `plugin` run in a host namespace of its own holding
/// the master `cnicm0` (a veth end, up), with `extra` configuration.
fn findings(plugin: &str, extra: serde_json::Value) -> (Vec<String>, Vec<String>, String) {
    let ours = plugin_bin_dir();
    let scratch = tempfile::tempdir().unwrap();
    let host = NetNs::create(&format!("conf-{plugin}"));
    let ns = host.name();
    for args in [
        &[
            "-n", ns, "link", "add", "cnicm0", "type", "veth", "peer", "cnicm1",
        ][..],
        &["-n", ns, "link", "set", "cnicm0", "up"],
        &["-n", ns, "link", "set", "cnicm1", "up"],
    ] {
        let out = ip(args);
        assert!(out.success(), "ip {args:?}: {out:?}");
    }
    let executable = in_host_namespace(scratch.path(), &ours.join(plugin), &host);
    let mut target = Target::new(executable, Kind::Interface);
    target.cni_path = vec![ours, reference_plugin_dir()];
    // host-local stops at 1.0.0; ours covers 1.1.0 (GC, STATUS) too.
    target.ipam = "ipam-file".into();
    let mut config = json!({
        "name": "cni-conformance",
        "ipam": {"type": target.ipam, "subnet": cni_conformance::TEST_SUBNET,
                 "dataDir": scratch.path().join("ipam")}
    });
    config
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    target.config = Some(config);
    let mut selection = Selection::all();
    guest_conformance::fit(&mut target, &mut selection, plugin);
    let report = run(&target, &selection).unwrap_or_else(|e| panic!("{plugin}: {e}"));
    let ids = |status| {
        report
            .ids(status)
            .into_iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    };
    (ids(Status::Failed), ids(Status::Warning), report.text())
}

#[test]
fn ipvlan_vlan_and_dummy_fail_no_conformance_check() {
    let cases = [
        (
            "ipvlan",
            json!({"master": "cnicm0"}),
            &["ENV-NO-COMMAND"][..],
        ),
        (
            "vlan",
            json!({"master": "cnicm0", "vlanId": 42}),
            &["CONCURRENT-ADD", "ENV-NO-COMMAND"],
        ),
        ("dummy", json!({}), &["ENV-NO-COMMAND"]),
    ];
    // Each plugin in a host namespace of its own. Under QEMU's emulation
    // one run takes minutes and the guest has two CPUs: all at once.
    // User-mode Linux runs its guest on one CPU, where three runs' 16
    // concurrent ADDs at once took more than the 10 s a call may take
    // (a CI run on a fresh machine): one after another there.
    let at_once = tests::under_emulation();
    let found: Vec<_> = if at_once {
        std::thread::scope(|s| {
            let runs: Vec<_> = cases
                .iter()
                .map(|(plugin, extra, _)| s.spawn(|| findings(plugin, extra.clone())))
                .collect();
            runs.into_iter()
                .map(|run| run.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        })
    } else {
        cases
            .iter()
            .map(|(plugin, extra, _)| findings(plugin, extra.clone()))
            .collect()
    };
    for ((plugin, _, warns), (failed, mut warned, text)) in cases.iter().zip(found) {
        warned.sort();
        assert_eq!(
            (failed, warned),
            (
                vec![],
                warns
                    .iter()
                    .filter(|w| !guest_conformance::left_out(w))
                    .map(|w| w.to_string())
                    .collect()
            ),
            "{plugin}:\n{text}"
        );
    }
}
