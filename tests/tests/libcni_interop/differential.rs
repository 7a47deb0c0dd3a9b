//! Running a scenario against the reference noop and ours and comparing
//! what each showed, and the observations scenarios are made of: a driver
//! step's [`snapshot`], a direct run's [`outcome_json`].

use std::path::Path;

use serde_json::{json, Value};
use tests::{first_difference, run_plugin, RawOutput, FAKE_NETNS};

use crate::differences::expect_crash_and_redact;
use crate::fixtures::at_least_040;
use crate::sandbox::{Flavor, Sandbox};

/// Runs `scenario` against the reference noop and ours in identical
/// sandboxes; the observations must be equal once ours went through the
/// normalisations of the documented differences ([`crate::differences`];
/// the scenario applies them where they arise, via [`Sandbox::ours`]).
/// Returns the reference observation for further
/// assertions.
pub fn differential(scenario: impl Fn(&Sandbox) -> Value) -> Value {
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
    if let Some(diff) = first_difference(&ours, &reference) {
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
pub fn outcome_json(o: &RawOutput) -> Value {
    json!({
        "status": o.status(),
        "stdout": serde_json::from_slice::<Value>(&o.stdout).unwrap_or_else(|_| Value::String(o.stdout_str())),
        "stdoutRaw": o.stdout_str(),
        "stderr": o.stderr_str(),
    })
}

/// Runs `f` on an [`outcome_json`] value's parsed stdout and its raw bytes.
pub fn with_stdout(outcome: &mut Value, f: impl FnOnce(&mut Value, &mut String)) {
    let mut raw = outcome["stdoutRaw"].as_str().expect("stdoutRaw").to_owned();
    f(&mut outcome["stdout"], &mut raw);
    outcome["stdoutRaw"] = Value::String(raw);
}

/// Snapshot after one driver step: the report, the debug files and the cache.
pub fn snapshot(
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

/// ADD, CHECK and DEL of the list `list` (version `v`) through libcni, one
/// driver step after the other, each observed by `snap` right after it:
/// `{"add","check","del"}`. Before 0.4.0 DEL crashes the reference's
/// PASSTHROUGH (difference (5)): the crash is checked and redacted.
pub fn add_check_del_steps(
    sb: &Sandbox,
    v: &str,
    list: &Path,
    snap: impl Fn(Value) -> Value,
) -> Value {
    let drv = sb.driver();
    let add = snap(drv.add(list));
    let check = snap(drv.check(list));
    let mut del = drv.del(list);
    if !at_least_040(v) {
        expect_crash_and_redact(sb, &mut del);
    }
    json!({"add": add, "check": check, "del": snap(del)})
}

/// The noop run directly, as [`outcome_json`]: `command` with the rest of
/// an ADD's environment (`DEBUG=<tmp>/direct.json` in CNI_ARGS), each of
/// `extra` replacing or adding a variable, and `stdin`.
pub fn run_direct(sb: &Sandbox, command: &str, extra: &[(&str, &str)], stdin: &str) -> Value {
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
