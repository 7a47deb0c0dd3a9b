//! The documented differences between our noop and Debian's reference.
//!
//! Our noop is a drop-in for the NEWEST upstream reference noop (spec 1.1.0),
//! built on our SDK with its deliberate differences from the reference skel
//! (`cni-skel` crate docs); Debian's reference is cni 1.1.2 (spec 1.0.0).
//! Each function below handles one documented difference: it first checks
//! that our observation shows exactly that difference (so any other
//! deviation still fails), then rewrites it into what Debian's reference
//! shows. They run only on our observation ([`Sandbox::ours`]), except the
//! crash check of difference (5), which checks each flavour's own shape.
//!
//! The differences, numbered as throughout these tests (the cni-skel crate
//! docs number the skel's own ones differently: given in brackets):
//! (1) our default supported versions end with 1.1.0 (newest noop);
//! (2) VERSION's `cniVersion` is the requested one when supported, else the
//!     newest supported; Debian's always says 1.0.0 [skel 2];
//! (3) the debug file also has `ReportErrorCode` and `CmdArgs.NetnsOverride`
//!     (newest noop);
//! (4) none any more: our noop prints errors as the reference does
//!     (`WireFormat::Reference`; the SDK's default adds `cniVersion`,
//!     [skel 3]);
//! (5) where the reference panics, ours exits 2 with one `test setup error:`
//!     line on stderr;
//! (6) CNI_PATH is optional for ADD/DEL/CHECK/STATUS [skel 4];
//! (7) a CNI_NETNS that is the plugin's own namespace is refused before the
//!     method runs [skel 1].
//! (6) and (7) never show here (libcni always sends CNI_PATH; the scenarios
//! use FAKE_NETNS, which does not exist), so they need no function; both
//! are covered for our noop alone in `tests/noop_process.rs`.
//!
//! (T2) is a choice documented on `cni_types::WireFormat`, not in the list
//! above; it shows only in direct runs (libcni re-encodes what it reads).

use serde_json::{json, Value};
use tests::redact_netplugin_stderr;

use crate::fixtures::NOOP_DEFAULT_VERSIONS;
use crate::sandbox::{Flavor, Sandbox};

/// What Debian's reference answers VERSION with, whatever was asked.
const DEBIAN_VERSION_ANSWER: &str = "1.0.0";

/// Replaces the only occurrence of `from` in `raw` with `to`.
fn replace_once(raw: &mut String, from: &str, to: &str, why: &str) {
    let n = raw.matches(from).count();
    assert_eq!(n, 1, "{why}: expected {from:?} once in {raw:?}");
    *raw = raw.replacen(from, to, 1);
}

/// The newest of `versions` by numeric major.minor.patch (unparseable
/// entries skipped), as our VERSION answer picks it.
fn newest(versions: &[&str]) -> String {
    versions
        .iter()
        .filter_map(|v| {
            let p: Vec<i64> = v
                .split('.')
                .map(|n| n.parse().ok())
                .collect::<Option<_>>()?;
            (p.len() == 3).then(|| ((p[0], p[1], p[2]), *v))
        })
        .max()
        .map(|(_, v)| v.to_owned())
        .expect("a parseable version")
}

/// Difference (1): our default supported versions are the reference's with
/// `1.1.0` appended. `answer` is a VERSION answer (`supportedVersions`);
/// `raw` its bytes, if any.
pub fn d1_default_versions_add_1_1_0(answer: &mut Value, raw: Option<&mut String>) {
    let mut ours = NOOP_DEFAULT_VERSIONS.to_vec();
    ours.push("1.1.0");
    assert_eq!(
        answer["supportedVersions"],
        json!(ours),
        "difference (1): our defaults are the reference's plus 1.1.0"
    );
    if let Some(raw) = raw {
        replace_once(raw, r#""1.0.0","1.1.0"]"#, r#""1.0.0"]"#, "difference (1)");
    }
    answer["supportedVersions"] = json!(NOOP_DEFAULT_VERSIONS);
}

/// Difference (2): our VERSION answer's `cniVersion` is the version stdin
/// asked for (`requested`) when supported, else the newest supported one;
/// Debian's is always `1.0.0`. Apply before (1): "newest" is taken from our
/// own list.
pub fn d2_version_answer_in_requested_version(
    answer: &mut Value,
    requested: Option<&str>,
    raw: Option<&mut String>,
) {
    let supported: Vec<&str> = answer["supportedVersions"]
        .as_array()
        .expect("supportedVersions")
        .iter()
        .map(|v| v.as_str().expect("version string"))
        .collect();
    let expected = match requested {
        Some(r) if supported.contains(&r) => r.to_owned(),
        _ => newest(&supported),
    };
    assert_eq!(
        answer["cniVersion"], expected,
        "difference (2): our VERSION answers in the requested version, else the newest supported"
    );
    if let Some(raw) = raw {
        replace_once(
            raw,
            &format!(r#""cniVersion":"{expected}""#),
            &format!(r#""cniVersion":"{DEBIAN_VERSION_ANSWER}""#),
            "difference (2)",
        );
    }
    answer["cniVersion"] = json!(DEBIAN_VERSION_ANSWER);
}

/// Difference (3): the newest noop's debug file has `ReportErrorCode`
/// (after `ReportError`) and `CmdArgs.NetnsOverride` (after `Path`);
/// Debian's has neither (its decoder drops an unknown `ReportErrorCode`).
/// Only a file the plugin wrote back (it has `Command`) has them; the
/// differential scenarios never set either, so both must be zero values.
/// `debug` is a [`Sandbox::debug_as_written`] value.
pub fn d3_debug_file_newer_fields(debug: &mut Value) {
    if debug.get("Command").is_none() {
        return; // written by the test, untouched by the plugin
    }
    let obj = debug.as_object_mut().expect("debug file is an object");
    assert_eq!(
        obj.remove("ReportErrorCode"),
        Some(json!(0)),
        "difference (3): ReportErrorCode written back"
    );
    let args = obj
        .get_mut("CmdArgs")
        .and_then(Value::as_object_mut)
        .expect("CmdArgs");
    assert_eq!(
        args.remove("NetnsOverride"),
        Some(json!("")),
        "difference (3): CmdArgs.NetnsOverride written back"
    );
    let mut raw = obj["$raw"].as_str().expect("$raw").to_owned();
    replace_once(&mut raw, r#""ReportErrorCode":0,"#, "", "difference (3)");
    replace_once(&mut raw, r#""NetnsOverride":"","#, "", "difference (3)");
    obj.insert("$raw".to_owned(), Value::String(raw));
}

/// Difference (1) in an `incompatible CNI versions` error: its details list
/// the supported versions, ours with `1.1.0` appended. `outcome` is an
/// [`outcome_json`](crate::differential::outcome_json) value whose stdout is a pretty-printed CNI error.
pub fn d1_error_details_list_1_1_0(outcome: &mut Value) {
    let (ours, reference) = (r#""1.0.0" "1.1.0"]"#, r#""1.0.0"]"#);
    let mut details = outcome["stdout"]["details"]
        .as_str()
        .expect("details")
        .to_owned();
    replace_once(&mut details, ours, reference, "difference (1)");
    outcome["stdout"]["details"] = json!(details);
    // In the raw bytes the quotes are escaped.
    let escaped = |s: &str| {
        serde_json::to_string(s)
            .unwrap()
            .trim_matches('"')
            .to_owned()
    };
    let mut raw = outcome["stdoutRaw"].as_str().expect("stdoutRaw").to_owned();
    replace_once(
        &mut raw,
        &escaped(ours),
        &escaped(reference),
        "difference (1)",
    );
    outcome["stdoutRaw"] = Value::String(raw);
}

/// (T2) A 1.x result omits an empty `dns` in both wire formats, as the
/// newest reference does (its `Result.MarshalJSON`); Debian's cni 1.1.2
/// predates that and prints `"dns":{}` (Go's `omitempty` does not apply to
/// structs). In 0.x results our noop prints it as both references do.
/// `outcome` is an [`outcome_json`](crate::differential::outcome_json) value whose stdout is a compact result.
pub fn t2_empty_dns_omitted(outcome: &mut Value) {
    let result = outcome["stdout"].as_object_mut().expect("a result");
    assert!(
        !result.contains_key("dns"),
        "(T2) our result omits an empty dns: {outcome}"
    );
    result.insert("dns".to_owned(), json!({}));
    let mut raw = outcome["stdoutRaw"].as_str().expect("stdoutRaw").to_owned();
    assert!(raw.ends_with('}'), "(T2) a compact result: {raw:?}");
    raw.pop();
    raw.push_str(r#","dns":{}}"#);
    outcome["stdoutRaw"] = Value::String(raw);
}

/// Difference (5): where the reference panics (exit 2, `panic: ...` and a
/// goroutine trace on stderr), ours exits 2 with one line on stderr starting
/// `test setup error: `. Checks `stderr` has its flavour's shape and
/// returns the token both are compared as.
pub fn d5_crash_stderr(flavor: Flavor, stderr: &str) -> Value {
    match flavor {
        Flavor::Reference => assert!(
            stderr.starts_with("panic: ") && stderr.contains("\ngoroutine "),
            "expected a Go panic, got {stderr:?}"
        ),
        Flavor::Ours => assert!(
            stderr.starts_with("test setup error: ")
                && stderr.ends_with('\n')
                && stderr.matches('\n').count() == 1,
            "difference (5): expected one `test setup error:` line, got {stderr:?}"
        ),
    }
    json!("<crash: exit 2, no stdout>")
}

/// Difference (5) seen through libcni: a crash is reported as code 0
/// `netplugin failed: "<stderr, Go-quoted>"`. Checks the quoted stderr
/// with [`d5_crash_stderr`] and redacts it in every string of `report`.
pub fn expect_crash_and_redact(sb: &Sandbox, report: &mut Value) {
    const MARK: &str = "netplugin failed: ";
    let msg = report["error"]["msg"].as_str().unwrap_or_default();
    let quoted = msg
        .strip_prefix(MARK)
        .unwrap_or_else(|| panic!("expected `{MARK}...`, got {report}"));
    // Go's %q of ASCII text is a valid JSON string.
    let stderr: String =
        serde_json::from_str(quoted).unwrap_or_else(|e| panic!("cannot unquote {quoted:?}: {e}"));
    d5_crash_stderr(sb.flavor(), &stderr);
    redact_netplugin_stderr(report);
}
