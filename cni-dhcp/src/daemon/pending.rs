//! Acquisitions under way: an ADD waiting for a server. A DEL or GC of
//! the attachment stops its acquisition at once, and so does the plugin
//! going away (the runtime killed it), so no lease is ever taken for an
//! attachment nobody waits for.

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{recv, MsgFlags};

use crate::client::Stopper;

/// One acquisition under way.
pub(super) struct Pending {
    /// The attachment's client id.
    pub(super) id: String,
    /// The network's name, for GC.
    pub(super) network: String,
    /// The attachment, for GC.
    pub(super) container_id: String,
    pub(super) ifname: String,
    /// Ends the acquisition.
    pub(super) stopper: Stopper,
}

/// The acquisitions under way, each with a ticket of its own (two ADDs of
/// one attachment may wait at once).
#[derive(Default)]
pub(super) struct PendingSet {
    next: u64,
    map: HashMap<u64, Pending>,
}

impl PendingSet {
    /// Registers an acquisition; its ticket says later whether it was
    /// stopped.
    pub(super) fn insert(&mut self, pending: Pending) -> u64 {
        self.next += 1;
        self.map.insert(self.next, pending);
        self.next
    }

    /// Ends the registration of `ticket`: `false` when a DEL or GC
    /// stopped it meanwhile.
    pub(super) fn finish(&mut self, ticket: u64) -> bool {
        self.map.remove(&ticket).is_some()
    }

    /// Stops (and forgets) every acquisition `which` selects.
    pub(super) fn stop(&mut self, which: impl Fn(&Pending) -> bool) {
        self.map.retain(|_, p| {
            if which(p) {
                eprintln!("dhcp daemon: {}: stopping the acquisition under way", p.id);
                p.stopper.stop();
                false
            } else {
                true
            }
        });
    }
}

/// How often the watcher looks whether the acquisition ended.
const WATCH_SLICE_MS: u16 = 200;

/// Watches the plugin's connection while its ADD waits: when the plugin
/// hangs up (it was killed), `stopper` ends the acquisition. The thread
/// ends when `done` is set or the plugin has gone.
pub(super) fn watch_caller(
    connection: UnixStream,
    stopper: Stopper,
    done: Arc<AtomicBool>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        while !done.load(Ordering::SeqCst) {
            let mut fds = [PollFd::new(connection.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(WATCH_SLICE_MS)) {
                Ok(0) => continue,
                Err(nix::errno::Errno::EINTR) => continue,
                Ok(_) => {
                    // Readable: the end of the stream (a plugin that
                    // hung up) unless there are bytes to peek at.
                    let mut byte = [0u8; 1];
                    let peeked = recv(
                        connection.as_raw_fd(),
                        &mut byte,
                        MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
                    );
                    if matches!(peeked, Ok(0) | Err(nix::errno::Errno::ECONNRESET)) {
                        eprintln!("dhcp daemon: the plugin went away, stopping its acquisition");
                        stopper.stop();
                        return;
                    }
                    // Data from the plugin (a next call): not ours to read.
                    std::thread::sleep(std::time::Duration::from_millis(WATCH_SLICE_MS.into()));
                }
                Err(_) => return,
            }
        }
    })
}
