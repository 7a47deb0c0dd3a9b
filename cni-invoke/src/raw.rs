//! Executing a plugin and keeping everything it did: the one place that
//! spawns a plugin process.

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

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
    /// It ran past the deadline and was killed.
    TimedOut,
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
            Exit::TimedOut => f.write_str("timed out (killed)"),
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
/// ended and what it printed, without interpreting any of it: for tools
/// that judge a plugin's output (a conformance checker) rather than use it.
///
/// The caller sets the program, arguments and environment on `command`;
/// stdin, stdout and stderr are set here. A binary still open for writing
/// ("text file busy") is tried again a second later, up to five times, as
/// the reference runtime library does. With a `deadline`, a process still
/// running after it is killed, with every process of the group it runs
/// in (its own), and reported as [`Exit::TimedOut`].
/// [`exec_plugin`](crate::exec_plugin) is this plus the runtime's reading
/// of the output.
///
/// ```no_run
/// use std::process::Command;
/// use std::time::Duration;
///
/// let mut command = Command::new("/usr/lib/cni/host-local");
/// command.env_clear().env("CNI_COMMAND", "VERSION");
/// let out = cni_invoke::exec_raw(&mut command, b"", Some(Duration::from_secs(5)))?;
/// assert!(out.exit.success());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn exec_raw(
    command: &mut Command,
    stdin: &[u8],
    deadline: Option<Duration>,
) -> std::io::Result<RawOutput> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if deadline.is_some() {
        // A group of its own, so the deadline can kill the children it
        // started too: one left holding stdout would keep us reading.
        command.process_group(0);
    }
    let started = Instant::now();
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
    let stdout_reader = read_all_in_thread(child.stdout.take());
    let stderr_reader = read_all_in_thread(child.stderr.take());
    let exit = match deadline {
        None => exit_of(child.wait()?),
        Some(limit) => wait_until(&mut child, started + limit)?,
    };
    let _ = writer.join();
    Ok(RawOutput {
        exit,
        stdout: stdout_reader.join().unwrap_or_default(),
        stderr: stderr_reader.join().unwrap_or_default(),
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

fn read_all_in_thread<R: Read + Send + 'static>(
    pipe: Option<R>,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut buf);
        }
        buf
    })
}

fn exit_of(status: ExitStatus) -> Exit {
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Status(code),
        (None, Some(signal)) => Exit::Signal(signal),
        (None, None) => Exit::Status(-1),
    }
}

/// Polls, from every millisecond up to every 10 ms: a plugin usually
/// exits within a few milliseconds, and std has no wait with a timeout.
fn wait_until(child: &mut Child, deadline: Instant) -> std::io::Result<Exit> {
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(exit_of(status));
        }
        if Instant::now() >= deadline {
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            }
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Exit::TimedOut);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            Some(Duration::from_millis(100)),
        )
        .unwrap();
        assert_eq!(out.exit, Exit::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn a_child_left_holding_stdout_does_not_outlive_the_deadline() {
        let started = Instant::now();
        let out = exec_raw(
            &mut sh("sleep 30; echo late"),
            b"",
            Some(Duration::from_millis(200)),
        )
        .unwrap();
        assert_eq!(out.exit, Exit::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_signal_is_reported_as_such() {
        let out = exec_raw(&mut sh("kill -9 $$"), b"", None).unwrap();
        assert_eq!(out.exit, Exit::Signal(9));
    }
}
