//! A runtime's timeout: one deadline per operation, from the library and
//! from `cnitool --timeout`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use cni_invoke::{NetworkList, Runtime, RuntimeConf};

const LIST: &str =
    r#"{"cniVersion":"1.0.0","name":"slow","plugins":[{"type":"quick"},{"type":"stuck"}]}"#;

/// `quick` passes its prevResult-less ADD an empty result; `stuck` hangs.
fn plugins(dir: &Path) {
    let write = |name: &str, body: &str| {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write("quick", r#"cat >/dev/null; echo '{"cniVersion":"1.0.0"}'"#);
    write("stuck", "cat >/dev/null; sleep 300");
}

fn attachment() -> RuntimeConf {
    RuntimeConf {
        container_id: "c1".into(),
        netns: "/var/run/netns/none".into(),
        ifname: "eth0".into(),
        ..RuntimeConf::default()
    }
}

#[test]
fn a_runtime_timeout_stops_the_hanging_plugin_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    plugins(dir.path());
    let net = NetworkList::from_bytes(LIST.as_bytes()).unwrap();
    let runtime = Runtime::new(vec![dir.path().into()], dir.path().join("cache"))
        .with_timeout(Duration::from_millis(400));
    let started = Instant::now();
    let e = runtime.add(&net, &attachment()).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(e.msg.contains("stuck") && e.msg.contains("ADD"), "{e:?}");
    assert!(e.msg.contains("400ms deadline"), "{e:?}");
    assert!(e.details.contains("plugin type=\"stuck\""), "{e:?}");
}

#[test]
fn cnitool_timeout_reaches_the_plugins() {
    let dir = tempfile::tempdir().unwrap();
    plugins(dir.path());
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
