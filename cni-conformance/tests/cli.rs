//! The command line: the table and summary line, the exit status, and the
//! JSON and JUnit reports carrying the same outcomes.

use std::path::PathBuf;
use std::process::{Command, Output};

fn tool(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cni-conformance"))
        .args(args)
        .output()
        .expect("run cni-conformance")
}

fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/plugins")
        .join(name)
        .display()
        .to_string()
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_failed_must_exits_1_and_every_report_says_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("conf.json");
    let data = dir.path().join("data");
    std::fs::write(
        &config,
        format!(
            r#"{{"name":"t","mode":"ipam","dataDir":"{}"}}"#,
            data.display()
        ),
    )
    .unwrap();
    let (json, junit) = (dir.path().join("r.json"), dir.path().join("r.xml"));
    let out = tool(&[
        "--kind",
        "ipam",
        "--config",
        config.to_str().unwrap(),
        "--versions",
        "1.0.0",
        "--only",
        "VERSION-REPLY,VERSION-LIST-VALID,VERSION-ECHO,ADD-SUCCEEDS",
        "--json",
        json.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        &script("bad-version-list-valid.sh"),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let row: Vec<&str> = stdout
        .lines()
        .find(|l| l.starts_with("VERSION-LIST-VALID "))
        .expect("a table row")
        .split_whitespace()
        .collect();
    assert_eq!(
        row,
        [
            "VERSION-LIST-VALID",
            "MUST",
            "FAIL",
            "\"1.1\"",
            "is",
            "not",
            "a",
            "version"
        ]
    );
    assert_eq!(
        stdout.lines().last(),
        Some("3 passed, 1 failed, 0 warnings")
    );

    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["summary"], "3 passed, 1 failed, 0 warnings");
    let failed: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["result"] == "failed")
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["VERSION-LIST-VALID"]);
    let finding = &report["checks"][1]["findings"][0];
    assert!(finding["call"]["stdout"]
        .as_str()
        .unwrap()
        .contains("\"1.1\""));

    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(r#"tests="4" failures="1""#), "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
    assert!(
        xml.contains(r#"name="VERSION-LIST-VALID [SPEC-1.0.0 §5 Version]"><failure"#),
        "{xml}"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_plugin_passing_every_must_exits_0() {
    let out = tool(&[
        "--kind",
        "ipam",
        "--only",
        "VERSION-REPLY,VERSION-LIST-VALID",
        "/usr/lib/cni/host-local",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(
        stdout.lines().last(),
        Some("2 passed, 0 failed, 0 warnings")
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_plugin_named_by_a_relative_path_is_run_from_where_the_tool_was_started() {
    // Each execution runs in a working directory of the run's own: the
    // relative path must still name the plugin the user meant.
    let out = Command::new(env!("CARGO_BIN_EXE_cni-conformance"))
        .current_dir("/usr/lib")
        .args(["--kind", "ipam", "--only", "VERSION-REPLY,ADD-SUCCEEDS"])
        .arg("cni/host-local")
        .output()
        .expect("run cni-conformance");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(
        stdout.lines().last(),
        Some("2 passed, 0 failed, 0 warnings")
    );
}

#[test]
fn misuse_exits_2_naming_the_problem() {
    for (args, says) in [
        (vec!["--kind", "bridge", "/bin/true"], "--kind \"bridge\""),
        (
            vec!["--only", "NO-SUCH-CHECK", "/bin/true"],
            "NO-SUCH-CHECK",
        ),
        (
            vec!["/no/such/plugin"],
            "/no/such/plugin: not an executable file",
        ),
        (vec![], "no PLUGIN given"),
        (
            vec!["--timeout", "-1", "/bin/true"],
            "--timeout \"-1\": expected a positive number of seconds",
        ),
        (
            vec!["--timeout", "1e300", "/bin/true"],
            "--timeout \"1e300\": expected a positive number of seconds",
        ),
    ] {
        let out = tool(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn without_root_an_automatic_namespace_is_refused_with_the_reason() {
    let out = Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_cni-conformance"))
        .args(["--kind", "ipam", "/usr/lib/cni/host-local"])
        .output()
        .expect("run setpriv (util-linux)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs root"), "{stderr}");
}
