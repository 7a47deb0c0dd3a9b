//! cnitool passes the trace context it was started with to the plugins.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn cnitool_passes_its_trace_context_to_the_plugins() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen");
    let plugin = dir.path().join("record");
    std::fs::write(
        &plugin,
        format!(
            "#!/bin/sh\ncat >/dev/null\nprintf '%s|%s' \"$TRACEPARENT\" \"$BAGGAGE\" > {}\necho '{{\"cniVersion\":\"1.0.0\"}}'\n",
            seen.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let conf = dir.path().join("net.d");
    std::fs::create_dir(&conf).unwrap();
    std::fs::write(
        conf.join("traced.conflist"),
        r#"{"cniVersion":"1.0.0","name":"traced","plugins":[{"type":"record"}]}"#,
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cnitool"))
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .args(["add", "traced", "/var/run/netns/none"])
        .env("NETCONFPATH", &conf)
        .env("CNI_PATH", dir.path())
        .env("TRACEPARENT", PARENT)
        .env("BAGGAGE", "tenant=blue")
        .output()
        .unwrap();
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
