//! The dispatcher's rules, one test each, through the in-process harness.

use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request, TestRequest};
use cni_types::{Code, Error, IpConfig, NetConf, Result100, SpecVersion};
use cni_version::PluginInfo;
use serde_json::{json, Value};

/// What the test plugin does, chosen by its config's `behavior` key.
#[derive(serde::Deserialize, Default)]
struct Config {
    #[serde(default)]
    behavior: String,
}

struct TestPlugin;

/// Typed `CNI_ARGS` the test plugin reads.
#[derive(serde::Deserialize)]
#[allow(non_snake_case, dead_code)]
struct Args {
    Count: Option<u16>,
}

impl TestPlugin {
    /// What the behaviour asks for; `None` when it prints nothing of its own
    /// (ADD then answers an empty result).
    fn act(req: &Request<NetConf<Config>>) -> Result<Option<Reply>, BoxError> {
        match req.config.plugin.behavior.as_str() {
            "cni-error" => Err(Error::new(Code(123), "custom failure")
                .with_details("more")
                .into()),
            "io-error" => Err(std::io::Error::other("disk on fire").into()),
            "panic" => panic!("boom"),
            "log" => {
                req.log("to stderr");
                Ok(None)
            }
            "no-ips" => Ok(Some(Result100::new(SpecVersion::V1_1_0).into())),
            "typed-args" => req.cni_args_as::<Args>().map(|_| None).map_err(Into::into),
            "typed-args-by-hand" => {
                let _: Args = req.cni_args()?.deserialize()?;
                Ok(None)
            }
            _ => {
                let mut r = Result100::new(SpecVersion::V1_1_0);
                r.ips.push(IpConfig::new(
                    "10.1.0.5/16".parse().unwrap(),
                    Some("10.1.0.1".parse().unwrap()),
                ));
                Ok(Some(r.into()))
            }
        }
    }
}

fn or_empty_result(reply: Option<Reply>) -> Reply {
    reply.unwrap_or_else(|| Result100::new(SpecVersion::V1_1_0).into())
}

impl Plugin for TestPlugin {
    type Config = NetConf<Config>;
    const CHECK: CheckSupport = CheckSupport::Full;
    // A test double: its ADD changes nothing on the host, so there is
    // nothing to verify and CHECK succeeds.
    fn check(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }
    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        Self::act(req).map(or_empty_result)
    }
    fn del(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        Self::act(req).map(drop)
    }
}

fn conf(version: &str) -> String {
    json!({"cniVersion": version, "name": "testnet", "type": "test"}).to_string()
}

fn add(version: &str) -> TestRequest {
    TestRequest::add().stdin(conf(version))
}

fn run(req: &TestRequest) -> cni_skel::Outcome {
    req.run(&TestPlugin, &PluginInfo::all())
}

fn error_of(req: &TestRequest) -> Error {
    let out = run(req);
    assert_eq!(
        out.exit_code,
        1,
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Exactly one JSON document: the error.
    let err: Error = serde_json::from_slice(&out.stdout).expect("stdout is one CNI error");
    err
}

#[test]
fn add_prints_the_result_in_the_configuration_version() {
    for version in [
        "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
    ] {
        let out = run(&add(version));
        assert_eq!(out.exit_code, 0, "{version}");
        let v = out.json();
        assert_eq!(v["cniVersion"], version);
        let address = if version < "0.3.0" {
            &v["ip4"]["ip"]
        } else {
            &v["ips"][0]["address"]
        };
        assert_eq!(address, "10.1.0.5/16", "{version}");
    }
}

#[test]
fn a_result_that_cannot_be_converted_is_an_internal_error() {
    let err =
        error_of(&add("0.2.0").stdin(r#"{"cniVersion":"0.2.0","name":"n","behavior":"no-ips"}"#));
    assert_eq!(err.code, Code::INTERNAL);
    assert!(err.msg.contains("no valid IP addresses"), "{}", err.msg);
}

#[test]
fn missing_variables_are_named_together_with_code_4() {
    let err = error_of(&TestRequest::new("ADD").stdin(conf("1.0.0")));
    assert_eq!(err.code, Code::INVALID_ENVIRONMENT_VARIABLES);
    assert_eq!(
        err.msg,
        "required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME] missing"
    );
}

#[test]
fn cni_path_is_required_only_for_gc() {
    assert_eq!(run(&add("1.0.0")).exit_code, 0);
    let gc = TestRequest::new("GC").stdin(conf("1.1.0"));
    assert_eq!(
        error_of(&gc).msg,
        "required env variables [CNI_PATH] missing"
    );
    assert_eq!(run(&gc.env("CNI_PATH", "/opt/cni/bin")).exit_code, 0);
}

#[test]
fn no_command_prints_about_and_versions_to_stderr_and_succeeds() {
    let out = TestRequest::new("")
        .about("CNI test plugin v1")
        .run(&TestPlugin, &PluginInfo::legacy());
    assert_eq!(out.exit_code, 0);
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "CNI test plugin v1\nCNI protocol versions supported: 0.1.0, 0.2.0\n"
    );
    // Without an about string it is an ordinary error.
    assert_eq!(
        error_of(&TestRequest::new("")).code,
        Code::INVALID_ENVIRONMENT_VARIABLES
    );
}

#[test]
fn unknown_command_is_code_4_after_the_config_checks() {
    let err = error_of(&TestRequest::new("FROB").stdin(conf("1.0.0")));
    assert_eq!(
        (err.code, err.msg.as_str()),
        (
            Code::INVALID_ENVIRONMENT_VARIABLES,
            "unknown CNI_COMMAND: FROB"
        )
    );
    assert_eq!(
        error_of(&TestRequest::new("FROB").stdin("nope")).code,
        Code::DECODING_FAILURE
    );
}

#[test]
fn invalid_json_is_code_6_and_a_bad_name_code_7() {
    assert_eq!(
        error_of(&add("1.0.0").stdin("{not json")).code,
        Code::DECODING_FAILURE
    );
    assert_eq!(
        error_of(&add("1.0.0").stdin("")).code,
        Code::DECODING_FAILURE
    );
    assert_eq!(
        error_of(&add("1.0.0").stdin(r#"{"name": 5}"#)).code,
        Code::DECODING_FAILURE
    );
    let err = error_of(&add("1.0.0").stdin(r#"{"cniVersion":"1.0.0"}"#));
    assert_eq!(
        (err.code, err.msg.as_str()),
        (Code::INVALID_NETWORK_CONFIG, "missing network name")
    );
    let err = error_of(&add("1.0.0").stdin(r#"{"cniVersion":"1.0.0","name":"bad name"}"#));
    assert_eq!(
        (err.code, err.details.as_str()),
        (Code::INVALID_NETWORK_CONFIG, "bad name")
    );
}

#[test]
fn unsupported_config_version_is_code_1_naming_both() {
    let out = add("0.4.0").run(&TestPlugin, &PluginInfo::new(["1.0.0"]));
    let err: Error = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(err.code, Code::INCOMPATIBLE_CNI_VERSION);
    assert_eq!(err.msg, "incompatible CNI versions");
    assert_eq!(
        err.details,
        r#"config is "0.4.0", plugin supports ["1.0.0"]"#
    );
    // Versions match by exact string.
    assert_eq!(error_of(&add("1.0")).code, Code::INCOMPATIBLE_CNI_VERSION);
}

#[test]
fn a_missing_config_version_means_0_1_0() {
    let out = run(&add("x").stdin(r#"{"name":"n"}"#));
    assert_eq!(out.json()["cniVersion"], "0.1.0");
}

#[test]
fn check_needs_0_4_0_and_gc_status_need_1_1_0() {
    let check = |v: &str| TestRequest::check().stdin(conf(v));
    assert_eq!(
        error_of(&check("0.3.1")).msg,
        "config version does not allow CHECK"
    );
    assert_eq!(run(&check("0.4.0")).exit_code, 0);
    // A version even the lenient parser cannot read is a decoding failure.
    assert_eq!(error_of(&check("a.b.c")).code, Code::DECODING_FAILURE);
    for (cmd, req) in [("GC", TestRequest::gc()), ("STATUS", TestRequest::status())] {
        assert_eq!(
            error_of(&req.clone().stdin(conf("1.0.0"))).msg,
            format!("config version does not allow {cmd}")
        );
        assert_eq!(run(&req.stdin(conf("1.1.0"))).exit_code, 0, "{cmd}");
    }
    // A plugin whose newest version is older than the configuration's.
    let out = check("1.0.0").run(&TestPlugin, &PluginInfo::new(["0.4.0"]));
    let err: Error = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(err.msg, "plugin version does not allow CHECK");
}

#[test]
fn version_answers_in_the_requested_version_and_needs_no_config() {
    let out = TestRequest::new("VERSION")
        .stdin(r#"{"cniVersion":"0.3.1"}"#)
        .run(&TestPlugin, &PluginInfo::all());
    assert_eq!(out.exit_code, 0);
    assert_eq!(out.json()["cniVersion"], "0.3.1");
    assert_eq!(out.json()["supportedVersions"].as_array().unwrap().len(), 7);
    let out = TestRequest::new("VERSION").run(&TestPlugin, &PluginInfo::legacy());
    assert_eq!(
        out.json(),
        json!({"cniVersion": "0.2.0", "supportedVersions": ["0.1.0", "0.2.0"]})
    );
}

#[test]
fn own_netns_is_refused_before_the_plugin_runs_unless_overridden() {
    let req = add("1.0.0")
        .env("CNI_NETNS", "/proc/self/ns/net")
        .stdin(r#"{"cniVersion":"1.0.0","name":"n","behavior":"log"}"#);
    let out = run(&req);
    assert_eq!(out.exit_code, 1);
    assert!(out.stderr.is_empty(), "the plugin must not have run");
    let err: Error = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(err.code, Code::INVALID_NETNS);
    for yes in ["1", "true", "TRUE"] {
        assert_eq!(
            run(&req.clone().env("CNI_NETNS_OVERRIDE", yes)).exit_code,
            0,
            "{yes}"
        );
    }
}

#[test]
fn del_succeeds_when_the_netns_is_gone_or_unset() {
    let del = TestRequest::del().stdin(conf("1.0.0"));
    assert_eq!(run(&del).exit_code, 0);
    assert_eq!(
        run(&del.env("CNI_NETNS", "/var/run/netns/gone")).exit_code,
        0
    );
}

#[test]
fn plugin_errors_keep_their_code_and_others_become_999_with_their_cause() {
    let err = error_of(
        &add("1.0.0").stdin(r#"{"cniVersion":"1.0.0","name":"n","behavior":"cni-error"}"#),
    );
    assert_eq!(
        (err.code, err.msg.as_str(), err.details.as_str()),
        (Code(123), "custom failure", "more")
    );
    let err =
        error_of(&add("1.0.0").stdin(r#"{"cniVersion":"1.0.0","name":"n","behavior":"io-error"}"#));
    assert_eq!(
        (err.code, err.msg.as_str()),
        (Code::INTERNAL, "disk on fire")
    );
}

#[test]
fn errors_carry_the_config_version_or_else_the_newest_supported() {
    let err = error_of(
        &add("0.4.0").stdin(r#"{"cniVersion":"0.4.0","name":"n","behavior":"cni-error"}"#),
    );
    assert_eq!(err.cni_version.as_deref(), Some("0.4.0"));
    let err = error_of(&add("1.0.0").stdin("garbage"));
    assert_eq!(err.cni_version.as_deref(), Some("1.1.0"));
}

#[test]
fn a_panic_becomes_one_internal_error_on_stdout() {
    let out = run(&add("1.0.0").stdin(r#"{"cniVersion":"1.0.0","name":"n","behavior":"panic"}"#));
    assert_eq!(out.exit_code, 1);
    let err: Error = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(err.code, Code::INTERNAL);
    assert_eq!(err.details, "boom");
}

#[test]
fn logging_goes_to_stderr_never_stdout() {
    let out =
        run(&TestRequest::del().stdin(r#"{"cniVersion":"1.0.0","name":"n","behavior":"log"}"#));
    assert_eq!(out.exit_code, 0);
    assert!(out.stdout.is_empty());
    assert_eq!(out.stderr, b"to stderr\n");
}

#[test]
fn a_malformed_config_is_code_6_naming_the_field() {
    let err = error_of(&add("1.0.0").stdin(r#"{"cniVersion":"1.0.0","name":"n","behavior":7}"#));
    assert_eq!(err.code, Code::DECODING_FAILURE);
    assert!(err.msg.contains("behavior"), "{}", err.msg);
    let err = error_of(
        &add("1.0.0")
            .stdin(r#"{"cniVersion":"1.0.0","name":"n","prevResult":{"ips":[{"address":"x"}]}}"#),
    );
    assert_eq!(err.code, Code::DECODING_FAILURE);
}

/// A table of bad inputs: each gives exactly one CNI error with this code.
#[test]
fn bad_inputs_give_exactly_one_error_with_the_reference_code() {
    use std::os::unix::ffi::OsStringExt;
    let non_utf8 = std::ffi::OsString::from_vec(vec![b'c', 0xff]);
    let huge = format!(
        r#"{{"cniVersion":"1.0.0","name":"n","pad":"{}"}}"#,
        "x".repeat(8 << 20)
    );
    let cases: Vec<(&str, TestRequest, Code)> = vec![
        (
            "missing everything",
            TestRequest::new("ADD"),
            Code::INVALID_ENVIRONMENT_VARIABLES,
        ),
        (
            "bad container id",
            add("1.0.0").env("CNI_CONTAINERID", "-x"),
            Code::INVALID_ENVIRONMENT_VARIABLES,
        ),
        (
            "non-UTF-8 container id",
            add("1.0.0").env("CNI_CONTAINERID", non_utf8),
            Code::INVALID_ENVIRONMENT_VARIABLES,
        ),
        (
            "long ifname",
            add("1.0.0").env("CNI_IFNAME", "x".repeat(16)),
            Code::INVALID_ENVIRONMENT_VARIABLES,
        ),
        (
            "ifname with space",
            add("1.0.0").env("CNI_IFNAME", "a b"),
            Code::INVALID_ENVIRONMENT_VARIABLES,
        ),
        (
            "unknown command",
            TestRequest::new("add").stdin(conf("1.0.0")),
            Code::INVALID_ENVIRONMENT_VARIABLES,
        ),
        (
            "empty stdin",
            add("1.0.0").stdin(""),
            Code::DECODING_FAILURE,
        ),
        (
            "not an object",
            add("1.0.0").stdin("[]"),
            Code::DECODING_FAILURE,
        ),
        (
            "trailing garbage",
            add("1.0.0").stdin(conf("1.0.0") + "x"),
            Code::DECODING_FAILURE,
        ),
        (
            "invalid UTF-8 in JSON",
            add("1.0.0").stdin(b"{\"name\":\"n\xff\"}".to_vec()),
            Code::INVALID_NETWORK_CONFIG,
        ),
        (
            "version not a string",
            add("1.0.0").stdin(r#"{"name":"n","cniVersion":1}"#),
            Code::DECODING_FAILURE,
        ),
        (
            "unsupported version",
            add("9.9.9"),
            Code::INCOMPATIBLE_CNI_VERSION,
        ),
        (
            "malformed version",
            add("banana"),
            Code::INCOMPATIBLE_CNI_VERSION,
        ),
        (
            "missing name",
            add("1.0.0").stdin(r#"{"cniVersion":"1.0.0"}"#),
            Code::INVALID_NETWORK_CONFIG,
        ),
        (
            "null name",
            add("1.0.0").stdin(r#"{"name":null}"#),
            Code::INVALID_NETWORK_CONFIG,
        ),
        (
            "top-level null",
            add("1.0.0").stdin("null"),
            Code::INVALID_NETWORK_CONFIG,
        ),
        (
            "huge stdin, bad version",
            add("1.0.0").stdin(huge.replace("1.0.0", "7.0.0")),
            Code::INCOMPATIBLE_CNI_VERSION,
        ),
    ];
    for (what, req, code) in cases {
        let out = run(&req);
        assert_eq!(out.exit_code, 1, "{what}");
        let v: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(v["code"], code.0, "{what}: {v}");
    }
}

#[test]
fn huge_stdin_is_read_whole() {
    let huge = format!(
        r#"{{"cniVersion":"1.0.0","name":"n","pad":"{}"}}"#,
        "x".repeat(8 << 20)
    );
    assert_eq!(run(&add("1.0.0").stdin(huge)).exit_code, 0);
}

#[test]
fn every_error_names_the_configuration_version_once_stdin_is_known() {
    // Environment errors, name errors and unknown commands alike.
    let env_error = error_of(&TestRequest::new("ADD").stdin(conf("0.4.0")));
    assert_eq!(env_error.cni_version.as_deref(), Some("0.4.0"));
    let name_error = error_of(&add("0.3.1").stdin(r#"{"cniVersion":"0.3.1","name":"bad name"}"#));
    assert_eq!(name_error.cni_version.as_deref(), Some("0.3.1"));
    let unknown = error_of(&TestRequest::new("FROB").stdin(conf("1.0.0")));
    assert_eq!(unknown.cni_version.as_deref(), Some("1.0.0"));
}

#[test]
fn typed_cni_args_errors_are_code_4_naming_the_pair_however_they_are_read() {
    for behavior in ["typed-args", "typed-args-by-hand"] {
        for (args, pair) in [("Count=70000", "Count=70000"), ("Other=1", "Other=1")] {
            let stdin =
                json!({"cniVersion": "1.0.0", "name": "n", "type": "t", "behavior": behavior});
            let err = error_of(&add("1.0.0").env("CNI_ARGS", args).stdin(stdin.to_string()));
            assert_eq!(
                err.code,
                Code::INVALID_ENVIRONMENT_VARIABLES,
                "{behavior} {args}"
            );
            assert_eq!(err.msg, "invalid CNI_ARGS");
            assert!(err.details.contains(pair), "{behavior}: {err:?}");
        }
    }
}

/// The test plugin, printing as the reference does.
struct ReferencePrinting;

impl Plugin for ReferencePrinting {
    type Config = NetConf<Config>;
    const CHECK: CheckSupport = CheckSupport::Full;
    // A test double: its ADD changes nothing on the host, so there is
    // nothing to verify and CHECK succeeds.
    fn check(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }
    const WIRE_FORMAT: cni_types::WireFormat = cni_types::WireFormat::Reference;
    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        TestPlugin::act(req).map(or_empty_result)
    }
    fn del(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        TestPlugin::act(req).map(drop)
    }
}

#[test]
fn the_reference_wire_format_prints_errors_and_results_as_the_reference_does() {
    let stdin = json!({"cniVersion": "0.4.0", "name": "n", "type": "t", "behavior": "cni-error"});
    let out = add("0.4.0")
        .stdin(stdin.to_string())
        .run(&ReferencePrinting, &PluginInfo::all());
    assert_eq!(out.exit_code, 1);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\n    \"code\": 123,\n    \"msg\": \"custom failure\",\n    \"details\": \"more\"\n}"
    );
    let out = add("0.4.0").run(&ReferencePrinting, &PluginInfo::all());
    assert_eq!(out.exit_code, 0);
    assert_eq!(
        out.json(),
        json!({"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "10.1.0.5/16", "gateway": "10.1.0.1"}], "dns": {}})
    );
    assert!(!out.stdout.ends_with(b"\n"));
    // The default keeps the SDK's choices.
    assert!(run(&add("0.4.0")).json().get("dns").is_none());
}

/// A plugin that says CHECK is not supported, or that forgot its `check`.
struct Declares<const SUPPORT: u8>;

impl<const SUPPORT: u8> Plugin for Declares<SUPPORT> {
    type Config = NetConf;
    const CHECK: CheckSupport = match SUPPORT {
        0 => CheckSupport::Unsupported,
        _ => CheckSupport::Full,
    };
    fn add(&self, _: &Request<Self::Config>) -> Result<Reply, BoxError> {
        Ok(Result100::new(SpecVersion::V1_1_0).into())
    }
    fn del(&self, _: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }
}

#[test]
fn a_plugin_declaring_check_unsupported_answers_check_with_code_4_asking_for_disable_check() {
    let check = TestRequest::check().stdin(conf("1.0.0"));
    let out = check.run(&Declares::<0>, &PluginInfo::all());
    assert_eq!(out.exit_code, 1);
    let err = out.error().unwrap();
    assert_eq!(err.msg, CheckSupport::unsupported_error().msg);
    assert_eq!(err.code, Code::INVALID_ENVIRONMENT_VARIABLES);
    assert!(err.msg.contains("CNI_COMMAND=CHECK"), "{err:?}");
    assert!(err.details.contains("disableCheck"), "{err:?}");
    // The version checks still come first, as for any CHECK.
    let old = TestRequest::check().stdin(conf("0.3.1"));
    let err = old.run(&Declares::<0>, &PluginInfo::all()).error().unwrap();
    assert_eq!(err.code, Code::INCOMPATIBLE_CNI_VERSION);
    // The other commands are served as usual.
    let added = add("1.0.0").run(&Declares::<0>, &PluginInfo::all());
    assert_eq!(added.exit_code, 0);
}

#[test]
fn a_plugin_claiming_check_support_without_a_check_fails_check_instead_of_passing_it() {
    let check = TestRequest::check().stdin(conf("1.0.0"));
    let err = check
        .run(&Declares::<1>, &PluginInfo::all())
        .error()
        .unwrap();
    assert_eq!(err.code, Code::INTERNAL);
    assert!(err.msg.contains("implements no check"), "{err:?}");
}
