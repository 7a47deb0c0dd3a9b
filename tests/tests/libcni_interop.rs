//! End-to-end interoperability tests through the reference runtime library
//! (`libcni`, driven by the `cnidriver` Go program).
//!
//! Every scenario is *differential*: it runs once with the reference `noop`
//! test double (built from Debian's Go source) and once with ours (the
//! `noop` binary of `plugins-sample`), in the same sandbox layout so that
//! every path the plugins see is identical, and the two observations
//! (libcni's reports, plugin stderr libcni forwarded, the debug files the
//! plugins rewrote byte for byte, libcni's cache file, direct runs' exit
//! status, stdout byte for byte and stderr, ...) must be equal once ours has
//! been normalised for the documented differences between the two (see
//! "Documented differences" below: one function per difference, applied
//! only where it shows). The assertions in each test then pin down the
//! reference behaviour itself, so a change in the reference would be
//! noticed too.
//!
//! Sandbox layout (one temporary directory per test, wiped between the two
//! runs):
//!
//! ```text
//! <tmp>/bin/noop        -> the noop under test (symlink)
//! <tmp>/bin/host-local  -> /usr/lib/cni/host-local (symlink)
//! <tmp>/cache/          libcni cache dir
//! <tmp>/ipam/           host-local dataDir
//! <tmp>/*.json          debug files and conflists
//! ```

use std::cell::Cell;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tests::StdoutJson;
use tests::{
    base64_decode, plugin_bin_dir, read_json, redact_netplugin_stderr, reference_noop,
    reference_plugin_dir, run_plugin, write_json, Driver, RawOutput, FAKE_NETNS,
};

/// Every list version the reference noop and libcni share with a result type.
const VERSIONS: [&str; 4] = ["0.3.0", "0.3.1", "0.4.0", "1.0.0"];

/// The reference noop's default VERSION answer (note the deliberately
/// invalid `0.-42.0`).
const NOOP_DEFAULT_VERSIONS: [&str; 7] = [
    "0.-42.0", "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0",
];

/// Which `noop` implementation a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
    Reference,
    Ours,
}

impl Flavor {
    fn noop(self) -> PathBuf {
        match self {
            Flavor::Reference => reference_noop(),
            // A failing `cargo build -p plugins-sample` fails the test here.
            Flavor::Ours => plugin_bin_dir().join("noop"),
        }
    }
}

/// A scratch directory laid out as described in the module docs.
struct Sandbox {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    flavor: Cell<Flavor>,
    stderr: Arc<Mutex<String>>,
}

impl Sandbox {
    fn new() -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("cni-interop-")
            .tempdir()
            .expect("creating a temporary directory");
        let root = tmp.path().to_path_buf();
        Sandbox {
            _tmp: tmp,
            root,
            flavor: Cell::new(Flavor::Reference),
            stderr: Arc::default(),
        }
    }

    /// Empties the sandbox and installs `flavor`'s noop as `bin/noop`.
    fn reset(&self, flavor: Flavor) {
        for entry in fs::read_dir(&self.root).expect("listing sandbox") {
            let path = entry.expect("sandbox entry").path();
            if path.is_dir() && !path.is_symlink() {
                fs::remove_dir_all(&path).expect("wiping sandbox");
            } else {
                fs::remove_file(&path).expect("wiping sandbox");
            }
        }
        for dir in ["bin", "cache", "ipam"] {
            fs::create_dir_all(self.root.join(dir)).expect("creating sandbox dirs");
        }
        symlink(flavor.noop(), self.bin().join("noop")).expect("linking noop");
        symlink(
            reference_plugin_dir().join("host-local"),
            self.bin().join("host-local"),
        )
        .expect("linking host-local");
        self.flavor.set(flavor);
        self.take_stderr();
    }

    fn flavor(&self) -> Flavor {
        self.flavor.get()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn bin(&self) -> PathBuf {
        self.path("bin")
    }

    fn noop(&self) -> PathBuf {
        self.bin().join("noop")
    }

    fn path_str(&self, rel: &str) -> String {
        self.path(rel).to_str().expect("UTF-8 temp path").to_owned()
    }

    /// A driver for this sandbox; whatever it prints on stderr (plugin
    /// stderr forwarded by libcni) is collected in [`Sandbox::take_stderr`].
    fn driver(&self) -> Driver {
        Driver::new([self.bin()], self.path("cache")).with_stderr_log(self.stderr.clone())
    }

    /// Everything the drivers printed on stderr since the last call.
    fn take_stderr(&self) -> String {
        std::mem::take(&mut *self.stderr.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Writes `value` to `<tmp>/<name>` and returns the path.
    fn write(&self, name: &str, value: &Value) -> PathBuf {
        let p = self.path(name);
        write_json(&p, value);
        p
    }

    /// Applies `normalise` to `observation` when the run uses our noop: the
    /// hook through which every documented difference is normalised.
    fn ours(&self, observation: &mut Value, normalise: impl FnOnce(&mut Value)) {
        if self.flavor() == Flavor::Ours {
            normalise(observation);
        }
    }

    /// The noop debug file `<tmp>/<name>` as the plugin left it: parsed,
    /// with `CmdArgs.StdinData` also decoded into `CmdArgs.StdinJSON`, and
    /// byte for byte under `$raw` (key order and encoding count too).
    fn debug_as_written(&self, name: &str) -> Value {
        let path = self.path(name);
        let raw =
            fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let mut d = read_json(&path);
        d["$raw"] = Value::String(raw);
        if let Some(b64) = d["CmdArgs"]["StdinData"].as_str() {
            let bytes = base64_decode(b64);
            d["CmdArgs"]["StdinJSON"] = serde_json::from_slice(&bytes).unwrap_or_else(
                |e| json!({ "notJSON": String::from_utf8_lossy(&bytes), "error": e.to_string() }),
            );
        }
        d
    }

    /// [`Sandbox::debug_as_written`], with ours normalised for difference (3).
    fn debug(&self, name: &str) -> Value {
        let mut d = self.debug_as_written(name);
        self.ours(&mut d, d3_debug_file_newer_fields);
        d
    }

    /// libcni's cache file for (network, container, ifname), `null` if
    /// absent; `config` is also decoded into `configJSON`.
    fn cache_entry(&self, net: &str, container: &str, ifname: &str) -> Value {
        let p = self
            .path("cache/results")
            .join(format!("{net}-{container}-{ifname}"));
        if !p.exists() {
            return Value::Null;
        }
        let mut c = read_json(&p);
        if let Some(b64) = c["config"].as_str() {
            c["configJSON"] = serde_json::from_slice(&base64_decode(b64)).unwrap_or(Value::Null);
        }
        c
    }

    /// Sorted `name: content` of every file below `<tmp>/<rel>`.
    fn files(&self, rel: &str) -> Value {
        fn walk(dir: &Path, base: &Path, out: &mut serde_json::Map<String, Value>) {
            let Ok(entries) = fs::read_dir(dir) else {
                return;
            };
            for e in entries {
                let p = e.expect("dir entry").path();
                if p.is_dir() {
                    walk(&p, base, out);
                } else {
                    let key = p
                        .strip_prefix(base)
                        .expect("below base")
                        .to_string_lossy()
                        .into_owned();
                    let content = fs::read(&p).expect("reading file");
                    out.insert(
                        key,
                        Value::String(String::from_utf8_lossy(&content).into_owned()),
                    );
                }
            }
        }
        let mut out = serde_json::Map::new();
        walk(&self.path(rel), &self.path(rel), &mut out);
        Value::Object(out)
    }
}

// ---------------------------------------------------------------------------
// Documented differences between our noop and Debian's reference
// ---------------------------------------------------------------------------
//
// Our noop is a drop-in for the NEWEST upstream reference noop (spec 1.1.0),
// built on our SDK with its deliberate differences from the reference skel
// (`cni-skel` crate docs); Debian's reference is cni 1.1.2 (spec 1.0.0).
// Each function below handles one documented difference: it first checks
// that our observation shows exactly that difference (so any other
// deviation still fails), then rewrites it into what Debian's reference
// shows. They run only on our observation (`Sandbox::ours`), except the
// crash check of difference (5), which checks each flavour's own shape.
//
// The differences, numbered as throughout this file (the cni-skel crate
// docs number the skel's own ones differently: given in brackets):
// (1) our default supported versions end with 1.1.0 (newest noop);
// (2) VERSION's `cniVersion` is the requested one when supported, else the
//     newest supported; Debian's always says 1.0.0 [skel 2];
// (3) the debug file also has `ReportErrorCode` and `CmdArgs.NetnsOverride`
//     (newest noop);
// (4) none any more: our noop prints errors as the reference does
//     (`WireFormat::Reference`; the SDK's default adds `cniVersion`,
//     [skel 3]);
// (5) where the reference panics, ours exits 2 with one `test setup error:`
//     line on stderr;
// (6) CNI_PATH is optional for ADD/DEL/CHECK/STATUS [skel 4];
// (7) a CNI_NETNS that is the plugin's own namespace is refused before the
//     method runs [skel 1].
// (6) and (7) never show here (libcni always sends CNI_PATH; the scenarios
// use FAKE_NETNS, which does not exist), so they need no function; both
// are covered for our noop alone in `tests/noop_process.rs`.
//
// (T2) is a choice documented on `cni_types::WireFormat`, not in the list
// above; it shows only in direct runs (libcni re-encodes what it reads).

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
fn d1_default_versions_add_1_1_0(answer: &mut Value, raw: Option<&mut String>) {
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
fn d2_version_answer_in_requested_version(
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
fn d3_debug_file_newer_fields(debug: &mut Value) {
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
/// [`outcome_json`] value whose stdout is a pretty-printed CNI error.
fn d1_error_details_list_1_1_0(outcome: &mut Value) {
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
/// `outcome` is an [`outcome_json`] value whose stdout is a compact result.
fn t2_empty_dns_omitted(outcome: &mut Value) {
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
fn d5_crash_stderr(flavor: Flavor, stderr: &str) -> Value {
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
fn expect_crash_and_redact(sb: &Sandbox, report: &mut Value) {
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

/// The first place where two JSON values differ, as a JSON-pointer-ish path.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let sub = format!("{path}/{k}");
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => {
                        if let Some(d) = first_difference(p, q, &sub) {
                            return Some(d);
                        }
                    }
                    (p, q) => return Some(format!("{sub}: {p:?} vs {q:?}")),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &format!("{path}/{i}"))),
        _ if a == b => None,
        _ => Some(format!("{path}: {a} vs {b}")),
    }
}

/// Runs `scenario` against the reference noop and ours in identical
/// sandboxes; the observations must be equal once ours went through the
/// normalisations of the documented differences (see "Documented
/// differences" below; the scenario applies them where they arise, via
/// [`Sandbox::ours`]). Returns the reference observation for further
/// assertions.
fn differential(scenario: impl Fn(&Sandbox) -> Value) -> Value {
    let sb = Sandbox::new();
    sb.reset(Flavor::Reference);
    let observe = |sb: &Sandbox| {
        let mut obs = scenario(sb);
        // Plugin stderr that libcni forwarded (successful runs) is compared
        // too, whether or not the scenario looks at it.
        obs["$driverStderr"] = Value::String(sb.take_stderr());
        obs
    };
    let reference = observe(&sb);
    sb.reset(Flavor::Ours);
    let ours = observe(&sb);
    if let Some(diff) = first_difference(&ours, &reference, "") {
        panic!(
            "our noop differs from the reference at {diff}\n--- ours (normalised):\n{}\n--- reference:\n{}",
            serde_json::to_string_pretty(&ours).unwrap(),
            serde_json::to_string_pretty(&reference).unwrap()
        );
    }
    reference
}

/// RawOutput of a direct plugin run as comparable JSON: the exit status,
/// stdout parsed (or as text when it is not JSON), stdout byte for byte
/// (`stdoutRaw`) and stderr.
fn outcome_json(o: &RawOutput) -> Value {
    json!({
        "status": o.status(),
        "stdout": serde_json::from_slice::<Value>(&o.stdout).unwrap_or_else(|_| Value::String(o.stdout_str())),
        "stdoutRaw": o.stdout_str(),
        "stderr": o.stderr_str(),
    })
}

fn at_least_040(v: &str) -> bool {
    matches!(v, "0.4.0" | "1.0.0")
}

/// A full result literal in the given version, exactly as libcni marshals it
/// back (so `result == literal` can be asserted).
fn literal_result(v: &str) -> Value {
    let mut r = json!({
        "cniVersion": v,
        "interfaces": [{"name": "eth0", "mac": "00:11:22:33:44:55", "sandbox": FAKE_NETNS}],
        "ips": [
            {"interface": 0, "address": "10.1.2.3/24", "gateway": "10.1.2.1"},
            {"interface": 0, "address": "fd00::3/64"}
        ],
        "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.2.1"}],
        "dns": {"nameservers": ["8.8.8.8"], "domain": "example.com", "search": ["example.com"], "options": ["ndots:2"]}
    });
    if v != "1.0.0" {
        r["ips"][0]["version"] = json!("4");
        r["ips"][1]["version"] = json!("6");
    }
    r
}

/// Snapshot after one driver step: the report, the debug files and the cache.
fn snapshot(
    sb: &Sandbox,
    report: Value,
    debug_files: &[&str],
    net: &str,
    container: &str,
    ifname: &str,
) -> Value {
    let mut s = json!({ "report": report, "cache": sb.cache_entry(net, container, ifname) });
    for f in debug_files {
        s[*f] = sb.debug(f);
    }
    s
}

// ---------------------------------------------------------------------------
// [noop(ReportResult=literal), noop(PASSTHROUGH)], ADD / CHECK / DEL
// ---------------------------------------------------------------------------

fn chain_passthrough(v: &str) {
    let literal = literal_result(v);
    let obs = differential(|sb| {
        sb.write("first.json", &json!({"ReportResult": literal.to_string()}));
        sb.write("second.json", &json!({"ReportResult": "PASSTHROUGH"}));
        let list = sb.write(
            "chain.conflist",
            &json!({
                "cniVersion": v,
                "name": "chain",
                "plugins": [
                    {"type": "noop", "debugFile": sb.path_str("first.json")},
                    {"type": "noop", "debugFile": sb.path_str("second.json")}
                ]
            }),
        );
        let drv = sb.driver();
        let files = ["first.json", "second.json"];
        let add = snapshot(
            sb,
            drv.add(&list),
            &files,
            "chain",
            "cnidriver-container",
            "eth0",
        );
        let check = snapshot(
            sb,
            drv.check(&list),
            &files,
            "chain",
            "cnidriver-container",
            "eth0",
        );
        let mut del_report = drv.del(&list);
        if !at_least_040(v) {
            expect_crash_and_redact(sb, &mut del_report);
        }
        let del = snapshot(
            sb,
            del_report,
            &files,
            "chain",
            "cnidriver-container",
            "eth0",
        );
        json!({"add": add, "check": check, "del": del})
    });

    let stdin_first = |step: &str| obs[step]["first.json"]["CmdArgs"]["StdinJSON"].clone();
    let stdin_second = |step: &str| obs[step]["second.json"]["CmdArgs"]["StdinJSON"].clone();

    // ADD: the last plugin's result is returned and cached verbatim.
    let add = &obs["add"];
    assert_eq!(add["report"]["ok"], true, "{add}");
    assert_eq!(add["report"]["result"], literal);
    assert_eq!(add["report"]["cachedResult"], literal);
    assert_eq!(add["cache"]["kind"], "cniCacheV1");
    assert_eq!(add["cache"]["networkName"], "chain");
    assert_eq!(add["cache"]["containerId"], "cnidriver-container");
    assert_eq!(add["cache"]["ifName"], "eth0");
    assert_eq!(add["cache"]["result"], literal);
    assert_eq!(add["first.json"]["Command"], "ADD");
    assert_eq!(add["second.json"]["Command"], "ADD");
    let first_in = stdin_first("add");
    assert_eq!(first_in["cniVersion"], v);
    assert_eq!(first_in["name"], "chain");
    assert_eq!(first_in["type"], "noop");
    assert!(
        first_in.get("prevResult").is_none(),
        "first plugin got a prevResult: {first_in}"
    );
    assert_eq!(stdin_second("add")["prevResult"], literal);

    // CHECK: 0.4.0+ hands the cached result to every plugin; older lists are
    // refused by libcni itself (plain error, no plugin runs).
    let check = &obs["check"];
    if at_least_040(v) {
        assert_eq!(check["report"]["ok"], true, "{check}");
        assert_eq!(check["first.json"]["Command"], "CHECK");
        assert_eq!(check["second.json"]["Command"], "CHECK");
        assert_eq!(stdin_first("check")["prevResult"], literal);
        assert_eq!(stdin_second("check")["prevResult"], literal);
    } else {
        assert_eq!(check["report"]["ok"], false);
        assert_eq!(check["report"]["error"]["code"], -1);
        assert_eq!(
            check["report"]["error"]["msg"],
            format!("configuration version \"{v}\" does not support the CHECK command")
        );
        assert_eq!(check["first.json"]["Command"], "ADD");
        assert_eq!(check["second.json"]["Command"], "ADD");
    }

    // DEL runs the plugins in reverse order.
    let del = &obs["del"];
    if at_least_040(v) {
        assert_eq!(del["report"]["ok"], true, "{del}");
        assert_eq!(del["report"]["cachedResult"], Value::Null);
        assert_eq!(
            del["cache"],
            Value::Null,
            "cache entry must be removed by DEL"
        );
        assert_eq!(del["first.json"]["Command"], "DEL");
        assert_eq!(del["second.json"]["Command"], "DEL");
        assert_eq!(stdin_first("del")["prevResult"], literal);
        assert_eq!(stdin_second("del")["prevResult"], literal);
    } else {
        // Before 0.4.0 DEL carries no prevResult, and the reference noop's
        // PASSTHROUGH dereferences the missing prevResult: it crashes (exit 2,
        // Go panic on stderr, empty stdout) and libcni reports code 0
        // "netplugin failed: ...". libcni stops there: the first plugin never
        // sees DEL and the cache entry stays.
        assert_eq!(del["report"]["ok"], false);
        assert_eq!(del["report"]["error"]["code"], 0);
        assert_eq!(del["report"]["error"]["msg"], "netplugin failed: <stderr>");
        assert_eq!(
            del["report"]["error"]["text"],
            "plugin type=\"noop\" failed (delete): netplugin failed: <stderr>"
        );
        assert_eq!(del["second.json"]["Command"], "DEL");
        assert!(stdin_second("del").get("prevResult").is_none());
        assert_eq!(del["first.json"]["Command"], "ADD");
        assert_eq!(del["report"]["cachedResult"], literal);
        assert_eq!(del["cache"]["result"], literal);
    }
}

#[test]
fn chain_passthrough_0_3_0() {
    chain_passthrough("0.3.0");
}

#[test]
fn chain_passthrough_0_3_1() {
    chain_passthrough("0.3.1");
}

#[test]
fn chain_passthrough_0_4_0() {
    chain_passthrough("0.4.0");
}

#[test]
fn chain_passthrough_1_0_0() {
    chain_passthrough("1.0.0");
}

/// The same chain through the driver's one-shot ADD/CHECK/DEL, for every
/// version, with a non-default container id and interface name.
#[test]
fn chain_add_check_del_all_versions() {
    let obs = differential(|sb| {
        let mut out = serde_json::Map::new();
        for v in VERSIONS {
            sb.write(
                "first.json",
                &json!({"ReportResult": literal_result(v).to_string()}),
            );
            sb.write("second.json", &json!({"ReportResult": "PASSTHROUGH"}));
            let list = sb.write(
                "acd.conflist",
                &json!({
                    "cniVersion": v,
                    "name": "acd",
                    "plugins": [
                        {"type": "noop", "debugFile": sb.path_str("first.json")},
                        {"type": "noop", "debugFile": sb.path_str("second.json")}
                    ]
                }),
            );
            let container = format!("ctr-{}", v.replace('.', "-"));
            let mut report = sb
                .driver()
                .with_container_id(&container)
                .with_ifname("net0")
                .add_check_del(&list);
            if !at_least_040(v) {
                expect_crash_and_redact(sb, &mut report["del"]);
            }
            out.insert(v.to_owned(), report);
        }
        Value::Object(out)
    });

    for v in VERSIONS {
        let r = &obs[v];
        let literal = literal_result(v);
        assert_eq!(r["add"], json!({"ok": true, "result": literal}), "{v}");
        assert_eq!(r["cachedAfterAdd"], literal, "{v}");
        if at_least_040(v) {
            assert_eq!(r["ok"], true, "{v}: {r}");
            assert_eq!(r["check"], json!({"ok": true}), "{v}");
            assert_eq!(r["del"], json!({"ok": true}), "{v}");
            assert_eq!(r["cachedAfterDel"], Value::Null, "{v}");
        } else {
            assert_eq!(r["ok"], false, "{v}");
            assert_eq!(
                r["check"],
                json!({"ok": true, "skipped": "cniVersion < 0.4.0"}),
                "{v}"
            );
            assert_eq!(r["del"]["error"]["code"], 0, "{v}");
            assert_eq!(r["cachedAfterDel"], literal, "{v}");
        }
    }
}

// ---------------------------------------------------------------------------
// [host-local (as a plain plugin), noop(PASSTHROUGH)]
// ---------------------------------------------------------------------------

fn host_local_chain(v: &str) {
    let obs = differential(|sb| {
        sb.write("noop.json", &json!({"ReportResult": "PASSTHROUGH"}));
        // host-local reads its settings from the `ipam` key of its own config.
        let list = sb.write(
            "hl.conflist",
            &json!({
                "cniVersion": v,
                "name": "hlnet",
                "plugins": [
                    {"type": "host-local", "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": "10.77.0.0/24"}]],
                        "dataDir": sb.path_str("ipam")
                    }},
                    {"type": "noop", "debugFile": sb.path_str("noop.json")}
                ]
            }),
        );
        let drv = sb.driver();
        let files = ["noop.json"];
        let mut add = snapshot(
            sb,
            drv.add(&list),
            &files,
            "hlnet",
            "cnidriver-container",
            "eth0",
        );
        add["ipam"] = sb.files("ipam");
        let mut check = snapshot(
            sb,
            drv.check(&list),
            &files,
            "hlnet",
            "cnidriver-container",
            "eth0",
        );
        check["ipam"] = sb.files("ipam");
        let mut del_report = drv.del(&list);
        if !at_least_040(v) {
            expect_crash_and_redact(sb, &mut del_report);
        }
        let mut del = snapshot(
            sb,
            del_report,
            &files,
            "hlnet",
            "cnidriver-container",
            "eth0",
        );
        del["ipam"] = sb.files("ipam");
        json!({"add": add, "check": check, "del": del})
    });

    // host-local answers an IPAM-style result (no interfaces); libcni
    // accepts it and noop passes it through converted to the list version.
    let mut expected = json!({
        "cniVersion": v,
        "ips": [{"address": "10.77.0.2/24", "gateway": "10.77.0.1"}],
        "dns": {}
    });
    if v != "1.0.0" {
        expected["ips"][0]["version"] = json!("4");
    }
    let add = &obs["add"];
    assert_eq!(add["report"]["ok"], true, "{add}");
    assert_eq!(add["report"]["result"], expected);
    assert_eq!(add["report"]["cachedResult"], expected);
    assert_eq!(
        add["noop.json"]["CmdArgs"]["StdinJSON"]["prevResult"],
        expected
    );
    assert_eq!(
        add["ipam"]["hlnet/10.77.0.2"],
        "cnidriver-container\r\neth0"
    );
    assert_eq!(add["ipam"]["hlnet/last_reserved_ip.0"], "10.77.0.2");

    if at_least_040(v) {
        assert_eq!(obs["check"]["report"]["ok"], true, "{}", obs["check"]);
        assert_eq!(obs["check"]["noop.json"]["Command"], "CHECK");
        let del = &obs["del"];
        assert_eq!(del["report"]["ok"], true, "{del}");
        assert_eq!(del["cache"], Value::Null);
        assert!(
            del["ipam"].get("hlnet/10.77.0.2").is_none(),
            "address not released: {del}"
        );
    } else {
        assert_eq!(obs["check"]["report"]["ok"], false);
        // noop (last) crashes on DEL before host-local is reached.
        let del = &obs["del"];
        assert_eq!(del["report"]["ok"], false);
        assert_eq!(del["noop.json"]["Command"], "DEL");
        assert_eq!(
            del["ipam"]["hlnet/10.77.0.2"],
            "cnidriver-container\r\neth0"
        );
    }
}

#[test]
fn host_local_then_passthrough_0_3_1() {
    host_local_chain("0.3.1");
}

#[test]
fn host_local_then_passthrough_0_4_0() {
    host_local_chain("0.4.0");
}

#[test]
fn host_local_then_passthrough_1_0_0() {
    host_local_chain("1.0.0");
}

// ---------------------------------------------------------------------------
// VERSION
// ---------------------------------------------------------------------------

/// Runs `f` on an [`outcome_json`] value's parsed stdout and its raw bytes.
fn with_stdout(outcome: &mut Value, f: impl FnOnce(&mut Value, &mut String)) {
    let mut raw = outcome["stdoutRaw"].as_str().expect("stdoutRaw").to_owned();
    f(&mut outcome["stdout"], &mut raw);
    outcome["stdoutRaw"] = Value::String(raw);
}

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

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// Plugin errors reach the runtime intact: `ReportError` is a plain Go error
/// (code 999, ErrInternal); a CNI error printed on stdout with a non-zero exit
/// (`ReportResult` + `ExitWithCode`) keeps its own code, msg and details; a
/// non-zero exit with empty stdout becomes code 0 `netplugin failed: "<stderr>"`.
#[test]
fn error_passthrough() {
    let obs = differential(|sb| {
        let list = sb.write(
            "err.conflist",
            &json!({
                "cniVersion": "1.0.0",
                "name": "errnet",
                "plugins": [{"type": "noop", "debugFile": sb.path_str("debug.json")}]
            }),
        );
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
        let dbg_arg = format!("DEBUG={}", sb.path_str("direct.json"));
        let env = [
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "ctr"),
            ("CNI_NETNS", FAKE_NETNS),
            ("CNI_IFNAME", "eth0"),
            ("CNI_PATH", "/nonexistent"),
            ("CNI_ARGS", dbg_arg.as_str()),
        ];
        let direct = run_plugin(
            &sb.noop(),
            &env,
            br#"{"cniVersion":"1.0.0","name":"direct"}"#,
        );
        out.insert("direct".to_owned(), outcome_json(&direct));
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
        let list = sb.write(
            "err.conflist",
            &json!({
                "cniVersion": "1.0.0",
                "name": "errnet",
                "plugins": [{"type": "noop", "debugFile": sb.path_str("debug.json")}]
            }),
        );
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
            let direct = run_plugin(
                &sb.noop(),
                &[
                    ("CNI_COMMAND", "ADD"),
                    ("CNI_CONTAINERID", "ctr"),
                    ("CNI_NETNS", FAKE_NETNS),
                    ("CNI_IFNAME", "eth0"),
                    ("CNI_PATH", "/nonexistent"),
                    ("CNI_ARGS", &dbg_arg),
                ],
                br#"{"cniVersion":"1.0.0","name":"direct"}"#,
            );
            let direct = outcome_json(&direct);
            assert_eq!(
                direct["stdout"],
                json!({"code": want, "msg": "banana"}),
                "{flavor:?} {code}"
            );
            assert_eq!(direct["status"], 1);
        }
    }
}

// ---------------------------------------------------------------------------
// INJECT-DNS
// ---------------------------------------------------------------------------

#[test]
fn inject_dns() {
    let obs = differential(|sb| {
        let mut out = serde_json::Map::new();
        for v in VERSIONS {
            sb.write(
                "first.json",
                &json!({"ReportResult": literal_result(v).to_string()}),
            );
            sb.write("second.json", &json!({"ReportResult": "INJECT-DNS"}));
            let list = sb.write(
                "dns.conflist",
                &json!({
                    "cniVersion": v,
                    "name": "dnsnet",
                    "plugins": [
                        {"type": "noop", "debugFile": sb.path_str("first.json")},
                        {"type": "noop", "debugFile": sb.path_str("second.json")}
                    ]
                }),
            );
            let mut report = sb.driver().add_check_del(&list);
            if !at_least_040(v) {
                expect_crash_and_redact(sb, &mut report["del"]);
            }
            out.insert(v.to_owned(), report);
        }
        // Direct: a prevResult without "dns" gets one.
        sb.write("direct.json", &json!({"ReportResult": "INJECT-DNS"}));
        let dbg_arg = format!("DEBUG={}", sb.path_str("direct.json"));
        let env = [
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "ctr"),
            ("CNI_NETNS", FAKE_NETNS),
            ("CNI_IFNAME", "eth0"),
            ("CNI_PATH", "/nonexistent"),
            ("CNI_ARGS", dbg_arg.as_str()),
        ];
        let stdin = json!({
            "cniVersion": "0.4.0", "name": "direct",
            "prevResult": {"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "10.1.2.3/24"}]}
        });
        let direct = run_plugin(&sb.noop(), &env, stdin.to_string().as_bytes());
        out.insert("direct".to_owned(), outcome_json(&direct));
        Value::Object(out)
    });

    for v in VERSIONS {
        let mut expected = literal_result(v);
        // Only the nameservers are replaced; domain/search/options survive.
        expected["dns"]["nameservers"] = json!(["1.2.3.4"]);
        let r = &obs[v];
        assert_eq!(r["add"], json!({"ok": true, "result": expected}), "{v}");
        assert_eq!(r["cachedAfterAdd"], expected, "{v}");
        assert_eq!(r["ok"], at_least_040(v), "{v}: {r}");
    }
    assert_eq!(
        obs["direct"],
        json!({
            "status": 0,
            "stdout": {"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "10.1.2.3/24"}], "dns": {"nameservers": ["1.2.3.4"]}},
            // Compact, no newline, in the Go struct's field order.
            "stdoutRaw": r#"{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.1.2.3/24"}],"dns":{"nameservers":["1.2.3.4"]}}"#,
            "stderr": ""
        })
    );
}

// ---------------------------------------------------------------------------
// What the plugin records: Command and CmdArgs
// ---------------------------------------------------------------------------

#[test]
fn recorded_command_and_args() {
    let obs = differential(|sb| {
        let debug = sb.write(
            "debug.json",
            &json!({"ReportResult": json!({"cniVersion": "1.0.0", "ips": [{"address": "10.9.9.9/16"}]}).to_string()}),
        );
        let list = sb.write(
            "caps.conflist",
            &json!({
                "cniVersion": "1.0.0",
                "name": "capsnet",
                "plugins": [{"type": "noop", "capabilities": {"portMappings": true, "bandwidth": false}}]
            }),
        );
        let drv = sb
            .driver()
            .with_container_id("ctr-1234")
            .with_ifname("net1")
            .with_netns(FAKE_NETNS)
            .with_cni_args(&format!("DEBUG={};FOO=BAR", debug.display()))
            .with_cap_args(json!({
                "portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}],
                "bandwidth": {"ingressRate": 1}
            }));
        let files = ["debug.json"];
        json!({
            "add": snapshot(sb, drv.add(&list), &files, "capsnet", "ctr-1234", "net1"),
            "check": snapshot(sb, drv.check(&list), &files, "capsnet", "ctr-1234", "net1"),
            "del": snapshot(sb, drv.del(&list), &files, "capsnet", "ctr-1234", "net1"),
        })
    });

    let result = json!({"cniVersion": "1.0.0", "ips": [{"address": "10.9.9.9/16"}], "dns": {}});
    for step in ["add", "check", "del"] {
        let s = &obs[step];
        assert_eq!(s["report"]["ok"], true, "{step}: {s}");
        let d = &s["debug.json"];
        assert_eq!(d["Command"], step.to_uppercase());
        let a = &d["CmdArgs"];
        assert_eq!(a["ContainerID"], "ctr-1234");
        assert_eq!(a["IfName"], "net1");
        assert_eq!(a["Netns"], FAKE_NETNS);
        let args = a["Args"].as_str().expect("Args is a string");
        assert!(
            args.starts_with("DEBUG=/") && args.ends_with("/debug.json;FOO=BAR"),
            "{args}"
        );
        assert!(a["Path"].as_str().expect("Path").ends_with("/bin"), "{a}");
        // Only capabilities the plugin declares (and enables) are injected.
        let mut expected_stdin = json!({
            "cniVersion": "1.0.0",
            "name": "capsnet",
            "type": "noop",
            "capabilities": {"portMappings": true, "bandwidth": false},
            "runtimeConfig": {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]}
        });
        if step != "add" {
            expected_stdin["prevResult"] = result.clone();
        }
        assert_eq!(a["StdinJSON"], expected_stdin, "{step}");
        // The rest of the debug file is written back as read.
        assert_eq!(d["ReportError"], "");
        assert_eq!(d["ExitWithCode"], 0);
        assert_eq!(d["ReportVersionSupport"], Value::Null);
    }
    assert_eq!(obs["add"]["report"]["result"], result);
    // libcni caches args and capability args with the result.
    let cache = &obs["add"]["cache"];
    assert_eq!(cache["cniArgs"][1], json!(["FOO", "BAR"]));
    assert_eq!(
        cache["capabilityArgs"]["bandwidth"],
        json!({"ingressRate": 1})
    );
    assert_eq!(cache["result"], result);
    assert_eq!(cache["configJSON"]["name"], "capsnet");
}

// ---------------------------------------------------------------------------
// No debug behaviour / no result
// ---------------------------------------------------------------------------

/// Without a debug file the noop prints `{}` (libcni turns it into an empty
/// result of the list version); with a debug file but no ReportResult it
/// prints nothing, which libcni rejects on ADD.
#[test]
fn no_debug_file_and_empty_result() {
    let obs = differential(|sb| {
        let mut out = serde_json::Map::new();
        for v in ["0.4.0", "1.0.0"] {
            let list = sb.write(
                "plain.conflist",
                &json!({"cniVersion": v, "name": "plain", "plugins": [{"type": "noop"}]}),
            );
            let drv = sb.driver();
            let o = drv.run_outcome(drv.args("addcheckdel", Some(&list), None));
            assert!(o.success(), "{o:?}");
            out.insert(
                format!("plain-{v}"),
                json!({"report": o.stdout_json(), "driverStderr": o.stderr_str()}),
            );
        }
        sb.write("debug.json", &json!({}));
        let list = sb.write(
            "empty.conflist",
            &json!({"cniVersion": "1.0.0", "name": "empty", "plugins": [{"type": "noop", "debugFile": sb.path_str("debug.json")}]}),
        );
        out.insert("emptyResult".to_owned(), sb.driver().add_check_del(&list));

        let env = [
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "ctr"),
            ("CNI_NETNS", FAKE_NETNS),
            ("CNI_IFNAME", "eth0"),
            ("CNI_PATH", "/nonexistent"),
        ];
        let direct = run_plugin(
            &sb.noop(),
            &env,
            br#"{"cniVersion":"1.0.0","name":"direct"}"#,
        );
        out.insert(
            "direct".to_owned(),
            json!({"status": direct.status(), "stdout": direct.stdout_str(), "stderr": direct.stderr_str()}),
        );
        Value::Object(out)
    });

    const MSG: &str = "CNI_ARGS or config empty, no debug behavior\n";
    for v in ["0.4.0", "1.0.0"] {
        let p = &obs[format!("plain-{v}")];
        let r = &p["report"];
        let empty = json!({"cniVersion": v, "dns": {}});
        assert_eq!(r["ok"], true, "{p}");
        assert_eq!(r["add"]["result"], empty);
        assert_eq!(r["cachedAfterAdd"], empty);
        // libcni forwards a successful plugin's stderr: ADD, CHECK, DEL.
        assert_eq!(p["driverStderr"], MSG.repeat(3));
    }
    let e = &obs["emptyResult"];
    assert_eq!(e["add"]["ok"], false);
    assert_eq!(e["add"]["error"]["code"], -1);
    assert_eq!(
        e["add"]["error"]["msg"],
        "plugin type=\"noop\" failed (add): failed to unmarshal raw result: unexpected end of JSON input"
    );
    assert_eq!(e["del"], json!({"ok": true}));
    assert_eq!(
        obs["direct"],
        json!({"status": 0, "stdout": "{}", "stderr": MSG})
    );
}

// ---------------------------------------------------------------------------
// Direct runs: the skel's checks, PASSTHROUGH conversion
// ---------------------------------------------------------------------------

/// The noop run directly with the environment of an ADD (`DEBUG` in
/// CNI_ARGS) and `stdin`; `command` as given.
fn run_direct(sb: &Sandbox, command: &str, extra: &[(&str, &str)], stdin: &str) -> Value {
    let dbg_arg = format!("DEBUG={}", sb.path_str("direct.json"));
    let mut env = vec![
        ("CNI_COMMAND", command),
        ("CNI_CONTAINERID", "ctr"),
        ("CNI_NETNS", FAKE_NETNS),
        ("CNI_IFNAME", "eth0"),
        ("CNI_PATH", "/nonexistent"),
        ("CNI_ARGS", dbg_arg.as_str()),
    ];
    for (k, v) in extra {
        env.retain(|(name, _)| name != k);
        env.push((k, v));
    }
    outcome_json(&run_plugin(&sb.noop(), &env, stdin.as_bytes()))
}

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
