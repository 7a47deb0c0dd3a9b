//! Hostile inputs against the built `noop`, run as a process the way a
//! runtime runs it: every input gets one well-formed answer, never a panic,
//! a hang or a half-written file.
//!
//! Each case checks the exit status, that stdout is exactly one JSON
//! document or empty (a CNI error with an allowed code when the status is
//! not 0; see `tests::invariants::check_answer`), that stderr has no Rust
//! panic message, and that the process ends within [`BOUND`] (enforced by
//! killing it, see [`run`]). The peak RSS of every process is measured with
//! `wait4`; the 64 MiB stdin cases assert it stays under 4x the input plus
//! 16 MiB (8x for input that is all invalid UTF-8, which triples when read
//! as the reference reads it) and print the figure.
//!
//! The noop is the reference test double's drop-in: where the reference
//! panics ("test setup error", e.g. a configuration it cannot read while
//! `CNI_ARGS` names a debug file) it exits 2 with one line on stderr and
//! nothing on stdout. Cases that hit that path say so.

use std::ffi::{CString, OsStr, OsString};
use std::fs;
use std::io::{Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tests::invariants::{check_answer, contains, Printed};
use tests::{plugin_bin_dir, FAKE_NETNS};

/// No case may take longer than this.
const BOUND: Duration = Duration::from_secs(10);

const MIB: usize = 1 << 20;

fn noop() -> PathBuf {
    plugin_bin_dir().join("noop")
}

/// The chained sample: its configuration (with `prevResult`) is read by
/// the SDK before the plugin runs, so it shows the SDK's own answer.
fn dns_mac() -> PathBuf {
    plugin_bin_dir().join("dns-mac")
}

/// What to do with the plugin's stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StdoutMode {
    /// A pipe we read to the end.
    Read,
    /// A pipe whose read end we close before the plugin can write.
    ReaderClosed,
    /// No file descriptor 1 at all.
    FdClosed,
}

/// One invocation of a plugin.
#[derive(Debug, Clone)]
struct Invocation {
    env: Vec<(OsString, OsString)>,
    stdin: Vec<u8>,
    /// Keep stdin open (after writing `stdin`) until the plugin exits.
    stdin_never_closes: bool,
    stdout: StdoutMode,
    /// RLIMIT_FSIZE for the plugin (SIGXFSZ ignored): writes to regular
    /// files fail beyond it, as on a full disk.
    file_size_limit: Option<u64>,
    /// Run as this uid/gid (only when we are root).
    run_as: Option<u32>,
    /// Killed after this long.
    bound: Duration,
}

/// `CNI_COMMAND=command` with a container id, a netns path that does not
/// exist, an interface name and a `CNI_PATH`.
fn invocation(command: &str) -> Invocation {
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
    fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        let key = key.as_ref().to_owned();
        self.env.retain(|(k, _)| *k != key);
        self.env.push((key, value.as_ref().to_owned()));
        self
    }

    fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = bytes.into();
        self
    }

    /// `CNI_ARGS=DEBUG=<path>`: the noop follows that debug file.
    fn debug(self, path: &Path) -> Self {
        self.env("CNI_ARGS", format!("DEBUG={}", path.display()))
    }
}

/// What the process did.
struct Run {
    /// Exit code (`None` when killed by a signal).
    status: Option<i32>,
    signal: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    elapsed: Duration,
    /// Peak resident set size, from `wait4` (bytes).
    max_rss: u64,
    /// Killed for exceeding its bound.
    timed_out: bool,
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
    fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// The stdout JSON document (panics when there is none).
    fn json(&self) -> Value {
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
fn run(bin: &Path, inv: &Invocation) -> Run {
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

/// The checks every case makes: finished in time, exited (no signal), no
/// panic message, and one well-formed answer (see
/// `tests::invariants::check_answer`). Returns what stdout held.
fn well_formed(run: &Run) -> Printed {
    // The bound is enforced by killing the child (see `run`).
    assert!(!run.timed_out, "killed after its time bound: {run:?}");
    assert!(
        run.signal.is_none(),
        "killed by signal {:?}: {run:?}",
        run.signal
    );
    assert!(
        !contains(&run.stderr, b"panicked at"),
        "panic on stderr: {}",
        run.stderr_str()
    );
    let status = run.status.expect("exited");
    check_answer(status, &run.stdout, &run.stderr).unwrap_or_else(|e| panic!("{e}\n{run:?}"))
}

/// The checks of [`well_formed`], and a CNI error with this code.
fn fails_with(run: &Run, code: u32) -> cni_types::Error {
    assert_eq!(run.status, Some(1), "{run:?}");
    match well_formed(run) {
        Printed::Error(e) if e.code.0 == code => e,
        other => panic!("expected error code {code}, got {other:?}\n{run:?}"),
    }
}

/// The checks of [`well_formed`], and success.
fn succeeds(run: &Run) -> Printed {
    assert_eq!(run.status, Some(0), "{run:?}");
    well_formed(run)
}

/// The noop's test setup error (where the reference panics): exit status
/// 2, nothing on stdout, the reason on stderr.
fn setup_error(run: &Run) {
    assert!(!run.timed_out && run.signal.is_none(), "{run:?}");
    assert_eq!(run.status, Some(2), "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    assert!(contains(&run.stderr, b"test setup error"), "{run:?}");
    assert!(!contains(&run.stderr, b"panicked at"), "{run:?}");
}

/// A configuration with extra top-level members (raw JSON text).
fn conf_with(version: &str, extra: &str) -> Vec<u8> {
    let mut s = format!(r#"{{"cniVersion":"{version}","name":"hostile","type":"noop""#);
    if !extra.is_empty() {
        s.push(',');
        s.push_str(extra);
    }
    s.push('}');
    s.into_bytes()
}

/// A temporary directory holding a debug file with `contents`.
fn debug_dir(contents: &Value) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("debug.json");
    fs::write(&path, contents.to_string()).expect("write debug file");
    (dir, path)
}

/// Runs ADD through the noop with `ReportResult: PASSTHROUGH`, so the
/// configuration's `prevResult` is read and printed back.
fn passthrough(version: &str, prev_result: &str) -> Run {
    let (_dir, debug) = debug_dir(&json!({"ReportResult": "PASSTHROUGH"}));
    let conf = conf_with(version, &format!(r#""prevResult":{prev_result}"#));
    run(&noop(), &invocation("ADD").debug(&debug).stdin(conf))
}

/// A `prevResult` that cannot be read: the noop (which reads its
/// configuration before the SDK when `CNI_ARGS` names a debug file, where
/// the reference panics) exits with a test setup error naming `needle`;
/// the SDK (through dns-mac) answers code 6 naming it.
fn prev_result_rejected(version: &str, prev_result: &str, needle: &str) {
    let out = passthrough(version, prev_result);
    setup_error(&out);
    assert!(
        out.stderr_str().contains(needle),
        "noop, {prev_result}: {out:?}"
    );
    let conf = conf_with(version, &format!(r#""prevResult":{prev_result}"#));
    let out = run(&dns_mac(), &invocation("ADD").stdin(conf));
    let err = fails_with(&out, 6);
    assert!(
        err.to_string().contains(needle),
        "dns-mac, {prev_result}: {err:?}"
    );
}

// ---------------------------------------------------------------------------
// Deeply nested JSON
// ---------------------------------------------------------------------------

const DEPTH: usize = 100_000;

fn nested_arrays() -> String {
    format!("{}{}", "[".repeat(DEPTH), "]".repeat(DEPTH))
}

fn nested_objects() -> String {
    format!("{}1{}", r#"{"a":"#.repeat(DEPTH), "}".repeat(DEPTH))
}

#[test]
fn nested_json_100k_levels_is_a_decoding_error() {
    let cases = [
        ("top-level arrays", nested_arrays().into_bytes()),
        (
            "arrays in an unknown key",
            conf_with("1.0.0", &format!(r#""x":{}"#, nested_arrays())),
        ),
        (
            "objects in prevResult",
            conf_with("1.0.0", &format!(r#""prevResult":{}"#, nested_objects())),
        ),
        (
            "objects before name",
            format!(r#"{{"x":{},"name":"n"}}"#, nested_objects()).into_bytes(),
        ),
    ];
    for (what, stdin) in cases {
        // The SDK reads the configuration: code 6 ("failed to decode").
        let out = run(&dns_mac(), &invocation("ADD").stdin(stdin.clone()));
        let err = fails_with(&out, 6);
        assert!(
            err.msg.contains("recursion limit") || err.msg.contains("invalid type"),
            "dns-mac, {what}: {err:?}"
        );
        // The noop reads it itself (as the reference does): the SDK skips
        // unknown values without recursing, so the noop's own reading
        // fails, reported as a plain error (999), or the SDK's check of
        // the shape fails first (6).
        let out = run(&noop(), &invocation("ADD").stdin(stdin));
        let err = match well_formed(&out) {
            Printed::Error(e) if [6, 999].contains(&e.code.0) => e,
            other => panic!("noop, {what}: {other:?}"),
        };
        assert!(
            err.msg.contains("recursion limit") || err.msg.contains("invalid type"),
            "noop, {what}: {err:?}"
        );
    }
}

#[test]
fn nested_json_100k_levels_with_a_debug_file_is_a_setup_error() {
    // With CNI_ARGS naming a debug file the noop reads the configuration
    // before the SDK does, as the reference does (which panics there).
    let (_dir, debug) = debug_dir(&json!({}));
    let conf = conf_with("1.0.0", &format!(r#""x":{}"#, nested_arrays()));
    let out = run(&noop(), &invocation("ADD").debug(&debug).stdin(conf));
    setup_error(&out);
    assert!(out.stderr_str().contains("recursion limit"), "{out:?}");
}

#[test]
fn nested_json_100k_levels_for_version_is_ignored() {
    let out = run(&noop(), &invocation("VERSION").stdin(nested_objects()));
    let Printed::Document(doc) = succeeds(&out) else {
        panic!("{out:?}")
    };
    assert_eq!(doc["cniVersion"], "1.1.0", "{doc}");
}

// ---------------------------------------------------------------------------
// 64 MiB of stdin, and the memory it costs
// ---------------------------------------------------------------------------

/// Runs a 64 MiB stdin and asserts the peak RSS stays under 4x the input
/// plus 16 MiB; prints the figure.
fn sixty_four_mib(bin: &Path, what: &str, inv: Invocation) -> Run {
    sixty_four_mib_within(bin, what, inv, 4)
}

/// Like [`sixty_four_mib`], with the bound `multiple` x the input + 16 MiB.
fn sixty_four_mib_within(bin: &Path, what: &str, inv: Invocation, multiple: u64) -> Run {
    let size = inv.stdin.len();
    let out = run(bin, &inv);
    let limit = multiple * size as u64 + 16 * MIB as u64;
    eprintln!(
        "64 MiB stdin ({what}): peak RSS {:.1} MiB = {:.2}x the input ({:?}, exit {:?})",
        out.max_rss as f64 / MIB as f64,
        out.max_rss as f64 / size as f64,
        out.elapsed,
        out.status
    );
    assert!(
        out.max_rss < limit,
        "{what}: peak RSS {} bytes exceeds {multiple} x {size} + 16 MiB",
        out.max_rss
    );
    out
}

/// A configuration of exactly `size` bytes, padded with `pad` repeated in
/// an unknown string member.
fn padded_conf(size: usize, pad: &[u8]) -> Vec<u8> {
    let mut conf = br#"{"cniVersion":"1.0.0","name":"hostile","type":"noop","pad":""#.to_vec();
    let room = size - conf.len() - 2;
    conf.extend(pad.iter().copied().cycle().take(room));
    conf.extend_from_slice(b"\"}");
    assert_eq!(conf.len(), size);
    conf
}

#[test]
fn stdin_64_mib_config_memory_is_bounded() {
    let conf = padded_conf(64 * MIB, b"a");
    let out = sixty_four_mib(
        &noop(),
        "a valid config, noop ADD",
        invocation("ADD").stdin(conf),
    );
    succeeds(&out);
    assert_eq!(out.stdout, b"{}");
}

#[test]
fn stdin_64_mib_not_json_memory_is_bounded() {
    let mut garbage = vec![b'x'; 64 * MIB];
    garbage[0] = b'{';
    let out = sixty_four_mib(
        &noop(),
        "not JSON, noop ADD",
        invocation("ADD").stdin(garbage),
    );
    fails_with(&out, 6);
}

#[test]
fn stdin_64_mib_invalid_utf8_memory_is_bounded() {
    // Every invalid byte becomes U+FFFD (3 bytes) when read as the
    // reference reads it: input that is all invalid bytes triples in the
    // readable copy, which the parse then holds too; twice the usual bound.
    let mut inv = invocation("ADD").stdin(padded_conf(64 * MIB, &[0xff]));
    inv.bound = Duration::from_secs(120);
    let out = sixty_four_mib_within(&noop(), "invalid UTF-8 in a string, noop ADD", inv, 8);
    succeeds(&out);
}

#[test]
fn stdin_64_mib_with_a_debug_file_memory_is_bounded() {
    let (_dir, debug) = debug_dir(&json!({}));
    let mut inv = invocation("ADD")
        .debug(&debug)
        .stdin(padded_conf(64 * MIB, b"a"));
    inv.bound = Duration::from_secs(120);
    let out = sixty_four_mib(&noop(), "a valid config and a debug file, noop ADD", inv);
    succeeds(&out);
}

#[test]
fn stdin_64_mib_through_the_sdk_memory_is_bounded() {
    // dns-mac: the SDK reads stdin and parses the configuration itself;
    // without a prevResult the plugin then refuses (code 7).
    let out = sixty_four_mib(
        &dns_mac(),
        "a valid config, dns-mac ADD",
        invocation("ADD").stdin(padded_conf(64 * MIB, b"a")),
    );
    fails_with(&out, 7);
}

// ---------------------------------------------------------------------------
// Invalid UTF-8 and NUL bytes
// ---------------------------------------------------------------------------

#[test]
fn invalid_utf8_in_stdin() {
    let bin = noop();
    // In the network name: read as U+FFFD, which is not a valid name.
    let out = run(
        &bin,
        &invocation("ADD")
            .stdin(&b"{\"cniVersion\":\"1.0.0\",\"name\":\"n\xff\",\"type\":\"noop\"}"[..]),
    );
    fails_with(&out, 7);
    // In an unknown member: fine.
    let out = run(
        &bin,
        &invocation("ADD")
            .stdin(&b"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"x\":\"\xff\xfe\xc3\"}"[..]),
    );
    succeeds(&out);
    assert_eq!(out.stdout, b"{}");
    // In the version: not one we support.
    let out = run(
        &bin,
        &invocation("ADD").stdin(&b"{\"cniVersion\":\"1.0.0\xff\",\"name\":\"n\"}"[..]),
    );
    fails_with(&out, 1);
    // Outside any string: not JSON.
    let out = run(
        &bin,
        &invocation("ADD").stdin(&b"{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}\xff"[..]),
    );
    fails_with(&out, 6);
    // In a prevResult printed back: U+FFFD in valid JSON.
    let (_dir, debug) = debug_dir(&json!({"ReportResult": "PASSTHROUGH"}));
    let conf = b"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"prevResult\":{\"interfaces\":[{\"name\":\"e\xff\"}]}}";
    let out = run(&bin, &invocation("ADD").debug(&debug).stdin(&conf[..]));
    succeeds(&out);
    assert_eq!(out.json()["interfaces"][0]["name"], "e\u{fffd}");
    // VERSION: the requested version cannot be read; the newest answers.
    let out = run(
        &bin,
        &invocation("VERSION").stdin(&b"{\"cniVersion\":\"0.4.0\xff\"}"[..]),
    );
    succeeds(&out);
    assert_eq!(out.json()["cniVersion"], "1.1.0");
}

fn non_utf8(bytes: &[u8]) -> OsString {
    OsString::from_vec(bytes.to_vec())
}

#[test]
fn invalid_utf8_in_env_values() {
    let bin = noop();
    let conf = conf_with("1.0.0", "");
    let add = || invocation("ADD").stdin(conf.clone());
    let err = fails_with(
        &run(&bin, &add().env("CNI_CONTAINERID", non_utf8(b"c\xff"))),
        4,
    );
    assert!(err.details.contains("CNI_CONTAINERID"), "{err:?}");
    // The kernel's rules for interface names (no '/', ':' or whitespace,
    // at most 15 bytes) allow any other byte, as the reference does.
    succeeds(&run(&bin, &add().env("CNI_IFNAME", non_utf8(b"eth\xff"))));
    let err = fails_with(
        &run(&bin, &add().env("CNI_IFNAME", non_utf8(b"eth\xff/"))),
        4,
    );
    assert!(err.details.contains("CNI_IFNAME"), "{err:?}");
    let err = fails_with(
        &run(&bin, &add().env("CNI_COMMAND", non_utf8(b"AD\xff"))),
        4,
    );
    assert!(err.msg.contains("unknown CNI_COMMAND"), "{err:?}");
    // Values the SDK only passes on: the call succeeds.
    for (key, value) in [
        ("CNI_NETNS", &b"/var/run/netns/\xff\xfe"[..]),
        ("CNI_PATH", &b"/opt/\xff:/usr/lib/cni"[..]),
        ("CNI_NETNS_OVERRIDE", &b"\xff"[..]),
    ] {
        let out = run(&bin, &add().env(key, non_utf8(value)));
        succeeds(&out);
        assert_eq!(out.stdout, b"{}", "{key}");
    }
    // A variable name that is not UTF-8 is simply not ours.
    let out = run(&bin, &add().env(non_utf8(b"CNI_\xff"), "x"));
    succeeds(&out);
}

#[test]
fn invalid_utf8_in_cni_args_is_recorded_leniently() {
    let (_dir, debug) = debug_dir(&json!({}));
    let mut args = format!("DEBUG={};K8S_POD_NAME=", debug.display()).into_bytes();
    args.extend_from_slice(b"web\xff");
    let out = run(
        &noop(),
        &invocation("ADD")
            .env("CNI_ARGS", non_utf8(&args))
            .stdin(conf_with("1.0.0", "")),
    );
    succeeds(&out);
    let written: Value = serde_json::from_slice(&fs::read(&debug).unwrap()).unwrap();
    assert!(
        written["CmdArgs"]["Args"]
            .as_str()
            .unwrap()
            .ends_with("web\u{fffd}"),
        "{written}"
    );
    // A debug path that is not UTF-8 names no file: the reference panics.
    let out = run(
        &noop(),
        &invocation("ADD")
            .env("CNI_ARGS", non_utf8(b"DEBUG=/tmp/\xff"))
            .stdin(conf_with("1.0.0", "")),
    );
    setup_error(&out);
}

#[test]
fn nul_bytes() {
    let bin = noop();
    // A raw NUL inside a string is a control character: not JSON.
    let out = run(
        &bin,
        &invocation("ADD").stdin(&b"{\"cniVersion\":\"1.0.0\",\"name\":\"a\0b\"}"[..]),
    );
    fails_with(&out, 6);
    // After the document: trailing characters.
    let out = run(
        &bin,
        &invocation("ADD").stdin(&b"{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}\0"[..]),
    );
    fails_with(&out, 6);
    // Escaped in the name: not a valid name.
    let out = run(
        &bin,
        &invocation("ADD").stdin(&br#"{"cniVersion":"1.0.0","name":"a\u0000b"}"#[..]),
    );
    fails_with(&out, 7);
    // Escaped in a prevResult printed back: escaped again.
    let (_dir, debug) = debug_dir(&json!({"ReportResult": "PASSTHROUGH"}));
    let conf = conf_with(
        "1.0.0",
        r#""prevResult":{"interfaces":[{"name":"e\u0000"}]}"#,
    );
    let out = run(&bin, &invocation("ADD").debug(&debug).stdin(conf));
    succeeds(&out);
    assert_eq!(out.json()["interfaces"][0]["name"], "e\0");
    // Only stdin can carry them: the OS cannot put NUL in an environment.
    let err = Command::new(&bin)
        .env("CNI_COMMAND", "ADD\0DEL")
        .stdin(Stdio::null())
        .output()
        .expect_err("NUL in an environment value");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
}

// ---------------------------------------------------------------------------
// Duplicate keys, numbers out of range, addresses
// ---------------------------------------------------------------------------

#[test]
fn duplicate_json_keys() {
    let bin = noop();
    // The last one wins, as in the reference's decoder.
    let conf = br#"{"cniVersion":"0.4.0","cniVersion":"9.9.9","name":"bad name!","name":"n","type":"noop"}"#;
    let out = run(&bin, &invocation("ADD").stdin(&conf[..]));
    let err = fails_with(&out, 1);
    // The noop prints errors as the reference does (no cniVersion): the
    // version it read is named in the details.
    assert!(err.details.contains(r#"config is "9.9.9""#), "{err:?}");
    let conf = br#"{"cniVersion":"9.9.9","cniVersion":"0.4.0","name":"bad name!","name":"n","type":"noop"}"#;
    succeeds(&run(&bin, &invocation("ADD").stdin(&conf[..])));
    let out = run(&bin, &invocation("VERSION").stdin(&conf[..]));
    succeeds(&out);
    assert_eq!(out.json()["cniVersion"], "0.4.0");
    // In prevResult, as the noop reads it.
    let out = passthrough(
        "1.0.0",
        r#"{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.1/24"}],"ips":[{"address":"10.0.0.2/24"}]}"#,
    );
    succeeds(&out);
    assert_eq!(out.json()["ips"][0]["address"], "10.0.0.2/24");
    // In the debug file.
    let dir = tempfile::tempdir().unwrap();
    let debug = dir.path().join("debug.json");
    fs::write(
        &debug,
        br#"{"ReportResult":"{\"a\":1}","ReportResult":"{\"b\":2}"}"#,
    )
    .unwrap();
    let out = run(
        &bin,
        &invocation("ADD")
            .debug(&debug)
            .stdin(conf_with("1.0.0", "")),
    );
    succeeds(&out);
    assert_eq!(out.stdout, br#"{"b":2}"#);
}

#[test]
fn numbers_out_of_range() {
    // Interface index -1 and 2^64, mtu as a string and beyond u32: the
    // prevResult cannot be read (the message says "invalid number" or
    // "invalid type" without naming the field).
    for (prev, needle) in [
        (
            r#"{"interfaces":[{"name":"eth0"}],"ips":[{"address":"10.0.0.2/24","interface":-1}]}"#,
            "prevResult",
        ),
        (
            r#"{"interfaces":[{"name":"eth0"}],"ips":[{"address":"10.0.0.2/24","interface":18446744073709551616}]}"#,
            "prevResult",
        ),
        (r#"{"interfaces":[{"name":"eth0","mtu":"1500"}]}"#, "1500"),
        (
            r#"{"interfaces":[{"name":"eth0","mtu":4294967296}]}"#,
            "prevResult",
        ),
        (
            r#"{"interfaces":[{"name":"eth0","mtu":1e400}]}"#,
            "prevResult",
        ),
    ] {
        prev_result_rejected("1.1.0", prev, needle);
    }
    // An index past the interfaces is only a number: printed back.
    let out = passthrough(
        "1.0.0",
        r#"{"ips":[{"address":"10.0.0.2/24","interface":4294967296}]}"#,
    );
    succeeds(&out);
    assert_eq!(out.json()["ips"][0]["interface"], 4294967296u64);
    // cniVersion as a number.
    let out = run(
        &noop(),
        &invocation("ADD").stdin(&br#"{"cniVersion":1.0,"name":"n"}"#[..]),
    );
    fails_with(&out, 6);
    // Numbers beyond their range in the debug file.
    for debug in [
        json!({"ReportError": "x", "ReportErrorCode": -1}),
        json!({"ReportError": "x", "ReportErrorCode": 18446744073709551616u128}),
        json!({"ExitWithCode": 9223372036854775808u64}),
    ] {
        let (_dir, path) = debug_dir(&debug);
        let out = run(
            &noop(),
            &invocation("ADD").debug(&path).stdin(conf_with("1.0.0", "")),
        );
        setup_error(&out);
    }
}

#[test]
fn ipv6_zone_ids() {
    // Addresses and gateways do not take zones (nor does the reference).
    for prev in [
        r#"{"ips":[{"address":"fe80::1%eth0/64"}]}"#,
        r#"{"ips":[{"address":"fe80::2/64","gateway":"fe80::1%eth0"}]}"#,
        r#"{"ips":[{"address":"fe80::2/64"}],"routes":[{"dst":"::/0","gw":"fe80::1%eth0"}]}"#,
    ] {
        prev_result_rejected("1.0.0", prev, "%eth0");
    }
    // DNS nameservers are strings: kept as they are.
    let out = passthrough(
        "1.0.0",
        r#"{"ips":[{"address":"fe80::2/64"}],"dns":{"nameservers":["fe80::1%eth0"]}}"#,
    );
    succeeds(&out);
    assert_eq!(out.json()["dns"]["nameservers"][0], "fe80::1%eth0");
}

#[test]
fn ipv4_mapped_ipv6() {
    let prev = r#"{"cniVersion":"1.0.0","ips":[{"address":"::ffff:10.1.0.5/120","gateway":"::ffff:10.1.0.1"}]}"#;
    for version in ["1.0.0", "0.4.0", "0.2.0"] {
        let out = passthrough(version, prev);
        let Printed::Document(doc) = succeeds(&out) else {
            panic!("{out:?}")
        };
        eprintln!("IPv4-mapped prevResult in {version}: {doc}");
        assert_eq!(doc["cniVersion"], version);
    }
}

#[test]
fn cidrs_with_host_bits_are_kept() {
    let prev = r#"{"cniVersion":"1.0.0","ips":[{"address":"10.1.0.5/16"},{"address":"2001:db8::5/64"}],"routes":[{"dst":"10.96.0.1/12"}]}"#;
    for version in ["1.1.0", "0.4.0"] {
        let doc = passthrough(version, prev).json();
        assert_eq!(doc["ips"][0]["address"], "10.1.0.5/16", "{doc}");
        assert_eq!(doc["ips"][1]["address"], "2001:db8::5/64", "{doc}");
        assert_eq!(doc["routes"][0]["dst"], "10.96.0.1/12", "{doc}");
    }
    for bad in ["10.1.0.5/33", "2001:db8::5/129", "10.1.0.5/-1", "10.1.0.5"] {
        let prev = format!(r#"{{"ips":[{{"address":"{bad}"}}]}}"#);
        prev_result_rejected("1.0.0", &prev, bad);
    }
}

// ---------------------------------------------------------------------------
// Large environments
// ---------------------------------------------------------------------------

#[test]
fn ten_thousand_cni_args_pairs() {
    let (_dir, debug) = debug_dir(&json!({}));
    let mut args: Vec<String> = (0..10_000).map(|i| format!("K{i}=V{i}")).collect();
    args.push(format!("DEBUG={}", debug.display()));
    let args = args.join(";");
    let out = run(
        &noop(),
        &invocation("ADD")
            .env("CNI_ARGS", &args)
            .stdin(conf_with("1.0.0", "")),
    );
    succeeds(&out);
    let written: Value = serde_json::from_slice(&fs::read(&debug).unwrap()).unwrap();
    assert_eq!(written["CmdArgs"]["Args"], args.as_str());
    // Without a debug file among them: nothing for the noop to follow.
    let args: Vec<String> = (0..10_000).map(|i| format!("K{i}=V{i}")).collect();
    let out = run(
        &noop(),
        &invocation("ADD")
            .env("CNI_ARGS", args.join(";"))
            .stdin(conf_with("1.0.0", "")),
    );
    setup_error(&out);
    // 10,000 malformed pairs.
    let out = run(
        &noop(),
        &invocation("ADD")
            .env("CNI_ARGS", "K;".repeat(10_000))
            .stdin(conf_with("1.0.0", "")),
    );
    setup_error(&out);
}

#[test]
fn cni_path_of_1000_entries() {
    let (_dir, debug) = debug_dir(&json!({}));
    let path: Vec<String> = (0..1000).map(|i| format!("/opt/cni/bin{i}")).collect();
    let path = path.join(":");
    for command in ["ADD", "DEL", "CHECK", "GC", "STATUS"] {
        let out = run(
            &noop(),
            &invocation(command)
                .env("CNI_PATH", &path)
                .debug(&debug)
                .stdin(conf_with("1.1.0", "")),
        );
        succeeds(&out);
        let written: Value = serde_json::from_slice(&fs::read(&debug).unwrap()).unwrap();
        assert_eq!(written["CmdArgs"]["Path"], path.as_str(), "{command}");
        assert_eq!(written["Command"], command);
    }
}

// ---------------------------------------------------------------------------
// Streams: stdout closed, stdin never closed
// ---------------------------------------------------------------------------

#[test]
fn stdout_closed_before_the_plugin_writes() {
    let bin = noop();
    // The runtime closed its end of the pipe: a clear error exit.
    for command in ["ADD", "VERSION"] {
        let mut inv = invocation(command).stdin(conf_with("1.0.0", ""));
        inv.stdout = StdoutMode::ReaderClosed;
        let out = run(&bin, &inv);
        assert!(!out.timed_out && out.signal.is_none(), "{command}: {out:?}");
        assert_eq!(out.status, Some(1), "{command}: {out:?}");
        assert!(!contains(&out.stderr, b"panicked at"), "{out:?}");
        assert!(out.stderr_str().contains("stdout"), "{command}: {out:?}");
    }
    // No stdout at all (fd 1 closed): no panic, an exit status, and the
    // debug file (which may now be opened as fd 1) is written whole.
    let (_dir, debug) = debug_dir(&json!({}));
    let mut inv = invocation("ADD")
        .debug(&debug)
        .stdin(conf_with("1.0.0", ""));
    inv.stdout = StdoutMode::FdClosed;
    let out = run(&bin, &inv);
    assert!(!out.timed_out && out.signal.is_none(), "{out:?}");
    assert!(out.status.is_some(), "{out:?}");
    assert!(!contains(&out.stderr, b"panicked at"), "{out:?}");
    let written: Value = serde_json::from_slice(&fs::read(&debug).unwrap())
        .unwrap_or_else(|e| panic!("debug file not JSON ({e}) after {out:?}"));
    assert_eq!(written["Command"], "ADD");
    eprintln!(
        "stdout fd closed: exit {:?}, stderr {:?}",
        out.status,
        out.stderr_str()
    );
}

#[test]
fn stdin_that_never_closes_for_version_does_not_hang() {
    let bin = noop();
    for stdin in [
        &b""[..],
        &br#"{"cniVersion":"0.4.0"}"#[..],
        &br#"{"cniVersion":"0.4.0""#[..],
    ] {
        let mut inv = invocation("VERSION").stdin(stdin);
        inv.stdin_never_closes = true;
        let out = run(&bin, &inv);
        succeeds(&out);
        assert!(out.elapsed < Duration::from_secs(3), "{:?}", out.elapsed);
        let doc = out.json();
        assert!(doc["supportedVersions"].is_array(), "{doc}");
        eprintln!(
            "VERSION with stdin open ({:?}): {:?}, {doc}",
            String::from_utf8_lossy(stdin),
            out.elapsed
        );
    }
}

// ---------------------------------------------------------------------------
// A debug directory that is read-only or full
// ---------------------------------------------------------------------------

fn cstring(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).expect("no NUL in path")
}

/// A mount that is detached when dropped.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        // SAFETY: plain syscall on a path we mounted.
        #[allow(unsafe_code)]
        unsafe {
            libc::umount2(cstring(&self.0).as_ptr(), libc::MNT_DETACH)
        };
    }
}

/// Bind-mounts `dir` read-only onto itself (needs CAP_SYS_ADMIN).
fn bind_read_only(dir: &Path) -> Option<Mount> {
    let p = cstring(dir);
    // SAFETY: plain syscalls with valid C strings.
    #[allow(unsafe_code)]
    unsafe {
        if libc::mount(
            p.as_ptr(),
            p.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        ) != 0
        {
            return None;
        }
        let mount = Mount(dir.to_owned());
        let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY;
        if libc::mount(
            std::ptr::null(),
            p.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        ) != 0
        {
            return None;
        }
        Some(mount)
    }
}

/// Mounts a tmpfs of `bytes` on `dir` (needs CAP_SYS_ADMIN).
fn tiny_tmpfs(dir: &Path, bytes: usize) -> Option<Mount> {
    let p = cstring(dir);
    let fstype = CString::new("tmpfs").unwrap();
    let opts = CString::new(format!("size={bytes},mode=0755")).unwrap();
    // SAFETY: plain syscall with valid C strings.
    #[allow(unsafe_code)]
    let rc = unsafe {
        libc::mount(
            fstype.as_ptr(),
            p.as_ptr(),
            fstype.as_ptr(),
            0,
            opts.as_ptr().cast(),
        )
    };
    (rc == 0).then(|| Mount(dir.to_owned()))
}

#[allow(unsafe_code)]
fn is_root() -> bool {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn no_mounts() -> bool {
    std::env::var_os("CNI_HOSTILE_NO_MOUNT").is_some_and(|v| v == "1")
}

#[test]
fn read_only_debug_dir() {
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    fs::create_dir(&ro).unwrap();
    let debug = ro.join("debug.json");
    let original = json!({"ReportResult": "{\"ok\":true}"}).to_string();
    fs::write(&debug, &original).unwrap();
    let mut inv = invocation("ADD")
        .debug(&debug)
        .stdin(conf_with("1.0.0", ""));
    // A read-only mount when we may mount; else permissions, enforced by
    // running as nobody when we are root (root ignores them).
    let _mount = if no_mounts() {
        None
    } else {
        bind_read_only(&ro)
    };
    if _mount.is_none() {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(&debug, fs::Permissions::from_mode(0o444)).unwrap();
        fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
        if is_root() {
            inv.run_as = Some(65534);
        }
    }
    let out = run(&noop(), &inv);
    let err = fails_with(&out, 999);
    assert!(err.msg.contains("debug.json"), "{err:?}");
    assert_eq!(
        fs::read_to_string(&debug).unwrap(),
        original,
        "debug file changed"
    );
    eprintln!(
        "read-only debug dir ({}): {err:?}",
        if _mount.is_some() {
            "ro mount"
        } else {
            "permissions"
        }
    );
}

/// Runs ADD with a debug file in a directory with almost no room left,
/// with a stdin large enough that the rewritten debug file (which records
/// stdin) cannot fit. Returns the outcome, the original and the final
/// debug file, and the names left in its directory.
fn full_debug_dir() -> (Run, String, Vec<u8>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    fs::create_dir(&full).unwrap();
    let debug = full.join("debug.json");
    let original = json!({"ReportResult": "{\"ok\":true}"}).to_string();
    let conf = padded_conf(48 * 1024, b"p");
    let mut inv = invocation("ADD").debug(&debug).stdin(conf);
    let mount = if no_mounts() {
        None
    } else {
        tiny_tmpfs(&full, 64 * 1024)
    };
    if mount.is_some() {
        fs::write(&debug, &original).unwrap();
        // Fill what is left.
        let mut filler = fs::File::create(full.join("filler")).unwrap();
        let page = [0u8; 4096];
        while filler.write_all(&page).is_ok() {}
    } else {
        // The same failure without a mount: a file size limit.
        fs::write(&debug, &original).unwrap();
        inv.file_size_limit = Some(4096);
    }
    let out = run(&noop(), &inv);
    let after = fs::read(&debug).unwrap();
    let mut left: Vec<String> = fs::read_dir(&full)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    drop(mount);
    (out, original, after, left)
}

/// The rewritten debug file would fit in the blocks the file has, but not
/// under the file size limit: an error, and the file left as it was (the
/// noop rewrites a debug file in place only when that cannot fail).
#[test]
fn debug_file_beyond_the_size_limit_is_an_error_and_left_whole() {
    let dir = tempfile::tempdir().unwrap();
    let debug = dir.path().join("debug.json");
    let mut original = json!({"ReportResult": "{}"}).to_string().into_bytes();
    original.resize(8000, b' ');
    fs::write(&debug, &original).unwrap();
    // ~5.7 KB once recorded in base64: over 4096, under the 8 KiB the file
    // occupies.
    let mut inv = invocation("ADD")
        .debug(&debug)
        .stdin(padded_conf(4000, b"p"));
    inv.file_size_limit = Some(4096);
    let out = run(&noop(), &inv);
    let err = fails_with(&out, 999);
    assert!(err.msg.contains("debug.json"), "{err:?}");
    let after = fs::read(&debug).unwrap();
    assert!(
        after == original,
        "debug file changed: {} bytes, starting {:?}",
        after.len(),
        String::from_utf8_lossy(&after[..after.len().min(80)])
    );
    let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "temporary files left: {left:?}");
}

#[test]
fn full_debug_dir_is_an_error() {
    let (out, _, _, _) = full_debug_dir();
    let err = fails_with(&out, 999);
    assert!(err.msg.contains("debug.json"), "{err:?}");
    eprintln!("full debug dir: {err:?}");
}

#[test]
fn full_debug_dir_leaves_the_debug_file_whole() {
    let (out, original, after, left) = full_debug_dir();
    let whole = after == original.as_bytes()
        || serde_json::from_slice::<Value>(&after).is_ok_and(|v| v["Command"] == "ADD");
    assert!(
        whole,
        "debug file half-written ({} bytes: {:?}...) after {out:?}",
        after.len(),
        String::from_utf8_lossy(&after[..after.len().min(120)])
    );
    // Nothing half-written left beside it either.
    assert!(
        left.iter().all(|n| n == "debug.json" || n == "filler"),
        "left in the debug dir: {left:?}"
    );
}
