//! Direct runs, as a runtime that executes the plugin itself: the skel's
//! checks of its input, PASSTHROUGH's conversion within a version family,
//! and the test setup errors of the noop.

use serde_json::{json, Value};

use crate::differences::{
    d1_default_versions_add_1_1_0, d1_error_details_list_1_1_0,
    d2_version_answer_in_requested_version, d5_crash_stderr, t2_empty_dns_omitted,
};
use crate::differential::{differential, run_direct, with_stdout};
use crate::fixtures::{literal_result, NOOP_DEFAULT_VERSIONS};

/// What the skel checks before the plugin runs, as a runtime sees it when
/// it executes the plugin itself: exit status, the error JSON (byte for
/// byte) and that the plugin did not run (debug file untouched).
#[test]
fn skel_refuses_bad_input_like_the_reference() {
    let obs = differential(|sb| {
        let settings = json!({"ReportResult": "{}"});
        let mut out = serde_json::Map::new();
        let mut case = |name: &str, command: &str, stdin: &str, normalise: &dyn Fn(&mut Value)| {
            sb.write("direct.json", &settings);
            let mut o = run_direct(sb, command, &[], stdin);
            sb.ours(&mut o, normalise);
            o["debugAfter"] = sb.debug("direct.json");
            out.insert(name.to_owned(), o);
        };
        case(
            "unsupportedVersion",
            "ADD",
            r#"{"cniVersion":"9.9.9","name":"n"}"#,
            &d1_error_details_list_1_1_0,
        );
        for v in ["0.1.0", "0.2.0", "0.3.0", "0.3.1"] {
            case(
                &format!("check-{v}"),
                "CHECK",
                &format!(r#"{{"cniVersion":"{v}","name":"n"}}"#),
                &|_| {},
            );
        }
        // With CNI_ARGS set, the noop parses stdin itself before the skel
        // does: a config it cannot read is a test setup error (crash).
        for (name, stdin) in [
            ("notJSON", "not json"),
            ("versionNotString", r#"{"cniVersion":1,"name":"n"}"#),
            (
                "prevResultNotObject",
                r#"{"cniVersion":"1.0.0","name":"n","prevResult":"x"}"#,
            ),
        ] {
            sb.write("direct.json", &settings);
            let o = run_direct(sb, "ADD", &[], stdin);
            out.insert(
                name.to_owned(),
                json!({
                    "status": o["status"],
                    "stdoutRaw": o["stdoutRaw"],
                    "stderr": d5_crash_stderr(sb.flavor(), o["stderr"].as_str().unwrap()),
                    "debugAfter": sb.debug("direct.json"),
                }),
            );
        }
        Value::Object(out)
    });
    let untouched = json!({"ReportResult": "{}", "$raw": r#"{"ReportResult":"{}"}"#});
    let e = &obs["unsupportedVersion"];
    assert_eq!(e["status"], 1);
    assert_eq!(
        e["stdout"],
        json!({"code": 1, "msg": "incompatible CNI versions",
               "details": format!("config is \"9.9.9\", plugin supports [{}]",
                   NOOP_DEFAULT_VERSIONS.map(|v| format!("{v:?}")).join(" "))})
    );
    assert_eq!(e["debugAfter"], untouched);
    for v in ["0.1.0", "0.2.0", "0.3.0", "0.3.1"] {
        let e = &obs[format!("check-{v}")];
        assert_eq!(e["status"], 1, "{v}");
        assert_eq!(
            e["stdoutRaw"],
            "{\n    \"code\": 1,\n    \"msg\": \"config version does not allow CHECK\"\n}",
            "{v}"
        );
        assert_eq!(e["stderr"], "", "{v}");
        assert_eq!(e["debugAfter"], untouched, "{v}");
    }
    for name in ["notJSON", "versionNotString", "prevResultNotObject"] {
        assert_eq!(
            obs[name],
            json!({"status": 2, "stdoutRaw": "", "stderr": "<crash: exit 2, no stdout>", "debugAfter": untouched}),
            "{name}"
        );
    }
}

/// PASSTHROUGH run directly prints the `prevResult` converted to the
/// configuration's version, byte for byte as the reference encodes it
/// (compact, Go field order), for a `prevResult` in another version of the
/// same family; a `prevResult` without DNS is printed with an empty `dns`
/// (ours omits it from 1.x results: (T2)).
#[test]
fn passthrough_converts_within_a_version_family_like_the_reference() {
    let r020 = |v: &str| {
        json!({"cniVersion": v,
            "ip4": {"ip": "10.1.2.3/24", "gateway": "10.1.2.1", "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.2.1"}]},
            "ip6": {"ip": "fd00::3/64"},
            "dns": {"nameservers": ["8.8.8.8"], "domain": "example.com"}})
    };
    // (config version, prevResult, expected stdout, prevResult lacks DNS)
    let cases = [
        ("0.1.0", r020("0.2.0"), r020("0.1.0"), false),
        ("0.2.0", r020("0.1.0"), r020("0.2.0"), false),
        (
            "0.3.0",
            literal_result("0.3.1"),
            literal_result("0.3.0"),
            false,
        ),
        (
            "0.3.1",
            literal_result("0.4.0"),
            literal_result("0.3.1"),
            false,
        ),
        (
            "0.4.0",
            literal_result("0.3.0"),
            literal_result("0.4.0"),
            false,
        ),
        (
            "1.0.0",
            literal_result("1.0.0"),
            literal_result("1.0.0"),
            false,
        ),
        (
            "0.1.0",
            json!({}),
            json!({"cniVersion": "0.1.0", "dns": {}}),
            true,
        ),
        (
            "0.2.0",
            json!({"cniVersion": "0.2.0", "ip4": {"ip": "10.0.0.2/8"}}),
            json!({"cniVersion": "0.2.0", "ip4": {"ip": "10.0.0.2/8"}, "dns": {}}),
            true,
        ),
        (
            "0.4.0",
            json!({"ips": []}),
            json!({"cniVersion": "0.4.0", "dns": {}}),
            true,
        ),
        (
            "1.0.0",
            json!({"cniVersion": "1.0.0", "ips": [{"address": "10.0.0.2/8"}]}),
            json!({"cniVersion": "1.0.0", "ips": [{"address": "10.0.0.2/8"}], "dns": {}}),
            true,
        ),
    ];
    let obs = differential(|sb| {
        sb.write("direct.json", &json!({"ReportResult": "PASSTHROUGH"}));
        let out: Vec<Value> = cases
            .iter()
            .map(|(v, prev, _, no_dns)| {
                let stdin = json!({"cniVersion": v, "name": "n", "prevResult": prev}).to_string();
                let mut o = run_direct(sb, "ADD", &[], &stdin);
                if *no_dns && v.starts_with("1.") {
                    sb.ours(&mut o, t2_empty_dns_omitted);
                }
                o
            })
            .collect();
        json!({ "cases": out })
    });
    for ((v, prev, want, _), o) in cases.iter().zip(obs["cases"].as_array().unwrap()) {
        assert_eq!(o["status"], 0, "{v} <- {prev}: {o}");
        assert_eq!(o["stderr"], "", "{v} <- {prev}");
        assert_eq!(&o["stdout"], want, "{v} <- {prev}");
    }
}

/// Test setup errors a suite can make (a malformed CNI_ARGS, a missing or
/// malformed debug file, an empty `ReportVersionSupport`) crash the noop
/// before the skel runs, for any command: exit 2, nothing on stdout
/// (difference (5) for stderr). Duplicate `CNI_ARGS` keys: the last wins;
/// debug-file keys are matched case-insensitively; a `ReportVersionSupport`
/// without the configuration's version makes the skel refuse it (code 1).
#[test]
fn test_setup_errors_and_debug_file_parsing_like_the_reference() {
    let obs = differential(|sb| {
        let stdin = r#"{"cniVersion":"1.0.0","name":"n"}"#;
        let mut out = serde_json::Map::new();
        let files = [
            ("ok.json", json!({"ReportResult": "{}"})),
            ("notJSON.json", json!("not an object")),
            ("badType.json", json!({"ExitWithCode": "x"})),
            (
                "noVersions.json",
                json!({"ReportResult": "{}", "ReportVersionSupport": []}),
            ),
            (
                "onlyOld.json",
                json!({"ReportResult": "{}", "ReportVersionSupport": ["0.4.0"]}),
            ),
            (
                "lowerCase.json",
                json!({"reportresult": r#"{"a":1}"#, "EXITWITHCODE": 3}),
            ),
        ];
        let ok = sb.path_str("ok.json");
        let cases = [
            ("argWithoutEquals", "FOO".to_owned()),
            ("argWithTwoEquals", format!("DEBUG={ok};FOO=a=b")),
            ("argTrailingSemicolon", format!("DEBUG={ok};")),
            (
                "missingDebugFile",
                format!("DEBUG={}", sb.path_str("absent.json")),
            ),
            ("emptyDebugPath", "DEBUG=".to_owned()),
            (
                "debugNotJSON",
                format!("DEBUG={}", sb.path_str("notJSON.json")),
            ),
            (
                "debugBadType",
                format!("DEBUG={}", sb.path_str("badType.json")),
            ),
            (
                "noVersions",
                format!("DEBUG={}", sb.path_str("noVersions.json")),
            ),
            (
                "duplicateKeyLastWins",
                format!("DEBUG=/nonexistent;DEBUG={ok}"),
            ),
            (
                "unsupportedByReportVersionSupport",
                format!("DEBUG={}", sb.path_str("onlyOld.json")),
            ),
            (
                "caseInsensitiveKeys",
                format!("DEBUG={}", sb.path_str("lowerCase.json")),
            ),
        ];
        for command in ["ADD", "VERSION"] {
            for (name, args) in &cases {
                for (f, content) in &files {
                    sb.write(f, content);
                }
                let mut o = run_direct(sb, command, &[("CNI_ARGS", args)], stdin);
                if o["status"] == 2 {
                    o["stderr"] = d5_crash_stderr(sb.flavor(), o["stderr"].as_str().unwrap());
                }
                if command == "VERSION" && o["status"] == 0 {
                    sb.ours(&mut o, |o| {
                        with_stdout(o, |answer, raw| {
                            d2_version_answer_in_requested_version(
                                answer,
                                Some("1.0.0"),
                                Some(raw),
                            );
                            if *name != "unsupportedByReportVersionSupport" {
                                d1_default_versions_add_1_1_0(answer, Some(raw));
                            }
                        })
                    });
                }
                if command == "ADD" && o["status"] != 2 {
                    o["debugAfter"] = sb.debug(if *name == "caseInsensitiveKeys" {
                        "lowerCase.json"
                    } else {
                        "ok.json"
                    });
                }
                out.insert(format!("{command} {name}"), o);
            }
        }
        Value::Object(out)
    });
    for command in ["ADD", "VERSION"] {
        for name in [
            "argWithoutEquals",
            "argWithTwoEquals",
            "argTrailingSemicolon",
            "missingDebugFile",
            "emptyDebugPath",
            "debugNotJSON",
            "debugBadType",
            "noVersions",
        ] {
            let o = &obs[format!("{command} {name}")];
            assert_eq!(
                (&o["status"], &o["stdoutRaw"], &o["stderr"]),
                (&json!(2), &json!(""), &json!("<crash: exit 2, no stdout>")),
                "{command} {name}: {o}"
            );
        }
    }
    assert_eq!(obs["ADD duplicateKeyLastWins"]["stdoutRaw"], "{}");
    assert_eq!(
        obs["ADD duplicateKeyLastWins"]["debugAfter"]["Command"],
        "ADD"
    );
    let refused = &obs["ADD unsupportedByReportVersionSupport"];
    assert_eq!(refused["status"], 1);
    assert_eq!(
        refused["stdout"],
        json!({"code": 1, "msg": "incompatible CNI versions", "details": "config is \"1.0.0\", plugin supports [\"0.4.0\"]"})
    );
    assert_eq!(
        obs["VERSION unsupportedByReportVersionSupport"]["stdout"],
        json!({"cniVersion": "1.0.0", "supportedVersions": ["0.4.0"]})
    );
    let lower = &obs["ADD caseInsensitiveKeys"];
    assert_eq!(
        (&lower["status"], &lower["stdoutRaw"]),
        (&json!(3), &json!(r#"{"a":1}"#))
    );
    // Written back under the canonical names.
    assert_eq!(lower["debugAfter"]["ReportResult"], r#"{"a":1}"#);
    assert_eq!(lower["debugAfter"]["ExitWithCode"], 3);
}
