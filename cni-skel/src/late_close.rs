//! Closes the runtime need not wait for: descriptors whose last close
//! makes the kernel wait, closed by a detached child once the plugin has
//! answered and exited.
//!
//! Why: the release of a netfilter netlink socket after a batch that
//! deleted rules or chains waits for the kernel to retire them
//! (`nft_rcv_nl_event` flushes the namespace's pending destructions, an
//! RCU grace period, 9-14 ms measured on kernel 6.18). The rules are out
//! of the ruleset once the batch is committed, before the plugin answers;
//! the wait is the kernel's bookkeeping. A process pays it in its exit,
//! before the runtime sees the exit, so every DEL that deleted rules
//! would take that much longer than its work. The reference pays it too,
//! inside each `iptables` process it waits for.
//!
//! How: a library that holds such a descriptor hands it over with
//! [`close_after_exit`]; when the entry point ([`run`](crate::run),
//! [`plugin_main!`](crate::plugin_main)) exits, [`exit`] forks a child
//! that closes every other descriptor at once (stdout first, so the
//! runtime reads the answer's end; any lock file too), waits for the
//! plugin's exit, then closes what was handed over and exits. The plugin's
//! own copies then are never the last, so its exit does not wait. A
//! SIGKILL of either process changes nothing the next plugin relies on:
//! the kernel closes what is left when the process dies, paying the same
//! wait there.
//!
//! What it buys, and what not: the wait leaves the plugin, not the node.
//! The child's release still flushes under the namespace's nf_tables
//! commit mutex, so the next plugin that needs that mutex (a commit, or a
//! link deletion, which nf_tables' netdevice notifier takes it for) waits
//! for it as before, and in a burst the releases still follow one
//! another. The last deleting plugin of a list is the one that gains
//! (Podman's list, whose bridge DEL deletes its masquerading last:
//! BENCHMARKS.md).
//!
//! Only a process started through the entry point hands anything over:
//! in a test or a long-lived program [`close_after_exit`] does nothing
//! and the descriptors close as usual.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Set by the entry point: only then is there an exit to hand closes to.
static AT_ENTRY_POINT: AtomicBool = AtomicBool::new(false);
/// Copies of the descriptors handed over, closed by the child, with the
/// identity (device, inode) of the file each one is of.
static HANDED: Mutex<Vec<(OwnedFd, FileId)>> = Mutex::new(Vec::new());
/// A file's device and inode: which file a descriptor is of.
type FileId = (nix::libc::dev_t, nix::libc::ino_t);
/// The most descriptors kept for the child: a bound on what a caller
/// that hands one over per request can accumulate.
const MAX_HANDED: usize = 64;
/// How long the child waits for the plugin to exit before closing anyway.
const PARENT_EXIT_WAIT: Duration = Duration::from_secs(10);
/// How long the plugin waits for the child to close what it must not
/// hold (it takes microseconds).
const CHILD_CLEAR_WAIT: Duration = Duration::from_secs(1);

/// Marks this process as one that exits through [`exit`]; called by the
/// entry point before it dispatches.
pub(crate) fn enable() {
    AT_ENTRY_POINT.store(true, Ordering::Relaxed);
}

/// Hands the last close of `fd`'s open file to a process that outlives
/// this one, so the runtime does not wait for it: the file stays open
/// until shortly after this process exits. Returns whether it was taken:
/// not when the process was not started through the entry point (a test,
/// a program that calls plugins in-process), when the descriptor cannot
/// be copied, or past a bound of 64 descriptors. Handing the same socket
/// over twice is harmless.
///
/// For a descriptor whose release makes the kernel wait after the work
/// the plugin reports is done: a netfilter netlink socket after rule
/// deletions (see the module's source for why). Never for a lock: a
/// lock must be let go when the plugin exits, and is.
pub fn close_after_exit(fd: BorrowedFd<'_>) -> bool {
    if !AT_ENTRY_POINT.load(Ordering::Relaxed) {
        return false;
    }
    let Ok(stat) = nix::sys::stat::fstat(fd.as_raw_fd()) else {
        return false;
    };
    let file: FileId = (stat.st_dev, stat.st_ino);
    let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
    if handed.iter().any(|(_, of)| *of == file) {
        return true;
    }
    if handed.len() >= MAX_HANDED {
        return false;
    }
    match fd.try_clone_to_owned() {
        Ok(copy) => {
            handed.push((copy, file));
            true
        }
        Err(_) => false,
    }
}

/// Exits the process with `code`, first flushing stdout and handing the
/// closes given to [`close_after_exit`] to a detached child. What the
/// entry point calls; a plugin's own `main` that does not use
/// [`plugin_main!`](crate::plugin_main) should end with it too.
pub fn exit(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let handed = std::mem::take(&mut *HANDED.lock().unwrap_or_else(|e| e.into_inner()));
    if !handed.is_empty() {
        hand_over(handed.into_iter().map(|(fd, _)| fd).collect());
    }
    std::process::exit(code)
}

/// Forks the child that closes `handed` once this process has exited;
/// on any failure the closes stay this process's (it pays the wait).
/// Returns once the child holds nothing else: no lock, no stdout.
fn hand_over(handed: Vec<OwnedFd>) {
    use nix::fcntl::OFlag;
    use nix::unistd::{fork, pipe2, ForkResult};
    // The child learns of this process's exit as the end of one pipe, and
    // tells it has closed everything else by closing the other.
    let Ok((exited, exiting)) = pipe2(OFlag::O_CLOEXEC) else {
        return;
    };
    let Ok((cleared, clearing)) = pipe2(OFlag::O_CLOEXEC) else {
        return;
    };
    let mut keep: Vec<RawFd> = handed.iter().map(AsRawFd::as_raw_fd).collect();
    let (exited_fd, clearing_fd) = (exited.as_raw_fd(), clearing.as_raw_fd());
    keep.extend([exited_fd, clearing_fd]);
    keep.sort_unstable();
    // SAFETY: the child calls only async-signal-safe functions (close,
    // close_range, poll, _exit) on memory it already owns, so what other
    // threads held at the fork (the allocator's locks) never matters; it
    // never returns into the plugin.
    #[allow(unsafe_code)]
    match unsafe { fork() } {
        Ok(ForkResult::Child) => child(&keep, exited_fd, clearing_fd),
        Ok(ForkResult::Parent { .. }) => {
            // This process's copies are not the last now: closing them,
            // here or at exit, does not wait.
            drop(handed);
            drop((exited, clearing));
            wait_for_end(cleared.as_raw_fd(), CHILD_CLEAR_WAIT);
            // `exiting` closes with the process.
            std::mem::forget(exiting);
        }
        Err(_) => {}
    }
}

/// The detached child: closes every descriptor but `keep` (stdout and
/// stderr among them, so the runtime reads to their end; a lock file, so
/// it is let go with the plugin), says so by closing `clearing`, waits
/// for the plugin to exit (`exited` ends), then closes `keep` and exits.
fn child(keep: &[RawFd], exited: RawFd, clearing: RawFd) -> ! {
    let mut from: RawFd = 0;
    for &fd in keep {
        close_range(from, fd - 1);
        from = fd + 1;
    }
    close_range(from, RawFd::MAX);
    // SAFETY: close, poll and _exit are async-signal-safe; the child owns
    // its copies of `keep`.
    #[allow(unsafe_code)]
    unsafe {
        nix::libc::close(clearing);
        wait_for_end(exited, PARENT_EXIT_WAIT);
        for &fd in keep {
            nix::libc::close(fd);
        }
        nix::libc::_exit(0)
    }
}

/// Waits until every writer of the pipe `fd` reads from has closed it, at
/// most `deadline`; async-signal-safe (one `poll`, retried on a signal).
fn wait_for_end(fd: RawFd, deadline: Duration) {
    let mut fds = [nix::libc::pollfd {
        fd,
        events: nix::libc::POLLIN,
        revents: 0,
    }];
    let millis = deadline.as_millis() as nix::libc::c_int;
    // SAFETY: poll on one descriptor this process owns, into a local array.
    #[allow(unsafe_code)]
    unsafe {
        while nix::libc::poll(fds.as_mut_ptr(), 1, millis) < 0
            && *nix::libc::__errno_location() == nix::libc::EINTR
        {}
    }
}

/// Closes descriptors `from..=to` (none when `to < from`): the
/// `close_range` system call, or one `close` at a time up to 4096 on a
/// kernel without it (before 5.9).
fn close_range(from: RawFd, to: RawFd) {
    if to < from {
        return;
    }
    // SAFETY: closing descriptors is async-signal-safe; the child owns
    // every descriptor it inherited.
    #[allow(unsafe_code)]
    unsafe {
        let done = nix::libc::syscall(nix::libc::SYS_close_range, from as u32, to as u32, 0u32);
        if done != 0 {
            for fd in from..=to.min(4095) {
                nix::libc::close(fd);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    // One test: the switch and the list are the process's.
    #[test]
    fn only_a_process_at_the_entry_point_hands_closes_over_and_each_file_once() {
        let (a, b) = (
            std::fs::File::open("/dev/null").unwrap(),
            std::fs::File::open("/").unwrap(),
        );
        assert!(
            !close_after_exit(a.as_fd()),
            "taken outside the entry point"
        );
        assert!(HANDED.lock().unwrap().is_empty());

        enable();
        assert!(close_after_exit(a.as_fd()));
        // Another descriptor of the same open file is the same file.
        let a_again = a.try_clone().unwrap();
        assert!(close_after_exit(a_again.as_fd()));
        assert!(close_after_exit(b.as_fd()));
        assert_eq!(HANDED.lock().unwrap().len(), 2);
        HANDED.lock().unwrap().clear();
    }
}
