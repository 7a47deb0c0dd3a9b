//! A runtime's timeout: one deadline per operation.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
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
fn a_version_probe_through_the_runtime_has_its_deadline_too() {
    let dir = tempfile::tempdir().unwrap();
    plugins(dir.path());
    let runtime = Runtime::new(vec![dir.path().into()], dir.path().join("cache"))
        .with_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let e = runtime.version_info("stuck").unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(e.msg.contains("did not finish VERSION"), "{e:?}");
}
