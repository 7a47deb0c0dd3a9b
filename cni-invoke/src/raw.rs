//! Executing a plugin and keeping everything it did: the one place that
//! spawns a plugin process.

use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use crate::deadline::{finish, Deadline, Stopped};

/// Executions of a binary that is open for writing ("text file busy") the
/// reference runtime library retries, a second apart, five times: a plugin
/// being installed while a runtime calls it, or, in a threaded process, a
/// binary just written whose descriptor another thread's child still holds
/// between its fork and its exec.
const BUSY_RETRIES: u32 = 5;
const BUSY_WAIT: Duration = Duration::from_secs(1);

/// How a plugin process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Status(i32),
    /// It was killed by this signal.
    Signal(i32),
    /// It ran past the deadline and was stopped, as said.
    TimedOut(Stopped),
}

impl Exit {
    /// Exit status 0.
    pub fn success(&self) -> bool {
        *self == Exit::Status(0)
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Status(code) => write!(f, "exit status {code}"),
            Exit::Signal(signal) => write!(f, "killed by signal {signal}"),
            Exit::TimedOut(Stopped::Terminated) => f.write_str("timed out (terminated)"),
            Exit::TimedOut(Stopped::Killed) => f.write_str("timed out (killed)"),
        }
    }
}

/// Everything one plugin execution did, unprocessed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawOutput {
    /// How it ended.
    pub exit: Exit,
    /// Its standard output, byte for byte.
    pub stdout: Vec<u8>,
    /// Its standard error, byte for byte.
    pub stderr: Vec<u8>,
}

/// Runs `command` with `stdin` on its standard input and returns how it
/// ended and what it printed, without interpreting any of it: the one
/// place that spawns a plugin process. [`exec_plugin`](crate::exec_plugin)
/// is this plus the runtime's reading of the output; tools that judge a
/// plugin's output (a conformance checker) call it directly.
///
/// The caller sets the program, arguments and environment on `command`;
/// stdin, stdout and stderr are set here. A binary still open for writing
/// ("text file busy") is tried again a second later, up to five times, as
/// the reference runtime library does. With a [`Deadline`], the process
/// runs in a group of its own; still running when the deadline passes,
/// the group gets `SIGTERM`, then `SIGKILL` after
/// [`KILL_GRACE`](crate::KILL_GRACE), and the result is
/// [`Exit::TimedOut`]. The process is always reaped before this returns.
///
/// ```no_run
/// use std::process::Command;
/// use std::time::Duration;
///
/// let mut command = Command::new("/usr/lib/cni/host-local");
/// command.env_clear().env("CNI_COMMAND", "VERSION");
/// let deadline = cni_invoke::Deadline::after(Duration::from_secs(5));
/// let out = cni_invoke::exec_raw(&mut command, b"", Some(deadline))?;
/// assert!(out.exit.success());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn exec_raw(
    command: &mut Command,
    stdin: &[u8],
    deadline: Option<Deadline>,
) -> std::io::Result<RawOutput> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if deadline.is_some() {
        // A group of its own, so the deadline stops the children it
        // started too: one left holding stdout would keep us reading.
        command.process_group(0);
    }
    let mut child = spawn_retrying_busy(command)?;

    // Feed stdin from a thread: a plugin that exits (or closes stdin)
    // without reading it must neither block us nor kill us (EPIPE is an
    // error here, not a signal: Rust ignores SIGPIPE).
    let mut child_stdin = child.stdin.take();
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        if let Some(pipe) = child_stdin.as_mut() {
            let _ = pipe.write_all(&input);
        }
        drop(child_stdin);
    });
    let finished = finish(&mut child, deadline).inspect_err(|_| {
        // Never leave the plugin behind, even when reading it failed.
        let _ = child.kill();
        let _ = child.wait();
    })?;
    // A process that left the plugin's group may still hold stdin open;
    // the writer is then left to finish on its own rather than waited for.
    if writer.is_finished() || finished.stopped.is_none() {
        let _ = writer.join();
    }
    Ok(RawOutput {
        exit: match finished.stopped {
            Some(stopped) => Exit::TimedOut(stopped),
            None => exit_of(finished.status),
        },
        stdout: finished.stdout,
        stderr: finished.stderr,
    })
}

pub(crate) fn spawn_retrying_busy(command: &mut Command) -> std::io::Result<Child> {
    let mut retries = 0;
    loop {
        match command.spawn() {
            Err(e)
                if e.kind() == std::io::ErrorKind::ExecutableFileBusy && retries < BUSY_RETRIES =>
            {
                retries += 1;
                std::thread::sleep(BUSY_WAIT);
            }
            spawned => return spawned,
        }
    }
}

fn exit_of(status: ExitStatus) -> Exit {
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Status(code),
        (None, Some(signal)) => Exit::Signal(signal),
        (None, None) => Exit::Status(-1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn sh(script: &str) -> Command {
        let mut command = Command::new("/bin/sh");
        command.arg("-c").arg(script);
        command
    }

    #[test]
    fn stdout_stderr_and_status_are_kept_byte_for_byte() {
        let out = exec_raw(&mut sh("cat; printf err >&2; exit 3"), b"in\n", None).unwrap();
        assert_eq!(out.exit, Exit::Status(3));
        assert_eq!(out.stdout, b"in\n");
        assert_eq!(out.stderr, b"err");
    }

    #[test]
    fn a_plugin_past_its_deadline_is_killed_and_reported_as_timed_out() {
        let started = Instant::now();
        let out = exec_raw(
            &mut sh("exec sleep 5"),
            b"",
            Some(Deadline::after(Duration::from_millis(100))),
        )
        .unwrap();
        assert!(matches!(out.exit, Exit::TimedOut(_)), "{:?}", out.exit);
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn a_child_left_holding_stdout_does_not_outlive_the_deadline() {
        let started = Instant::now();
        let out = exec_raw(
            &mut sh("sleep 30; echo late"),
            b"",
            Some(Deadline::after(Duration::from_millis(200))),
        )
        .unwrap();
        assert!(matches!(out.exit, Exit::TimedOut(_)), "{:?}", out.exit);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_signal_is_reported_as_such() {
        let out = exec_raw(&mut sh("kill -9 $$"), b"", None).unwrap();
        assert_eq!(out.exit, Exit::Signal(9));
    }
}
