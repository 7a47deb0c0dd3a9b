//! Plugin errors as the runtime sees them: the code, message and details
//! a plugin reports, and a crash.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::differential::{differential, run_direct};
use crate::sandbox::{Flavor, Sandbox};

/// Writes `err.conflist`, the network `errnet` of one noop whose debug
/// file is `debug.json`, and returns its path.
fn error_list(sb: &Sandbox) -> PathBuf {
    sb.write(
        "err.conflist",
        &json!({
            "cniVersion": "1.0.0",
            "name": "errnet",
            "plugins": [{"type": "noop", "debugFile": sb.path_str("debug.json")}]
        }),
    )
}

/// Plugin errors reach the runtime intact: `ReportError` is a plain Go error
/// (code 999, ErrInternal); a CNI error printed on stdout with a non-zero exit
/// (`ReportResult` + `ExitWithCode`) keeps its own code, msg and details; a
/// non-zero exit with empty stdout becomes code 0 `netplugin failed: "<stderr>"`.
#[test]
fn error_passthrough() {
    let obs = differential(|sb| {
        let list = error_list(sb);
        let drv = sb.driver();
        let mut out = serde_json::Map::new();
        let case = |name: &str, debug: Value, out: &mut serde_json::Map<String, Value>| {
            sb.write("debug.json", &debug);
            let add = drv.add(&list);
            let check = drv.check(&list);
            let del = drv.del(&list);
            out.insert(
                name.to_owned(),
                json!({
                    "add": add, "check": check, "del": del,
                    "cache": sb.cache_entry("errnet", "cnidriver-container", "eth0"),
                    "debugAfter": sb.debug("debug.json"),
                }),
            );
        };
        case("reportError", json!({"ReportError": "banana"}), &mut out);
        case(
            "code7",
            json!({
                "ReportResult": json!({"cniVersion": "1.0.0", "code": 7, "msg": "custom failure", "details": "more info"}).to_string(),
                "ExitWithCode": 1
            }),
            &mut out,
        );
        case(
            "code123",
            json!({
                "ReportResult": json!({"cniVersion": "1.0.0", "code": 123, "msg": "plugin specific"}).to_string(),
                "ExitWithCode": 1
            }),
            &mut out,
        );
        case(
            "stderrOnly",
            json!({"ExitWithCode": 3, "ReportStderr": "oops"}),
            &mut out,
        );

        // Direct invocation: exit status, stdout and stderr.
        sb.write(
            "direct.json",
            &json!({"ReportError": "banana", "ReportStderr": "some stderr\n"}),
        );
        let direct = run_direct(sb, "ADD", &[], r#"{"cniVersion":"1.0.0","name":"direct"}"#);
        out.insert("direct".to_owned(), direct);
        Value::Object(out)
    });

    let err = |case: &str, step: &str| obs[case][step]["error"].clone();
    // ReportError: code 999; libcni wraps ADD/DEL failures with the plugin's
    // description but not CHECK failures.
    assert_eq!(
        err("reportError", "add"),
        json!({"code": 999, "msg": "banana", "details": "", "text": "plugin type=\"noop\" failed (add): banana"})
    );
    assert_eq!(
        err("reportError", "check"),
        json!({"code": 999, "msg": "banana", "details": "", "text": "banana"})
    );
    assert_eq!(
        err("reportError", "del"),
        json!({"code": 999, "msg": "banana", "details": "", "text": "plugin type=\"noop\" failed (delete): banana"})
    );
    assert_eq!(obs["reportError"]["add"]["cachedResult"], Value::Null);
    assert_eq!(obs["reportError"]["cache"], Value::Null);
    assert_eq!(obs["reportError"]["debugAfter"]["Command"], "DEL");

    assert_eq!(
        err("code7", "add"),
        json!({"code": 7, "msg": "custom failure", "details": "more info",
               "text": "plugin type=\"noop\" failed (add): custom failure; more info"})
    );
    assert_eq!(err("code7", "check")["code"], 7);
    assert_eq!(err("code7", "del")["code"], 7);
    assert_eq!(
        err("code123", "add"),
        json!({"code": 123, "msg": "plugin specific", "details": "",
               "text": "plugin type=\"noop\" failed (add): plugin specific"})
    );
    assert_eq!(
        err("stderrOnly", "add"),
        json!({"code": 0, "msg": "netplugin failed: \"oops\"", "details": "",
               "text": "plugin type=\"noop\" failed (add): netplugin failed: \"oops\""})
    );

    // The error JSON is pretty-printed with a 4-space indent, no newline.
    assert_eq!(
        obs["direct"],
        json!({
            "status": 1,
            "stdout": {"code": 999, "msg": "banana"},
            "stdoutRaw": "{\n    \"code\": 999,\n    \"msg\": \"banana\"\n}",
            "stderr": "some stderr\n"
        })
    );
}

/// `ReportErrorCode` is a newest-noop feature (difference (3)), so this is
/// not differential: with our noop a test suite picks the error code, and
/// libcni hands that code, message and an empty details to the runtime for
/// ADD, CHECK and DEL; the key is written back. `0` means 999, as unset.
/// Debian's noop is run on the same files only to pin the difference: it
/// ignores the key (always 999) and drops it from the file.
#[test]
fn report_error_code_reaches_the_runtime_intact() {
    let sb = Sandbox::new();
    for flavor in [Flavor::Ours, Flavor::Reference] {
        sb.reset(flavor);
        let list = error_list(&sb);
        for code in [7, 123, 0] {
            let want = match (flavor, code) {
                (Flavor::Ours, 0) | (Flavor::Reference, _) => 999,
                (Flavor::Ours, c) => c,
            };
            sb.write(
                "debug.json",
                &json!({"ReportError": "banana", "ReportErrorCode": code}),
            );
            let drv = sb.driver();
            for (step, report, verb) in [
                ("add", drv.add(&list), Some("add")),
                ("check", drv.check(&list), None),
                ("del", drv.del(&list), Some("delete")),
            ] {
                let text = match verb {
                    Some(verb) => format!("plugin type=\"noop\" failed ({verb}): banana"),
                    None => "banana".to_owned(),
                };
                assert_eq!(
                    report["error"],
                    json!({"code": want, "msg": "banana", "details": "", "text": text}),
                    "{flavor:?} ReportErrorCode={code} {step}: {report}"
                );
                assert_eq!(report["ok"], false);
            }
            let after = sb.debug_as_written("debug.json");
            assert_eq!(after["Command"], "DEL");
            match flavor {
                Flavor::Ours => assert_eq!(after["ReportErrorCode"], code),
                Flavor::Reference => assert!(
                    after.get("ReportErrorCode").is_none(),
                    "Debian's noop drops the key: {after}"
                ),
            }

            // Directly: exit status 1, one error JSON with that code.
            let dbg_arg = format!("DEBUG={}", sb.path_str("debug.json"));
            let direct = run_direct(
                &sb,
                "ADD",
                &[("CNI_ARGS", &dbg_arg)],
                r#"{"cniVersion":"1.0.0","name":"direct"}"#,
            );
            assert_eq!(
                direct["stdout"],
                json!({"code": want, "msg": "banana"}),
                "{flavor:?} {code}"
            );
            assert_eq!(direct["status"], 1);
        }
    }
}
