//! Helpers shared by this crate's integration tests.
// Each test file compiles this module and uses part of it.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use cni_invoke::RuntimeConf;

/// A plugin that is a shell script: `body` after `#!/bin/sh`, in `dir`.
pub fn script(dir: impl AsRef<Path>, name: &str, body: &str) -> PathBuf {
    let path = dir.as_ref().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// An attachment whose namespace need not exist (script plugins never
/// enter it).
pub fn attachment() -> RuntimeConf {
    RuntimeConf {
        container_id: "c1".into(),
        netns: "/var/run/netns/none".into(),
        ifname: "eth0".into(),
        ..RuntimeConf::default()
    }
}
