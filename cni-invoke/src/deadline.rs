//! A deadline for a plugin execution, and collecting a plugin's output
//! and exit within it.
//!
//! Go's runtime library takes a `context.Context` whose deadline (or
//! cancellation) kills the plugin (`exec.CommandContext`). We do the same
//! with a [`Deadline`] on the [`Invocation`](crate::Invocation), optionally
//! carrying a [`Cancel`], and more gently: a plugin still running when the
//! deadline passes or the switch is thrown gets `SIGTERM`, then `SIGKILL`
//! after [`KILL_GRACE`], so it can undo what it started. The signals go to
//! the plugin's process group (a plugin with a deadline runs in a group of
//! its own), so a script's children go too, and the plugin is always
//! reaped before we return: no zombie, no stray process holding its pipes.

use std::fmt;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::process::{Child, ChildStderr, ChildStdout, ExitStatus};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::cancel::Cancel;
use crate::limits::{STDERR_LIMIT, STDOUT_LIMIT};

/// How long a plugin has between `SIGTERM` and `SIGKILL`.
pub const KILL_GRACE: Duration = Duration::from_secs(1);

/// The longest timeout a deadline keeps: a century. Longer ones are cut to
/// it rather than overflow the clock.
const LONGEST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The time by which a plugin execution must be over, the timeout it was
/// derived from (for the error message), and optionally a [`Cancel`]
/// switch that ends it sooner.
///
/// Go: the deadline (and cancellation) of the `context.Context` given to
/// `invoke.ExecPluginWithResult`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deadline {
    at: Instant,
    timeout: Duration,
    cancel: Option<Cancel>,
}

impl Deadline {
    /// A deadline `timeout` from now (at most a century). Several
    /// executions sharing one deadline (a runtime's plugin list) share its
    /// value.
    ///
    /// ```
    /// use std::time::Duration;
    /// let deadline = cni_invoke::Deadline::after(Duration::from_secs(30));
    /// assert_eq!(deadline.timeout(), Duration::from_secs(30));
    /// assert!(!deadline.remaining().is_zero());
    /// ```
    pub fn after(timeout: Duration) -> Deadline {
        let timeout = timeout.min(LONGEST);
        let now = Instant::now();
        Deadline {
            at: now.checked_add(timeout).unwrap_or(now),
            timeout,
            cancel: None,
        }
    }

    /// The same deadline, also ended when `cancel` is thrown.
    ///
    /// Go: `context.WithCancel` of a context with a deadline.
    pub fn or_cancelled_by(self, cancel: &Cancel) -> Deadline {
        Deadline {
            cancel: Some(cancel.clone()),
            ..self
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

    /// Whether its [`Cancel`] switch has been thrown.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(Cancel::is_cancelled)
    }
}

impl fmt::Display for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} deadline", self.timeout)
    }
}

/// How a plugin that outlived its deadline, or was cancelled, ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It exited after `SIGTERM`.
    Terminated,
    /// It ignored `SIGTERM` for [`KILL_GRACE`] and was killed.
    Killed,
}

/// Why a plugin was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// Its deadline passed.
    Deadline,
    /// Its [`Cancel`] switch was thrown.
    Cancelled,
}

/// What a plugin printed (the first [`STDOUT_LIMIT`] and [`STDERR_LIMIT`]
/// bytes, and how many more), how it exited, and whether we had to stop it.
pub(crate) struct Finished {
    pub stdout: Captured,
    pub stderr: Captured,
    pub status: ExitStatus,
    pub stopped: Option<(Cause, Stopped)>,
}

/// The bytes kept of one output stream, and how many more were read and
/// dropped.
pub(crate) struct Captured {
    pub bytes: Vec<u8>,
    pub dropped: u64,
}

/// What ended a wait.
enum Woke {
    /// Both pipes are closed, or the plugin was reaped.
    Done,
    /// The time limit passed.
    TimeUp,
    /// The cancel switch was thrown.
    Cancelled,
}

/// Reads the child's stdout and stderr to their end and reaps it. Without
/// a deadline this blocks as long as the plugin runs; with one, the plugin
/// (and its process group) is stopped when it passes or its switch is
/// thrown.
pub(crate) fn finish(child: &mut Child, deadline: Option<&Deadline>) -> io::Result<Finished> {
    let mut out = Pipe::new(child.stdout.take(), STDOUT_LIMIT);
    let mut err = Pipe::new(child.stderr.take(), STDERR_LIMIT);
    let mut stopped = None;
    let mut limit = deadline.map(|d| d.at);
    let mut cancel = deadline.and_then(|d| d.cancel.as_ref());
    loop {
        let (woke, status) = if out.open() || err.open() {
            (read_until(&mut out, &mut err, limit, cancel)?, None)
        } else {
            match wait_until(child, limit, cancel)? {
                Ok(status) => (Woke::Done, Some(status)),
                Err(woke) => (woke, None),
            }
        };
        let cause = match woke {
            Woke::Done => match status {
                Some(status) => {
                    return Ok(Finished {
                        stdout: out.into_captured(),
                        stderr: err.into_captured(),
                        status,
                        stopped,
                    })
                }
                None => continue,
            },
            Woke::TimeUp => Cause::Deadline,
            Woke::Cancelled => Cause::Cancelled,
        };
        // The plugin is unreaped, so its pid (and group id) cannot have
        // been reused: the signal reaches our plugin's group only.
        let group = Pid::from_raw(child.id() as i32);
        match stopped {
            None => {
                let _ = killpg(group, Signal::SIGTERM);
                stopped = Some((cause, Stopped::Terminated));
                limit = Some(Instant::now() + KILL_GRACE);
                // The switch stays thrown: from here only the grace counts.
                cancel = None;
            }
            Some((first, _)) => {
                let _ = killpg(group, Signal::SIGKILL);
                // SIGKILL cannot be caught: the plugin exits now. A process
                // that left the group may still hold the pipes; stop reading.
                let status = child.wait()?;
                return Ok(Finished {
                    stdout: out.into_captured(),
                    stderr: err.into_captured(),
                    status,
                    stopped: Some((first, Stopped::Killed)),
                });
            }
        }
    }
}

/// One of the child's output pipes and what came out of it: the first
/// `limit` bytes kept, the rest counted.
struct Pipe<R> {
    reader: Option<R>,
    buf: Vec<u8>,
    limit: usize,
    dropped: u64,
}

impl<R: Read + AsFd> Pipe<R> {
    fn new(reader: Option<R>, limit: usize) -> Pipe<R> {
        Pipe {
            reader,
            buf: Vec::new(),
            limit,
            dropped: 0,
        }
    }

    fn open(&self) -> bool {
        self.reader.is_some()
    }

    /// Reads what is there; closes the pipe at its end. Bytes past the
    /// limit are read (so the plugin is never blocked on a full pipe) and
    /// only counted.
    fn read_some(&mut self) -> io::Result<()> {
        let Some(reader) = self.reader.as_mut() else {
            return Ok(());
        };
        let mut chunk = [0u8; 64 * 1024];
        match reader.read(&mut chunk) {
            Ok(0) => self.reader = None,
            Ok(n) => {
                let keep = n.min(self.limit - self.buf.len());
                self.buf.extend_from_slice(&chunk[..keep]);
                self.dropped += (n - keep) as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }

    fn into_captured(self) -> Captured {
        Captured {
            bytes: self.buf,
            dropped: self.dropped,
        }
    }
}

/// The poll timeout until `limit`: none without one, `None` once passed.
fn timeout_until(limit: Option<Instant>) -> Option<PollTimeout> {
    let Some(at) = limit else {
        return Some(PollTimeout::NONE);
    };
    let left = at.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return None;
    }
    // Rounded up: a timeout of 0 ms would spin.
    Some(PollTimeout::try_from(left + Duration::from_millis(1)).unwrap_or(PollTimeout::MAX))
}

/// Reads from both pipes until both are closed, `limit` passes or
/// `cancel` is thrown.
fn read_until(
    out: &mut Pipe<ChildStdout>,
    err: &mut Pipe<ChildStderr>,
    limit: Option<Instant>,
    cancel: Option<&Cancel>,
) -> io::Result<Woke> {
    while out.open() || err.open() {
        let Some(timeout) = timeout_until(limit) else {
            return Ok(Woke::TimeUp);
        };
        let ready = PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR;
        let is_ready = |fd: &PollFd| fd.revents().is_some_and(|r| r.intersects(ready));
        let watched: [Option<BorrowedFd>; 3] = [
            out.reader.as_ref().map(AsFd::as_fd),
            err.reader.as_ref().map(AsFd::as_fd),
            cancel.map(Cancel::fd),
        ];
        let mut fds: Vec<PollFd> = watched
            .iter()
            .flatten()
            .map(|fd| PollFd::new(*fd, PollFlags::POLLIN))
            .collect();
        match poll(&mut fds, timeout) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
        let mut fds = fds.iter();
        let mut next_is_ready = |watched: bool| watched && fds.next().is_some_and(is_ready);
        let out_ready = next_is_ready(watched[0].is_some());
        let err_ready = next_is_ready(watched[1].is_some());
        if next_is_ready(watched[2].is_some()) {
            return Ok(Woke::Cancelled);
        }
        if out_ready {
            out.read_some()?;
        }
        if err_ready {
            err.read_some()?;
        }
    }
    Ok(Woke::Done)
}

/// Reaps the child once it exits; what woke us instead when `limit`
/// passes or `cancel` is thrown first.
fn wait_until(
    child: &mut Child,
    limit: Option<Instant>,
    cancel: Option<&Cancel>,
) -> io::Result<Result<ExitStatus, Woke>> {
    if limit.is_none() && cancel.is_none() {
        return child.wait().map(Ok);
    }
    // Both pipes are closed, so the plugin is exiting: poll briefly and
    // back off, rather than keep a thread per plugin.
    let mut pause = Duration::from_micros(100);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Ok(status));
        }
        if cancel.is_some_and(Cancel::is_cancelled) {
            return Ok(Err(Woke::Cancelled));
        }
        let left = limit.map_or(Duration::MAX, |at| {
            at.saturating_duration_since(Instant::now())
        });
        if left.is_zero() {
            return Ok(Err(Woke::TimeUp));
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_too_long_for_the_clock_is_a_century_not_a_panic() {
        let deadline = Deadline::after(Duration::MAX);
        assert_eq!(deadline.timeout(), LONGEST);
        assert!(deadline.remaining() > Duration::from_secs(99 * 365 * 24 * 3600));
    }
}
