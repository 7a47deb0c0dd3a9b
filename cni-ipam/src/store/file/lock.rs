//! The store's `flock`, waited for within a bound.

use std::fs::File;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use cni_types::Error;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// The longest an operation waits for the lock held by another process
/// (every operation holds it for milliseconds); then code 11 naming the
/// lock file, so that a stuck holder fails the runtime's call instead of
/// hanging it.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// `file` flocked (exclusive or shared) within `timeout`, else code 11
/// naming `path`. Polled: a blocking flock cannot be given a deadline
/// without a signal or a thread left waiting for it.
pub(super) fn lock_within(
    mut file: File,
    exclusive: bool,
    path: &Path,
    timeout: Duration,
) -> Result<Flock<File>, Error> {
    let arg = if exclusive {
        FlockArg::LockExclusiveNonblock
    } else {
        FlockArg::LockSharedNonblock
    };
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    loop {
        match Flock::lock(file, arg) {
            Ok(lock) => return Ok(lock),
            Err((f, Errno::EWOULDBLOCK | Errno::EINTR)) => file = f,
            Err((_, errno)) => {
                return Err(Error::io(
                    "lock",
                    path,
                    io::Error::from_raw_os_error(errno as i32),
                ))
            }
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::try_again_later(
                format!("timed out waiting for the lock {}", path.display()),
                format!(
                    "another process held it for {timeout:?}; if none is running, it is stuck \
                     holding it"
                ),
            ));
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}
