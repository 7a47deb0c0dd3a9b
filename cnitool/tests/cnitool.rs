//! cnitool as a user runs it: `--timeout` stops a hanging plugin, the
//! trace context it was started with reaches the plugins, and a plugin's
//! flood of output gives an error of a few lines.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// A one-plugin list named `net` whose plugin `plugin` is a shell script,
/// in `dir` (plugins) and `dir/net.d` (configuration).
fn one_plugin_list(dir: &Path, plugin: &str, body: &str) {
    let path = dir.join(plugin);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let conf = dir.join("net.d");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("net.conflist"),
        format!(r#"{{"cniVersion":"1.0.0","name":"net","plugins":[{{"type":"{plugin}"}}]}}"#),
    )
    .unwrap();
}

/// `cnitool ARGS add net /var/run/netns/none` with the list in `dir`.
fn add(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cnitool"))
        .args(args)
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .args(["add", "net", "/var/run/netns/none"])
        .env("NETCONFPATH", dir.join("net.d"))
        .env("CNI_PATH", dir)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

#[test]
fn cnitool_timeout_reaches_the_plugins() {
    let dir = tempfile::tempdir().unwrap();
    one_plugin_list(dir.path(), "stuck", "cat >/dev/null; sleep 300");
    let out = add(dir.path(), &["--timeout", "300ms"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let msg = err["msg"].as_str().unwrap();
    assert!(
        msg.contains("did not finish ADD within its 300ms deadline"),
        "{msg}"
    );
    assert_eq!(err["code"], 999);
}

#[test]
fn cnitool_passes_its_trace_context_to_the_plugins() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    let body = format!(
        "cat >/dev/null\nprintf '%s|%s' \"$TRACEPARENT\" \"$BAGGAGE\" > {}\necho '{{\"cniVersion\":\"1.0.0\"}}'",
        seen.display()
    );
    one_plugin_list(dir.path(), "record", &body);
    let out = add(
        dir.path(),
        &[],
        &[("TRACEPARENT", PARENT), ("BAGGAGE", "tenant=blue")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap(),
        format!("{PARENT}|tenant=blue")
    );
}

#[test]
fn a_plugin_printing_64_mib_of_garbage_gets_an_error_of_a_few_lines_saying_how_much_was_cut() {
    for status in [0, 1] {
        let dir = tempfile::tempdir().unwrap();
        let body = format!("cat >/dev/null; yes | head -c 67108864; exit {status}");
        one_plugin_list(dir.path(), "flood", &body);
        let out = add(dir.path(), &[], &[]);
        assert_eq!(out.status.code(), Some(1), "exit {status}");
        assert!(
            out.stdout.len() < 4096,
            "exit {status}: {} bytes on stdout",
            out.stdout.len()
        );
        let err: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let details = err["details"].as_str().unwrap();
        assert!(details.contains(" bytes more)"), "exit {status}: {details}");
    }
}
