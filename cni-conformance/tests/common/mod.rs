//! Helpers shared by this crate's integration tests.
// Each test file compiles this module and uses part of it.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// A plugin that is a shell script: `body` after `#!/bin/sh`, in `dir`.
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A named pipe `ready` in `dir`, for a plugin to say it is ready on.
pub fn ready_fifo(dir: &Path) -> PathBuf {
    let path = dir.join("ready");
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    path
}

/// What a plugin wrote to `fifo` once it closed it; panics when nothing
/// comes within two minutes (a bound on a broken plugin, not a guess at
/// a working one's speed).
pub fn wait_ready(fifo: &Path) -> String {
    let (tx, rx) = mpsc::channel();
    let path = fifo.to_owned();
    // Opening blocks until the plugin opens it to write; reading ends
    // when the plugin closes it.
    std::thread::spawn(move || tx.send(std::fs::read_to_string(path)));
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the plugin did not get ready within two minutes")
        .expect("reading the fifo")
}

/// Whether process `pid` is gone (not even a zombie is left).
pub fn is_gone(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) == Err(nix::errno::Errno::ESRCH)
}
