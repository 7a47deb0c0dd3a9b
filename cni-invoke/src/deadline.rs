//! A deadline for a plugin execution, and collecting a plugin's output
//! and exit within it.
//!
//! Go's runtime library takes a `context.Context` whose deadline kills the
//! plugin (`exec.CommandContext`). We do the same with a [`Deadline`] on
//! the [`Invocation`](crate::Invocation), and more gently: a plugin still
//! running at the deadline gets `SIGTERM`, then `SIGKILL` after
//! [`KILL_GRACE`], so it can undo what it started. The signals go to the
//! plugin's process group (a plugin with a deadline runs in a group of its
//! own), so a script's children go too, and the plugin is always reaped
//! before we return: no zombie, no stray process holding its pipes.

use std::fmt;
use std::io::{self, Read};
use std::os::fd::AsFd;
use std::process::{Child, ChildStderr, ChildStdout, ExitStatus};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// How long a plugin has between `SIGTERM` and `SIGKILL`.
pub const KILL_GRACE: Duration = Duration::from_secs(1);

/// The time by which a plugin execution must be over, and the timeout it
/// was derived from (for the error message).
///
/// Go: the deadline of the `context.Context` given to `invoke.ExecPluginWithResult`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    at: Instant,
    timeout: Duration,
}

impl Deadline {
    /// A deadline `timeout` from now. Several executions sharing one
    /// deadline (a runtime's plugin list) share its value.
    ///
    /// ```
    /// use std::time::Duration;
    /// let deadline = cni_invoke::Deadline::after(Duration::from_secs(30));
    /// assert_eq!(deadline.timeout(), Duration::from_secs(30));
    /// assert!(!deadline.remaining().is_zero());
    /// ```
    pub fn after(timeout: Duration) -> Deadline {
        Deadline {
            at: Instant::now() + timeout,
            timeout,
        }
    }

    /// The timeout this deadline was set with.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The time left; zero once passed.
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }
}

impl fmt::Display for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} deadline", self.timeout)
    }
}

/// How a plugin that outlived its deadline ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It exited after `SIGTERM`.
    Terminated,
    /// It ignored `SIGTERM` for [`KILL_GRACE`] and was killed.
    Killed,
}

/// What a plugin printed, how it exited, and whether we had to stop it.
pub(crate) struct Finished {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: ExitStatus,
    pub stopped: Option<Stopped>,
}

/// Reads the child's stdout and stderr to their end and reaps it. Without
/// a deadline this blocks as long as the plugin runs; with one, the plugin
/// (and its process group) is stopped when it passes.
pub(crate) fn finish(child: &mut Child, deadline: Option<Deadline>) -> io::Result<Finished> {
    let mut out = Pipe::new(child.stdout.take());
    let mut err = Pipe::new(child.stderr.take());
    let mut stopped = None;
    let mut limit = deadline.map(|d| d.at);
    loop {
        let expired = if out.open() || err.open() {
            !read_until(&mut out, &mut err, limit)?
        } else {
            match wait_until(child, limit)? {
                Some(status) => {
                    return Ok(Finished {
                        stdout: out.buf,
                        stderr: err.buf,
                        status,
                        stopped,
                    })
                }
                None => true,
            }
        };
        if !expired {
            continue;
        }
        // The plugin is unreaped, so its pid (and group id) cannot have
        // been reused: the signal reaches our plugin's group only.
        let group = Pid::from_raw(child.id() as i32);
        match stopped {
            None => {
                let _ = killpg(group, Signal::SIGTERM);
                stopped = Some(Stopped::Terminated);
                limit = Some(Instant::now() + KILL_GRACE);
            }
            Some(_) => {
                let _ = killpg(group, Signal::SIGKILL);
                // SIGKILL cannot be caught: the plugin exits now. A process
                // that left the group may still hold the pipes; stop reading.
                let status = child.wait()?;
                return Ok(Finished {
                    stdout: out.buf,
                    stderr: err.buf,
                    status,
                    stopped: Some(Stopped::Killed),
                });
            }
        }
    }
}

/// One of the child's output pipes and what came out of it.
struct Pipe<R> {
    reader: Option<R>,
    buf: Vec<u8>,
}

impl<R: Read + AsFd> Pipe<R> {
    fn new(reader: Option<R>) -> Pipe<R> {
        Pipe {
            reader,
            buf: Vec::new(),
        }
    }

    fn open(&self) -> bool {
        self.reader.is_some()
    }

    /// Reads what is there; closes the pipe at its end.
    fn read_some(&mut self) -> io::Result<()> {
        let Some(reader) = self.reader.as_mut() else {
            return Ok(());
        };
        let mut chunk = [0u8; 16 * 1024];
        match reader.read(&mut chunk) {
            Ok(0) => self.reader = None,
            Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }
}

/// Reads from both pipes until both are closed (`true`) or `limit` passes
/// (`false`).
fn read_until(
    out: &mut Pipe<ChildStdout>,
    err: &mut Pipe<ChildStderr>,
    limit: Option<Instant>,
) -> io::Result<bool> {
    while out.open() || err.open() {
        let timeout = match limit {
            None => PollTimeout::NONE,
            Some(at) => {
                let left = at.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(false);
                }
                // Rounded up: a timeout of 0 ms would spin.
                PollTimeout::try_from(left + Duration::from_millis(1)).unwrap_or(PollTimeout::MAX)
            }
        };
        let (out_ready, err_ready) = {
            let mut fds = Vec::with_capacity(2);
            let ready = PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR;
            if let Some(r) = &out.reader {
                fds.push(PollFd::new(r.as_fd(), PollFlags::POLLIN));
            }
            if let Some(r) = &err.reader {
                fds.push(PollFd::new(r.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, timeout) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
            let is_ready = |fd: &PollFd| fd.revents().is_some_and(|r| r.intersects(ready));
            let mut fds = fds.iter();
            let out_ready = out.open() && fds.next().is_some_and(is_ready);
            let err_ready = err.open() && fds.next().is_some_and(is_ready);
            (out_ready, err_ready)
        };
        if out_ready {
            out.read_some()?;
        }
        if err_ready {
            err.read_some()?;
        }
    }
    Ok(true)
}

/// Reaps the child once it exits; `None` when `limit` passes first.
fn wait_until(child: &mut Child, limit: Option<Instant>) -> io::Result<Option<ExitStatus>> {
    let Some(limit) = limit else {
        return child.wait().map(Some);
    };
    // Both pipes are closed, so the plugin is exiting: poll briefly and
    // back off, rather than keep a thread per plugin.
    let mut pause = Duration::from_micros(100);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let left = limit.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}
