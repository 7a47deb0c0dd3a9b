//! One writer at a time among our own processes in a network namespace,
//! for the iptables transactions that list rules and then change them;
//! waited for until a deadline, past which nothing is changed.
//!
//! The nftables backend takes no lock: a batch built from a listing is
//! tied to the ruleset generation it was listed at, and the kernel
//! refuses a stale one; a deletion by recorded handle needs no listing
//! and fails by itself when a rule is gone (`crate::nft::NftBackend`).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use cni_skel::FlockWait;
use nix::fcntl::{Flock, FlockArg};

use crate::netns_id::NetnsId;
use crate::{Family, FilterError};

/// The lock file of our iptables list-then-restore transactions in the
/// host's network namespace (the one of pid 1), the name every version
/// of ours has used, so an older one running beside this one still takes
/// turns with it. Not `/run/xtables.lock`: `iptables-legacy-restore -w`
/// takes that one itself. It serializes the IPv4 tables' transactions;
/// the IPv6 tables have [`IP6TABLES_LOCK`], so the two families of one
/// plugin run side by side. In any other namespace the lock is
/// `/run/cni-netfilter-iptables-<inode of the namespace>.lock`
/// (`ip6tables` for IPv6): writers in different namespaces never wait
/// for each other.
pub const IPTABLES_LOCK: &str = "/run/cni-netfilter-iptables.lock";

/// The lock file of our ip6tables list-then-restore transactions in the
/// host's namespace: the IPv6 twin of [`IPTABLES_LOCK`]. A family's
/// listing says nothing of the other family's tables, so one lock each is
/// enough.
pub const IP6TABLES_LOCK: &str = "/run/cni-netfilter-ip6tables.lock";

/// How long a transaction waits for our lock of its namespace while one
/// and the same process holds it: far above one save and restore
/// (milliseconds; a second for portmap's 4,096 mappings), so only a stuck
/// holder makes it give up, with [`FilterError::Busy`] (CNI code 11).
/// While the turns move (a burst of pods taking it one after the other)
/// it waits on, up to [`MOST_DEADLINES`] times as long in all.
pub const LOCK_DEADLINE: Duration = Duration::from_secs(10);

/// However the turns move, no wait for our lock lasts longer than this
/// many deadlines: every wait has an end.
pub const MOST_DEADLINES: u32 = 6;

/// How often a waiter looks at who holds the lock (`/proc/locks`).
const HOLDER_LOOK: Duration = Duration::from_millis(250);

/// The lock file of `family`'s iptables transactions in the calling
/// thread's network namespace.
pub fn lock_path(family: Family) -> String {
    let tool = match family {
        Family::Ip6 => "ip6tables",
        _ => "iptables",
    };
    match NetnsId::of_thread() {
        Some(ours) if Some(ours) != NetnsId::of("/proc/1/ns/net") => {
            format!("/run/cni-netfilter-{tool}-{}.lock", ours.ino())
        }
        _ => format!("/run/cni-netfilter-{tool}.lock"),
    }
}

/// A lock taken by [`lock`]; a namespace's own lock file is removed when
/// it is released, so none is left per namespace.
pub(crate) struct Turn {
    file: Option<Flock<File>>,
    remove: Option<String>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        // Removed while held: whoever opened it meanwhile sees that it is
        // gone once it gets it, and opens the path afresh.
        if let Some(path) = self.remove.take() {
            let _ = std::fs::remove_file(path);
        }
        drop(self.file.take());
    }
}

/// `family`'s lock in the calling thread's namespace, waited for until
/// one process has held it for `deadline` (or the turns of others took
/// [`MOST_DEADLINES`] times that): then [`FilterError::Busy`] names the
/// file and the process holding it. No lock (and no wait) when the file
/// cannot be opened (a read-only `/run`), which leaves only the caller's
/// retry.
///
/// A held lock is waited for by a blocking `flock` on a thread of its
/// own ([`cni_skel::FlockWait`]), so the wait ends the moment the holder
/// lets go; this thread looks at the holder every [`HOLDER_LOOK`]
/// meanwhile. (Trying again
/// after growing pauses, as before, left the lock free for up to 20 ms
/// at each turn: in a burst of 100 pods the turns queued behind those
/// pauses, and the ADDs of Podman's list took twice as long.) A wait
/// given up leaves the waiting thread to release what it gets at once.
///
/// Measured (bench/process/burst.sh, 100 pods of Podman's list at once
/// on 2 cores in a slow hour): 300 turns of a save and a restore each
/// kept one ADD waiting past 10 s in all, though no holder was stuck.
pub(crate) fn lock(family: Family, deadline: Duration) -> Result<Turn, FilterError> {
    let path = lock_path(family);
    let shared = path == IPTABLES_LOCK || path == IP6TABLES_LOCK;
    let started = Instant::now();
    // When the holder last changed, and who it was.
    let (mut moved, mut seen) = (started, None);
    loop {
        let Ok(file) = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
        else {
            return Ok(Turn {
                file: None,
                remove: None,
            });
        };
        let opened = file.metadata().map(|m| (m.dev(), m.ino())).ok();
        let held = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(held) => held,
            Err((file, nix::errno::Errno::EWOULDBLOCK)) => {
                let waiting = FlockWait::start(file, true).map_err(|e| FilterError::Busy {
                    what: format!("{path} is held, and no thread could wait for it: {e}"),
                })?;
                loop {
                    match waiting.until(HOLDER_LOOK) {
                        Some(Ok(held)) => break held,
                        Some(Err(_)) => {
                            return Ok(Turn {
                                file: None,
                                remove: None,
                            })
                        }
                        None => {}
                    }
                    let holder = || opened.and_then(|(dev, ino)| cni_skel::flock_holder(dev, ino));
                    let now = holder();
                    if now.is_some() && now != seen {
                        if seen.is_some() {
                            moved = Instant::now();
                        }
                        seen = now;
                    }
                    let ahead = |since: Instant| since.elapsed() + HOLDER_LOOK;
                    if let Some(stuck) = give_up(ahead(started), ahead(moved), deadline) {
                        // Dropping `waiting` gives the wait up.
                        return Err(busy(&path, stuck, deadline, holder()));
                    }
                }
            }
            Err(_) => {
                return Ok(Turn {
                    file: None,
                    remove: None,
                })
            }
        };
        let now = std::fs::metadata(&path).map(|m| (m.dev(), m.ino())).ok();
        if shared || now == opened {
            let remove = (!shared).then(|| path.clone());
            return Ok(Turn {
                file: Some(held),
                remove,
            });
        }
        // Its holder removed it before we got it: open it again.
    }
}

/// Whether a wait that will have lasted `waited`, the holder unchanged
/// for `unchanged` of it, is given up: `Some(true)` when one holder kept
/// the lock past `deadline`, `Some(false)` when the turns of others took
/// past [`MOST_DEADLINES`] deadlines.
fn give_up(waited: Duration, unchanged: Duration, deadline: Duration) -> Option<bool> {
    if unchanged > deadline {
        Some(true)
    } else if waited > deadline * MOST_DEADLINES {
        Some(false)
    } else {
        None
    }
}

/// The error of a wait given up: `stuck` when one holder kept the lock
/// past `deadline`, else the turns of others took too long.
fn busy(path: &str, stuck: bool, deadline: Duration, holder: Option<u32>) -> FilterError {
    let name = holder.map_or("another process".into(), |p| format!("process {p}"));
    let what = if stuck {
        format!(
            "{path} was held by {name} for more than {} s: nothing was changed",
            deadline.as_secs_f32()
        )
    } else {
        format!(
            "{path} was taken in turn by other processes for more than {} s (now {name}): \
             nothing was changed",
            (deadline * MOST_DEADLINES).as_secs_f32(),
        )
    };
    FilterError::Busy { what }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_ends_when_one_holder_keeps_the_lock_past_the_deadline_or_the_turns_take_too_long() {
        let s = Duration::from_secs;
        // One holder all along: given up past the deadline, as stuck.
        assert_eq!(give_up(s(9), s(9), s(10)), None);
        assert_eq!(give_up(s(11), s(11), s(10)), Some(true));
        // Turns moving from holder to holder: waited on, up to the bound.
        assert_eq!(give_up(s(45), s(3), s(10)), None);
        assert_eq!(give_up(s(61), s(3), s(10)), Some(false));
    }
}
