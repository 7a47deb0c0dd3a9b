//! Closes the runtime need not wait for: descriptors whose last close
//! makes the kernel wait, closed by a detached child once the plugin has
//! answered and exited, and when that close stalls no one.
//!
//! Why: the release of a netfilter netlink socket after a batch that
//! deleted rules or chains waits for the kernel to retire them
//! (`nft_rcv_nl_event` flushes the namespace's pending destructions, an
//! RCU grace period, 9-14 ms measured on kernel 6.18), and it waits
//! holding the namespace's nf_tables commit mutex, which every other
//! writer's commit needs. The rules are out of the ruleset once the batch
//! is committed, before the plugin answers; the wait is the kernel's
//! bookkeeping. Paid in each deleting plugin's exit, it made every DEL
//! that much longer; and in a burst, where some pod's deletion is always
//! pending, each release held up every other pod's commit for a grace
//! period, so a burst's DEL took one grace period per deleting plugin,
//! one after another. The reference pays the same inside each `iptables`
//! process it waits for.
//!
//! How: a library that holds such a descriptor hands it over with
//! [`close_after_exit`]; when the entry point ([`run`](crate::run),
//! [`plugin_main!`](crate::plugin_main)) exits, [`exit`] closes every
//! other descriptor (stdout, so the runtime reads the answer's end as
//! the plugin exits; any lock file), then forks a child that waits for
//! the plugin's exit. Given a probe (for a netfilter socket, a request
//! for the ruleset's generation), the child then also waits until the
//! answer to it has not changed for [`QUIET_PERIOD`]: no commit in the
//! namespace for that long, so the release finds nothing pending and
//! holds the mutex for no time; at most [`QUIET_DEADLINE`] after the
//! plugin's exit, the child closes anyway. The plugin's own copies are
//! never the last, so its exit does not wait. A SIGKILL of either
//! process changes nothing the next plugin relies on: the kernel closes
//! what is left when the process dies, paying the same wait there.
//!
//! What it costs: one `fork` per deleting plugin, and a process that
//! lives on after it, asleep but for one request every
//! [`QUIET_PERIOD`], for up to [`QUIET_DEADLINE`] (in a burst of pods,
//! one per deleting plugin until the burst is over).
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
/// The descriptors handed over, closed by the child.
static HANDED: Mutex<Vec<Handed>> = Mutex::new(Vec::new());
/// The most descriptors kept for the child: a bound on what a caller
/// that hands one over per request can accumulate.
const MAX_HANDED: usize = 64;
/// How long the child waits for the plugin to exit before closing anyway.
const PARENT_EXIT_WAIT: Duration = Duration::from_secs(10);
/// How long a probe's answer must stay the same before the child closes:
/// several grace periods, so what the last change left is retired.
const QUIET_PERIOD: Duration = Duration::from_millis(50);
/// The longest the child waits for quiet after the plugin's exit: past a
/// burst of a hundred pods; a node that never goes quiet for
/// [`QUIET_PERIOD`] gets the closes as before, this much later.
const QUIET_DEADLINE: Duration = Duration::from_secs(2);
/// The most bytes of a probe's answer compared.
const PROBE_ANSWER: usize = 512;

/// One descriptor handed over: a copy of it, the file it is of, and the
/// probe whose answer must settle before it is closed.
struct Handed {
    fd: OwnedFd,
    file: FileId,
    probe: Option<Vec<u8>>,
}

/// A file's device and inode: which file a descriptor is of.
type FileId = (nix::libc::dev_t, nix::libc::ino_t);

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
/// be copied, or past a bound of 64 descriptors. Handing the same file
/// over again changes nothing.
///
/// With `until_quiet`, a request that `fd` (a socket) answers with one
/// datagram, the close also waits until that answer has stayed the same
/// for 50 ms (at most 2 s after the exit).
///
/// For a descriptor whose release makes the kernel wait after the work
/// the plugin reports is done: a netfilter netlink socket after rule
/// deletions (the module's source says why). Never for a lock: a lock
/// must be let go when the plugin exits, and is.
pub fn close_after_exit(fd: BorrowedFd<'_>, until_quiet: Option<&[u8]>) -> bool {
    if !AT_ENTRY_POINT.load(Ordering::Relaxed) {
        return false;
    }
    let Ok(stat) = nix::sys::stat::fstat(fd.as_raw_fd()) else {
        return false;
    };
    let file: FileId = (stat.st_dev, stat.st_ino);
    let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
    if handed.iter().any(|h| h.file == file) {
        return true;
    }
    if handed.len() >= MAX_HANDED {
        return false;
    }
    match fd.try_clone_to_owned() {
        Ok(copy) => {
            handed.push(Handed {
                fd: copy,
                file,
                probe: until_quiet.map(<[u8]>::to_vec),
            });
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
        hand_over(handed);
    }
    std::process::exit(code)
}

/// Forks the child that closes `handed` once this process has exited;
/// on any failure the closes stay this process's (it pays the wait).
///
/// Every other descriptor is closed first, here: stdout and stderr (the
/// runtime reads to their end as soon as this process exits, never
/// waiting for the child), a lock (let go now, as at exit). The child then
/// has nothing else to close, so this process never waits for it to run.
fn hand_over(handed: Vec<Handed>) {
    use nix::fcntl::OFlag;
    use nix::unistd::{fork, pipe2, ForkResult};
    // The child learns of this process's exit as the end of this pipe.
    let Ok((exited, exiting)) = pipe2(OFlag::O_CLOEXEC) else {
        return;
    };
    let mut keep: Vec<RawFd> = handed.iter().map(|h| h.fd.as_raw_fd()).collect();
    keep.extend([exited.as_raw_fd(), exiting.as_raw_fd()]);
    keep.sort_unstable();
    // The process is ending: what it still holds it would let go at exit.
    close_all_but(&keep);
    // SAFETY: the child calls only async-signal-safe functions (close,
    // poll, send, recv, clock_gettime, nanosleep, _exit) on memory it
    // already owns, so what other threads held at the fork (the
    // allocator's locks) never matters; it never returns into the plugin.
    #[allow(unsafe_code)]
    match unsafe { fork() } {
        Ok(ForkResult::Child) => child(&handed, &keep, exited.as_raw_fd(), exiting.as_raw_fd()),
        Ok(ForkResult::Parent { .. }) => {
            // This process's copies are not the last now: closing them,
            // here or at exit, does not wait.
            drop(handed);
            drop(exited);
            // `exiting` closes with the process.
            std::mem::forget(exiting);
        }
        Err(_) => {}
    }
}

/// The detached child: lets go of the pipe's writing end, waits for the
/// plugin to exit (`exited` ends) and for each probe's answer to settle,
/// then closes `keep` and exits.
fn child(handed: &[Handed], keep: &[RawFd], exited: RawFd, exiting: RawFd) -> ! {
    // SAFETY: close and _exit are async-signal-safe; the child owns its
    // copies of `keep`.
    #[allow(unsafe_code)]
    unsafe {
        nix::libc::close(exiting);
        wait_for_end(exited, PARENT_EXIT_WAIT);
        let until = now().saturating_add(QUIET_DEADLINE);
        for h in handed {
            if let Some(probe) = &h.probe {
                wait_for_quiet(h.fd.as_raw_fd(), probe, until);
            }
        }
        for &fd in keep {
            if fd != exiting {
                nix::libc::close(fd);
            }
        }
        nix::libc::_exit(0)
    }
}

/// Closes every descriptor but `keep` (sorted).
fn close_all_but(keep: &[RawFd]) {
    let mut from: RawFd = 0;
    for &fd in keep {
        close_range(from, fd - 1);
        from = fd + 1;
    }
    close_range(from, RawFd::MAX);
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

/// Sends `probe` on the socket `fd` every [`QUIET_PERIOD`] until two
/// answers in a row are the same, or `until` (on the monotonic clock)
/// passes, or the socket fails. Async-signal-safe: system calls on
/// buffers on the stack.
fn wait_for_quiet(fd: RawFd, probe: &[u8], until: Duration) {
    use nix::libc;
    let (mut last, mut answer) = ([0u8; PROBE_ANSWER], [0u8; PROBE_ANSWER]);
    let mut last_len: Option<usize> = None;
    while now() < until {
        // SAFETY: send, poll and recv on a socket the child owns, from and
        // into buffers on its stack, within their lengths.
        #[allow(unsafe_code)]
        let len = unsafe {
            let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
            if libc::send(fd, probe.as_ptr().cast(), probe.len(), flags) < 0 {
                return;
            }
            let mut fds = [libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            }];
            if libc::poll(fds.as_mut_ptr(), 1, 1000) != 1 {
                return;
            }
            libc::recv(
                fd,
                answer.as_mut_ptr().cast(),
                answer.len(),
                libc::MSG_DONTWAIT,
            )
        };
        let Ok(len) = usize::try_from(len) else {
            return;
        };
        if len == 0 {
            return;
        }
        if last_len == Some(len) && last[..len] == answer[..len] {
            return;
        }
        last[..len].copy_from_slice(&answer[..len]);
        last_len = Some(len);
        sleep(QUIET_PERIOD);
    }
}

/// The monotonic clock; async-signal-safe.
fn now() -> Duration {
    let mut ts = nix::libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime into a local timespec.
    #[allow(unsafe_code)]
    unsafe {
        nix::libc::clock_gettime(nix::libc::CLOCK_MONOTONIC, &mut ts);
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Sleeps for `span` (less if a signal comes); async-signal-safe.
fn sleep(span: Duration) {
    let ts = nix::libc::timespec {
        tv_sec: span.as_secs() as _,
        tv_nsec: span.subsec_nanos() as nix::libc::c_long,
    };
    // SAFETY: nanosleep from a local timespec.
    #[allow(unsafe_code)]
    unsafe {
        nix::libc::nanosleep(&ts, std::ptr::null_mut());
    }
}

/// Closes descriptors `from..=to` (none when `to < from`): the
/// `close_range` system call, or one `close` at a time up to 4096 on a
/// kernel without it (before 5.9).
fn close_range(from: RawFd, to: RawFd) {
    if to < from {
        return;
    }
    // SAFETY: closing descriptors is async-signal-safe; the process is
    // ending, and what it still holds it would let go at exit.
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
            !close_after_exit(a.as_fd(), None),
            "taken outside the entry point"
        );
        assert!(HANDED.lock().unwrap().is_empty());

        enable();
        assert!(close_after_exit(a.as_fd(), None));
        // Another descriptor of the same open file is the same file.
        let a_again = a.try_clone().unwrap();
        assert!(close_after_exit(a_again.as_fd(), Some(b"probe")));
        assert!(close_after_exit(b.as_fd(), None));
        assert_eq!(HANDED.lock().unwrap().len(), 2);
        HANDED.lock().unwrap().clear();
    }
}
