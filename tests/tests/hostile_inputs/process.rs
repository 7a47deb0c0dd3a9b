//! Running a plugin as a runtime does: a cleared environment, stdin
//! through a pipe, stdout read (or closed), each process killed past its
//! bound and reaped with `wait4` for its peak RSS.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use tests::{plugin_bin_dir, FAKE_NETNS};

/// No case may take longer than this.
pub const BOUND: Duration = Duration::from_secs(10);

pub fn noop() -> PathBuf {
    plugin_bin_dir().join("noop")
}

/// The chained sample: its configuration (with `prevResult`) is read by
/// the SDK before the plugin runs, so it shows the SDK's own answer.
pub fn dns_mac() -> PathBuf {
    plugin_bin_dir().join("dns-mac")
}

/// What to do with the plugin's stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdoutMode {
    /// A pipe we read to the end.
    Read,
    /// A pipe whose read end we close before the plugin can write.
    ReaderClosed,
    /// No file descriptor 1 at all.
    FdClosed,
}

/// One invocation of a plugin.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub env: Vec<(OsString, OsString)>,
    pub stdin: Vec<u8>,
    /// Keep stdin open (after writing `stdin`) until the plugin exits.
    pub stdin_never_closes: bool,
    pub stdout: StdoutMode,
    /// RLIMIT_FSIZE for the plugin (SIGXFSZ ignored): writes to regular
    /// files fail beyond it, as on a full disk.
    pub file_size_limit: Option<u64>,
    /// Run as this uid/gid (only when we are root).
    pub run_as: Option<u32>,
    /// Killed after this long.
    pub bound: Duration,
}

/// `CNI_COMMAND=command` with a container id, a netns path that does not
/// exist, an interface name and a `CNI_PATH`.
pub fn invocation(command: &str) -> Invocation {
    Invocation {
        env: vec![
            ("CNI_COMMAND".into(), command.into()),
            ("CNI_CONTAINERID".into(), "hostile-1".into()),
            ("CNI_NETNS".into(), FAKE_NETNS.into()),
            ("CNI_IFNAME".into(), "eth0".into()),
            ("CNI_PATH".into(), "/opt/cni/bin".into()),
        ],
        stdin: Vec::new(),
        stdin_never_closes: false,
        stdout: StdoutMode::Read,
        file_size_limit: None,
        run_as: None,
        bound: BOUND,
    }
}

impl Invocation {
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        let key = key.as_ref().to_owned();
        self.env.retain(|(k, _)| *k != key);
        self.env.push((key, value.as_ref().to_owned()));
        self
    }

    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = bytes.into();
        self
    }

    /// `CNI_ARGS=DEBUG=<path>`: the noop follows that debug file.
    pub fn debug(self, path: &Path) -> Self {
        self.env("CNI_ARGS", format!("DEBUG={}", path.display()))
    }
}

/// What the process did.
pub struct Run {
    /// Exit code (`None` when killed by a signal).
    pub status: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub elapsed: Duration,
    /// Peak resident set size, from `wait4` (bytes).
    pub max_rss: u64,
    /// Killed for exceeding its bound.
    pub timed_out: bool,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = |b: &[u8]| {
            let s = String::from_utf8_lossy(&b[..b.len().min(2000)]).into_owned();
            if b.len() > 2000 {
                format!("{s}... ({} bytes)", b.len())
            } else {
                s
            }
        };
        f.debug_struct("Run")
            .field("status", &self.status)
            .field("signal", &self.signal)
            .field("stdout", &text(&self.stdout))
            .field("stderr", &text(&self.stderr))
            .field("elapsed", &self.elapsed)
            .field("max_rss", &self.max_rss)
            .field("timed_out", &self.timed_out)
            .finish()
    }
}

impl Run {
    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// The stdout JSON document (panics when there is none).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout not JSON ({e}): {self:?}"))
    }
}

/// Runs `inv` with a cleared environment (plus `PATH`), killing the
/// process if it outlives its bound ([`BOUND`] unless said otherwise), and reaps it with `wait4` for its
/// peak RSS.
///
/// The watchdog only ever signals a process that has not been reaped:
/// `waitid(WNOWAIT)` waits for the exit without reaping, the watchdog is
/// stopped and joined, and only then does `wait4` reap, so the pid cannot
/// have been reused when it is killed.
// The child is reaped with `wait4` (for its rusage), not `Child::wait`.
#[allow(clippy::zombie_processes)]
pub fn run(bin: &Path, inv: &Invocation) -> Run {
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .envs(inv.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(match inv.stdout {
            StdoutMode::FdClosed => Stdio::null(),
            _ => Stdio::piped(),
        })
        .stderr(Stdio::piped());
    let (stdout_mode, fsize, run_as) = (inv.stdout, inv.file_size_limit, inv.run_as);
    // SAFETY: only async-signal-safe calls (close, signal, setrlimit,
    // setgroups, setgid, setuid) between fork and exec.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(move || {
            if stdout_mode == StdoutMode::FdClosed && libc::close(1) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(limit) = fsize {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let rl = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &rl) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(id) = run_as {
                tests::become_user(id)?;
            }
            Ok(())
        });
    }
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let pid = child.id() as libc::pid_t;

    if inv.stdout == StdoutMode::ReaderClosed {
        // Closed before we write stdin, so before the plugin can answer.
        drop(child.stdout.take());
    }
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .map(|pipe| {
        thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut out);
            }
            out
        })
    })
    .collect();

    let (release_stdin, stdin_released) = mpsc::channel::<()>();
    let mut stdin_pipe = child.stdin.take().expect("stdin is piped");
    let input = inv.stdin.clone();
    let never_closes = inv.stdin_never_closes;
    let writer = thread::spawn(move || {
        // A plugin may answer without reading everything: EPIPE is fine.
        let _ = stdin_pipe.write_all(&input);
        if never_closes {
            let _ = stdin_released.recv();
        }
        drop(stdin_pipe);
    });

    let (exited, exit_seen) = mpsc::channel::<()>();
    let bound = inv.bound;
    let watchdog = thread::spawn(move || match exit_seen.recv_timeout(bound) {
        Err(mpsc::RecvTimeoutError::Timeout) => {
            // SAFETY: pid is our unreaped child (see above).
            #[allow(unsafe_code)]
            unsafe {
                libc::kill(pid, libc::SIGKILL)
            };
            true
        }
        _ => false,
    });
    loop {
        // SAFETY: plain syscall on our child; the siginfo is ours.
        #[allow(unsafe_code)]
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        #[allow(unsafe_code)]
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            break;
        }
        let err = std::io::Error::last_os_error();
        assert_eq!(err.kind(), std::io::ErrorKind::Interrupted, "waitid: {err}");
    }
    let elapsed = start.elapsed();
    let _ = exited.send(());
    let timed_out = watchdog.join().expect("watchdog");
    let mut status = 0;
    // SAFETY: reaping our own child; rusage is written by the kernel.
    #[allow(unsafe_code)]
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    #[allow(unsafe_code)]
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    let _ = release_stdin.send(());
    writer.join().expect("stdin writer");
    let mut outputs = readers.into_iter().map(|r| r.join().expect("reader"));
    let (stdout, stderr) = (outputs.next().unwrap(), outputs.next().unwrap());
    Run {
        status: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        stdout,
        stderr,
        elapsed,
        max_rss: u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024,
        timed_out,
    }
}
