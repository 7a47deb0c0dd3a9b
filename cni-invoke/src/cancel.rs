//! Stopping plugin executions early, from another thread or from a signal
//! handler.

use std::fmt;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use nix::fcntl::OFlag;

/// A switch that ends every plugin execution whose [`Deadline`] carries
/// it, as if the deadline had passed: the plugin's process group gets
/// `SIGTERM`, then `SIGKILL` after [`KILL_GRACE`], the plugin is reaped,
/// and the execution ends as [`Exit::Cancelled`]. An execution not yet
/// started when the switch is thrown is not started.
///
/// Clones are the same switch. [`Cancel::cancel`] is an atomic store and
/// one `write(2)`, both async-signal-safe, so a `SIGINT` handler may call
/// it (a command-line tool cleaning up on Ctrl-C).
///
/// ```
/// use std::time::Duration;
/// use cni_invoke::{Cancel, Deadline};
///
/// let cancel = Cancel::new()?;
/// let deadline = Deadline::after(Duration::from_secs(60)).or_cancelled_by(&cancel);
/// cancel.cancel();
/// assert!(deadline.is_cancelled());
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// Go: the `CancelFunc` of `context.WithCancel`, whose context is given
/// to `invoke.ExecPluginWithResult`.
///
/// [`Deadline`]: crate::Deadline
/// [`KILL_GRACE`]: crate::KILL_GRACE
/// [`Exit::Cancelled`]: crate::Exit::Cancelled
#[derive(Clone)]
pub struct Cancel(Arc<Switch>);

struct Switch {
    thrown: AtomicBool,
    /// Readable once the switch is thrown (one byte, never drained), so
    /// every execution polling it wakes, however many there are.
    read: OwnedFd,
    write: OwnedFd,
}

impl Cancel {
    /// A switch not yet thrown. Fails only when no pipe can be made (the
    /// process is out of file descriptors).
    pub fn new() -> io::Result<Cancel> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)?;
        Ok(Cancel(Arc::new(Switch {
            thrown: AtomicBool::new(false),
            read,
            write,
        })))
    }

    /// Throws the switch: executions running now are stopped, later ones
    /// are not started. Throwing it again does nothing.
    pub fn cancel(&self) {
        if !self.0.thrown.swap(true, Ordering::SeqCst) {
            // Non-blocking, and the pipe is empty: one byte always fits.
            let _ = nix::unistd::write(&self.0.write, &[1]);
        }
    }

    /// Whether the switch has been thrown.
    pub fn is_cancelled(&self) -> bool {
        self.0.thrown.load(Ordering::SeqCst)
    }

    /// What an execution polls to wake when the switch is thrown.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.0.read.as_fd()
    }
}

impl PartialEq for Cancel {
    /// The same switch.
    fn eq(&self, other: &Cancel) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Cancel {}

impl fmt::Debug for Cancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thrown_switch_is_seen_by_every_clone_and_wakes_its_pipe() {
        let cancel = Cancel::new().unwrap();
        let clone = cancel.clone();
        assert!(!clone.is_cancelled());
        cancel.cancel();
        cancel.cancel();
        assert!(clone.is_cancelled());
        let mut fds = [nix::poll::PollFd::new(
            clone.fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        assert_eq!(
            nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO).unwrap(),
            1
        );
        assert_eq!(cancel, clone);
        assert_ne!(cancel, Cancel::new().unwrap());
    }
}
