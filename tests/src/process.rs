//! Running a plugin (or any program) as a runtime does: a cleared
//! environment, stdin through a pipe, its [`RawOutput`] kept; and the
//! JSON on its stdout.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::Command;

use anyhow::Context;
use serde_json::Value;

/// Default `CNI_NETNS` used by the tests: a path that does not exist, so no
/// plugin can touch a real namespace (the reference skel tolerates it).
pub const FAKE_NETNS: &str = "/var/run/netns/cni-test-does-not-exist";

/// What a child process did: cni-invoke's [`RawOutput`],
/// the workspace's one process-outcome type (exit, stdout and stderr, kept
/// up to cni-invoke's limits). [`StdoutJson`] reads its stdout as JSON.
pub use cni_invoke::RawOutput;

/// A test's reading of a process's stdout as JSON.
pub trait StdoutJson {
    /// stdout parsed as a single JSON value (surrounding whitespace allowed).
    fn try_stdout_json(&self) -> anyhow::Result<Value>;

    /// stdout parsed as a single JSON value.
    ///
    /// # Panics
    /// If stdout is not valid JSON (the whole outcome is in the message).
    fn stdout_json(&self) -> Value {
        self.try_stdout_json().unwrap_or_else(|e| panic!("{e:#}"))
    }
}

impl StdoutJson for RawOutput {
    fn try_stdout_json(&self) -> anyhow::Result<Value> {
        serde_json::from_slice(&self.stdout)
            .with_context(|| format!("stdout is not one JSON value; outcome: {self:?}"))
    }
}

/// Runs `cmd` to its end with `stdin` (then closed) through cni-invoke's
/// one spawning path.
///
/// # Panics
/// If the process cannot be started.
pub fn output_of(cmd: &mut Command, stdin: &[u8]) -> RawOutput {
    cni_invoke::exec_raw(cmd, stdin, None)
        .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", cmd.get_program()))
}

/// `PATH` given to child processes whose environment is otherwise cleared.
fn child_path() -> OsString {
    std::env::var_os("PATH")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"))
}

/// Runs `bin` with a cleared environment plus `env` (and `PATH`, inherited
/// unless `env` sets it), feeds it `stdin` through a pipe that is then
/// closed, and waits for it.
///
/// # Panics
/// If the process cannot be started.
pub fn run_plugin(bin: &Path, env: &[(&str, &str)], stdin: &[u8]) -> RawOutput {
    run_with_clean_env(bin, std::iter::empty::<&OsStr>(), env, stdin)
}
/// Runs the plugin `bin` inside the network namespace `netns` (`ip netns
/// exec`), as [`run_plugin`] does on the host: a cleared environment
/// plus `env`, `stdin` through a pipe.
///
/// # Panics
/// If `ip` cannot be started.
pub fn run_plugin_in_netns(
    netns: &str,
    bin: &Path,
    env: &[(&str, &str)],
    stdin: &[u8],
) -> RawOutput {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", netns])
        .arg(bin)
        .env_clear()
        .env("PATH", child_path());
    for (k, v) in env {
        cmd.env(k, v);
    }
    output_of(&mut cmd, stdin)
}

/// Runs `bin` with `args`, a cleared environment plus `env` (and `PATH`,
/// inherited unless `env` sets it) and `stdin`, and waits for it.
pub(crate) fn run_with_clean_env<I, S>(
    bin: &Path,
    args: I,
    env: &[(&str, &str)],
    stdin: &[u8],
) -> RawOutput
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(bin);
    cmd.args(args).env_clear().env("PATH", child_path());
    for (k, v) in env {
        cmd.env(k, v);
    }
    output_of(&mut cmd, stdin)
}

/// Makes the calling process user and group `id`, with no supplementary
/// groups: for a child, in `CommandExt::pre_exec` (only async-signal-safe
/// calls).
///
/// # Errors
/// The system's, when the caller may not change its identity (not root).
pub fn become_user(id: u32) -> std::io::Result<()> {
    // SAFETY: plain syscalls without pointers but setgroups' null list of
    // length 0.
    #[allow(unsafe_code)]
    let failed = unsafe {
        libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(id) != 0 || libc::setuid(id) != 0
    };
    if failed {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
