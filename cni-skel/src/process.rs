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
///
/// Go: `skel.PluginMainFuncs`.
pub fn run<P: Plugin>(plugin: &P, versions: &PluginInfo, about: &str) -> ! {
    crate::late_close::enable();
    let code = try_run(plugin, versions, about);
    crate::exit(code)
}

/// Like [`run`], but returns the exit status instead of exiting.
///
/// Go: `skel.PluginMainFuncsWithError`.
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

/// What the Rust runtime's start-up does before `main` that a plugin needs,
/// and nothing else; called by [`plugin_main!`](crate::plugin_main) first
/// thing.
///
/// - Standard descriptors 0-2 are opened on `/dev/null` when closed, so
///   that a file the plugin opens can never become its stdout.
/// - `SIGPIPE` is ignored, so a runtime that closed our stdout gets an
///   error written nowhere rather than a plugin killed by a signal (as
///   under std's `main`; `std::process::Command` restores it for children).
/// - The process is marked as one that ends in [`exit`](crate::exit), so
///   [`close_after_exit`](crate::close_after_exit) takes what it is given.
///
/// Skipped, on purpose: std's stack-overflow handler (it reads
/// `/proc/self/maps` and maps an alternate signal stack on every start, a
/// sixth of a static plugin's user-space instructions and ~15% of an
/// execution's wall time here; a stack overflow is then a plain `SIGSEGV`
/// rather than a message) and naming the main thread (a panic message says
/// `<unnamed>`; the panic is still caught and reported as a CNI error).
pub fn lean_start() {
    use nix::errno::Errno;
    use nix::fcntl::{fcntl, open, FcntlArg, OFlag};
    use nix::sys::signal::{signal, SigHandler, Signal};
    use nix::sys::stat::Mode;

    for fd in 0..3 {
        if fcntl(fd, FcntlArg::F_GETFD) == Err(Errno::EBADF) {
            // The lowest free descriptor is `fd`: it is now open and stays
            // so. If even /dev/null cannot be opened, carry on (std
            // aborts): the plugin's own writes then report the failure.
            let _ = open("/dev/null", OFlag::O_RDWR, Mode::empty());
        }
    }
    // SAFETY: ignoring a signal installs no handler code; no other thread
    // exists yet to race on the disposition.
    #[allow(unsafe_code)]
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigIgn) };
    // The process exits through `cni_skel::exit` (plugin_main! says so).
    crate::late_close::enable();
}

/// Defines the binary's process entry point with a lean start-up: the C
/// `main` symbol, which calls [`lean_start`], then runs the plugin and exits
/// with its status. The crate root must say `#![no_main]`.
///
/// Why: the Rust runtime's own start-up (stack-overflow handler setup, which
/// reads `/proc/self/maps`, among others) costs a static plugin ~15% of an
/// execution; see [`lean_start`] for exactly what is kept and what is not.
/// A plain `fn main() { cni_skel::run(...) }` works the same, only slower.
///
/// With cni-skel's `dlmalloc` feature it also makes
/// [dlmalloc](https://docs.rs/dlmalloc) the binary's global allocator.
/// Why: musl's allocator (mallocng, a static plugin's default) hands
/// freed memory back to the kernel at once, so a plugin's short life is
/// full of small `munmap`s, each a TLB shoot-down across the CPUs its
/// threads ran on; perf put it, with its slower paths, at about 12 % of
/// our plugins' CPU in a 100-pod ADD burst, where dlmalloc keeps what it
/// freed (BENCHMARKS.md, "Many pods at once"). A binary that sets its
/// own `#[global_allocator]` leaves the feature off.
///
/// Two forms:
/// - `plugin_main!(plugin, versions, about)` runs [`try_run`] with them;
/// - `plugin_main!(entry)`, with `entry` a `fn() -> i32`, runs your own
///   entry function and exits with what it returns.
///
/// ```no_run
/// #![no_main]
/// use cni_skel::{BoxError, Plugin, Reply, Request};
/// use cni_types::NetConf;
///
/// struct Nothing;
///
/// impl Plugin for Nothing {
///     type Config = NetConf;
///     const CHECK: cni_skel::CheckSupport = cni_skel::CheckSupport::Unsupported;
///     fn add(&self, _req: &Request<NetConf>) -> Result<Reply, BoxError> {
///         Ok(cni_types::Result100::new(cni_types::SpecVersion::V1_0_0).into())
///     }
///     fn del(&self, _req: &Request<NetConf>) -> Result<(), BoxError> {
///         Ok(())
///     }
/// }
///
/// cni_skel::plugin_main!(Nothing, cni_version::PluginInfo::all(), "CNI nothing plugin v1.0.0");
/// ```
#[macro_export]
macro_rules! plugin_main {
    ($plugin:expr, $versions:expr, $about:expr $(,)?) => {
        $crate::plugin_main!(|| $crate::try_run(&$plugin, &$versions, $about));
    };
    ($entry:expr) => {
        $crate::__plugin_allocator!();

        /// The process entry point (see `cni_skel::plugin_main!`).
        // SAFETY: the crate says `#![no_main]`, so this is the only C
        // `main` symbol in the binary.
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        extern "C" fn main(
            _argc: ::core::ffi::c_int,
            _argv: *const *const ::core::ffi::c_char,
        ) -> ::core::ffi::c_int {
            $crate::lean_start();
            let entry: fn() -> i32 = $entry;
            // Flushes stdout, hands slow closes to a detached child
            // (`cni_skel::close_after_exit`), then exits.
            $crate::exit(entry())
        }
    };
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

/// The `dlmalloc` feature's global allocator, defined by
/// [`plugin_main!`](crate::plugin_main) in the binary's crate.
#[cfg(feature = "dlmalloc")]
#[doc(hidden)]
#[macro_export]
macro_rules! __plugin_allocator {
    () => {
        #[global_allocator]
        static __CNI_PLUGIN_ALLOCATOR: $crate::__dlmalloc::GlobalDlmalloc =
            $crate::__dlmalloc::GlobalDlmalloc;
    };
}

/// Without the `dlmalloc` feature: the platform's allocator.
#[cfg(not(feature = "dlmalloc"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __plugin_allocator {
    () => {};
}
