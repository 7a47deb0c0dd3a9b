//! The store's `flock`, waited for within a bound.

use std::fs::File;
use std::io;
use std::path::Path;
use std::time::Duration;

use cni_skel::FlockWait;
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
/// One try without waiting first; when another process holds the lock,
/// [`FlockWait`] waits for it, ending the moment the holder lets go (not
/// after a pause: polling left the lock idle while its waiters slept, up
/// to 20 ms a turn, the tail of a burst of ADDs). A wait past the
/// deadline is given up: its thread lets the lock go as soon as it gets
/// it.
pub(super) fn lock_within(
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
    let waiting = FlockWait::start(file, exclusive)
        .map_err(|e| Error::io("start a thread to wait for", path, e))?;
    match waiting.until(timeout) {
        Some(Ok(lock)) => Ok(lock),
        Some(Err(errno)) => Err(failed(errno)),
        None => Err(Error::try_again_later(
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
