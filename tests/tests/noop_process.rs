//! Our `noop` run directly as a process, the way a runtime executes a
//! plugin: every command (ADD, CHECK, DEL, GC, STATUS, VERSION) at every
//! configuration version, with the exact exit status, stdout, stderr and
//! debug file the reference skel's rules give (spec 1.1.0, newest reference
//! noop), plus the deliberate differences listed in the `cni-skel` crate
//! docs (numbered as there) where they show.
//!
//! Each case gets its own temporary directory holding the debug file, so
//! the tests run in parallel.

use std::fs;
use std::path::PathBuf;

use serde_json::{json, Value};
use tests::{base64_decode, plugin_bin_dir, run_plugin, RawOutput, FAKE_NETNS};

/// Every configuration version the noop supports (its list also has the
/// deliberately invalid `0.-42.0`).
const VERSIONS: [&str; 7] = [
    "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

/// Our noop's default VERSION list: the reference's, plus 1.1.0.
const DEFAULT_VERSIONS: [&str; 8] = [
    "0.-42.0", "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

const COMMANDS: [&str; 6] = ["ADD", "CHECK", "DEL", "GC", "STATUS", "VERSION"];

const CONTAINER_ID: &str = "ctr-1";
const IFNAME: &str = "eth0";
const CNI_PATH: &str = "/opt/cni/bin:/usr/lib/cni";

fn noop() -> PathBuf {
    plugin_bin_dir().join("noop")
}

/// A temporary directory with a debug file the test writes and the noop
/// rewrites.
struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new(debug: &Value) -> Case {
        let dir = tempfile::Builder::new()
            .prefix("noop-process-")
            .tempdir()
            .expect("creating a temporary directory");
        let case = Case { dir };
        fs::write(case.debug_path(), debug.to_string()).expect("writing the debug file");
        case
    }

    fn debug_path(&self) -> PathBuf {
        self.dir.path().join("debug.json")
    }

    /// `DEBUG=<debug file>`, the `CNI_ARGS` that points the noop at it.
    fn cni_args(&self) -> String {
        format!("DEBUG={}", self.debug_path().display())
    }

    /// The debug file, byte for byte.
    fn debug_raw(&self) -> String {
        fs::read_to_string(self.debug_path()).expect("reading the debug file")
    }

    /// Runs the noop with the full environment a runtime gives ADD
    /// (container id, netns, ifname, CNI_PATH, CNI_ARGS) for `command`,
    /// plus `extra` (which wins; an empty value unsets in effect).
    fn run(&self, command: &str, extra: &[(&str, &str)], stdin: &str) -> RawOutput {
        let args = self.cni_args();
        let mut env: Vec<(&str, &str)> = vec![
            ("CNI_COMMAND", command),
            ("CNI_CONTAINERID", CONTAINER_ID),
            ("CNI_NETNS", FAKE_NETNS),
            ("CNI_IFNAME", IFNAME),
            ("CNI_PATH", CNI_PATH),
            ("CNI_ARGS", &args),
        ];
        for (k, v) in extra {
            env.retain(|(name, _)| name != k);
            if !v.is_empty() {
                env.push((k, v));
            }
        }
        run_plugin(&noop(), &env, stdin.as_bytes())
    }
}

/// stdout holds exactly one JSON document (returned) or nothing (`None`).
fn one_json_or_nothing(o: &RawOutput) -> Option<Value> {
    if o.stdout.is_empty() {
        return None;
    }
    let docs: Vec<Value> = serde_json::Deserializer::from_slice(&o.stdout)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("stdout is not a JSON stream ({e}): {o:?}"));
    assert_eq!(
        docs.len(),
        1,
        "stdout holds {} documents: {o:?}",
        docs.len()
    );
    docs.into_iter().next()
}

/// Asserts a failure: status 1, nothing on stderr, and stdout one CNI error
/// with exactly these fields, printed as the reference prints it (no
/// `cniVersion`, no trailing newline: the noop's wire format).
fn assert_error(o: &RawOutput, code: u32, msg: &str, what: &str) {
    assert_eq!(o.status(), Some(1), "{what}: {o:?}");
    let printed = format!("{{\n    \"code\": {code},\n    \"msg\": {}\n}}", json!(msg));
    assert_eq!(o.stdout_str(), printed, "{what}: {o:?}");
    assert_eq!(o.stderr_str(), "", "{what}: {o:?}");
}

/// A result in version `v`, as the reference encodes it (compact, Go struct
/// field order): the same attachment in each version family's shape.
fn result_json(v: &str) -> String {
    match v {
        "0.1.0" | "0.2.0" => format!(
            r#"{{"cniVersion":"{v}","ip4":{{"ip":"10.1.2.3/24","gateway":"10.1.2.1","routes":[{{"dst":"0.0.0.0/0","gw":"10.1.2.1"}}]}},"ip6":{{"ip":"fd00::3/64"}},"dns":{{"nameservers":["8.8.8.8"],"domain":"example.com"}}}}"#
        ),
        "0.3.0" | "0.3.1" | "0.4.0" => format!(
            r#"{{"cniVersion":"{v}","interfaces":[{{"name":"eth0","mac":"00:11:22:33:44:55","sandbox":"{FAKE_NETNS}"}}],"ips":[{{"version":"4","interface":0,"address":"10.1.2.3/24","gateway":"10.1.2.1"}},{{"version":"6","interface":0,"address":"fd00::3/64"}}],"routes":[{{"dst":"0.0.0.0/0","gw":"10.1.2.1"}}],"dns":{{"nameservers":["8.8.8.8"],"domain":"example.com"}}}}"#
        ),
        "1.0.0" | "1.1.0" => format!(
            r#"{{"cniVersion":"{v}","interfaces":[{{"name":"eth0","mac":"00:11:22:33:44:55","sandbox":"{FAKE_NETNS}"}}],"ips":[{{"interface":0,"address":"10.1.2.3/24","gateway":"10.1.2.1"}},{{"interface":0,"address":"fd00::3/64"}}],"routes":[{{"dst":"0.0.0.0/0","gw":"10.1.2.1"}}],"dns":{{"nameservers":["8.8.8.8"],"domain":"example.com"}}}}"#
        ),
        _ => unreachable!("{v}"),
    }
}

/// Another version of the same result family, so that PASSTHROUGH has to
/// convert (within a family every version is accepted as `prevResult`).
fn neighbour(v: &str) -> &'static str {
    match v {
        "0.1.0" => "0.2.0",
        "0.2.0" => "0.1.0",
        "0.3.0" => "0.3.1",
        "0.3.1" => "0.4.0",
        "0.4.0" => "0.3.0",
        "1.0.0" => "1.1.0",
        "1.1.0" => "1.0.0",
        _ => unreachable!("{v}"),
    }
}

/// A configuration of version `v` whose `prevResult` is in `prev_version`.
fn config(v: &str, prev_version: Option<&str>) -> String {
    let mut c = json!({"cniVersion": v, "name": "procnet", "type": "noop"});
    if let Some(p) = prev_version {
        c["prevResult"] = serde_json::from_str(&result_json(p)).expect("valid result");
    }
    c.to_string()
}

fn at_least(v: &str, minimum: &str) -> bool {
    let n = |s: &str| -> Vec<u32> { s.split('.').map(|p| p.parse().unwrap()).collect() };
    n(v) >= n(minimum)
}

/// The debug file after the noop ran `command`: the test's settings written
/// back in the reference's key order with zero values filled in, then
/// `Command` and `CmdArgs` as received (stdin base64-encoded).
fn expected_debug(
    report_result: &str,
    command: &str,
    netns: &str,
    args: &str,
    path: &str,
    netns_override: &str,
    stdin_b64: &str,
) -> String {
    format!(
        r#"{{"ReportResult":{},"ReportError":"","ReportErrorCode":0,"ReportStderr":"","ReportVersionSupport":null,"ExitWithCode":0,"Command":"{command}","CmdArgs":{{"ContainerID":"{CONTAINER_ID}","Netns":"{netns}","IfName":"{IFNAME}","Args":"{args}","Path":"{path}","NetnsOverride":"{netns_override}","StdinData":"{stdin_b64}"}}}}"#,
        json!(report_result)
    )
}

/// The `StdinData` the noop recorded, checked to decode to `stdin`.
fn recorded_stdin_b64(case: &Case, stdin: &str) -> String {
    let d: Value = serde_json::from_str(&case.debug_raw()).expect("debug file is JSON");
    let b64 = d["CmdArgs"]["StdinData"]
        .as_str()
        .expect("StdinData")
        .to_owned();
    assert_eq!(base64_decode(&b64), stdin.as_bytes(), "StdinData");
    b64
}

// ---------------------------------------------------------------------------
// The command x version matrix
// ---------------------------------------------------------------------------

/// Every command at every configuration version, with a complete runtime
/// environment and `ReportResult: PASSTHROUGH`:
/// - ADD and DEL always run: the `prevResult` (given in another version of
///   its family) is printed converted to the configuration's version, and
///   the debug file records the command and its arguments;
/// - CHECK needs 0.4.0 or later, GC and STATUS 1.1.0 or later, else exit 1
///   with code 1 `config version does not allow <CMD>` and the plugin does
///   not run (the debug file is untouched);
/// - VERSION answers in the configuration's version with the default list
///   and records nothing.
///
/// stdout always holds exactly one JSON document, nothing goes to stderr.
#[test]
fn every_command_at_every_config_version_follows_the_reference_skel() {
    let settings = json!({"ReportResult": "PASSTHROUGH"});
    for v in VERSIONS {
        for command in COMMANDS {
            let what = format!("{command} at {v}");
            let case = Case::new(&settings);
            let stdin = config(v, Some(neighbour(v)));
            let o = case.run(command, &[], &stdin);
            let minimum = match command {
                "CHECK" => Some("0.4.0"),
                "GC" | "STATUS" => Some("1.1.0"),
                _ => None,
            };
            if command == "VERSION" {
                assert_eq!(o.status(), Some(0), "{what}: {o:?}");
                let answer = json!({"cniVersion": v, "supportedVersions": DEFAULT_VERSIONS});
                assert_eq!(o.stdout_str(), format!("{answer}\n"), "{what}");
                assert_eq!(o.stderr_str(), "", "{what}");
                assert_eq!(case.debug_raw(), settings.to_string(), "{what}");
            } else if minimum.is_some_and(|m| !at_least(v, m)) {
                assert_error(
                    &o,
                    1,
                    &format!("config version does not allow {command}"),
                    &what,
                );
                assert_eq!(
                    case.debug_raw(),
                    settings.to_string(),
                    "{what}: refused before the plugin runs"
                );
            } else {
                assert_eq!(o.status(), Some(0), "{what}: {o:?}");
                assert_eq!(o.stdout_str(), result_json(v), "{what}");
                one_json_or_nothing(&o);
                assert_eq!(o.stderr_str(), "", "{what}");
                let b64 = recorded_stdin_b64(&case, &stdin);
                assert_eq!(
                    case.debug_raw(),
                    expected_debug(
                        "PASSTHROUGH",
                        command,
                        FAKE_NETNS,
                        &case.cni_args(),
                        CNI_PATH,
                        "",
                        &b64
                    ),
                    "{what}"
                );
            }
        }
    }
}

/// GC without `CNI_PATH` is refused at every configuration version (the
/// environment is checked first) with code 4 naming the variable; the
/// plugin does not run.
///
/// The error's bytes are checked by
/// `errors_from_the_environment_print_as_the_reference_at_every_version`.
#[test]
fn gc_without_cni_path_is_code_4_naming_it() {
    let settings = json!({"ReportResult": "PASSTHROUGH"});
    for v in VERSIONS {
        let case = Case::new(&settings);
        let o = case.run("GC", &[("CNI_PATH", "")], &config(v, Some(v)));
        assert_eq!(o.status(), Some(1), "{v}: {o:?}");
        let err = one_json_or_nothing(&o).expect("an error on stdout");
        assert_eq!(
            err,
            json!({"code": 4, "msg": "required env variables [CNI_PATH] missing"}),
            "{v}"
        );
        assert_eq!(o.stderr_str(), "", "{v}");
        assert_eq!(case.debug_raw(), settings.to_string(), "{v}");
    }
}

/// Errors found in the environment, before stdin is read, are printed as
/// the reference prints them at every configuration version (the SDK's
/// default labels them with the configuration's version; the noop prints
/// the reference's bytes, `WireFormat::Reference`).
#[test]
fn errors_from_the_environment_print_as_the_reference_at_every_version() {
    let case = Case::new(&json!({}));
    for v in VERSIONS {
        let o = case.run("GC", &[("CNI_PATH", "")], &config(v, None));
        assert_error(
            &o,
            4,
            "required env variables [CNI_PATH] missing",
            &format!("GC at {v}"),
        );
        let o = case.run("ADD", &[("CNI_CONTAINERID", "")], &config(v, None));
        assert_error(
            &o,
            4,
            "required env variables [CNI_CONTAINERID] missing",
            &format!("ADD at {v}"),
        );
    }
}

/// The skel's checks of stdin: a missing or invalid network name is code 7,
/// an unknown `CNI_COMMAND` code 4 (checked after the name); the plugin
/// does not run.
///
/// The errors' bytes are checked by
/// `errors_found_after_reading_stdin_print_as_the_reference`.
#[test]
fn bad_network_name_and_unknown_command_are_refused() {
    let settings = json!({"ReportResult": "{}"});
    for (command, stdin, want) in stdin_error_cases("1.0.0") {
        let case = Case::new(&settings);
        let o = case.run(command, &[], &stdin);
        assert_eq!(o.status(), Some(1), "{command} {stdin}: {o:?}");
        let err = one_json_or_nothing(&o).expect("an error on stdout");
        assert_eq!(err, want, "{command} {stdin}");
        assert_eq!(o.stderr_str(), "", "{command} {stdin}");
        assert_eq!(case.debug_raw(), settings.to_string(), "{command} {stdin}");
    }
}

/// (command, stdin, the error the reference prints) for errors the skel
/// finds once it has read a configuration of version `v`.
fn stdin_error_cases(v: &str) -> Vec<(&'static str, String, Value)> {
    vec![
        (
            "ADD",
            json!({"cniVersion": v}).to_string(),
            json!({"code": 7, "msg": "missing network name"}),
        ),
        (
            "DEL",
            json!({"cniVersion": v, "name": "a b"}).to_string(),
            json!({"code": 7, "msg": "invalid characters found in network name", "details": "a b"}),
        ),
        (
            "FOO",
            json!({"cniVersion": v, "name": "procnet"}).to_string(),
            json!({"code": 4, "msg": "unknown CNI_COMMAND: FOO"}),
        ),
    ]
}

/// Errors the skel finds in stdin are printed as the reference prints
/// them, whatever the configuration's version (no `cniVersion`: the
/// noop's wire format, unlike the SDK's default).
#[test]
fn errors_found_after_reading_stdin_print_as_the_reference() {
    let case = Case::new(&json!({}));
    for v in ["0.4.0", "1.0.0"] {
        for (command, stdin, want) in stdin_error_cases(v) {
            let o = case.run(command, &[], &stdin);
            assert_eq!(o.status(), Some(1), "{command} {stdin}: {o:?}");
            assert_eq!(one_json_or_nothing(&o), Some(want), "{command} {stdin}");
            assert!(o.stdout_str().starts_with("{\n    \"code\": "), "{o:?}");
            assert!(o.stdout_str().ends_with('}'), "{o:?}");
        }
    }
}

/// GC and STATUS need nothing but `CNI_COMMAND` and (GC) `CNI_PATH`: the
/// plugin runs and records empty container id, netns and ifname.
#[test]
fn gc_and_status_run_with_their_minimal_environment() {
    for (command, env) in [
        ("GC", vec![("CNI_COMMAND", "GC"), ("CNI_PATH", CNI_PATH)]),
        ("STATUS", vec![("CNI_COMMAND", "STATUS")]),
    ] {
        let case = Case::new(&json!({"ReportResult": "{}"}));
        let args = case.cni_args();
        let mut env = env;
        env.push(("CNI_ARGS", &args));
        let stdin = config("1.1.0", None);
        let o = run_plugin(&noop(), &env, stdin.as_bytes());
        assert_eq!(o.status(), Some(0), "{command}: {o:?}");
        assert_eq!(o.stdout_str(), "{}", "{command}");
        let d: Value = serde_json::from_str(&case.debug_raw()).unwrap();
        assert_eq!(d["Command"], command);
        let a = &d["CmdArgs"];
        assert_eq!(
            (&a["ContainerID"], &a["Netns"], &a["IfName"], &a["Args"]),
            (&json!(""), &json!(""), &json!(""), &json!(args)),
            "{command}"
        );
        let path = if command == "GC" { CNI_PATH } else { "" };
        assert_eq!(a["Path"], path, "{command}");
    }
}

// ---------------------------------------------------------------------------
// PASSTHROUGH edge cases
// ---------------------------------------------------------------------------

/// Before 0.4.0 a runtime sends DEL without `prevResult`; PASSTHROUGH then
/// has nothing to print. The reference crashes (a test setup error); ours
/// exits 2 with one `test setup error:` line on stderr and nothing on
/// stdout, after recording the call in the debug file.
#[test]
fn passthrough_without_prev_result_is_a_test_setup_error() {
    for v in ["0.3.1", "1.0.0"] {
        let case = Case::new(&json!({"ReportResult": "PASSTHROUGH"}));
        let stdin = config(v, None);
        let o = case.run("DEL", &[], &stdin);
        assert_eq!(o.status(), Some(2), "{v}: {o:?}");
        assert_eq!(one_json_or_nothing(&o), None, "{v}");
        let err = o.stderr_str();
        assert!(
            err.starts_with("test setup error: ")
                && err.ends_with('\n')
                && err.lines().count() == 1,
            "{v}: {err:?}"
        );
        let d: Value = serde_json::from_str(&case.debug_raw()).unwrap();
        assert_eq!(d["Command"], "DEL", "{v}");
    }
}

/// INJECT-DNS: the previous result with its nameservers replaced by
/// `1.2.3.4`, the rest of its DNS kept, in the configuration's version.
#[test]
fn inject_dns_replaces_only_the_nameservers() {
    let case = Case::new(&json!({"ReportResult": "INJECT-DNS"}));
    let o = case.run("ADD", &[], &config("0.4.0", Some("0.3.1")));
    assert_eq!(o.status(), Some(0), "{o:?}");
    let expected = result_json("0.4.0").replace(r#"["8.8.8.8"]"#, r#"["1.2.3.4"]"#);
    assert_eq!(o.stdout_str(), expected);
}

/// INJECT-DNS goes through the current result shape and back: a 0.2.0
/// previous result with no address cannot come back to 0.2.0, which is
/// the plugin's error (999) naming the configuration's version.
#[test]
fn inject_dns_that_cannot_be_converted_back_is_an_error() {
    let case = Case::new(&json!({"ReportResult": "INJECT-DNS"}));
    let stdin = json!({
        "cniVersion": "0.2.0", "name": "procnet", "type": "noop",
        "prevResult": {"cniVersion": "0.2.0", "dns": {"nameservers": ["8.8.8.8"]}},
    });
    let o = case.run("ADD", &[], &stdin.to_string());
    assert_error(
        &o,
        999,
        r#"failed to convert result to config "0.2.0": cannot convert: no valid IP addresses"#,
        "INJECT-DNS at 0.2.0 without addresses",
    );
}

/// The cni-skel crate's deliberate difference 5: a `prevResult` of another
/// version family is converted to the configuration's version (the
/// reference rejects it).
#[test]
fn passthrough_converts_a_prev_result_of_another_family() {
    for (v, prev) in [("1.0.0", "0.4.0"), ("0.4.0", "1.0.0"), ("1.1.0", "0.3.1")] {
        let case = Case::new(&json!({"ReportResult": "PASSTHROUGH"}));
        let o = case.run("ADD", &[], &config(v, Some(prev)));
        assert_eq!(o.status(), Some(0), "{v} <- {prev}: {o:?}");
        assert_eq!(o.stdout_str(), result_json(v), "{v} <- {prev}");
    }
}

// ---------------------------------------------------------------------------
// stdout / stderr / exit status
// ---------------------------------------------------------------------------

/// `ReportStderr` goes to stderr and only there, whether the plugin
/// succeeds (stdout: the result) or fails (stdout: the error JSON).
#[test]
fn report_stderr_goes_to_stderr_only() {
    let result = r#"{"cniVersion":"1.0.0","ips":[{"address":"10.9.9.9/16"}]}"#;
    let case = Case::new(&json!({"ReportResult": result, "ReportStderr": "to stderr\n"}));
    let o = case.run("ADD", &[], &config("1.0.0", None));
    assert_eq!(o.status(), Some(0), "{o:?}");
    assert_eq!(o.stdout_str(), result);
    assert_eq!(o.stderr_str(), "to stderr\n");

    let case = Case::new(&json!({"ReportError": "banana", "ReportStderr": "to stderr\n"}));
    let o = case.run("ADD", &[], &config("0.4.0", None));
    assert_eq!(o.status(), Some(1), "{o:?}");
    assert_eq!(
        one_json_or_nothing(&o),
        Some(json!({"code": 999, "msg": "banana"}))
    );
    assert_eq!(o.stderr_str(), "to stderr\n");
}

/// `ExitWithCode` > 0 is the exit status after the result is printed; an
/// error wins over it (status 1); 0 or less means success.
#[test]
fn exit_with_code_sets_the_exit_status_after_printing() {
    let result = r#"{"cniVersion":"1.0.0"}"#;
    for (exit, status) in [(3, 3), (42, 42), (0, 0), (-5, 0)] {
        let case = Case::new(&json!({"ReportResult": result, "ExitWithCode": exit}));
        let o = case.run("ADD", &[], &config("1.0.0", None));
        assert_eq!(o.status(), Some(status), "ExitWithCode {exit}: {o:?}");
        assert_eq!(o.stdout_str(), result, "ExitWithCode {exit}");
        assert_eq!(o.stderr_str(), "", "ExitWithCode {exit}");
    }
    // A CNI error printed verbatim with a non-zero exit: what runtimes see
    // from a failing plugin.
    let err = r#"{"code":7,"msg":"custom failure"}"#;
    let case = Case::new(&json!({"ReportResult": err, "ExitWithCode": 1}));
    let o = case.run("DEL", &[], &config("1.0.0", None));
    assert_eq!((o.status(), o.stdout_str()), (Some(1), err.to_owned()));

    let case = Case::new(&json!({"ReportError": "banana", "ExitWithCode": 3}));
    let o = case.run("ADD", &[], &config("1.0.0", None));
    assert_error(&o, 999, "banana", "ReportError with ExitWithCode");
}

/// `ReportErrorCode` (newest noop) picks the error's code; 0 means 999.
#[test]
fn report_error_code_picks_the_error_code() {
    for (code, want) in [(7, 7), (123, 123), (0, 999)] {
        let case = Case::new(&json!({"ReportError": "banana", "ReportErrorCode": code}));
        let o = case.run("CHECK", &[], &config("1.1.0", Some("1.1.0")));
        assert_error(&o, want, "banana", &format!("{code}"));
        let d: Value = serde_json::from_str(&case.debug_raw()).unwrap();
        assert_eq!(d["ReportErrorCode"], code);
    }
}

/// Without a debug file (no `DEBUG` in CNI_ARGS, no `debugFile`) the noop
/// prints `{}`, says so on stderr, and succeeds.
#[test]
fn without_a_debug_file_the_noop_prints_an_empty_object() {
    let case = Case::new(&json!({}));
    let o = case.run("ADD", &[("CNI_ARGS", "")], &config("1.0.0", None));
    assert_eq!(o.status(), Some(0), "{o:?}");
    assert_eq!(o.stdout_str(), "{}");
    assert_eq!(
        o.stderr_str(),
        "CNI_ARGS or config empty, no debug behavior\n"
    );
}

/// The debug file may also be named by the configuration's `debugFile`; a
/// `DEBUG` in CNI_ARGS wins over it.
#[test]
fn debug_file_from_config_unless_cni_args_names_one() {
    let from_config = Case::new(&json!({"ReportResult": r#"{"from":"config"}"#}));
    let from_args = Case::new(&json!({"ReportResult": r#"{"from":"args"}"#}));
    let stdin = json!({
        "cniVersion": "1.0.0", "name": "procnet",
        "debugFile": from_config.debug_path()
    })
    .to_string();
    let o = from_args.run("ADD", &[("CNI_ARGS", "")], &stdin);
    assert_eq!(o.stdout_str(), r#"{"from":"config"}"#, "{o:?}");
    let o = from_config.run("ADD", &[("CNI_ARGS", &from_args.cni_args())], &stdin);
    assert_eq!(o.stdout_str(), r#"{"from":"args"}"#, "{o:?}");
}

// ---------------------------------------------------------------------------
// The SDK's documented differences that only show when run directly
// ---------------------------------------------------------------------------

/// The cni-skel crate's deliberate difference 1: a `CNI_NETNS` that is the plugin's own network
/// namespace is refused with code 8 before the plugin runs (nothing
/// recorded), for ADD and DEL; `CNI_NETNS_OVERRIDE=1` lifts the check and
/// is recorded.
#[test]
fn own_netns_is_refused_before_the_plugin_runs() {
    let own = "/proc/self/ns/net";
    let settings = json!({"ReportResult": "{}"});
    for command in ["ADD", "DEL"] {
        let case = Case::new(&settings);
        let o = case.run(command, &[("CNI_NETNS", own)], &config("1.0.0", None));
        assert_eq!(o.status(), Some(1), "{command}: {o:?}");
        assert_eq!(
            one_json_or_nothing(&o),
            Some(json!({
                "code": 8,
                "msg": "plugin's netns and netns from CNI_NETNS should not be the same",
                "details": format!("CNI_NETNS={own}")
            })),
            "{command}"
        );
        assert_eq!(case.debug_raw(), settings.to_string(), "{command}");

        let stdin = config("1.0.0", None);
        let o = case.run(
            command,
            &[("CNI_NETNS", own), ("CNI_NETNS_OVERRIDE", "1")],
            &stdin,
        );
        assert_eq!((o.status(), o.stdout_str()), (Some(0), "{}".to_owned()));
        let b64 = recorded_stdin_b64(&case, &stdin);
        assert_eq!(
            case.debug_raw(),
            expected_debug("{}", command, own, &case.cni_args(), CNI_PATH, "1", &b64)
        );
    }
}

/// The cni-skel crate's deliberate difference 4: `CNI_PATH` is optional for ADD, DEL, CHECK and
/// STATUS (the reference requires it); the noop records it empty.
#[test]
fn cni_path_is_optional_except_for_gc() {
    for command in ["ADD", "CHECK", "DEL", "STATUS"] {
        let case = Case::new(&json!({"ReportResult": "{}"}));
        let o = case.run(command, &[("CNI_PATH", "")], &config("1.1.0", None));
        assert_eq!(
            (o.status(), o.stdout_str()),
            (Some(0), "{}".to_owned()),
            "{command}: {o:?}"
        );
        let d: Value = serde_json::from_str(&case.debug_raw()).unwrap();
        assert_eq!(d["CmdArgs"]["Path"], "", "{command}");
    }
}

/// Missing variables are all named in one code-4 error, in the reference's
/// order, and the plugin does not run.
#[test]
fn missing_environment_is_code_4_naming_every_variable() {
    let settings = json!({"ReportResult": "{}"});
    let case = Case::new(&settings);
    let o = case.run(
        "ADD",
        &[
            ("CNI_CONTAINERID", ""),
            ("CNI_NETNS", ""),
            ("CNI_IFNAME", ""),
        ],
        &config("1.1.0", None),
    );
    assert_error(
        &o,
        4,
        "required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME] missing",
        "ADD",
    );
    assert_eq!(case.debug_raw(), settings.to_string());
}

/// Run by hand (no `CNI_COMMAND`): the about string and supported versions
/// on stderr, nothing on stdout, status 0.
#[test]
fn run_by_hand_prints_about_on_stderr() {
    let o = run_plugin(&noop(), &[], b"");
    assert_eq!(o.status(), Some(0), "{o:?}");
    assert_eq!(one_json_or_nothing(&o), None);
    assert_eq!(
        o.stderr_str(),
        format!(
            "CNI noop plugin v0.7.0\nCNI protocol versions supported: {}\n",
            DEFAULT_VERSIONS.join(", ")
        )
    );
}
