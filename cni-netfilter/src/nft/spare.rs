//! The process's spare netfilter socket: one socket of the process's own
//! network namespace, kept open between uses and handed to the next
//! [`NftSocket::open`](super::socket::NftSocket::open) there.
//!
//! Why not simply open a socket per use: the kernel makes the release of
//! every netfilter netlink socket wait for the namespace's pending rule
//! and chain destructions (`nft_rcv_nl_event` flushes them under the
//! namespace's nf_tables commit mutex, an RCU grace period when any are
//! pending). A plugin alone pays that once, but in a burst of pods some
//! other plugin's deletion is nearly always pending, so each socket a
//! plugin opens and closes (a look at the table, a deletion, a look at
//! another table) waits a grace period, holding the mutex every writer
//! of the namespace needs. Keeping one socket per process pays it once,
//! as the reference's one `iptables-restore` process does: when the
//! process exits, or, after a batch that deleted something
//! ([`cni_skel::close_after_exit`], from `NftSocket::send_batch`), in a
//! detached child once a plugin process has answered and exited.
//!
//! Only a socket of the process's own namespace is kept: one opened by a
//! thread that entered a container's namespace would keep that namespace
//! alive for the life of the process. A socket is kept only when its
//! last exchange ended with the kernel's last answer read, so the next
//! user never reads a stale reply.

use std::sync::Mutex;

use netlink_sys::Socket;

use crate::netns_id::NetnsId;

/// A socket set aside, with what its next user continues from.
pub(crate) struct Spare {
    pub(crate) netns: NetnsId,
    pub(crate) socket: Socket,
    /// The last sequence number used, so a late answer to an earlier
    /// request never matches a new one.
    pub(crate) seq: u32,
    pub(crate) buffer: Vec<u8>,
}

static SPARE: Mutex<Option<Spare>> = Mutex::new(None);

/// The calling thread's namespace when it is the process's own (the
/// thread group leader's), else `None`: a socket opened there may be kept.
///
/// The process's namespace is looked up once (a path walk through
/// `/proc` per socket otherwise). Should the leader move later, the
/// answer errs only towards keeping a socket of the namespace the
/// process started in, which outlives it anyway.
pub(crate) fn own_namespace() -> Option<NetnsId> {
    static PROCESS: std::sync::OnceLock<Option<NetnsId>> = std::sync::OnceLock::new();
    let thread = NetnsId::of_thread()?;
    let process = (*PROCESS.get_or_init(|| NetnsId::of("/proc/self/ns/net")))?;
    (process == thread).then_some(thread)
}

/// The spare socket of `netns`, if one is kept.
pub(crate) fn take(netns: NetnsId) -> Option<Spare> {
    let mut slot = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    match slot.as_ref() {
        Some(spare) if spare.netns == netns => slot.take(),
        _ => None,
    }
}

/// Keeps `spare` for the next user, unless one is kept already: then it
/// is closed, after the lock is let go (a close can wait for the kernel).
pub(crate) fn keep(spare: Spare) {
    let refused = {
        let mut slot = SPARE.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            Some(kept) if kept.netns == spare.netns => Some(spare),
            // Another namespace's (the process moved): this one replaces it.
            _ => slot.replace(spare),
        }
    };
    drop(refused);
}
