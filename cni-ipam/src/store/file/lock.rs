//! The store's `flock`, waited for within a bound.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use cni_types::Error;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// The longest an operation waits for the lock held by another process
/// (every operation holds it for milliseconds); then code 11 naming the
/// lock file, so that a stuck holder fails the runtime's call instead of
/// hanging it.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// `file` flocked (exclusive or shared) within `timeout`, else code 11
/// naming `path`.
///
/// One try without waiting first; when another process holds the lock, a
/// thread waits for it in a blocking `flock`, which the kernel ends as
/// soon as the holder lets go, while this one waits for that thread
/// within the bound. (Polling, as this did before, left the lock idle
/// while its waiters slept between looks: up to 20 ms a turn, the tail
/// of a burst of ADDs.) A thread still waiting at the deadline lets the
/// lock go as soon as it gets it.
pub(super) fn lock_within(
    file: File,
    exclusive: bool,
    path: &Path,
    timeout: Duration,
) -> Result<Flock<File>, Error> {
    let (now, later) = if exclusive {
        (FlockArg::LockExclusiveNonblock, FlockArg::LockExclusive)
    } else {
        (FlockArg::LockSharedNonblock, FlockArg::LockShared)
    };
    let failed = |errno: Errno| Error::io("lock", path, io::Error::from_raw_os_error(errno as i32));
    let file = match Flock::lock(file, now) {
        Ok(lock) => return Ok(lock),
        Err((file, Errno::EWOULDBLOCK | Errno::EINTR)) => file,
        Err((_, errno)) => return Err(failed(errno)),
    };
    let (sender, receiver) = mpsc::sync_channel(1);
    let waiter = std::thread::Builder::new().spawn(move || {
        let mut file = file;
        let got = loop {
            match Flock::lock(file, later) {
                Err((again, Errno::EINTR)) => file = again,
                other => break other.map_err(|(_, errno)| errno),
            }
        };
        // With nobody left to receive it, the lock is dropped here.
        let _ = sender.send(got);
    });
    if let Err(e) = waiter {
        return Err(Error::io("start a thread to wait for", path, e));
    }
    match receiver.recv_timeout(timeout) {
        Ok(Ok(lock)) => Ok(lock),
        Ok(Err(errno)) => Err(failed(errno)),
        Err(_) => Err(Error::try_again_later(
            format!("timed out waiting for the lock {}", path.display()),
            format!(
                "another process held it for {timeout:?}; if none is running, it is stuck \
                 holding it"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock_file() -> (tempfile_path::Dir, std::path::PathBuf) {
        let dir = tempfile_path::Dir::new();
        let path = dir.0.join("lock");
        File::create(&path).unwrap();
        (dir, path)
    }

    /// A directory removed when dropped.
    mod tempfile_path {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                let path = std::env::temp_dir().join(format!(
                    "cni-ipam-lock-{}-{:?}",
                    std::process::id(),
                    std::thread::current().id()
                ));
                std::fs::create_dir_all(&path).unwrap();
                Dir(path)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    fn hold(path: &Path) -> Flock<File> {
        Flock::lock(File::open(path).unwrap(), FlockArg::LockExclusiveNonblock)
            .map_err(|(_, e)| e)
            .unwrap()
    }

    #[test]
    fn a_writer_gets_the_lock_once_its_holder_lets_go() {
        let (_dir, path) = lock_file();
        let held = hold(&path);
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
        });
        let got = lock_within(File::open(&path).unwrap(), true, &path, LOCK_TIMEOUT);
        assert!(got.is_ok(), "{:?}", got.err());
        releaser.join().unwrap();
    }

    #[test]
    fn a_stuck_holder_fails_the_writer_with_code_11_and_the_lock_is_free_after_it() {
        let (_dir, path) = lock_file();
        let held = hold(&path);
        let e = lock_within(
            File::open(&path).unwrap(),
            true,
            &path,
            Duration::from_millis(200),
        )
        .unwrap_err();
        assert_eq!(e.code, cni_types::Code::TRY_AGAIN_LATER);
        assert!(e.msg.contains(&path.display().to_string()), "{e:?}");
        drop(held);
        // The thread that went on waiting takes the lock and lets it go.
        let again = lock_within(File::open(&path).unwrap(), true, &path, LOCK_TIMEOUT);
        assert!(again.is_ok(), "{:?}", again.err());
        drop(again);
        let third = lock_within(File::open(&path).unwrap(), true, &path, LOCK_TIMEOUT);
        assert!(third.is_ok(), "{:?}", third.err());
    }
}
