//! VERSION, through libcni's `GetVersionInfo` and run directly.

use serde_json::{json, Value};
use tests::{read_json, run_plugin};

use crate::differences::{
    d1_default_versions_add_1_1_0, d2_version_answer_in_requested_version, d5_crash_stderr,
};
use crate::differential::{differential, outcome_json, with_stdout};
use crate::fixtures::NOOP_DEFAULT_VERSIONS;

/// GetVersionInfo: libcni always sends `CNI_ARGS=` and stdin
/// `{"cniVersion":"1.0.0"}`, so the noop answers its default list; with
/// `CNI_ARGS=DEBUG=<file>` (driver override) `ReportVersionSupport` wins.
#[test]
fn version_probe_through_libcni() {
    let obs = differential(|sb| {
        let debug = sb.write(
            "debug.json",
            &json!({"ReportVersionSupport": ["0.123.0", "0.2.0"]}),
        );
        let mut default = sb.driver().version("noop");
        sb.ours(&mut default, |a| {
            d2_version_answer_in_requested_version(a, Some("1.0.0"), None);
            d1_default_versions_add_1_1_0(a, None);
        });
        let mut reported = sb
            .driver()
            .with_cni_args(&format!("DEBUG={}", debug.display()))
            .version("noop");
        sb.ours(&mut reported, |a| {
            d2_version_answer_in_requested_version(a, Some("1.0.0"), None)
        });
        json!({
            "default": default,
            "reported": reported,
            "debugAfter": read_json(&debug),
            "missing": sb.driver().version("no-such-plugin"),
        })
    });
    assert_eq!(
        obs["default"],
        json!({"ok": true, "cniVersion": "1.0.0", "supportedVersions": NOOP_DEFAULT_VERSIONS})
    );
    assert_eq!(
        obs["reported"],
        json!({"ok": true, "cniVersion": "1.0.0", "supportedVersions": ["0.123.0", "0.2.0"]})
    );
    // VERSION does not record anything in the debug file.
    assert_eq!(
        obs["debugAfter"],
        json!({"ReportVersionSupport": ["0.123.0", "0.2.0"]})
    );
    assert_eq!(obs["missing"]["ok"], false);
    assert_eq!(obs["missing"]["error"]["code"], -1);
}

/// VERSION invoked directly, like the reference noop's own tests do.
#[test]
fn version_direct() {
    let obs = differential(|sb| {
        let debug = sb.write(
            "debug.json",
            &json!({"ReportVersionSupport": ["0.4.0", "1.0.0"]}),
        );
        let dbg_arg = format!("DEBUG={}", debug.display());
        let cfg_with_debug = json!({"cniVersion": "1.0.0", "debugFile": debug}).to_string();
        let noop = sb.noop();
        let version = |env: &[(&str, &str)], stdin: &[u8], requested: Option<&str>, default| {
            let mut o = outcome_json(&run_plugin(&noop, env, stdin));
            sb.ours(&mut o, |o| {
                with_stdout(o, |answer, raw| {
                    d2_version_answer_in_requested_version(answer, requested, Some(raw));
                    if default {
                        d1_default_versions_add_1_1_0(answer, Some(raw));
                    }
                })
            });
            o
        };
        let no_stdin = run_plugin(
            &noop,
            &[("CNI_COMMAND", "VERSION"), ("CNI_ARGS", &dbg_arg)],
            b"",
        );
        json!({
            "bare": version(&[("CNI_COMMAND", "VERSION")], b"", None, true),
            "withStdin": version(&[("CNI_COMMAND", "VERSION")], br#"{"cniVersion":"1.0.0"}"#, Some("1.0.0"), true),
            "debugArg": version(
                &[("CNI_COMMAND", "VERSION"), ("CNI_ARGS", &dbg_arg)],
                br#"{"cniVersion":"1.0.0"}"#,
                Some("1.0.0"),
                false,
            ),
            // With a non-empty CNI_ARGS the noop parses stdin as a config
            // before looking for DEBUG: an empty stdin is a test-setup error
            // (the reference panics: exit 2, nothing on stdout).
            "debugArgNoStdin": json!({
                "status": no_stdin.status(),
                "stdout": no_stdin.stdout_str(),
                "stderr": d5_crash_stderr(sb.flavor(), &no_stdin.stderr_str()),
            }),
            // Non-empty CNI_ARGS without DEBUG: the debug file comes from stdin's debugFile.
            "debugFromConfig": version(
                &[("CNI_COMMAND", "VERSION"), ("CNI_ARGS", "FOO=BAR")],
                cfg_with_debug.as_bytes(),
                Some("1.0.0"),
                false,
            ),
        })
    });
    let default = json!({"cniVersion": "1.0.0", "supportedVersions": NOOP_DEFAULT_VERSIONS});
    let custom = json!({"cniVersion": "1.0.0", "supportedVersions": ["0.4.0", "1.0.0"]});
    // One compact JSON line, as Go's json.Encoder writes it.
    let line = |v: &Value| format!("{v}\n");
    assert_eq!(
        obs["bare"],
        json!({"status": 0, "stdout": default, "stdoutRaw": line(&default), "stderr": ""})
    );
    assert_eq!(
        obs["withStdin"],
        json!({"status": 0, "stdout": default, "stdoutRaw": line(&default), "stderr": ""})
    );
    assert_eq!(
        obs["debugArg"],
        json!({"status": 0, "stdout": custom, "stdoutRaw": line(&custom), "stderr": ""})
    );
    assert_eq!(
        obs["debugFromConfig"],
        json!({"status": 0, "stdout": custom, "stdoutRaw": line(&custom), "stderr": ""})
    );
    assert_eq!(
        obs["debugArgNoStdin"],
        json!({"status": 2, "stdout": "", "stderr": "<crash: exit 2, no stdout>"})
    );
}
