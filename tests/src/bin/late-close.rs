//! `late-close`: a test plugin whose ADD holds a lock and hands a FIFO's
//! write end to `cni_skel::close_after_exit`, as a netfilter socket is
//! handed after rule deletions. Tests run it as a process to check what a
//! runtime and the node see: the answer and exit as usual, the lock let
//! go with the process, the handed file closed shortly after; with a
//! probe, once the answer to it stops changing.
#![no_main]

use std::os::fd::{AsFd, AsRawFd};

use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::NetConf;

/// Where the lock file and the FIFO are, and the test's datagram socket
/// that answers the probe, if the close is to wait for quiet.
#[derive(serde::Deserialize)]
struct Config {
    lock: std::path::PathBuf,
    fifo: std::path::PathBuf,
    #[serde(default)]
    probe: Option<Probe>,
}

/// The paths of a datagram socket pair: ours, and the test's.
#[derive(serde::Deserialize)]
struct Probe {
    bind: std::path::PathBuf,
    peer: std::path::PathBuf,
}

struct LateClose;

impl Plugin for LateClose {
    type Config = NetConf<Config>;
    const CHECK: CheckSupport = CheckSupport::Unsupported;

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let lock = std::fs::File::create(&req.config.plugin.lock)?;
        // SAFETY: flock on a descriptor this function owns.
        #[allow(unsafe_code)]
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        // The test has the read end open, so this open does not block.
        let fifo = std::fs::OpenOptions::new()
            .write(true)
            .open(&req.config.plugin.fifo)?;
        let mut handed = cni_skel::close_after_exit(fifo.as_fd(), None);
        if let Some(probe) = &req.config.plugin.probe {
            let socket = std::os::unix::net::UnixDatagram::bind(&probe.bind)?;
            socket.connect(&probe.peer)?;
            handed &= cni_skel::close_after_exit(socket.as_fd(), Some(b"what now?"));
            std::mem::forget(socket);
        }
        // All stay open until the process exits, as a plugin's socket and
        // lock may.
        std::mem::forget((lock, fifo));
        Ok(Reply::Raw {
            stdout: serde_json::to_vec(&serde_json::json!({ "handed": handed }))?,
            exit_code: 0,
        })
    }

    fn del(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }
}

cni_skel::plugin_main!(
    LateClose,
    cni_version::PluginInfo::all(),
    "CNI late-close test plugin"
);
