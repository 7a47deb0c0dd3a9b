//! Our runtime (`cni_invoke::Runtime`, through `cnitool`) against the
//! reference runtime library (Debian's `libcni` 1.1.2, through `cnidriver`):
//! the same lists, plugins, container id, netns and capability arguments,
//! run once by each in identical sandboxes (so every path the plugins see is
//! the same), must give the same observations for ADD, CHECK, DEL and a
//! second DEL:
//!
//! - the runtime's answer: the final ADD result, or the error (code,
//!   message, details);
//! - the cache file `<cache>/results/<net>-<cid>-<ifname>` after each step
//!   (every field, the list bytes in `config` compared as text);
//! - what each `noop` received (its debug file: command, `CNI_*` values and
//!   stdin, parsed);
//! - host-local's data directory (file names and contents).
//!
//! Plugins: our `noop`, `delegator` and `dns-mac`, Debian's `host-local`.
//!
//! # Documented differences, normalised explicitly
//!
//! Each is one function below, applied only where it shows, and each
//! asserts that the difference is really there (so a change on either side
//! is noticed):
//!
//! - [`n1_empty_dns`]: ours omits an empty `dns` from results (README,
//!   "Where we depart", 7; for every version, 1.0.0 included), libcni's Go
//!   types print `"dns":{}`. Shows in the ADD result, the cached result and
//!   the `prevResult` plugins receive.
//! - [`n2_capabilities_removed`]: ours removes `capabilities` from each
//!   plugin's execution configuration, as the spec requires; libcni passes
//!   it through. Shows in what the plugins receive on stdin.
//! - [`n3_cache_netns`]: our cache entry records `netns` (as libcni 1.2+
//!   does); Debian's libcni 1.1.2 has no such field.
//! - [`n4_failing_plugin_named_in_details`]: when a plugin fails, libcni
//!   wraps its error (`plugin type="x" name="y" failed (add): ...`, in the
//!   error's text) and keeps the plugin's code, message and details; ours
//!   keeps code and message and prefixes the details with `plugin type="x"
//!   failed (add)`.
//! - [`n5_runtime_refusal_is_typed`]: where libcni refuses with a plain Go
//!   error (no CNI code: CHECK on a list below 0.4.0), ours answers a CNI
//!   error, code 1, with the same message.
//! - [`n6_missing_plugin`]: libcni's plain `failed to find plugin "x" in
//!   path [dirs]` is ours' code 7 `failed to find plugin "x"` with details
//!   `searched dirs`.
//! - [`n7_crash`]: a plugin exiting non-zero with nothing on stdout is, in
//!   libcni, code 0 `netplugin failed: "<stderr>"`; in ours code 999 `plugin
//!   <path> failed with exit status N and no CNI error` with stdout and
//!   stderr in the details. Compared: that it crashed, and its stderr.
//!
//! Our error JSON omits empty `details`; it is compared as `""`.
//! Key order inside the stdin JSON the plugins receive differs (libcni
//! marshals `prevResult` in Go struct order); stdin is compared parsed.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use serde_json::{json, Map, Value};
use tests::{
    base64_decode, files_below, first_difference, plugin_bin_dir, read_json, reference_plugin_dir,
    write_json, Cnitool, Driver, FAKE_NETNS,
};

const VERSIONS: [&str; 4] = ["0.3.0", "0.3.1", "0.4.0", "1.0.0"];

/// The container id both runtimes use.
const CID: &str = "vs-libcni-c1";

/// The `mac` capability argument both runtimes pass.
const MAC: &str = "c2:11:22:33:44:55";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rt {
    /// `cnitool`.
    Ours,
    /// `cnidriver` over Debian's libcni.
    Libcni,
}

struct Sandbox {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let tmp = tempfile::Builder::new()
            .prefix("cni-vs-libcni-")
            .tempdir()
            .expect("creating a temporary directory");
        let root = tmp.path().to_path_buf();
        fs::create_dir(root.join("bin")).expect("creating bin");
        for p in ["noop", "delegator", "dns-mac"] {
            symlink(plugin_bin_dir().join(p), root.join("bin").join(p)).expect("linking plugin");
        }
        symlink(
            reference_plugin_dir().join("host-local"),
            root.join("bin/host-local"),
        )
        .expect("linking host-local");
        Sandbox { _tmp: tmp, root }
    }

    /// Removes everything but `bin/`.
    fn reset(&self) {
        for entry in fs::read_dir(&self.root).expect("listing sandbox") {
            let path = entry.expect("sandbox entry").path();
            if path.file_name() == Some("bin".as_ref()) {
                continue;
            }
            if path.is_dir() {
                fs::remove_dir_all(&path).expect("wiping sandbox");
            } else {
                fs::remove_file(&path).expect("wiping sandbox");
            }
        }
        for dir in ["net.d", "cache", "ipam"] {
            fs::create_dir_all(self.path(dir)).expect("creating sandbox dirs");
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn path_str(&self, rel: &str) -> String {
        self.path(rel).to_str().expect("UTF-8 temp path").to_owned()
    }

    /// The cache entry of (`net`, [`CID`], eth0), `null` when absent, with
    /// the list bytes decoded into `configText`.
    fn cache_entry(&self, net: &str) -> Value {
        let p = self.path("cache/results").join(format!("{net}-{CID}-eth0"));
        if !p.exists() {
            return Value::Null;
        }
        let mut c = read_json(&p);
        if let Some(b64) = c["config"].as_str() {
            c["configText"] = String::from_utf8(base64_decode(b64))
                .expect("UTF-8 list bytes")
                .into();
            c.as_object_mut().expect("an object").remove("config");
        }
        c
    }

    /// A noop debug file as left by the plugin, `StdinData` replaced by the
    /// parsed stdin under `stdin`.
    fn debug(&self, name: &str) -> Value {
        let mut d = read_json(&self.path(name));
        if let Some(b64) = d["CmdArgs"]["StdinData"].as_str() {
            let stdin: Value =
                serde_json::from_slice(&base64_decode(b64)).expect("the plugin's stdin is JSON");
            let args = d["CmdArgs"].as_object_mut().expect("CmdArgs");
            args.remove("StdinData");
            args.insert("stdin".into(), stdin);
        }
        d
    }

    /// `{relative path: content}` of host-local's data directory.
    fn ipam(&self) -> Value {
        files_below(&self.path("ipam"))
    }
}

/// A configuration file in `net.d/` and the noop debug files it names.
struct Scenario {
    net: String,
    /// File name in `net.d/` (`.conflist` or `.conf`).
    file: String,
    config: Value,
    /// Debug files (`<tmp>/<name>`) written before each run.
    debug: Vec<(String, Value)>,
    /// Capability arguments (`null` for none).
    caps: Value,
}

impl Scenario {
    fn list(net: &str, v: &str, plugins: Value) -> Scenario {
        Scenario {
            net: net.into(),
            file: format!("{net}.conflist"),
            config: json!({"cniVersion": v, "name": net, "plugins": plugins}),
            debug: Vec::new(),
            caps: json!({"mac": MAC}),
        }
    }

    fn with_debug(mut self, name: &str, content: Value) -> Scenario {
        self.debug.push((name.into(), content));
        self
    }

    /// The `capabilities` configured for the plugin whose `debugFile` is
    /// `<tmp>/<name>`.
    fn capabilities_of(&self, sb: &Sandbox, name: &str) -> Option<Value> {
        let path = Value::String(sb.path_str(name));
        let plugins = match self.config.get("plugins") {
            Some(Value::Array(p)) => p.clone(),
            _ => vec![self.config.clone()],
        };
        plugins
            .into_iter()
            .find(|p| p["debugFile"] == path)
            .and_then(|p| p.get("capabilities").cloned())
    }
}

/// A runtime's answer in a common shape: `{"ok":true,"result":R|null}` or
/// `{"ok":false,"error":{"code","msg","details"}}`.
fn run(sb: &Sandbox, sc: &Scenario, rt: Rt, command: &str) -> Value {
    let (ok, result, error) = match rt {
        Rt::Ours => {
            let mut tool = Cnitool::new(sb.path("net.d"), [sb.path("bin")], sb.path("cache"))
                .with_container_id(CID);
            if !sc.caps.is_null() {
                tool = tool.with_cap_args(sc.caps.clone());
            }
            let r = tool.run(&[command, &sc.net, FAKE_NETNS]);
            (r["ok"].clone(), r["result"].clone(), r["error"].clone())
        }
        Rt::Libcni => {
            let mut drv = Driver::new([sb.path("bin")], sb.path("cache"))
                .with_container_id(CID)
                .with_netns(FAKE_NETNS);
            if !sc.caps.is_null() {
                drv = drv.with_cap_args(sc.caps.clone());
            }
            let file = sb.path("net.d").join(&sc.file);
            let r = match command {
                "add" => drv.add(&file),
                "check" => drv.check(&file),
                "del" => drv.del(&file),
                other => panic!("{other}"),
            };
            (r["ok"].clone(), r["result"].clone(), r["error"].clone())
        }
    };
    if ok == true {
        json!({"ok": true, "result": result})
    } else {
        let details = match &error["details"] {
            Value::Null => json!(""),
            d => d.clone(),
        };
        json!({"ok": false, "error": {"code": error["code"], "msg": error["msg"], "details": details}})
    }
}

/// The steps every scenario runs, in order: (observation key, command).
const STEPS: [(&str, &str); 4] = [
    ("add", "add"),
    ("check", "check"),
    ("del", "del"),
    ("delAgain", "del"),
];

/// Runs the scenario's steps with `rt` in a freshly reset sandbox and
/// records, after each step, the answer, the cache entry, the debug files
/// and host-local's directory.
fn observe(sb: &Sandbox, sc: &Scenario, rt: Rt) -> Value {
    sb.reset();
    write_json(&sb.path("net.d").join(&sc.file), &sc.config);
    for (name, content) in &sc.debug {
        write_json(&sb.path(name), content);
    }
    let mut obs = Map::new();
    for (key, command) in STEPS {
        let report = run(sb, sc, rt, command);
        let debug: Map<String, Value> = sc
            .debug
            .iter()
            .map(|(name, _)| (name.clone(), sb.debug(name)))
            .collect();
        obs.insert(
            key.into(),
            json!({"report": report, "cache": sb.cache_entry(&sc.net), "debug": debug, "ipam": sb.ipam()}),
        );
    }
    Value::Object(obs)
}

/// (N1) Ours omits an empty `dns`; libcni prints `"dns":{}`. `ours` and
/// `libcni` are the same result as each runtime shows it.
fn n1_empty_dns(ours: &Value, libcni: &mut Value) {
    let Some(theirs) = libcni.as_object_mut() else {
        return;
    };
    if theirs.get("dns") == Some(&json!({})) {
        assert!(
            ours.get("dns").is_none(),
            "(N1) ours omits an empty dns: {ours}"
        );
        theirs.remove("dns");
    }
}

/// (N2) libcni passes the plugin's `capabilities` on to it; ours removes
/// them. `ours` and `libcni` are the stdin a plugin received.
fn n2_capabilities_removed(ours: &Value, libcni: &mut Value, configured: Option<&Value>) {
    let Some(configured) = configured else {
        return;
    };
    assert!(
        ours.get("capabilities").is_none(),
        "(N2) ours removes capabilities: {ours}"
    );
    let theirs = libcni.as_object_mut().expect("stdin is an object");
    assert_eq!(
        theirs.remove("capabilities").as_ref(),
        Some(configured),
        "(N2) libcni passes capabilities through"
    );
}

/// (N3) Our cache entry records the netns; Debian's libcni does not.
fn n3_cache_netns(ours: &mut Value, libcni: &Value) {
    assert!(libcni.get("netns").is_none(), "(N3) libcni 1.1.2: {libcni}");
    let entry = ours.as_object_mut().expect("a cache entry");
    assert_eq!(
        entry.remove("netns"),
        Some(json!(FAKE_NETNS)),
        "(N3) ours records the netns"
    );
}

/// (N4) Ours prefixes a failing plugin's details with `plugin type="x"
/// failed (op)`; libcni keeps them as the plugin gave them.
fn n4_failing_plugin_named_in_details(ours: &mut Value, command: &str) {
    let op = if command == "del" { "delete" } else { command };
    let details = ours["details"].as_str().expect("details").to_owned();
    let rest = details
        .strip_prefix("plugin type=\"")
        .and_then(|r| r.split_once(&format!("\" failed ({op})")))
        .map(|(_, rest)| rest.strip_prefix(": ").unwrap_or(rest).to_owned())
        .unwrap_or_else(|| panic!("(N4) our details name the failing plugin: {ours}"));
    ours["details"] = rest.into();
}

/// (N5) libcni's plain error (code -1 in cnidriver's report) is ours'
/// CNI error with code 1 and the same message.
fn n5_runtime_refusal_is_typed(ours: &mut Value, libcni: &Value) {
    assert_eq!(ours["code"], 1, "(N5) {ours}");
    assert_eq!(ours["msg"], libcni["msg"], "(N5) the same message");
    ours["code"] = json!(-1);
}

/// (N6) A missing plugin: libcni's plain `failed to find plugin "x" in path
/// [d1 d2]` (on ADD and DEL wrapped as `plugin type="x" failed (add): ...`,
/// which names the plugin once more), ours' code 7 `failed to find plugin
/// "x"`, details `searched d1:d2`.
fn n6_missing_plugin(ours: &mut Value, libcni: &mut Value) {
    let msg = libcni["msg"].as_str().expect("msg");
    if let Some((wrapper, rest)) = msg.split_once(": failed to find plugin ") {
        assert!(wrapper.starts_with("plugin type=\""), "(N6) {libcni}");
        libcni["msg"] = format!("failed to find plugin {rest}").into();
    }
    assert_eq!(ours["code"], 7, "(N6) {ours}");
    let dirs = ours["details"]
        .as_str()
        .and_then(|d| d.strip_prefix("searched "))
        .unwrap_or_else(|| panic!("(N6) our details name the path searched: {ours}"))
        .replace(':', " ");
    let msg = format!("{} in path [{dirs}]", ours["msg"].as_str().expect("msg"));
    *ours = json!({"code": -1, "msg": msg, "details": ""});
}

/// (N7) A plugin that exits non-zero with nothing on stdout: both become
/// `{"crashed": <its stderr>}`.
fn n7_crash(ours: &mut Value, libcni: &mut Value) {
    assert_eq!(libcni["code"], 0, "(N7) {libcni}");
    let quoted = libcni["msg"]
        .as_str()
        .and_then(|m| m.strip_prefix("netplugin failed: "))
        .expect("(N7) libcni's crash message");
    let theirs: String = serde_json::from_str(quoted).expect("Go's %q of ASCII text is JSON");
    assert_eq!(ours["code"], 999, "(N7) {ours}");
    let msg = ours["msg"].as_str().expect("msg");
    assert!(
        msg.starts_with("plugin ") && msg.ends_with("failed with exit status 2 and no CNI error"),
        "(N7) {ours}"
    );
    let stderr = ours["details"]
        .as_str()
        .and_then(|d| d.split_once("stderr: "))
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("(N7) our details show the stderr: {ours}"));
    let stderr: String = serde_json::from_str(stderr).expect("Rust's {:?} of ASCII text is JSON");
    *ours = json!({"crashed": stderr});
    *libcni = json!({"crashed": theirs.trim()});
}

/// Applies the documented differences to the two observations of one
/// scenario.
fn normalise(sb: &Sandbox, sc: &Scenario, ours: &mut Value, libcni: &mut Value) {
    for (key, command) in STEPS {
        let (o, l) = (&mut ours[key], &mut libcni[key]);
        if o["report"]["ok"] == true && l["report"]["ok"] == true {
            n1_empty_dns(&o["report"]["result"], &mut l["report"]["result"]);
        }
        if o["report"]["ok"] == false && l["report"]["ok"] == false {
            let (oe, le) = (&mut o["report"]["error"], &mut l["report"]["error"]);
            let lmsg = le["msg"].as_str().unwrap_or_default().to_owned();
            if le["code"] == 0 && lmsg.starts_with("netplugin failed: ") {
                n4_failing_plugin_named_in_details(oe, command);
                n7_crash(oe, le);
            } else if le["code"] == -1 && lmsg.contains("failed to find plugin ") {
                n6_missing_plugin(oe, le);
            } else if le["code"] == -1 {
                n5_runtime_refusal_is_typed(oe, le);
            } else {
                n4_failing_plugin_named_in_details(oe, command);
            }
        }
        if o["cache"].is_object() && l["cache"].is_object() {
            n3_cache_netns(&mut o["cache"], &l["cache"]);
            n1_empty_dns(&o["cache"]["result"], &mut l["cache"]["result"]);
        }
        for (name, _) in &sc.debug {
            let stdin = format!("/debug/{name}/CmdArgs/stdin");
            if let (Some(os), Some(ls)) = (o.pointer(&stdin), l.pointer_mut(&stdin)) {
                n2_capabilities_removed(os, ls, sc.capabilities_of(sb, name).as_ref());
                if let (Some(op), Some(lp)) = (os.get("prevResult"), ls.get_mut("prevResult")) {
                    n1_empty_dns(op, lp);
                }
            }
        }
    }
}

/// Runs `sc` with both runtimes and asserts equal observations once
/// normalised; returns libcni's (normalised) observation.
fn differential(sb: &Sandbox, sc: &Scenario) -> Value {
    let mut ours = observe(sb, sc, Rt::Ours);
    let mut libcni = observe(sb, sc, Rt::Libcni);
    normalise(sb, sc, &mut ours, &mut libcni);
    if let Some(diff) = first_difference(&ours, &libcni) {
        panic!(
            "{} ({}): our runtime differs from libcni at {diff}\n--- ours (normalised):\n{}\n--- libcni (normalised):\n{}",
            sc.net,
            sc.config["cniVersion"],
            serde_json::to_string_pretty(&ours).unwrap(),
            serde_json::to_string_pretty(&libcni).unwrap()
        );
    }
    libcni
}

fn at_least_040(v: &str) -> bool {
    matches!(v, "0.4.0" | "1.0.0")
}

/// A full result in version `v`, without `dns` (so N1 shows).
fn literal(v: &str) -> Value {
    let mut r = json!({
        "cniVersion": v,
        "interfaces": [
            {"name": "veth0", "mac": "aa:aa:aa:aa:aa:aa"},
            {"name": "eth0", "mac": "00:11:22:33:44:55", "sandbox": FAKE_NETNS}
        ],
        "ips": [{"interface": 1, "address": "10.1.2.3/24", "gateway": "10.1.2.1"}],
        "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.2.1"}]
    });
    if v.starts_with("0.") {
        r["ips"][0]["version"] = json!("4");
    }
    r
}

/// The refusal both give for CHECK below 0.4.0 (libcni's plain message).
fn check_refused(v: &str) -> Value {
    json!({"ok": false, "error": {
        "code": -1,
        "msg": format!("configuration version \"{v}\" does not support the CHECK command"),
        "details": ""
    }})
}

/// The passthrough noop was given no `prevResult` (N7: it exits 2).
fn assert_passthrough_crashed(report: &Value, v: &str) {
    assert_eq!(
        report,
        &json!({"ok": false, "error": {"crashed": "test setup error: PASSTHROUGH needs a prevResult and the DEL configuration has none"}}),
        "{v}"
    );
}

/// [noop (literal result), noop (PASSTHROUGH, `mac` capability)]: ADD
/// returns the literal; CHECK (0.4.0+) and DEL give every plugin the cached
/// result; below 0.4.0 CHECK is refused by both runtimes and DEL gives no
/// `prevResult`, so the passthrough noop fails the same way in both.
#[test]
fn noop_chain_literal_then_passthrough() {
    let sb = Sandbox::new();
    for v in VERSIONS {
        let sc = Scenario::list(
            "noops",
            v,
            json!([
                {"type": "noop", "debugFile": sb.path("lit.json")},
                {"type": "noop", "debugFile": sb.path("pt.json"), "capabilities": {"mac": true}}
            ]),
        )
        .with_debug("lit.json", json!({"ReportResult": literal(v).to_string()}))
        .with_debug("pt.json", json!({"ReportResult": "PASSTHROUGH"}));
        let obs = differential(&sb, &sc);

        // What both did, pinned.
        assert_eq!(
            obs["add"]["report"],
            json!({"ok": true, "result": literal(v)}),
            "{v}"
        );
        assert_eq!(obs["add"]["cache"]["result"], literal(v), "{v}");
        assert_eq!(obs["add"]["cache"]["kind"], "cniCacheV1", "{v}");
        assert_eq!(obs["add"]["cache"]["containerId"], CID, "{v}");
        assert_eq!(obs["add"]["cache"]["capabilityArgs"], json!({"mac": MAC}));
        let pt_add = &obs["add"]["debug"]["pt.json"]["CmdArgs"]["stdin"];
        assert_eq!(pt_add["prevResult"], literal(v), "{v}");
        assert_eq!(pt_add["runtimeConfig"], json!({"mac": MAC}), "{v}");
        assert!(
            obs["add"]["debug"]["lit.json"]["CmdArgs"]["stdin"]
                .get("runtimeConfig")
                .is_none(),
            "{v}: no capability, no runtimeConfig"
        );
        if at_least_040(v) {
            assert_eq!(obs["check"]["report"], json!({"ok": true, "result": null}));
            assert_eq!(obs["check"]["debug"]["lit.json"]["Command"], "CHECK");
            assert_eq!(
                obs["check"]["debug"]["lit.json"]["CmdArgs"]["stdin"]["prevResult"],
                literal(v)
            );
            assert_eq!(obs["del"]["report"], json!({"ok": true, "result": null}));
            assert_eq!(obs["del"]["cache"], Value::Null, "{v}");
            assert_eq!(
                obs["del"]["debug"]["pt.json"]["CmdArgs"]["stdin"]["prevResult"],
                literal(v)
            );
            // The second DEL has no cached result to give: the passthrough
            // noop, which needs one, fails (DEL runs in reverse order, so
            // the first noop is not reached).
            assert_passthrough_crashed(&obs["delAgain"]["report"], v);
            assert_eq!(obs["delAgain"]["debug"]["lit.json"]["Command"], "DEL");
            assert_eq!(obs["delAgain"]["debug"]["pt.json"]["Command"], "DEL");
        } else {
            assert_eq!(obs["check"]["report"], check_refused(v));
            assert_eq!(obs["check"]["debug"]["lit.json"]["Command"], "ADD");
            // Below 0.4.0 DEL gives no cached result: the passthrough noop
            // fails, and the failed DEL keeps the cache entry, in both.
            for step in ["del", "delAgain"] {
                assert_passthrough_crashed(&obs[step]["report"], v);
                assert_eq!(obs[step]["cache"]["result"], literal(v), "{v} {step}");
                assert_eq!(obs[step]["debug"]["lit.json"]["Command"], "ADD");
            }
        }
    }
}

/// A plugin answering ADD in another version than the list's (the spec
/// says it must answer in the configuration's; runtimes meet such plugins
/// anyway): libcni keeps the result as the plugin gave it, so the next
/// plugin's `prevResult`, a single plugin's final ADD result and the cached
/// result are in the plugin's version (the cache is converted to the
/// list's version only when read back for CHECK and DEL), and so does ours.
#[test]
fn a_result_in_another_version_is_passed_on_and_cached_as_the_plugin_gave_it() {
    let sb = Sandbox::new();
    for (v, other) in [("1.0.0", "0.4.0"), ("0.4.0", "1.0.0"), ("0.3.1", "0.3.0")] {
        let chain = Scenario::list(
            "mixed",
            v,
            json!([
                {"type": "noop", "debugFile": sb.path("lit.json")},
                {"type": "noop", "debugFile": sb.path("pt.json")}
            ]),
        )
        .with_debug(
            "lit.json",
            json!({"ReportResult": literal(other).to_string()}),
        )
        .with_debug("pt.json", json!({"ReportResult": "PASSTHROUGH"}));
        let obs = differential(&sb, &chain);
        assert_eq!(
            obs["add"]["debug"]["pt.json"]["CmdArgs"]["stdin"]["prevResult"],
            literal(other),
            "{v}"
        );
        assert_eq!(obs["add"]["report"]["result"], literal(v), "{v}");

        let single = Scenario::list(
            "mixed1",
            v,
            json!([{"type": "noop", "debugFile": sb.path("lit.json")}]),
        )
        .with_debug(
            "lit.json",
            json!({"ReportResult": literal(other).to_string()}),
        );
        let obs = differential(&sb, &single);
        assert_eq!(obs["add"]["report"]["result"], literal(other), "{v}");
        assert_eq!(obs["add"]["cache"]["result"], literal(other), "{v}");
    }
}

/// [delegator with host-local, dns-mac (`mac` capability, `dns`)]: the same
/// address, MAC and DNS in the result and the cache, CHECK passes (0.4.0+),
/// DEL releases the address, in both.
#[test]
fn delegator_host_local_then_dns_mac() {
    let sb = Sandbox::new();
    for v in VERSIONS {
        let sc = Scenario::list(
            "ipamchain",
            v,
            json!([
                {"type": "delegator", "requireFamilies": ["4"], "ipam": {
                    "type": "host-local", "dataDir": sb.path("ipam"),
                    "ranges": [[{"subnet": "10.213.8.0/24"}]]}},
                {"type": "dns-mac", "capabilities": {"mac": true},
                 "dns": {"nameservers": ["10.213.8.53"], "search": ["svc.local"]}}
            ]),
        );
        let obs = differential(&sb, &sc);
        let mut ip = json!({"interface": 0, "address": "10.213.8.2/24", "gateway": "10.213.8.1"});
        if v.starts_with("0.") {
            ip["version"] = json!("4");
        }
        let expected = json!({
            "cniVersion": v,
            "interfaces": [{"name": "eth0", "mac": MAC, "sandbox": FAKE_NETNS}],
            "ips": [ip],
            "dns": {"nameservers": ["10.213.8.53"], "search": ["svc.local"]}
        });
        assert_eq!(
            obs["add"]["report"],
            json!({"ok": true, "result": expected}),
            "{v}"
        );
        assert_eq!(obs["add"]["cache"]["result"], expected, "{v}");
        assert_eq!(
            obs["add"]["ipam"]["ipamchain/10.213.8.2"],
            format!("{CID}\r\neth0"),
            "{v}"
        );
        if at_least_040(v) {
            assert_eq!(obs["check"]["report"], json!({"ok": true, "result": null}));
        } else {
            assert_eq!(obs["check"]["report"], check_refused(v));
        }
        for step in ["del", "delAgain"] {
            assert_eq!(
                obs[step]["report"],
                json!({"ok": true, "result": null}),
                "{v} {step}"
            );
            assert!(
                obs[step]["ipam"].get("ipamchain/10.213.8.2").is_none(),
                "{v} {step}"
            );
        }
    }
}

/// A single plugin configuration (`.conf`, not `.conflist`), wrapped into a
/// list of one by both runtimes: the same list bytes in the cache, the same
/// results, `runtimeConfig` from the `portMappings` capability.
#[test]
fn single_conf_file() {
    let sb = Sandbox::new();
    for v in VERSIONS {
        let mut result = literal(v);
        result["dns"] = json!({"nameservers": ["10.0.0.53"]});
        let ports = json!([{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]);
        let sc = Scenario {
            net: "single".into(),
            file: "single.conf".into(),
            config: json!({
                "cniVersion": v, "name": "single", "type": "noop",
                "debugFile": sb.path("single.json"),
                "capabilities": {"portMappings": true, "mac": false}
            }),
            debug: vec![(
                "single.json".into(),
                json!({"ReportResult": result.to_string()}),
            )],
            caps: json!({"portMappings": ports, "mac": MAC}),
        };
        let obs = differential(&sb, &sc);
        assert_eq!(
            obs["add"]["report"],
            json!({"ok": true, "result": result}),
            "{v}"
        );
        let stdin = &obs["add"]["debug"]["single.json"]["CmdArgs"]["stdin"];
        assert_eq!(
            stdin["runtimeConfig"],
            json!({"portMappings": ports}),
            "{v}"
        );
        let list: Value = serde_json::from_str(
            obs["add"]["cache"]["configText"]
                .as_str()
                .expect("list bytes"),
        )
        .expect("JSON");
        assert_eq!(
            list,
            json!({"cniVersion": v, "name": "single", "plugins": [sc.config]}),
            "{v}"
        );
        let check = if at_least_040(v) {
            json!({"ok": true, "result": null})
        } else {
            check_refused(v)
        };
        assert_eq!(obs["check"]["report"], check, "{v}");
        assert_eq!(
            obs["del"]["report"],
            json!({"ok": true, "result": null}),
            "{v}"
        );
    }
}

/// A plugin's error code (here 123, a plugin-specific code) reaches both
/// runtimes intact, on ADD and on DEL; nothing is cached.
#[test]
fn a_failing_plugins_error_code_reaches_both_runtimes_intact() {
    let sb = Sandbox::new();
    for v in ["0.3.1", "1.0.0"] {
        let sc = Scenario::list(
            "failing",
            v,
            json!([
                {"type": "noop", "debugFile": sb.path("ok.json")},
                {"type": "noop", "debugFile": sb.path("fail.json")}
            ]),
        )
        .with_debug("ok.json", json!({"ReportResult": literal(v).to_string()}))
        .with_debug(
            "fail.json",
            json!({"ReportError": "no bananas", "ReportErrorCode": 123}),
        );
        let obs = differential(&sb, &sc);
        let failed =
            json!({"ok": false, "error": {"code": 123, "msg": "no bananas", "details": ""}});
        assert_eq!(obs["add"]["report"], failed, "{v}");
        assert_eq!(obs["add"]["cache"], Value::Null, "{v}");
        assert_eq!(obs["del"]["report"], failed, "{v}");
        // DEL runs in reverse order: the failing plugin stops it before the
        // first one is reached (which last saw CHECK, or ADD below 0.4.0).
        let last = if at_least_040(v) { "CHECK" } else { "ADD" };
        assert_eq!(obs["del"]["debug"]["ok.json"]["Command"], last, "{v}");
        assert_eq!(obs["del"]["debug"]["fail.json"]["Command"], "DEL", "{v}");
    }
    // A code-7 error with details, from the delegator (requireFamilies).
    let sc = Scenario::list(
        "v6only",
        "1.0.0",
        json!([{"type": "delegator", "requireFamilies": ["6"], "ipam": {
            "type": "host-local", "dataDir": sb.path("ipam"),
            "ranges": [[{"subnet": "10.213.8.0/24"}]]}}]),
    );
    let obs = differential(&sb, &sc);
    assert_eq!(
        obs["add"]["report"],
        json!({"ok": false, "error": {
            "code": 7,
            "msg": "IPAM assigned no address of a required family",
            "details": "requireFamilies has V6; host-local returned 1 address(es)"
        }})
    );
    assert_eq!(
        obs["add"]["ipam"],
        json!({"v6only/last_reserved_ip.0": "10.213.8.2", "v6only/lock": ""})
    );
}

/// A plugin missing from `CNI_PATH` is an error in both, on ADD (after the
/// plugins before it ran) and on DEL (before any plugin ran).
#[test]
fn a_missing_plugin_is_an_error_in_both() {
    let sb = Sandbox::new();
    let sc = Scenario::list(
        "missing",
        "1.0.0",
        json!([
            {"type": "noop", "debugFile": sb.path("first.json")},
            {"type": "not-installed"}
        ]),
    )
    .with_debug(
        "first.json",
        json!({"ReportResult": literal("1.0.0").to_string()}),
    );
    let obs = differential(&sb, &sc);
    let failed = json!({"ok": false, "error": {
        "code": -1,
        "msg": format!("failed to find plugin \"not-installed\" in path [{}]", sb.path_str("bin")),
        "details": ""
    }});
    assert_eq!(obs["add"]["report"], failed);
    assert_eq!(obs["add"]["debug"]["first.json"]["Command"], "ADD");
    assert_eq!(obs["add"]["cache"], Value::Null);
    assert_eq!(obs["check"]["report"], failed);
    assert_eq!(obs["del"]["report"], failed);
    // CHECK ran the first plugin before failing; DEL (reverse order) fails
    // before reaching it.
    assert_eq!(obs["del"]["debug"]["first.json"]["Command"], "CHECK");
}

/// Each runtime reads the other's cache: ADD with one, CHECK and DEL with
/// the other; the plugins get the cached result as `prevResult` and DEL
/// removes the entry.
#[test]
fn each_runtime_reads_the_others_cache() {
    let sb = Sandbox::new();
    for v in ["0.4.0", "1.0.0"] {
        for (adder, other) in [(Rt::Libcni, Rt::Ours), (Rt::Ours, Rt::Libcni)] {
            let sc = Scenario::list(
                "shared",
                v,
                json!([
                    {"type": "noop", "debugFile": sb.path("lit.json")},
                    {"type": "noop", "debugFile": sb.path("pt.json")}
                ]),
            )
            .with_debug("lit.json", json!({"ReportResult": literal(v).to_string()}))
            .with_debug("pt.json", json!({"ReportResult": "PASSTHROUGH"}));
            sb.reset();
            write_json(&sb.path("net.d").join(&sc.file), &sc.config);
            for (name, content) in &sc.debug {
                write_json(&sb.path(name), content);
            }
            let what = format!("{v}: ADD by {adder:?}, CHECK/DEL by {other:?}");
            assert_eq!(run(&sb, &sc, adder, "add")["ok"], true, "{what}");
            assert!(sb.cache_entry("shared").is_object(), "{what}");
            assert_eq!(
                run(&sb, &sc, other, "check"),
                json!({"ok": true, "result": null}),
                "{what}"
            );
            let mut prev = sb.debug("pt.json")["CmdArgs"]["stdin"]["prevResult"].clone();
            assert_eq!(sb.debug("pt.json")["Command"], "CHECK", "{what}");
            if let Some(p) = prev.as_object_mut() {
                // Whichever runtime wrote or read it, an empty dns is N1.
                if p.get("dns") == Some(&json!({})) {
                    p.remove("dns");
                }
            }
            assert_eq!(prev, literal(v), "{what}");
            assert_eq!(
                run(&sb, &sc, other, "del"),
                json!({"ok": true, "result": null}),
                "{what}"
            );
            assert_eq!(sb.cache_entry("shared"), Value::Null, "{what}");
        }
    }
}
