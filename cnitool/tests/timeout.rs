//! `cnitool --timeout` reaches the plugins.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

const LIST: &str = r#"{"cniVersion":"1.0.0","name":"slow","plugins":[{"type":"stuck"}]}"#;

#[test]
fn cnitool_timeout_reaches_the_plugins() {
    let dir = tempfile::tempdir().unwrap();
    let stuck = dir.path().join("stuck");
    std::fs::write(&stuck, "#!/bin/sh\ncat >/dev/null; sleep 300\n").unwrap();
    std::fs::set_permissions(&stuck, std::fs::Permissions::from_mode(0o755)).unwrap();
    let conf = dir.path().join("net.d");
    std::fs::create_dir(&conf).unwrap();
    std::fs::write(conf.join("slow.conflist"), LIST).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cnitool"))
        .args(["--timeout", "300ms", "--cache-dir"])
        .arg(dir.path().join("cache"))
        .args(["add", "slow", "/var/run/netns/none"])
        .env("NETCONFPATH", &conf)
        .env("CNI_PATH", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let msg = err["msg"].as_str().unwrap();
    assert!(
        msg.contains("did not finish ADD within its 300ms deadline"),
        "{msg}"
    );
    assert_eq!(err["code"], 999);
}
