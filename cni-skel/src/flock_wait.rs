//! Waiting for a file lock another process holds, without polling and
//! without waiting past the caller's bound: a blocking `flock` on a
//! thread of its own, which the kernel ends the moment the holder lets
//! go, while the caller waits for that thread in spans of its choosing.
//!
//! Plugins keep state in files that several of a node's pods change at
//! once (IPAM reservations, a namespace's iptables turns). Trying again
//! after pauses, as both did before, left the lock free while every
//! waiter slept: up to 20 ms a turn, the tail of a burst of 100 ADDs.
//!
//! Go: none; host-local's `go-filemutex` blocks without a bound.

use std::fs::File;
use std::io;
use std::sync::mpsc;
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// A `flock` being waited for on a thread of its own. Dropped before the
/// thread got the lock (the caller gave up), the thread releases it as
/// soon as it gets it; a lock got but not yet taken is released with it.
///
/// ```
/// use std::fs::File;
/// use std::time::Duration;
/// use cni_skel::FlockWait;
/// use nix::fcntl::{Flock, FlockArg};
///
/// let path = std::env::temp_dir().join(format!("flock-wait-doc-{}", std::process::id()));
/// let held = Flock::lock(File::create(&path).unwrap(), FlockArg::LockExclusive).unwrap();
/// let waiting = FlockWait::start(File::open(&path).unwrap(), true).unwrap();
/// assert!(waiting.until(Duration::from_millis(20)).is_none(), "still held");
/// drop(held);
/// let got = waiting.until(Duration::from_secs(5)).expect("let go").unwrap();
/// # drop(got);
/// # std::fs::remove_file(&path).unwrap();
/// ```
#[derive(Debug)]
pub struct FlockWait {
    got: mpsc::Receiver<Result<Flock<File>, Errno>>,
}

impl FlockWait {
    /// Starts waiting for an exclusive (else shared) lock of `file`; the
    /// error is the thread's that could not be started.
    pub fn start(file: File, exclusive: bool) -> io::Result<FlockWait> {
        let arg = match exclusive {
            true => FlockArg::LockExclusive,
            false => FlockArg::LockShared,
        };
        // One place: the thread never waits to hand the lock over.
        let (send, got) = mpsc::sync_channel(1);
        std::thread::Builder::new().spawn(move || {
            let mut file = file;
            let held = loop {
                match Flock::lock(file, arg) {
                    Err((again, Errno::EINTR)) => file = again,
                    other => break other.map_err(|(_, errno)| errno),
                }
            };
            // With the receiver gone the lock is dropped (released) here;
            // sent just before it went, it is dropped with the channel.
            let _ = send.send(held);
        })?;
        Ok(FlockWait { got })
    }

    /// The lock, or the errno of the `flock` that failed, if the thread
    /// got either within `span`; `None` while it still waits.
    pub fn until(&self, span: Duration) -> Option<Result<Flock<File>, Errno>> {
        match self.got.recv_timeout(span) {
            Ok(got) => Some(got),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            // The thread ended without an answer (it panicked).
            Err(mpsc::RecvTimeoutError::Disconnected) => Some(Err(Errno::UnknownErrno)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::time::Instant;

    #[test]
    fn a_wait_given_up_lets_the_lock_go_once_the_thread_gets_it() {
        let path = std::env::temp_dir().join(format!("cni-skel-flock-{}", std::process::id()));
        let open = || {
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .unwrap()
        };
        let first = Flock::lock(open(), FlockArg::LockExclusiveNonblock).unwrap();
        let waiting = FlockWait::start(open(), true).unwrap();
        assert!(
            waiting.until(Duration::from_millis(50)).is_none(),
            "held by the first"
        );
        drop(first);
        let second = waiting
            .until(Duration::from_secs(5))
            .expect("handed over")
            .unwrap();
        // Given up while the lock is held: the thread gets it later and
        // lets it go, so a third can take it.
        drop(FlockWait::start(open(), true).unwrap());
        drop(second);
        let deadline = Instant::now() + Duration::from_secs(5);
        let third = loop {
            match Flock::lock(open(), FlockArg::LockExclusiveNonblock) {
                Ok(held) => break held,
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
                Err((_, e)) => panic!("the given-up waiter kept the lock: {e}"),
            }
        };
        drop(third);
        let _ = std::fs::remove_file(&path);
    }
}
