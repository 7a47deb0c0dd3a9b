//! Executing a plugin: env in, stdin in, stdout out, errors mapped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command as Process;

use cni_skel::{Command, TraceContext, TRACE_VARS};
use cni_types::{CniResult, Code, Error};

use crate::builtin::run_builtin;
use crate::deadline::{Deadline, Stopped, KILL_GRACE};
use crate::limits::STDOUT_LIMIT;
use crate::raw::{excerpt, exec_raw, Exit, RawOutput};

/// The parameters of one plugin execution, passed as `CNI_*` variables.
///
/// The default has every field empty: no command (`CNI_COMMAND` empty),
/// no attachment, no deadline.
///
/// Go: `invoke.Args` (with the `context.Context` that carries the deadline and trace context).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// `CNI_COMMAND`: `ADD`, `DEL`, `CHECK`, `GC`, `STATUS` or `VERSION`;
    /// [`Command::Other`] for any other value, an empty one passing an
    /// empty `CNI_COMMAND`.
    pub command: Command,
    /// `CNI_CONTAINERID`.
    pub container_id: String,
    /// `CNI_NETNS`.
    pub netns: String,
    /// `CNI_IFNAME`.
    pub ifname: String,
    /// `CNI_ARGS` pairs, joined as `K=V;K2=V2`.
    pub args: Vec<(String, String)>,
    /// `CNI_PATH` directories, joined with `:`.
    pub path: Vec<PathBuf>,
    /// When the plugin must be done; `None` waits as long as it runs.
    /// A plugin past its deadline is stopped (see [`exec_plugin`]).
    pub deadline: Option<Deadline>,
    /// The caller's trace context, passed as `TRACEPARENT`, `TRACESTATE`
    /// and `BAGGAGE` (Go: `invoke.injectTraceContext`). Ours is never
    /// inherited: the plugin sees exactly this one.
    pub trace: TraceContext,
}

impl Default for Invocation {
    fn default() -> Invocation {
        Invocation {
            command: Command::Other("".into()),
            container_id: String::new(),
            netns: String::new(),
            ifname: String::new(),
            args: Vec::new(),
            path: Vec::new(),
            deadline: None,
            trace: TraceContext::default(),
        }
    }
}

impl Invocation {
    /// The `CNI_*` variables, then the trace context's; empty `CNI_*`
    /// values are passed as empty, which a plugin treats as unset.
    ///
    /// Go: `invoke.Args.AsEnv`.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let args = self
            .args
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";");
        let path = self
            .path
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(":");
        let mut env = vec![
            ("CNI_COMMAND", self.command.as_str().to_owned()),
            ("CNI_CONTAINERID", self.container_id.clone()),
            ("CNI_NETNS", self.netns.clone()),
            ("CNI_IFNAME", self.ifname.clone()),
            ("CNI_ARGS", args),
            ("CNI_PATH", path),
        ];
        env.extend(self.trace.env());
        env
    }
}

/// Runs `plugin` with the invocation's variables added to our environment
/// and `stdin` on its stdin; returns its stdout (the first
/// [`STDOUT_LIMIT`] bytes: more is no result).
///
/// The child's stderr is passed through to ours once it exits (its first
/// [`STDERR_LIMIT`](crate::STDERR_LIMIT) bytes, and how many more), and an
/// excerpt is kept for the error message when it fails. A non-zero exit
/// becomes the plugin's own CNI error when stdout holds one (its code
/// kept), else an error quoting the start of what it printed, with how
/// much more there was, and how it exited; a plugin killed by a signal is
/// reported as such. A binary still open for writing ("text file
/// busy") is tried again a second later, up to five times, as the
/// reference runtime library does.
///
/// A plugin this binary carries built in ([`set_builtins`](crate::set_builtins)),
/// found as a file that carries the same mark, runs in-process instead,
/// with the same environment, input and output, when the invocation has
/// no deadline (see [`Builtin`](crate::Builtin)).
///
/// With a [`Deadline`], the plugin runs in a process group of its own; if
/// it has not finished when the deadline passes, the group gets `SIGTERM`,
/// then `SIGKILL` after [`KILL_GRACE`](crate::KILL_GRACE), the plugin is
/// reaped, and the error (code 999) names the plugin, the command and the
/// deadline. Code 999 rather than 11 ("try again later"): 11 is a plugin's
/// own word that nothing was done and a retry is safe, while a plugin
/// stopped half-way may have left state behind that the runtime must DEL
/// first, exactly as after a plugin killed by a signal. A deadline's
/// [`Cancel`](crate::Cancel) switch stops the plugin the same way, and
/// the error says it was cancelled.
///
/// Go: `invoke.ExecPluginWithResult`'s `RawExec.ExecPlugin`, with the
/// context's deadline.
pub fn exec_plugin(plugin: &Path, invocation: &Invocation, stdin: &[u8]) -> Result<Vec<u8>, Error> {
    exec_succeeding(plugin, invocation, stdin).map(|out| out.stdout)
}

/// [`exec_plugin`], keeping the whole output of a successful run.
fn exec_succeeding(
    plugin: &Path,
    invocation: &Invocation,
    stdin: &[u8],
) -> Result<RawOutput, Error> {
    let name = plugin.display().to_string();
    let mut command = Process::new(plugin);
    for var in TRACE_VARS {
        command.env_remove(var);
    }
    let env = invocation.env();
    let built_in = match invocation.deadline {
        None => run_builtin(plugin, &env, stdin),
        Some(_) => None,
    };
    let out = match built_in {
        Some(out) => out,
        None => exec_raw(command.envs(env), stdin, invocation.deadline.clone()).map_err(|e| {
            if e.kind() == std::io::ErrorKind::Interrupted {
                return Error::new(
                    Code::INTERNAL,
                    format!(
                        "plugin {name} was not started: {} was cancelled",
                        invocation.command
                    ),
                );
            }
            Error::io("execute plugin", plugin, e)
        })?,
    };
    pass_stderr_on(&name, &out);

    let how = |stopped: Stopped| match stopped {
        Stopped::Terminated => "terminated with SIGTERM".to_owned(),
        Stopped::Killed => format!("killed with SIGKILL after ignoring SIGTERM for {KILL_GRACE:?}"),
    };
    let code = match out.exit {
        Exit::Status(0) => return Ok(out),
        Exit::Status(code) => code,
        Exit::Signal(signal) => {
            return Err(Error::new(
                Code::INTERNAL,
                format!("plugin {name} was killed by signal {signal}"),
            )
            .with_details(out.excerpts(SHOWN)))
        }
        Exit::TimedOut(stopped) => {
            let deadline = invocation
                .deadline
                .as_ref()
                .map_or_else(|| "deadline".to_owned(), |d| d.to_string());
            return Err(Error::new(
                Code::INTERNAL,
                format!(
                    "plugin {name} did not finish {} within its {deadline}: {}",
                    invocation.command,
                    how(stopped)
                ),
            )
            .with_details(out.excerpts(SHOWN)));
        }
        Exit::Cancelled(stopped) => {
            return Err(Error::new(
                Code::INTERNAL,
                format!(
                    "plugin {name} was cancelled before it finished {}: {}",
                    invocation.command,
                    how(stopped)
                ),
            )
            .with_details(out.excerpts(SHOWN)));
        }
    };
    if out.stdout_dropped == 0 {
        if let Ok(err) = serde_json::from_slice::<Error>(&out.stdout) {
            return Err(err);
        }
    }
    Err(Error::new(
        Code::INTERNAL,
        format!("plugin {name} failed with exit status {code} and no CNI error"),
    )
    .with_details(out.excerpts(SHOWN)))
}

/// How many characters of a plugin's output an error message quotes.
const SHOWN: usize = 512;

/// Writes the plugin's stderr to ours, saying how much was cut.
///
/// Straight to file descriptor 2, not through `std::io::stderr().lock()`:
/// `cni_skel`'s entry point holds that lock on the main thread for the
/// whole run, so a plugin delegating from another thread (bridge and ptp
/// run their IPAM plugin while they make the pair) would wait for it
/// forever once the delegate wrote anything. Stderr is unbuffered, so
/// nothing written through the lock is overtaken.
fn pass_stderr_on(name: &str, out: &RawOutput) {
    use std::os::fd::AsFd;
    let stderr = std::io::stderr();
    let Ok(fd) = stderr.as_fd().try_clone_to_owned() else {
        return;
    };
    let mut ours = std::fs::File::from(fd);
    let _ = ours.write_all(&out.stderr);
    if out.stderr_dropped > 0 {
        let _ = writeln!(
            ours,
            "... ({} bytes more of {name}'s stderr not shown)",
            out.stderr_dropped
        );
    }
}

/// Runs an ADD and reads its output as the result the plugin gave: in its
/// own `cniVersion`, or in `version` (the configuration's) when it names
/// none, as an IPAM plugin's abbreviated result may. Not converted: a
/// runtime passes a plugin's result on as given (the reference does too);
/// convert with [`CniResult::convert_to`] where one version is needed.
pub fn exec_with_result(
    plugin: &Path,
    invocation: &Invocation,
    config: &[u8],
    version: &str,
) -> Result<CniResult, Error> {
    let out = exec_succeeding(plugin, invocation, config)?;
    let what = format!("the result of {}", plugin.display());
    let shown = || excerpt(&out.stdout, out.stdout_dropped, SHOWN);
    if out.stdout_dropped > 0 {
        let why = format!(
            "more than {STDOUT_LIMIT} bytes on stdout; output: {}",
            shown()
        );
        return Err(Error::decoding(&what, why));
    }
    CniResult::parse_as_given(version, &out.stdout)
        .map_err(|e| Error::decoding(&what, format!("{e}; output: {}", shown())))
}

/// Runs a command whose success prints nothing (DEL, CHECK, GC, STATUS).
///
/// Go: `invoke.ExecPluginWithoutResult`.
pub fn exec_without_result(
    plugin: &Path,
    invocation: &Invocation,
    config: &[u8],
) -> Result<(), Error> {
    exec_plugin(plugin, invocation, config).map(drop)
}
