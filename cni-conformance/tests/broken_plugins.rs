//! The tool is only as good as the defects it catches: for every check, a
//! plugin under `tests/plugins/` that breaks exactly that rule (a copy of
//! the correct `good.sh` with one function redefined), and a test that the
//! tool flags exactly that check. `good.sh` itself passes every check in
//! each of its three roles.
//!
//! Needs root (each run makes its own namespaces) and `jq`.

use std::path::PathBuf;
use std::time::Duration;

use cni_conformance::{cases, run, Kind, Report, Selection, Status, Target};
use cni_types::SpecVersion;
use serde_json::json;

/// A plugin of `tests/plugins/` and what the tool must say about it.
struct Expect {
    script: &'static str,
    kind: Kind,
    /// The MUST checks that fail, and nothing else.
    fails: &'static [&'static str],
    /// The SHOULD checks that warn, and nothing else.
    warns: &'static [&'static str],
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/plugins")
        .join(name)
}

/// Three versions, one per result layout, keep each run short; every
/// scenario (CHECK refused below 0.4.0, GC and STATUS at 1.1.0) still
/// runs.
fn versions() -> Vec<SpecVersion> {
    vec![
        SpecVersion::V0_2_0,
        SpecVersion::V0_4_0,
        SpecVersion::V1_1_0,
    ]
}

fn check(script_name: &str, kind: Kind) -> Report {
    let data = tempfile::tempdir().expect("a temporary directory");
    let mode = match kind {
        Kind::Interface => "interface",
        Kind::Ipam => "ipam",
        Kind::Chained => "chained",
    };
    let mut target = Target::new(script(script_name), kind);
    target.config = Some(json!({"name": "t", "mode": mode, "dataDir": data.path()}));
    target.versions = Some(versions());
    target.timeout = Duration::from_secs(20);
    run(&target, &Selection::all()).unwrap_or_else(|e| panic!("{script_name}: {e}"))
}

fn assert_flags(expect: &Expect) {
    let report = check(expect.script, expect.kind);
    assert_eq!(
        (report.ids(Status::Failed), report.ids(Status::Warning)),
        (expect.fails.to_vec(), expect.warns.to_vec()),
        "{}: (failed, warned) differ from what it breaks\n{}",
        expect.script,
        report.text()
    );
}

macro_rules! broken {
    ($($test:ident: $script:literal, $kind:ident, fails $fails:expr, warns $warns:expr;)*) => {
        const BROKEN: &[Expect] = &[$(Expect {
            script: $script, kind: Kind::$kind, fails: &$fails, warns: &$warns,
        },)*];
        $(
            #[test]
            fn $test() {
                assert_flags(BROKEN.iter().find(|e| e.script == $script).unwrap());
            }
        )*
    };
}

broken! {
    a_version_list_that_is_not_a_list_fails_version_reply:
        "bad-version-reply.sh", Ipam, fails ["VERSION-REPLY"], warns [];
    a_listed_version_that_is_not_a_version_fails_version_list_valid:
        "bad-version-list-valid.sh", Ipam, fails ["VERSION-LIST-VALID"], warns [];
    answering_another_version_than_asked_warns_version_echo:
        "bad-version-echo.sh", Ipam, fails [], warns ["VERSION-ECHO"];
    needing_stdin_for_version_warns_version_no_stdin:
        "bad-version-no-stdin.sh", Ipam, fails [], warns ["VERSION-NO-STDIN"];
    succeeding_on_an_unknown_command_fails_version_unknown_command:
        "bad-version-unknown-command.sh", Ipam, fails ["VERSION-UNKNOWN-COMMAND"], warns [];
    ignoring_a_missing_container_id_fails_env_required:
        "bad-env-required.sh", Ipam, fails ["ENV-REQUIRED"], warns [];
    exiting_zero_without_cni_command_warns_env_no_command:
        "bad-env-no-command.sh", Ipam, fails [], warns ["ENV-NO-COMMAND"];
    not_naming_the_missing_variable_warns_env_names_variable:
        "bad-env-names-variable.sh", Ipam, fails [], warns ["ENV-NAMES-VARIABLE"];
    code_7_for_undecodable_stdin_warns_env_malformed_stdin:
        "bad-env-malformed-stdin.sh", Ipam, fails [], warns ["ENV-MALFORMED-STDIN"];
    accepting_any_version_fails_env_unsupported_version:
        "bad-env-unsupported-version.sh", Ipam, fails ["ENV-UNSUPPORTED-VERSION"], warns [];
    refusing_a_version_with_code_7_warns_env_unsupported_version_code:
        "bad-env-unsupported-version-code.sh", Ipam, fails [], warns ["ENV-UNSUPPORTED-VERSION-CODE"];
    an_add_failing_for_a_listed_version_fails_add_succeeds:
        "bad-add-succeeds.sh", Ipam, fails ["ADD-SUCCEEDS"], warns [];
    a_0_4_0_result_without_ip_versions_fails_add_layout:
        "bad-add-layout.sh", Ipam, fails ["ADD-LAYOUT"], warns [];
    a_result_in_another_version_fails_add_cniversion:
        "bad-add-cniversion.sh", Ipam, fails ["ADD-CNIVERSION"], warns [];
    a_gateway_that_is_no_address_fails_add_addresses:
        "bad-add-addresses.sh", Ipam, fails ["ADD-ADDRESSES"], warns [];
    an_interface_index_past_the_end_fails_add_interface_index:
        "bad-add-interface-index.sh", Interface, fails ["ADD-INTERFACE-INDEX"], warns [];
    an_interface_not_named_cni_ifname_fails_add_ifname:
        "bad-add-ifname.sh", Interface, fails ["ADD-IFNAME"], warns [];
    taking_an_existing_interface_as_its_own_fails_add_existing_interface:
        "bad-add-existing-interface.sh", Interface, fails ["ADD-EXISTING-INTERFACE"], warns [];
    a_container_interface_without_sandbox_warns_add_sandbox:
        "bad-add-sandbox.sh", Interface, fails [], warns ["ADD-SANDBOX"];
    an_ipam_plugin_reporting_interfaces_fails_add_ipam_abbreviated:
        "bad-add-ipam-abbreviated.sh", Ipam, fails ["ADD-IPAM-ABBREVIATED"], warns [];
    a_chained_plugin_dropping_addresses_fails_add_prevresult_kept:
        "bad-add-prevresult-kept.sh", Chained, fails ["ADD-PREVRESULT-KEPT"], warns [];
    a_check_failing_right_after_add_fails_check_after_add:
        "bad-check-after-add.sh", Ipam, fails ["CHECK-AFTER-ADD"], warns [];
    a_check_run_for_0_2_0_fails_check_refused_before_0_4_0:
        "bad-check-refused-before-0.4.0.sh", Ipam, fails ["CHECK-REFUSED-BEFORE-0.4.0"], warns [];
    // The DEL after the namespace is gone carries prevResult too.
    a_del_failing_on_prev_result_fails_del_succeeds:
        "bad-del-succeeds.sh", Ipam, fails ["DEL-SUCCEEDS"], warns ["DEL-NETNS-GONE"];
    a_second_del_failing_fails_del_again:
        "bad-del-again.sh", Ipam, fails ["DEL-AGAIN"], warns [];
    a_del_requiring_prev_result_fails_del_no_prevresult:
        "bad-del-no-prevresult.sh", Ipam, fails ["DEL-NO-PREVRESULT"], warns [];
    a_del_needing_the_namespace_warns_del_netns_gone:
        "bad-del-netns-gone.sh", Ipam, fails [], warns ["DEL-NETNS-GONE"];
    // The record DEL leaves behind names an address that was given to the
    // kept attachment since, and GC frees it.
    a_del_that_forgets_the_attachment_fails_add_after_del:
        "bad-add-after-del.sh", Ipam, fails ["ADD-AFTER-DEL", "GC-KEEPS-VALID"], warns [];
    a_del_renaming_the_interface_aside_warns_del_no_leftover:
        "bad-del-no-leftover.sh", Interface, fails [], warns ["DEL-NO-LEFTOVER"];
    a_gc_releasing_valid_attachments_fails_gc_keeps_valid:
        "bad-gc-keeps-valid.sh", Ipam, fails ["GC-KEEPS-VALID"], warns [];
    a_gc_releasing_valid_addresses_is_caught_by_the_next_add:
        "bad-gc-keeps-valid-unchecked.sh", Ipam, fails ["GC-KEEPS-VALID"], warns [];
    a_failing_gc_warns_gc_succeeds:
        "bad-gc-succeeds.sh", Ipam, fails [], warns ["GC-SUCCEEDS"];
    a_status_error_with_code_999_fails_status_reply:
        "bad-status-reply.sh", Ipam, fails ["STATUS-REPLY"], warns [];
    a_racy_allocation_fails_concurrent_add_for_ipam:
        "bad-concurrent-add.sh", Ipam, fails ["CONCURRENT-ADD"], warns [];
    two_documents_on_stdout_fail_output_one_document:
        "bad-output-one-document.sh", Ipam, fails ["OUTPUT-ONE-DOCUMENT"], warns [];
    an_error_object_with_exit_zero_fails_output_no_error_on_success:
        "bad-output-no-error-on-success.sh", Ipam, fails ["OUTPUT-NO-ERROR-ON-SUCCESS"], warns [];
    an_error_on_stderr_only_warns_output_error_object:
        "bad-output-error-object.sh", Ipam, fails [], warns ["OUTPUT-ERROR-OBJECT"];
    a_del_printing_an_object_warns_output_void_empty:
        "bad-output-void-empty.sh", Ipam, fails [], warns ["OUTPUT-VOID-EMPTY"];
    a_crash_fails_output_exits:
        "bad-output-exits.sh", Ipam, fails ["OUTPUT-EXITS"], warns [];
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

#[test]
fn the_correct_script_plugin_passes_every_check_in_each_role() {
    for kind in [Kind::Ipam, Kind::Interface, Kind::Chained] {
        let report = check("good.sh", kind);
        assert_eq!(
            (report.failed(), report.warnings()),
            (0, 0),
            "{kind:?}\n{}",
            report.text()
        );
    }
}
