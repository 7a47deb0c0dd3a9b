//! Executing a plugin and keeping what it did, within bounds: the one
//! place that spawns a plugin process.

use std::fmt;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::Duration;

use nix::fcntl::{fcntl, FcntlArg, OFlag};

use crate::deadline::{finish, Cause, Deadline, Stopped};

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
    /// Its deadline's [`Cancel`](crate::Cancel) switch was thrown while it
    /// ran, and it was stopped, as said.
    Cancelled(Stopped),
}

impl Exit {
    /// Exit status 0.
    pub fn success(&self) -> bool {
        *self == Exit::Status(0)
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = |stopped: &Stopped| match stopped {
            Stopped::Terminated => "terminated",
            Stopped::Killed => "killed",
        };
        match self {
            Exit::Status(code) => write!(f, "exit status {code}"),
            Exit::Signal(signal) => write!(f, "killed by signal {signal}"),
            Exit::TimedOut(stopped) => write!(f, "timed out ({})", how(stopped)),
            Exit::Cancelled(stopped) => write!(f, "cancelled ({})", how(stopped)),
        }
    }
}

/// Everything one process execution did, unprocessed: how it ended, and
/// its output up to [`STDOUT_LIMIT`](crate::STDOUT_LIMIT) and [`STDERR_LIMIT`](crate::STDERR_LIMIT) bytes, with a
/// count of what was cut.
#[derive(Clone, PartialEq, Eq)]
pub struct RawOutput {
    /// How it ended.
    pub exit: Exit,
    /// Its standard output, byte for byte, up to [`STDOUT_LIMIT`](crate::STDOUT_LIMIT) bytes.
    pub stdout: Vec<u8>,
    /// Its standard error, byte for byte, up to [`STDERR_LIMIT`](crate::STDERR_LIMIT) bytes.
    pub stderr: Vec<u8>,
    /// How many bytes of standard output came after the first
    /// [`STDOUT_LIMIT`](crate::STDOUT_LIMIT): read and dropped.
    pub stdout_dropped: u64,
    /// How many bytes of standard error came after the first
    /// [`STDERR_LIMIT`](crate::STDERR_LIMIT): read and dropped.
    pub stderr_dropped: u64,
}

impl RawOutput {
    /// Exit status 0.
    pub fn success(&self) -> bool {
        self.exit.success()
    }

    /// The exit status when the process exited by itself; `None` when a
    /// signal ended it or it was stopped.
    ///
    /// ```
    /// let out = cni_invoke::exec_raw(&mut std::process::Command::new("false"), b"", None)?;
    /// assert_eq!(out.status(), Some(1));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn status(&self) -> Option<i32> {
        match self.exit {
            Exit::Status(code) => Some(code),
            _ => None,
        }
    }

    /// Standard output as text (invalid UTF-8 replaced by U+FFFD).
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Standard error as text (invalid UTF-8 replaced by U+FFFD).
    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// Both outputs as a message shows them: each an [`excerpt`] of
    /// `max_chars` characters.
    ///
    /// ```
    /// let out = cni_invoke::exec_raw(&mut std::process::Command::new("true"), b"", None)?;
    /// assert_eq!(out.excerpts(10), r#"stdout: ""; stderr: """#);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn excerpts(&self, max_chars: usize) -> String {
        format!(
            "stdout: {}; stderr: {}",
            excerpt(&self.stdout, self.stdout_dropped, max_chars),
            excerpt(&self.stderr, self.stderr_dropped, max_chars)
        )
    }
}

/// Shows both outputs as text, whole (they are bounded).
impl fmt::Debug for RawOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawOutput")
            .field("exit", &self.exit)
            .field("stdout", &self.stdout_str())
            .field("stderr", &self.stderr_str())
            .field("stdout_dropped", &self.stdout_dropped)
            .field("stderr_dropped", &self.stderr_dropped)
            .finish()
    }
}

/// Bytes a process printed, as a message quotes them: trimmed, lossy
/// UTF-8, at most `max_chars` characters, and when anything was left out
/// (past `max_chars`, or `dropped` bytes never kept), how many bytes.
///
/// ```
/// assert_eq!(cni_invoke::excerpt(b"abcdef", 0, 3), r#""abc"... (3 bytes more)"#);
/// assert_eq!(cni_invoke::excerpt(b"abc", 1000, 3), r#""abc"... (1000 bytes more)"#);
/// assert_eq!(cni_invoke::excerpt(b" ok\n", 0, 3), r#""ok""#);
/// ```
pub fn excerpt(bytes: &[u8], dropped: u64, max_chars: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    let shown: String = text.chars().take(max_chars).collect();
    let cut = (text.len() - shown.len()) as u64 + dropped;
    if cut == 0 {
        format!("{shown:?}")
    } else {
        format!("{shown:?}... ({cut} bytes more)")
    }
}

/// Runs `command` with `stdin` on its standard input and returns how it
/// ended and what it printed, without interpreting any of it: the one
/// place that spawns a plugin process. [`exec_plugin`](crate::exec_plugin)
/// is this plus the runtime's reading of the output; tools that judge a
/// plugin's output (a conformance checker) call it directly.
///
/// The caller sets the program, arguments, environment and working
/// directory on `command`; stdin, stdout and stderr are set here. What the
/// process prints is kept up to [`STDOUT_LIMIT`](crate::STDOUT_LIMIT) and [`STDERR_LIMIT`](crate::STDERR_LIMIT)
/// bytes, and the rest counted, so a runaway plugin cannot exhaust our
/// memory. A binary still open for writing ("text file busy") is tried
/// again a second later, up to five times, as the reference runtime
/// library does. With a [`Deadline`], the process runs in a group of its
/// own; still running when the deadline passes (or its
/// [`Cancel`](crate::Cancel) switch is thrown), the group gets `SIGTERM`,
/// then `SIGKILL` after [`KILL_GRACE`](crate::KILL_GRACE), and the result
/// is [`Exit::TimedOut`] (or [`Exit::Cancelled`]). A deadline cancelled
/// before the start starts nothing: an [`Interrupted`] error. The process
/// is always reaped before this returns.
///
/// [`Interrupted`]: std::io::ErrorKind::Interrupted
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
    if deadline.as_ref().is_some_and(Deadline::is_cancelled) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "cancelled before the process was started",
        ));
    }
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

    // A plugin that exits (or closes stdin) without reading it must
    // neither block us nor kill us (EPIPE is an error here, not a signal:
    // Rust ignores SIGPIPE).
    let writer = child.stdin.take().and_then(|pipe| feed(pipe, stdin));
    let finished = finish(&mut child, deadline.as_ref()).inspect_err(|_| {
        // Never leave the plugin behind, even when reading it failed.
        let _ = child.kill();
        let _ = child.wait();
    })?;
    // A process that left the plugin's group may still hold stdin open;
    // the writer is then left to finish on its own rather than waited for.
    if let Some(writer) = writer {
        if writer.is_finished() || finished.stopped.is_none() {
            let _ = writer.join();
        }
    }
    Ok(RawOutput {
        exit: match finished.stopped {
            Some((Cause::Deadline, stopped)) => Exit::TimedOut(stopped),
            Some((Cause::Cancelled, stopped)) => Exit::Cancelled(stopped),
            None => exit_of(finished.status),
        },
        stdout: finished.stdout.bytes,
        stderr: finished.stderr.bytes,
        stdout_dropped: finished.stdout.dropped,
        stderr_dropped: finished.stderr.dropped,
    })
}

/// Writes `input` to the plugin's stdin and closes it. What the pipe
/// takes at once is written here, without blocking: a configuration is a
/// few hundred bytes and a pipe holds 64 KiB, so usually that is all of
/// it, and no thread is started and waited for (under load, a writer
/// thread's exit cost a delegating ADD milliseconds: bench/process/kind.sh).
/// The rest, if the plugin has not read enough yet, goes from a thread
/// so a plugin that never reads cannot block us; that thread is returned.
fn feed(mut pipe: ChildStdin, input: &[u8]) -> Option<std::thread::JoinHandle<()>> {
    let written = write_nonblocking(&mut pipe, input)?;
    let rest = input[written..].to_vec();
    Some(std::thread::spawn(move || {
        let _ = pipe.write_all(&rest);
    }))
}

/// How much of `input` went into `pipe` before it was full, the pipe left
/// blocking again for the rest; `None` when nothing is left to write
/// (all of it written, or the plugin closed its end).
fn write_nonblocking(pipe: &mut ChildStdin, input: &[u8]) -> Option<usize> {
    let fd = pipe.as_raw_fd();
    let flags = match fcntl(fd, FcntlArg::F_GETFL) {
        Ok(flags) => OFlag::from_bits_truncate(flags),
        Err(_) => return Some(0),
    };
    if fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK)).is_err() {
        return Some(0);
    }
    let mut done = 0;
    while done < input.len() {
        match pipe.write(&input[done..]) {
            Ok(0) => return None,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let _ = fcntl(fd, FcntlArg::F_SETFL(flags));
                return Some(done);
            }
            Err(_) => return None,
        }
    }
    None
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
    use crate::limits::{STDERR_LIMIT, STDOUT_LIMIT};
    use std::time::Instant;

    fn sh(script: &str) -> Command {
        let mut command = Command::new("/bin/sh");
        command.arg("-c").arg(script);
        command
    }

    /// Far below the plugins' own `sleep 300`: the deadline, not the
    /// plugin, ended the run, however loaded the machine is.
    const NOT_WAITED_FOR: Duration = Duration::from_secs(60);

    #[test]
    fn stdout_stderr_and_status_are_kept_byte_for_byte() {
        let out = exec_raw(&mut sh("cat; printf err >&2; exit 3"), b"in\n", None).unwrap();
        assert_eq!(out.exit, Exit::Status(3));
        assert_eq!(out.stdout, b"in\n");
        assert_eq!(out.stderr, b"err");
        assert_eq!((out.stdout_dropped, out.stderr_dropped), (0, 0));
    }

    #[test]
    fn stdin_larger_than_a_pipe_holds_arrives_whole() {
        // 1 MiB: the pipe takes 64 KiB at once, the rest goes from a
        // thread while the plugin reads.
        let input: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
        let out = exec_raw(&mut sh("cksum"), &input, None).unwrap();
        let expected = exec_raw(&mut sh("head -c 1048576 | cksum"), &input, None).unwrap();
        assert_eq!(out.exit, Exit::Status(0));
        assert_eq!(out.stdout, expected.stdout);
        let whole = exec_raw(&mut sh("wc -c"), &input, None).unwrap();
        assert_eq!(String::from_utf8_lossy(&whole.stdout).trim(), "1048576");
    }

    #[test]
    fn output_past_the_limits_is_read_counted_and_dropped() {
        // 64 MiB on stdout and 1 MiB on stderr, then a clean exit: the
        // plugin is never blocked, and only the first bytes are kept.
        let out = exec_raw(
            &mut sh("head -c 67108864 /dev/zero; head -c 1048576 /dev/zero >&2"),
            b"",
            None,
        )
        .unwrap();
        assert_eq!(out.exit, Exit::Status(0));
        assert_eq!(out.stdout.len(), STDOUT_LIMIT);
        assert_eq!(out.stdout_dropped, (64 << 20) - STDOUT_LIMIT as u64);
        assert_eq!(out.stderr.len(), STDERR_LIMIT);
        assert_eq!(out.stderr_dropped, (1 << 20) - STDERR_LIMIT as u64);
        assert!(
            out.excerpts(8)
                .contains(&format!("({} bytes more)", (64 << 20) - 8)),
            "{}",
            out.excerpts(8)
        );
    }

    #[test]
    fn a_plugin_past_its_deadline_is_killed_and_reported_as_timed_out() {
        let started = Instant::now();
        let out = exec_raw(
            &mut sh("exec sleep 300"),
            b"",
            Some(Deadline::after(Duration::from_millis(100))),
        )
        .unwrap();
        assert!(matches!(out.exit, Exit::TimedOut(_)), "{:?}", out.exit);
        assert!(started.elapsed() < NOT_WAITED_FOR);
    }

    #[test]
    fn a_child_left_holding_stdout_does_not_outlive_the_deadline() {
        let started = Instant::now();
        let out = exec_raw(
            &mut sh("sleep 300; echo late"),
            b"",
            Some(Deadline::after(Duration::from_millis(200))),
        )
        .unwrap();
        assert!(matches!(out.exit, Exit::TimedOut(_)), "{:?}", out.exit);
        assert!(started.elapsed() < NOT_WAITED_FOR);
    }

    #[test]
    fn a_cancelled_deadline_starts_nothing() {
        let cancel = crate::Cancel::new().unwrap();
        cancel.cancel();
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let deadline = Deadline::after(Duration::from_secs(60)).or_cancelled_by(&cancel);
        let err = exec_raw(
            &mut sh(&format!("touch {}", marker.display())),
            b"",
            Some(deadline),
        )
        .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::Interrupted);
        assert!(!marker.exists());
    }

    #[test]
    fn a_signal_is_reported_as_such() {
        let out = exec_raw(&mut sh("kill -9 $$"), b"", None).unwrap();
        assert_eq!(out.exit, Exit::Signal(9));
        assert_eq!(out.status(), None);
    }
}
