//! Helpers shared by this crate's integration tests.
// Each test file compiles this module and uses part of it.
#![allow(dead_code)]

use std::io::Read;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

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

/// A named pipe a plugin writes one line to when it is ready, so a test
/// acts on a plugin in a known state instead of after a guessed time.
pub struct ReadyFifo {
    path: PathBuf,
}

/// How long a plugin may take to get ready before the test gives up: a
/// bound on a broken plugin, not a guess at a working one's speed.
const READY_WITHIN: Duration = Duration::from_secs(120);

impl ReadyFifo {
    /// A fifo `ready` in `dir`.
    pub fn new(dir: impl AsRef<Path>) -> ReadyFifo {
        let path = dir.as_ref().join("ready");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        ReadyFifo { path }
    }

    /// Its path, for the plugin's script.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the plugin wrote (up to its newline), once it did.
    ///
    /// # Panics
    /// When nothing comes within two minutes (the plugin is broken).
    pub fn wait(&self) -> String {
        // Read-write: opening never blocks, and no writer yet is not EOF.
        let mut fifo = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(&self.path)
            .unwrap();
        let mut line = Vec::new();
        while !line.ends_with(b"\n") {
            let mut fds = [nix::poll::PollFd::new(
                fifo.as_fd(),
                nix::poll::PollFlags::POLLIN,
            )];
            let timeout = nix::poll::PollTimeout::try_from(READY_WITHIN).unwrap();
            let ready = nix::poll::poll(&mut fds, timeout).unwrap();
            assert!(
                ready > 0,
                "the plugin did not get ready within {READY_WITHIN:?}"
            );
            let mut chunk = [0u8; 256];
            match fifo.read(&mut chunk) {
                Ok(n) => line.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("reading {}: {e}", self.path.display()),
            }
        }
        String::from_utf8_lossy(&line).trim().to_owned()
    }
}

/// Whether process `pid` exits (or has exited) within two minutes. A
/// signal is sent at once but takes effect when the process next runs,
/// which on a loaded machine is later: wait for the exit itself (a pidfd
/// becomes readable), not for a guessed time.
pub fn exits(pid: i32) -> bool {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    #[allow(unsafe_code)]
    let fd = unsafe { nix::libc::syscall(nix::libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        // ESRCH: gone already.
        return nix::errno::Errno::last() == nix::errno::Errno::ESRCH;
    }
    // SAFETY: a descriptor just returned to us, owned by nobody else.
    #[allow(unsafe_code)]
    let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let mut fds = [nix::poll::PollFd::new(
        pidfd.as_fd(),
        nix::poll::PollFlags::POLLIN,
    )];
    let timeout = nix::poll::PollTimeout::try_from(READY_WITHIN).unwrap();
    nix::poll::poll(&mut fds, timeout).is_ok_and(|n| n > 0)
}
