//! What every input must get: one well-formed answer, never a panic.
//!
//! Shared by the fuzz targets in `fuzz/` (each is one call to a
//! `fuzz_*` function here) and by `tests/tests/fuzz_corpus_replay.rs`,
//! which replays every corpus file through the same functions, so the
//! invariants are written once.
//!
//! The invariants of a plugin's answer ([`check_answer`] for a process,
//! [`check_stdout`] in-process):
//! - no panic: for a process, nothing on stderr says `panicked at`;
//!   in-process, where the SDK turns a panic into an error, any panic
//!   counts (libFuzzer aborts on one, and [`run_target_catching`] notices
//!   one through a panic hook). In-process stderr is not searched: it only
//!   holds what the plugin wrote, which may echo the input;
//! - exit status 0: stdout is empty (commands that print nothing) or exactly
//!   one JSON document;
//! - any other status: stdout is exactly one CNI error JSON whose code is a
//!   well-known one (1-8, 11, 50, 51, 999) or a plugin's own (>= 100).
//!
//! Each `fuzz_*` function decodes one fuzz input, runs it, and panics with
//! a message naming the violated invariant (libFuzzer reports the panic as
//! a crash; the replay test reports it as a failure).
//!
//! The input formats (what the seed corpora from [`seeds`] look like):
//! - `dispatch`: `KEY=VALUE` environment entries each ended by a NUL byte,
//!   an empty entry, then stdin ([`encode_invocation`]);
//! - `result_convert`: a version, a newline, then a result's JSON;
//! - `config_parse`: a configuration's (or configuration list's) JSON;
//! - `cni_args`: a `CNI_ARGS` value;
//! - `noop_debug`: the command, NUL, the debug file, NUL, the command log,
//!   NUL, then stdin ([`encode_noop_debug`]);
//! - `nft_netlink`, `dbus_reply`, `iptables_save`, `dhcp_message`: the
//!   bytes a peer sent (a netlink datagram, a D-Bus message,
//!   `iptables-save` output, a DHCP message); their invariants live in a
//!   module each ([`nft`], [`dbus`], [`iptables_save`], [`dhcp`]).
//!
//! [`mutate`] runs the targets of the parsers of untrusted bytes for a
//! bounded time on stable Rust (`tests/tests/fuzz_mutations.rs`).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Once;

use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request, TestRequest};
use cni_types::{
    CniArgs, CniArgsError, CniResult, Extra, Interface, IpConfig, NetConf, NetConfList, Result100,
    SpecVersion, IGNORE_UNKNOWN,
};
use cni_version::PluginInfo;
use serde_json::Value;

pub mod dbus;
pub mod dhcp;
pub mod etcd;
pub mod gob;
pub mod iptables_save;
pub mod mutate;
pub mod nft;

/// The fuzz targets, by name (also the corpus directory names).
pub const TARGETS: [&str; 11] = [
    "dispatch",
    "result_convert",
    "config_parse",
    "cni_args",
    "noop_debug",
    nft::TARGET,
    dbus::TARGET,
    iptables_save::TARGET,
    dhcp::TARGET,
    gob::TARGET,
    etcd::TARGET,
];

/// Runs one input through the named target's checks (see the `fuzz_*`
/// functions). Panics on a violation, or for an unknown target.
pub fn run_target(target: &str, data: &[u8]) {
    match target {
        "dispatch" => fuzz_dispatch(data),
        "result_convert" => fuzz_result_convert(data),
        "config_parse" => fuzz_config_parse(data),
        "cni_args" => fuzz_cni_args(data),
        "noop_debug" => fuzz_noop_debug(data),
        nft::TARGET => nft::fuzz(data),
        dbus::TARGET => dbus::fuzz(data),
        iptables_save::TARGET => iptables_save::fuzz(data),
        dhcp::TARGET => dhcp::fuzz(data),
        gob::TARGET => gob::fuzz(data),
        etcd::TARGET => etcd::fuzz(data),
        other => panic!("unknown fuzz target {other:?}"),
    }
}

thread_local! {
    /// A panic happened on this thread since the current run started.
    static PANICKED: Cell<bool> = const { Cell::new(false) };
    /// A run of [`run_target_catching`] is in progress on this thread.
    static IN_RUN: Cell<bool> = const { Cell::new(false) };
}

/// Runs one input like [`run_target`] and returns the violation, if any,
/// as text: a failed check, or any panic on this thread during the run,
/// even one the SDK caught and turned into an error. Panics are noticed by
/// a panic hook installed once, which keeps their messages off stderr
/// during a run and defers to the previous hook otherwise.
pub fn run_target_catching(target: &str, data: &[u8]) -> Result<(), String> {
    catching_panics(|| run_target(target, data)).map_err(|e| format!("{target}: {e}"))
}

/// Runs `f` and returns the message of any panic on this thread during
/// it, even one caught inside (see [`run_target_catching`]).
pub fn catching_panics(f: impl FnOnce()) -> Result<(), String> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.with(|p| p.set(true));
            if !IN_RUN.with(Cell::get) {
                previous(info);
            }
        }));
    });
    PANICKED.with(|p| p.set(false));
    IN_RUN.with(|r| r.set(true));
    let outcome = catch_unwind(AssertUnwindSafe(f));
    IN_RUN.with(|r| r.set(false));
    match outcome {
        Err(payload) => Err(payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "panic with a non-string payload".to_owned())),
        Ok(()) if PANICKED.with(Cell::get) => {
            Err("a panic was caught during the run (the SDK reported it as an error)".into())
        }
        Ok(()) => Ok(()),
    }
}

// ---------------------------------------------------------------------------
// The answer of one invocation.
// ---------------------------------------------------------------------------

/// Whether `code` may appear in a CNI error: a well-known code (1-8, 11,
/// 50, 51, 999) or a plugin-specific one (100 and above).
pub fn is_allowed_code(code: u64) -> bool {
    matches!(code, 1..=8 | 11 | 50 | 51 | 999) || code >= 100
}

/// What stdout held, once the answer is known to be well formed.
#[derive(Debug, Clone, PartialEq)]
pub enum Printed {
    /// Success with nothing on stdout.
    Nothing,
    /// Success with one JSON document.
    Document(Value),
    /// Failure with one CNI error.
    Error(cni_types::Error),
}

/// Whether `haystack` contains `needle`.
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// Exactly one JSON document (whitespace around it allowed).
pub fn one_json_document(bytes: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "not exactly one JSON document ({e}): {:?}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(400)])
        )
    })
}

/// A CNI error JSON with an allowed code.
pub fn check_error_json(doc: &Value) -> Result<cni_types::Error, String> {
    let code = doc
        .get("code")
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("error JSON without a numeric code: {doc}"))?;
    if !is_allowed_code(code) {
        return Err(format!(
            "error code {code} is neither well-known nor >= 100: {doc}"
        ));
    }
    if !doc.get("msg").is_some_and(Value::is_string) {
        return Err(format!("error JSON without a string msg: {doc}"));
    }
    serde_json::from_value(doc.clone()).map_err(|e| format!("not a CNI error ({e}): {doc}"))
}

/// The invariants of a plugin process's answer (see the module docs): no
/// panic message on stderr, and [`check_stdout`].
pub fn check_answer(exit_code: i32, stdout: &[u8], stderr: &[u8]) -> Result<Printed, String> {
    if contains(stderr, b"panicked at") {
        return Err(format!(
            "panic message on stderr: {}",
            String::from_utf8_lossy(stderr)
        ));
    }
    check_stdout(exit_code, stdout)
}

/// The invariants of stdout and the exit status (see the module docs):
/// nothing or one JSON document on success, one CNI error with an allowed
/// code otherwise.
pub fn check_stdout(exit_code: i32, stdout: &[u8]) -> Result<Printed, String> {
    if exit_code == 0 {
        if stdout.is_empty() {
            return Ok(Printed::Nothing);
        }
        return one_json_document(stdout).map(Printed::Document);
    }
    let doc = one_json_document(stdout)
        .map_err(|e| format!("exit status {exit_code} without one CNI error on stdout: {e}"))?;
    check_error_json(&doc).map(Printed::Error)
}

/// A result printed in `version`: one JSON document naming that version,
/// that parses back in it.
pub fn check_result_json(version: &SpecVersion, bytes: &[u8]) -> Result<CniResult, String> {
    let doc = one_json_document(bytes)?;
    let named = doc.get("cniVersion").and_then(Value::as_str);
    if named != Some(version.to_string().as_str()) {
        return Err(format!("result printed in {version} names {named:?}"));
    }
    let back = CniResult::parse(&version.to_string(), bytes).map_err(|e| {
        format!(
            "result printed in {version} does not parse back ({e}): {}",
            String::from_utf8_lossy(bytes)
        )
    })?;
    if back.version() != version {
        return Err(format!(
            "result printed in {version} parses back as {}",
            back.version()
        ));
    }
    Ok(back)
}

fn fail(target: &str, data: &[u8], why: impl std::fmt::Display) -> ! {
    panic!(
        "{target}: invariant violated: {why}\ninput ({} bytes): {:?}",
        data.len(),
        String::from_utf8_lossy(&data[..data.len().min(2000)])
    )
}

// ---------------------------------------------------------------------------
// dispatch: an arbitrary environment and stdin through the in-process
// harness, for two plugins.
// ---------------------------------------------------------------------------

/// Splits a `dispatch` input into environment and stdin: `KEY=VALUE`
/// entries each ended by NUL, then an empty entry (or the end of the
/// input), then stdin. A repeated key: the last one wins.
pub fn decode_invocation(data: &[u8]) -> (BTreeMap<String, OsString>, Vec<u8>) {
    let mut env = BTreeMap::new();
    let mut rest = data;
    loop {
        let Some(nul) = rest.iter().position(|b| *b == 0) else {
            // No terminator: what is left is stdin.
            return (env, rest.to_vec());
        };
        let entry = &rest[..nul];
        rest = &rest[nul + 1..];
        if entry.is_empty() {
            return (env, rest.to_vec());
        }
        let (key, value) = match entry.iter().position(|b| *b == b'=') {
            Some(eq) => (&entry[..eq], &entry[eq + 1..]),
            None => (entry, &b""[..]),
        };
        env.insert(
            String::from_utf8_lossy(key).into_owned(),
            OsString::from_vec(value.to_vec()),
        );
    }
}

/// The inverse of [`decode_invocation`].
pub fn encode_invocation(env: &[(&str, &[u8])], stdin: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in env {
        out.extend_from_slice(k.as_bytes());
        out.push(b'=');
        out.extend_from_slice(v);
        out.push(0);
    }
    out.push(0);
    out.extend_from_slice(stdin);
    out
}

/// A plugin that uses every part of the SDK a plugin can reach: a typed
/// configuration with `prevResult`, `CNI_ARGS`, GC attachments, and a
/// result converted to the configuration's version.
#[derive(Debug, Default, Clone, Copy)]
pub struct Echo;

impl Plugin for Echo {
    type Config = NetConf<Extra>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let args = req.cni_args()?;
        if let Some(prev) = &req.config.prev_result {
            return Ok(prev.clone().into());
        }
        let mut result = Result100::new(SpecVersion::V1_1_0);
        result.interfaces.push(Interface {
            sandbox: req
                .netns
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
            ..Interface::named(req.ifname.clone())
        });
        let address = args.get("IP").unwrap_or("10.1.0.5/16");
        let address = address.parse().map_err(|e| {
            cni_types::Error::new(cni_types::Code::INVALID_ENVIRONMENT_VARIABLES, "bad IP")
                .with_details(format!("{address:?}: {e}"))
        })?;
        let mut ip = IpConfig::new(address, None);
        ip.interface = Some(0);
        result.ips.push(ip);
        Ok(result.into())
    }

    fn check(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        req.cni_args()?;
        if let Some(prev) = &req.config.prev_result {
            prev.to_current()?;
        }
        Ok(())
    }

    fn del(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }

    fn gc(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        req.valid_attachments()?;
        Ok(())
    }
}

/// Checks a dispatcher answer beyond [`check_stdout`]: exit status 0 or 1,
/// errors name a version, VERSION prints the plugin's versions, ADD prints
/// a result that parses back in the version it names, other commands print
/// nothing.
fn check_dispatch_answer(
    env: &BTreeMap<String, OsString>,
    versions: &PluginInfo,
    out: &cni_skel::Outcome,
) -> Result<(), String> {
    let printed = check_stdout(out.exit_code, &out.stdout)?;
    let command = env
        .get("CNI_COMMAND")
        .map(|c| c.as_encoded_bytes().to_vec());
    match printed {
        Printed::Error(err) => {
            if out.exit_code != 1 {
                return Err(format!("error with exit status {}", out.exit_code));
            }
            if err.cni_version.is_none() {
                return Err(format!("error without cniVersion: {err:?}"));
            }
        }
        Printed::Nothing => {
            if matches!(command.as_deref(), Some(b"ADD" | b"VERSION")) {
                return Err("ADD/VERSION succeeded with nothing on stdout".into());
            }
        }
        Printed::Document(doc) => match command.as_deref() {
            Some(b"VERSION") => {
                let supported: Vec<&str> = doc
                    .get("supportedVersions")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let want: Vec<&str> = versions.supported().iter().map(String::as_str).collect();
                if supported != want {
                    return Err(format!("VERSION answer {doc} lists other versions"));
                }
                if !doc.get("cniVersion").is_some_and(Value::is_string) {
                    return Err(format!("VERSION answer {doc} without cniVersion"));
                }
            }
            Some(b"ADD") => {
                let version = doc
                    .get("cniVersion")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("ADD result without cniVersion: {doc}"))?;
                let version = SpecVersion::parse(version)
                    .map_err(|e| format!("ADD result in an unknown version: {e}"))?;
                check_result_json(&version, &out.stdout)?;
            }
            _ => return Err(format!("{command:?} printed {doc}")),
        },
    }
    Ok(())
}

/// The `dispatch` target: the environment and stdin of the input through
/// [`cni_skel::dispatch`] (via [`TestRequest`]) for [`Echo`] (with the
/// noop's version list, which has an invalid entry, and no about string)
/// and for the `dns-mac` sample (every version, an about string).
pub fn fuzz_dispatch(data: &[u8]) {
    let (env, stdin) = decode_invocation(data);
    let mut req = TestRequest::new("").stdin(stdin.clone());
    for (k, v) in &env {
        req = req.env(k, v.clone());
    }
    let noop_versions = PluginInfo::new(plugins_sample::noop::DEFAULT_VERSIONS);
    let out = req.run(&Echo, &noop_versions);
    if let Err(e) = check_dispatch_answer(&env, &noop_versions, &out) {
        fail(
            "dispatch (echo)",
            data,
            format_args!("{e}\noutcome: {out:?}"),
        );
    }
    let all = PluginInfo::all();
    let out = req
        .about(plugins_sample::dns_mac::ABOUT)
        .run(&plugins_sample::dns_mac::DnsMac, &all);
    if let Err(e) = check_dispatch_answer(&env, &all, &out) {
        fail(
            "dispatch (dns-mac)",
            data,
            format_args!("{e}\noutcome: {out:?}"),
        );
    }
}

// ---------------------------------------------------------------------------
// result_convert: parse in every version, convert to every version.
// ---------------------------------------------------------------------------

/// Splits a `result_convert` input at its first newline: the version it is
/// read in, and the result's JSON.
pub fn decode_versioned(data: &[u8]) -> (String, &[u8]) {
    match data.iter().position(|b| *b == b'\n') {
        Some(nl) => (
            String::from_utf8_lossy(&data[..nl]).into_owned(),
            &data[nl + 1..],
        ),
        None => (String::new(), data),
    }
}

/// Reads `json` in `version` and checks it and its conversion to every
/// version; `Ok(None)` when it does not parse (which is allowed).
fn check_result_in(version: &str, json: &[u8]) -> Result<Option<CniResult>, String> {
    let Ok(result) = CniResult::parse(version, json) else {
        return Ok(None);
    };
    let wanted = SpecVersion::parse(version)
        .map_err(|e| format!("parse accepted version {version:?}: {e}"))?;
    if *result.version() != wanted {
        return Err(format!(
            "read in {version}, the result is in {}",
            result.version()
        ));
    }
    // From a parsed JSON value (as a prevResult is read): the same result.
    if let Ok(value) = serde_json::from_slice::<Value>(json) {
        if let Ok(same) = CniResult::from_value(version, value) {
            if same != result {
                return Err(format!(
                    "from_value and parse disagree in {version}: {same:?} vs {result:?}"
                ));
            }
        }
    }
    // Printed and read back: the same result.
    let back = check_result_json(&wanted, &result.to_json())
        .map_err(|e| format!("as read in {version}: {e}"))?;
    if back != result {
        return Err(format!(
            "printing changes the result in {version}: {result:?} became {back:?}"
        ));
    }
    for target in SpecVersion::ALL {
        let Ok(converted) = result.convert_to(&target) else {
            continue;
        };
        if *converted.version() != target {
            return Err(format!(
                "{version} -> {target}: the result is in {}",
                converted.version()
            ));
        }
        if target == wanted && converted != result {
            return Err(format!("{version} -> {target} changed the result"));
        }
        let printed = converted.to_json();
        let back = check_result_json(&target, &printed)
            .map_err(|e| format!("{version} -> {target}: {e}"))?;
        if back != converted {
            return Err(format!(
                "{version} -> {target}: the printed result reads back different: {}",
                String::from_utf8_lossy(&printed)
            ));
        }
    }
    Ok(Some(result))
}

/// The `result_convert` target: the result is read in the input's version
/// and in each of the seven; whatever reads is printed and read back
/// unchanged, and converted to each of the seven versions, each successful
/// conversion printing a result that reads back, unchanged, in its target
/// version.
pub fn fuzz_result_convert(data: &[u8]) {
    let (version, json) = decode_versioned(data);
    let mut versions = vec![version];
    versions.extend(SpecVersion::ALL.iter().map(ToString::to_string));
    for v in &versions {
        if let Err(e) = check_result_in(v, json) {
            fail("result_convert", data, e);
        }
    }
}

// ---------------------------------------------------------------------------
// config_parse: configurations (with prevResult) and configuration lists.
// ---------------------------------------------------------------------------

/// Typed plugin fields, as a plugin would declare them.
#[derive(Debug, PartialEq, serde::Deserialize, serde::Serialize)]
struct Typed {
    #[serde(default)]
    mtu: Option<u32>,
    #[serde(rename = "ipMasq", default)]
    ip_masq: Option<bool>,
    #[serde(default)]
    bridge: Option<String>,
    #[serde(default)]
    sysctl: Option<BTreeMap<String, String>>,
    #[serde(flatten)]
    extra: Extra,
}

/// `from_json` reads straight from the bytes when it can: it must give
/// exactly what reading through a JSON value gives (the same configuration,
/// or the same error).
fn same_as_through_a_value<T>(data: &[u8]) -> Result<(), String>
where
    T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let direct = NetConf::<T>::from_json(data).map_err(|e| e.to_string());
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return match direct {
            Ok(conf) => Err(format!("not JSON, yet read as {conf:?}")),
            Err(_) => Ok(()),
        };
    };
    let through = NetConf::<T>::from_value(value).map_err(|e| e.to_string());
    if direct != through {
        return Err(format!(
            "read from the bytes: {direct:?}\nthrough a JSON value: {through:?}"
        ));
    }
    Ok(())
}

/// The `config_parse` target: read from the bytes as through a JSON value;
/// a configuration that parses prints and parses back equal (its `prevResult` in the configuration's version,
/// readable there), untyped and with typed plugin fields; a configuration
/// list likewise.
pub fn fuzz_config_parse(data: &[u8]) {
    if let Err(e) = check_config(data) {
        fail("config_parse", data, e);
    }
}

fn check_config(data: &[u8]) -> Result<(), String> {
    same_as_through_a_value::<Extra>(data)?;
    same_as_through_a_value::<Typed>(data)?;
    if let Ok(conf) = NetConf::<Extra>::from_json(data) {
        let printed = serde_json::to_vec(&conf).map_err(|e| format!("cannot print: {e}"))?;
        let back = NetConf::<Extra>::from_json(&printed)
            .map_err(|e| format!("printed configuration does not parse back ({e})"))?;
        if back != conf {
            return Err(format!(
                "configuration changes when printed: {}",
                String::from_utf8_lossy(&printed)
            ));
        }
        if let Some(prev) = &conf.prev_result {
            let version = SpecVersion::parse(conf.version())
                .map_err(|e| format!("prevResult read for version {e}"))?;
            if *prev.version() != version {
                return Err(format!(
                    "prevResult in {} for a {} configuration",
                    prev.version(),
                    conf.version()
                ));
            }
            check_result_json(&version, &prev.to_json()).map_err(|e| format!("prevResult: {e}"))?;
        }
    }
    if let Ok(conf) = NetConf::<Typed>::from_json(data) {
        let printed = serde_json::to_vec(&conf).map_err(|e| format!("cannot print: {e}"))?;
        let back = NetConf::<Typed>::from_json(&printed)
            .map_err(|e| format!("printed typed configuration does not parse back ({e})"))?;
        if back != conf {
            return Err(format!(
                "typed configuration changes when printed: {}",
                String::from_utf8_lossy(&printed)
            ));
        }
    }
    if let Ok(list) = serde_json::from_slice::<NetConfList>(data) {
        let printed = serde_json::to_vec(&list).map_err(|e| format!("cannot print: {e}"))?;
        let back = serde_json::from_slice::<NetConfList>(&printed)
            .map_err(|e| format!("printed list does not parse back ({e})"))?;
        if back != list {
            return Err(format!(
                "configuration list changes when printed: {}",
                String::from_utf8_lossy(&printed)
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// cni_args: CNI_ARGS parsing and typed reading.
// ---------------------------------------------------------------------------

/// Typed arguments, as a plugin would declare them.
#[derive(Debug, serde::Deserialize)]
#[allow(non_snake_case, dead_code)]
struct TypedArgs {
    IP: Option<std::net::IpAddr>,
    MAC: Option<String>,
    K8S_POD_NAME: Option<String>,
    Verbose: Option<bool>,
    Count: Option<u16>,
    Offset: Option<i64>,
    Ratio: Option<f64>,
    Mode: Option<Mode>,
    Net: Option<cni_types::IpNetwork>,
}

#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)]
enum Mode {
    #[serde(rename = "bridge")]
    Bridge,
    #[serde(rename = "l2")]
    L2,
}

/// The spec's format, read naively: `;`-separated pairs with exactly one
/// `=` each; an empty string has none.
fn model_args(s: &str) -> Option<Vec<(String, String)>> {
    if s.is_empty() {
        return Some(Vec::new());
    }
    s.split(';')
        .map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (!v.contains('=')).then(|| (k.to_owned(), v.to_owned()))
        })
        .collect()
}

/// The `cni_args` target: parsing agrees with the naive model (same pairs
/// in order, the last repeated key wins, invalid exactly when the model
/// says so); reading into a map never fails except on a bad
/// `IgnoreUnknown` and holds the last value of each key; reading into a
/// typed struct only fails with an error naming a pair that is there.
pub fn fuzz_cni_args(data: &[u8]) {
    if let Err(e) = check_cni_args(data) {
        fail("cni_args", data, e);
    }
}

/// The checks of [`fuzz_cni_args`], returning the violation.
pub fn check_cni_args(data: &[u8]) -> Result<(), String> {
    let s = String::from_utf8_lossy(data);
    let s = s.as_ref();
    let parsed = CniArgs::parse(s);
    let model = model_args(s);
    let args = match (parsed, model) {
        (Ok(args), Some(model)) => {
            let pairs: Vec<(String, String)> = args
                .iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            if pairs != model {
                return Err(format!("pairs {pairs:?}, expected {model:?}"));
            }
            for (k, _) in &model {
                let last = model.iter().rev().find(|(key, _)| key == k).map(|p| &p.1);
                if args.get(k) != last.map(String::as_str) {
                    return Err(format!("get({k:?}) is not the last value"));
                }
            }
            args
        }
        (Err(CniArgsError::InvalidPair(pair)), None) => {
            if !s.split(';').any(|p| p == pair) {
                return Err(format!("InvalidPair({pair:?}) is not a pair of the input"));
            }
            return Ok(());
        }
        (parsed, model) => return Err(format!("parse gave {parsed:?}, the model {model:?}")),
    };
    let ignore = args.get(IGNORE_UNKNOWN);
    let ignore_ok = ignore.is_none_or(|v| {
        matches!(
            v.to_ascii_lowercase().as_str(),
            "1" | "true" | "0" | "false"
        )
    });
    match args.deserialize::<BTreeMap<String, String>>() {
        Ok(map) => {
            if !ignore_ok {
                return Err(format!("IgnoreUnknown={ignore:?} accepted"));
            }
            let mut expected = BTreeMap::new();
            for (k, v) in args.iter().filter(|(k, _)| *k != IGNORE_UNKNOWN) {
                expected.insert(k.to_owned(), v.to_owned());
            }
            if map != expected {
                return Err(format!("map {map:?}, expected {expected:?}"));
            }
        }
        Err(e) if !ignore_ok && matches!(e, CniArgsError::BadValue { .. }) => {}
        Err(e) => return Err(format!("reading into a map failed: {e}")),
    }
    match args.deserialize::<TypedArgs>() {
        Ok(_) => {}
        Err(CniArgsError::BadValue { pair, .. }) => {
            if !args.iter().any(|(k, v)| format!("{k}={v}") == pair) {
                return Err(format!("BadValue names {pair:?}, not a pair of the input"));
            }
        }
        Err(CniArgsError::Unknown(pairs)) => {
            if pairs.is_empty() {
                return Err("Unknown with no pair".into());
            }
            for pair in &pairs {
                if !args.iter().any(|(k, v)| format!("{k}={v}") == *pair) {
                    return Err(format!("Unknown names {pair:?}, not a pair of the input"));
                }
            }
        }
        Err(e) => return Err(format!("typed read failed with {e:?}")),
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// noop_debug: the noop test double and its debug file.
// ---------------------------------------------------------------------------

/// The parts of a `noop_debug` input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoopDebugInput {
    /// `CNI_COMMAND`.
    pub command: Vec<u8>,
    /// The debug file's contents before the call.
    pub debug: Vec<u8>,
    /// The command log's contents before the call (it always exists; the
    /// configuration's `commandLog` is pointed at it).
    pub log: Vec<u8>,
    /// stdin.
    pub stdin: Vec<u8>,
}

/// Splits a `noop_debug` input: command, debug file, command log, each
/// ended by NUL, then stdin (missing parts are empty).
pub fn decode_noop_debug(data: &[u8]) -> NoopDebugInput {
    let mut parts = data.splitn(4, |b| *b == 0);
    let mut next = || parts.next().unwrap_or_default().to_vec();
    NoopDebugInput {
        command: next(),
        debug: next(),
        log: next(),
        stdin: next(),
    }
}

/// The inverse of [`decode_noop_debug`] (for parts without NUL bytes).
pub fn encode_noop_debug(command: &str, debug: &[u8], log: &[u8], stdin: &[u8]) -> Vec<u8> {
    [command.as_bytes(), debug, log, stdin].join(&0u8)
}

/// Whether `bytes` is a complete debug file the noop wrote for `command`.
fn is_written_debug_file(bytes: &[u8], command: &str) -> bool {
    serde_json::from_slice::<Value>(bytes).is_ok_and(|v| {
        v.get("Command").and_then(Value::as_str) == Some(command)
            && v.get("CmdArgs").is_some_and(Value::is_object)
    })
}

/// The `noop_debug` target: the noop (`noop::main_with`, the whole binary
/// but the process) run on the input's stdin with `CNI_ARGS=DEBUG=<a debug
/// file holding the input's bytes>` in a fresh temporary directory; a
/// `commandLog` in the configuration is pointed at a file there (so no
/// input writes outside it).
///
/// The noop repeats what its debug file asks for, so besides
/// [`check_stdout`] an answer is also well formed when it is exactly that:
/// `ReportResult` verbatim with `ExitWithCode`, or the error the file asks
/// for with its code, or a test setup error (exit status 2, nothing on
/// stdout, the reason on stderr) where the reference noop panics. Files are
/// never left half-written: the debug file and the command log are after
/// the call either as they were or complete.
pub fn fuzz_noop_debug(data: &[u8]) {
    let input = decode_noop_debug(data);
    if let Err(e) = check_noop_debug(&input) {
        fail("noop_debug", data, e);
    }
}

fn check_noop_debug(input: &NoopDebugInput) -> Result<(), String> {
    use plugins_sample::noop;

    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let debug_path = dir.path().join("debug.json");
    let log_path = dir.path().join("log.json");
    fs::write(&debug_path, &input.debug).map_err(|e| e.to_string())?;
    fs::write(&log_path, &input.log).map_err(|e| e.to_string())?;
    let stdin = confine_command_log(&input.stdin, &log_path);

    let debug_arg = format!("DEBUG={}", debug_path.display());
    let env: BTreeMap<&str, OsString> = BTreeMap::from([
        ("CNI_COMMAND", OsString::from_vec(input.command.clone())),
        ("CNI_CONTAINERID", "c1".into()),
        ("CNI_NETNS", "/var/run/netns/cni-fuzz-does-not-exist".into()),
        ("CNI_IFNAME", "eth0".into()),
        ("CNI_PATH", "/opt/cni/bin".into()),
        ("CNI_ARGS", debug_arg.into()),
    ]);
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let exit_code = noop::main_with(&env, &stdin, &mut stdout, &mut stderr);
    let outcome = || {
        format!(
            "exit status {exit_code}, stdout {:?}, stderr {:?}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        )
    };

    let asked = noop::debug::Debug::parse(&input.debug).ok();
    let general = check_stdout(exit_code, &stdout);
    let well_formed = general.is_ok()
        || is_setup_error(exit_code, &stdout, &stderr)
        || asked
            .as_ref()
            .is_some_and(|d| answers_as_asked(d, exit_code, &stdout));
    if !well_formed {
        return Err(format!(
            "{}; {}",
            general.err().unwrap_or_default(),
            outcome()
        ));
    }

    let command = String::from_utf8_lossy(&input.command);
    let debug_after = fs::read(&debug_path).map_err(|e| e.to_string())?;
    if debug_after != input.debug && !is_written_debug_file(&debug_after, &command) {
        return Err(format!(
            "debug file half-written: {:?}; {}",
            String::from_utf8_lossy(&debug_after),
            outcome()
        ));
    }
    let log_after = fs::read(&log_path).map_err(|e| e.to_string())?;
    if log_after != input.log {
        let complete = serde_json::from_slice::<Value>(&log_after).is_ok_and(|v| {
            v.as_array()
                .and_then(|a| a.last())
                .and_then(|e| e.get("Command"))
                .and_then(Value::as_str)
                == Some(&command)
        });
        if !complete {
            return Err(format!(
                "command log half-written: {:?}; {}",
                String::from_utf8_lossy(&log_after),
                outcome()
            ));
        }
    }
    let mut left: Vec<_> = fs::read_dir(dir.path())
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    left.sort();
    if left != ["debug.json", "log.json"] {
        return Err(format!("files left behind: {left:?}"));
    }
    Ok(())
}

/// The noop's stand-in for the reference's panics: exit status 2, nothing
/// on stdout, one reason on stderr.
fn is_setup_error(exit_code: i32, stdout: &[u8], stderr: &[u8]) -> bool {
    exit_code == plugins_sample::noop::SETUP_ERROR_STATUS
        && stdout.is_empty()
        && contains(stderr, b"test setup error")
}

/// Whether the noop answered exactly what its debug file asked for.
fn answers_as_asked(
    debug: &plugins_sample::noop::debug::Debug,
    exit_code: i32,
    stdout: &[u8],
) -> bool {
    if !debug.report_error.is_empty() {
        let want_code = if debug.report_error_code == 0 {
            999
        } else {
            debug.report_error_code
        };
        return exit_code == 1
            && serde_json::from_slice::<cni_types::Error>(stdout)
                .is_ok_and(|e| e.code.0 == want_code && e.msg == debug.report_error);
    }
    let want_status = if debug.exit_with_code > 0 {
        i32::try_from(debug.exit_with_code).unwrap_or(i32::MAX)
    } else {
        0
    };
    exit_code == want_status
        && (stdout == debug.report_result.as_bytes()
            || (matches!(debug.report_result.as_str(), "PASSTHROUGH" | "INJECT-DNS")
                && one_json_document(stdout).is_ok()))
}

/// stdin with a `commandLog` string pointed at `log` (anything else as is).
fn confine_command_log(stdin: &[u8], log: &Path) -> Vec<u8> {
    let lossy = String::from_utf8_lossy(stdin);
    let Ok(Value::Object(mut conf)) = serde_json::from_str::<Value>(&lossy) else {
        return stdin.to_vec();
    };
    match conf.get_mut("commandLog") {
        Some(v @ Value::String(_)) => {
            *v = Value::String(log.display().to_string());
            serde_json::to_vec(&conf).unwrap_or_else(|_| stdin.to_vec())
        }
        _ => stdin.to_vec(),
    }
}

// ---------------------------------------------------------------------------
// Seed corpora, from the spec examples and the conversion fixtures.
// ---------------------------------------------------------------------------

/// The spec examples (`cni-types/tests/fixtures/spec-examples/*.json`), by
/// file name.
fn spec_examples() -> Vec<(String, Vec<u8>)> {
    let dir = crate::workspace_root().join("cni-types/tests/fixtures/spec-examples");
    let mut out: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let name = p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let bytes = fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (name, bytes)
        })
        .collect();
    out.sort();
    out
}

/// The distinct inputs of `cni-types/tests/fixtures/conversions.json`:
/// (name, version, result JSON).
fn conversion_inputs() -> Vec<(String, String, Value)> {
    let path = crate::workspace_root().join("cni-types/tests/fixtures/conversions.json");
    let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cases: Vec<Value> = serde_json::from_slice(&bytes).expect("conversions.json");
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for case in cases {
        let from = case["from"].as_str().unwrap_or_default().to_owned();
        let input = case["input"].clone();
        if seen.insert((from.clone(), input.to_string())) {
            let name = case["name"].as_str().unwrap_or_default();
            let name = name.split(" -> ").next().unwrap_or(name).replace(' ', "-");
            out.push((name, from, input));
        }
    }
    out
}

/// Configurations to seed with: the spec's examples, and a 1.1.0
/// configuration carrying each conversion fixture as `prevResult`.
fn seed_configs() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = spec_examples()
        .into_iter()
        .filter(|(n, _)| n.contains("-config"))
        .collect();
    for (name, from, input) in conversion_inputs() {
        let to = if from.starts_with("0.1") || from.starts_with("0.2") {
            "0.4.0"
        } else {
            "1.1.0"
        };
        let conf = serde_json::json!({
            "cniVersion": to, "name": "net", "type": "noop", "prevResult": input,
        });
        out.push((format!("prev-{name}"), conf.to_string().into_bytes()));
    }
    out
}

/// The seed corpus of `target`: (file name, contents), generated from the
/// fixtures. Written to `fuzz/corpus/<target>` by the replay test when
/// `CNI_FUZZ_WRITE_SEEDS=1` (see `fuzz/README.md`), and always replayed.
pub fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    match target {
        "dispatch" => {
            let env: [(&str, &[u8]); 5] = [
                ("CNI_CONTAINERID", b"c1"),
                ("CNI_NETNS", b"/var/run/netns/cni-fuzz-does-not-exist"),
                ("CNI_IFNAME", b"eth0"),
                ("CNI_PATH", b"/opt/cni/bin"),
                ("CNI_ARGS", b"IgnoreUnknown=1;K8S_POD_NAME=web"),
            ];
            let configs = seed_configs();
            for (i, (name, conf)) in configs.iter().enumerate() {
                // Every command for the spec examples; ADD and CHECK for
                // the prevResult ones.
                let commands: &[&str] = if name.starts_with("prev-") {
                    &["ADD", "CHECK"]
                } else {
                    &["ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION"]
                };
                for command in commands {
                    let mut e = vec![("CNI_COMMAND", command.as_bytes())];
                    e.extend(env);
                    out.push((
                        format!("seed-{i:02}-{command}-{name}"),
                        encode_invocation(&e, conf),
                    ));
                }
            }
            let conf: &[u8] = br#"{"cniVersion":"1.1.0","name":"net","type":"echo"}"#;
            out.push(("seed-no-command".into(), encode_invocation(&[], conf)));
            out.push((
                "seed-missing-env".into(),
                encode_invocation(&[("CNI_COMMAND", b"ADD")], conf),
            ));
            out.push((
                "seed-own-netns".into(),
                encode_invocation(
                    &[
                        ("CNI_COMMAND", b"ADD"),
                        ("CNI_CONTAINERID", b"c1"),
                        ("CNI_NETNS", b"/proc/self/ns/net"),
                        ("CNI_IFNAME", b"eth0"),
                    ],
                    conf,
                ),
            ));
        }
        "result_convert" => {
            for (name, from, input) in conversion_inputs() {
                let mut bytes = format!("{from}\n").into_bytes();
                bytes.extend(input.to_string().into_bytes());
                out.push((format!("seed-{from}-{name}"), bytes));
            }
            for (name, bytes) in spec_examples() {
                let version = match name.split_once("-result-") {
                    Some((_, v)) => v.to_owned(),
                    None if name == "SPEC-1.0.0-07-other" => "1.0.0".to_owned(),
                    None => continue,
                };
                let mut data = format!("{version}\n").into_bytes();
                data.extend(bytes);
                out.push((format!("seed-{name}"), data));
            }
        }
        "config_parse" => {
            for (name, bytes) in spec_examples() {
                if name.contains("-config") || name.contains("-conflist") {
                    out.push((format!("seed-{name}"), bytes));
                }
            }
            for (name, bytes) in seed_configs() {
                if name.starts_with("prev-") {
                    out.push((format!("seed-{name}"), bytes));
                }
            }
        }
        "cni_args" => {
            for (i, s) in [
                "",
                "FOO=BAR;ABC=123",
                "IgnoreUnknown=1;IP=10.0.0.5;K8S_POD_NAME=web;K8S_POD_NAMESPACE=default",
                "IP=2001:db8::5;MAC=c2:00:00:00:00:01;Verbose=TRUE;Count=7",
                "Offset=-3;Ratio=0.5;Mode=bridge;Net=10.1.0.5/16",
                "A=1;B=2;A=3",
                "IgnoreUnknown=true;A=",
                "IgnoreUnknown=yes",
                "A",
                "A=1;",
                "A=1=2",
                "A=1;;B=2",
                "DEBUG=/tmp/debug.json",
            ]
            .iter()
            .enumerate()
            {
                out.push((format!("seed-{i:02}"), s.as_bytes().to_vec()));
            }
        }
        "noop_debug" => {
            let debug_files: [(&str, &[u8]); 9] = [
                ("empty", b"{}"),
                ("passthrough", br#"{"ReportResult":"PASSTHROUGH"}"#),
                ("inject-dns", br#"{"ReportResult":"INJECT-DNS"}"#),
                (
                    "verbatim",
                    br#"{"ReportResult":"{\"cniVersion\":\"1.0.0\",\"ips\":[]}"}"#,
                ),
                ("error", br#"{"ReportError":"boom","ReportErrorCode":7}"#),
                ("error-999", br#"{"ReportError":"boom"}"#),
                (
                    "exit-code",
                    br#"{"ReportResult":"PASSTHROUGH","ExitWithCode":3,"ReportStderr":"hi"}"#,
                ),
                ("versions", br#"{"ReportVersionSupport":["0.4.0","1.0.0"]}"#),
                ("not-json", b"not json"),
            ];
            let configs: Vec<(String, Vec<u8>)> = seed_configs()
                .into_iter()
                .filter(|(n, _)| n.starts_with("prev-") || n.contains("-09-"))
                .take(6)
                .chain([(
                    "command-log".to_owned(),
                    br#"{"cniVersion":"1.0.0","name":"net","type":"noop","commandLog":"x"}"#
                        .to_vec(),
                )])
                .collect();
            for command in ["ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION"] {
                for (d, debug) in &debug_files {
                    for (c, conf) in &configs {
                        // Every debug file with the first configuration,
                        // every configuration with PASSTHROUGH.
                        if c != &configs[0].0 && *d != "passthrough" {
                            continue;
                        }
                        out.push((
                            format!("seed-{command}-{d}-{c}"),
                            encode_noop_debug(command, debug, b"", conf),
                        ));
                    }
                }
            }
        }
        nft::TARGET => out = nft::seeds(),
        dbus::TARGET => out = dbus::seeds(),
        iptables_save::TARGET => out = iptables_save::seeds(),
        dhcp::TARGET => out = dhcp::seeds(),
        gob::TARGET => out = gob::seeds(),
        etcd::TARGET => out = etcd::seeds(),
        other => panic!("unknown fuzz target {other:?}"),
    }
    out
}
