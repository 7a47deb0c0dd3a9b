//! The process entry point: the only place that exits.

use std::io::{self, Read};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use cni_version::PluginInfo;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::{dispatch, Env, Plugin, ProcessEnv};

/// How long VERSION waits for stdin to close. The runtime's stdin is only a
/// hint there (the requested version), so a runtime that never closes it
/// must not hang us.
const VERSION_STDIN_WAIT: Duration = Duration::from_millis(200);

/// Runs the plugin as a process: reads the real environment and stdin,
/// dispatches, writes stdout/stderr, and exits with the status.
///
/// `about` is printed to stderr, with the supported versions, when the
/// binary is run by hand without `CNI_COMMAND`.
pub fn run<P: Plugin>(plugin: &P, versions: &PluginInfo, about: &str) -> ! {
    let code = try_run(plugin, versions, about);
    std::process::exit(code)
}

/// Like [`run`], but returns the exit status instead of exiting.
pub fn try_run<P: Plugin>(plugin: &P, versions: &PluginInfo, about: &str) -> i32 {
    let stdin = io::stdin();
    let mut stdin = stdin.lock();
    let mut stdout = io::stdout().lock();
    let mut stderr = io::stderr().lock();
    let is_version = ProcessEnv
        .var("CNI_COMMAND")
        .is_some_and(|c| c == "VERSION");
    if is_version {
        let mut bounded = DeadlineReader {
            inner: &mut stdin,
            deadline: Instant::now() + VERSION_STDIN_WAIT,
        };
        dispatch(
            plugin,
            versions,
            about,
            &ProcessEnv,
            &mut bounded,
            &mut stdout,
            &mut stderr,
        )
    } else {
        dispatch(
            plugin,
            versions,
            about,
            &ProcessEnv,
            &mut stdin,
            &mut stdout,
            &mut stderr,
        )
    }
}

/// Reads the process's stdin whole, as [`run`] does: for `VERSION` (whose
/// stdin is only a hint) it stops waiting after a short deadline, so a
/// runtime that never closes stdin cannot hang the plugin. For plugins that
/// need stdin before dispatching (see [`dispatch`](crate::dispatch)).
pub fn read_stdin() -> io::Result<Vec<u8>> {
    let stdin = io::stdin();
    let mut stdin = stdin.lock();
    // Configurations are a few KiB: one read instead of a run of small
    // probing ones.
    let mut out = Vec::with_capacity(16 * 1024);
    if ProcessEnv
        .var("CNI_COMMAND")
        .is_some_and(|c| c == "VERSION")
    {
        let mut bounded = DeadlineReader {
            inner: &mut stdin,
            deadline: Instant::now() + VERSION_STDIN_WAIT,
        };
        bounded.read_to_end(&mut out)?;
    } else {
        stdin.read_to_end(&mut out)?;
    }
    Ok(out)
}

/// Reads until EOF or the deadline, whichever comes first; after the
/// deadline it reports EOF.
struct DeadlineReader<'a, R: Read + AsFd> {
    inner: &'a mut R,
    deadline: Instant,
}

impl<R: Read + AsFd> Read for DeadlineReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        let millis = u16::try_from(left.as_millis()).unwrap_or(u16::MAX);
        let mut fds = [PollFd::new(self.inner.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(millis)) {
            Ok(0) => Ok(0),
            Ok(_) => self.inner.read(buf),
            Err(nix::errno::Errno::EINTR) => Ok(0),
            Err(e) => Err(io::Error::from(e)),
        }
    }
}
