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
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use cni_types::Error;
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

/// `file` (opened from `path`) `flock`ed, exclusively or shared, within
/// `timeout`; else code 11 naming `path` and the process holding the lock,
/// so that a stuck holder fails the runtime's call instead of hanging it.
///
/// One try without waiting first; when another process holds the lock,
/// [`FlockWait`] waits for it, ending the moment the holder lets go. A
/// wait past the deadline is given up: its thread lets the lock go as
/// soon as it gets it. The caller has changed nothing yet when it gets
/// the error, which says so.
///
/// ```
/// use std::fs::File;
/// use std::time::Duration;
/// use cni_skel::flock_within;
/// use nix::fcntl::{Flock, FlockArg};
///
/// let path = std::env::temp_dir().join(format!("flock-within-doc-{}", std::process::id()));
/// let held = Flock::lock(File::create(&path).unwrap(), FlockArg::LockExclusive).unwrap();
/// let short = Duration::from_millis(50);
/// let e = flock_within(File::open(&path).unwrap(), true, &path, short).unwrap_err();
/// assert_eq!(e.code, cni_types::Code::TRY_AGAIN_LATER);
/// assert!(e.msg.contains(&format!("process {}", std::process::id())), "{}", e.msg);
/// drop(held);
/// let long = Duration::from_secs(10);
/// assert!(flock_within(File::open(&path).unwrap(), true, &path, long).is_ok());
/// # std::fs::remove_file(&path).unwrap();
/// ```
///
/// Go: none; host-local's `go-filemutex` and sbr's lock block without a
/// bound.
pub fn flock_within(
    file: File,
    exclusive: bool,
    path: &Path,
    timeout: Duration,
) -> Result<Flock<File>, Error> {
    let now = match exclusive {
        true => FlockArg::LockExclusiveNonblock,
        false => FlockArg::LockSharedNonblock,
    };
    let failed = |errno: Errno| Error::io("lock", path, io::Error::from_raw_os_error(errno as i32));
    let file = match Flock::lock(file, now) {
        Ok(lock) => return Ok(lock),
        Err((file, Errno::EWOULDBLOCK | Errno::EINTR)) => file,
        Err((_, errno)) => return Err(failed(errno)),
    };
    let identity = file.metadata().map(|m| (m.dev(), m.ino())).ok();
    let waiting = FlockWait::start(file, exclusive)
        .map_err(|e| Error::io("start a thread to wait for", path, e))?;
    match waiting.until(timeout) {
        Some(Ok(lock)) => Ok(lock),
        Some(Err(errno)) => Err(failed(errno)),
        None => {
            let holder = identity.and_then(|(dev, ino)| flock_holder(dev, ino));
            let holder = holder.map_or("another process".into(), |pid| format!("process {pid}"));
            Err(Error::try_again_later(
                format!(
                    "timed out waiting for the lock {}, held by {holder}",
                    path.display()
                ),
                format!(
                    "{holder} held it for more than {timeout:?}; nothing was changed; if it \
                     is stuck, ending it frees the lock"
                ),
            ))
        }
    }
}

/// The process holding a `flock` on the file of this device and inode,
/// from `/proc/locks` (`1: FLOCK ADVISORY WRITE <pid> <maj>:<min>:<ino> 0
/// EOF`); the first of them when several share it, `None` when none
/// does, the table cannot be read, or the holder is in a pid namespace
/// this process cannot see (the kernel shows its pid as 0).
pub fn flock_holder(dev: u64, ino: u64) -> Option<u32> {
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let wanted = format!(
        "{:02x}:{:02x}:{ino}",
        nix::sys::stat::major(dev),
        nix::sys::stat::minor(dev)
    );
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // Blocked waiters are listed as `1: -> FLOCK ...`.
        if fields.get(1) == Some(&"->") || !fields.contains(&wanted.as_str()) {
            return None;
        }
        fields.get(4)?.parse().ok().filter(|&pid| pid != 0)
    })
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

    #[test]
    fn the_holder_of_a_lock_is_found_by_its_file() {
        let path = std::env::temp_dir().join(format!("cni-skel-holder-{}", std::process::id()));
        let file = File::create(&path).unwrap();
        let meta = file.metadata().unwrap();
        assert_eq!(flock_holder(meta.dev(), meta.ino()), None);
        let held = Flock::lock(file, FlockArg::LockExclusive).unwrap();
        assert_eq!(
            flock_holder(meta.dev(), meta.ino()),
            Some(std::process::id())
        );
        drop(held);
        assert_eq!(flock_holder(meta.dev(), meta.ino()), None);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_writer_gets_the_lock_once_its_holder_lets_go() {
        let path = std::env::temp_dir().join(format!("cni-skel-within-{}", std::process::id()));
        let held = Flock::lock(File::create(&path).unwrap(), FlockArg::LockExclusive).unwrap();
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
        });
        let got = flock_within(
            File::open(&path).unwrap(),
            true,
            &path,
            Duration::from_secs(10),
        );
        assert!(got.is_ok(), "{:?}", got.err());
        releaser.join().unwrap();
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_stuck_holder_fails_the_writer_with_code_11_naming_the_file_and_the_holder() {
        let path = std::env::temp_dir().join(format!("cni-skel-stuck-{}", std::process::id()));
        let held = Flock::lock(File::create(&path).unwrap(), FlockArg::LockExclusive).unwrap();
        let short = Duration::from_millis(200);
        let e = flock_within(File::open(&path).unwrap(), true, &path, short).unwrap_err();
        assert_eq!(e.code, cni_types::Code::TRY_AGAIN_LATER);
        assert!(e.msg.contains(&path.display().to_string()), "{e:?}");
        let holder = format!("held by process {}", std::process::id());
        assert!(e.msg.contains(&holder), "{e:?}");
        assert!(e.details.contains("nothing was changed"), "{e:?}");
        drop(held);
        // The thread that went on waiting takes the lock and lets it go.
        let long = Duration::from_secs(10);
        let again = flock_within(File::open(&path).unwrap(), true, &path, long);
        assert!(again.is_ok(), "{:?}", again.err());
        drop(again);
        let third = flock_within(File::open(&path).unwrap(), true, &path, long);
        assert!(third.is_ok(), "{:?}", third.err());
        let _ = std::fs::remove_file(&path);
    }
}
