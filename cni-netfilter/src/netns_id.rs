//! A network namespace's identity, its nsfs device and inode (as cni-net's
//! `NetnsId`, which this crate does not depend on): what the host lock's
//! file name and the kept netfilter socket are tied to.

use std::os::unix::fs::MetadataExt;

/// A network namespace, by its nsfs device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NetnsId {
    dev: u64,
    ino: u64,
}

impl NetnsId {
    /// The namespace `path` (`/proc/.../ns/net`) names, if it can be read.
    pub(crate) fn of(path: &str) -> Option<NetnsId> {
        std::fs::metadata(path).ok().map(|m| NetnsId {
            dev: m.dev(),
            ino: m.ino(),
        })
    }

    /// The calling thread's namespace.
    pub(crate) fn of_thread() -> Option<NetnsId> {
        NetnsId::of("/proc/thread-self/ns/net")
    }

    /// The nsfs inode number.
    pub(crate) fn ino(self) -> u64 {
        self.ino
    }
}
