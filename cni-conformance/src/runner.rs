//! Executing the plugin under test, the one place that does: in a
//! working directory of the run's own, within the target's timeout and
//! cancel switch, optionally in a private mount namespace, every call
//! recorded; and the run cut short when the plugin keeps timing out.

use std::path::Path;
use std::process::Command as Process;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cni_invoke::{exec_raw, Deadline, Exit, Invocation, RawOutput};
use cni_skel::Command;

use crate::call::Call;
use crate::error::SetupError;
use crate::target::Target;

/// How many executions may time out before the plugin is taken for hung
/// and the checks left are not run: every later one would only wait its
/// full timeout too.
pub const MAX_TIMEOUTS: usize = 3;

/// How much of an output past cni-invoke's limit a call keeps: enough to
/// show what it was, none of which can be a result.
const KEPT_OF_CUT: usize = 4 << 10;

/// Runs the plugin under test and remembers every call.
pub(crate) struct Runner {
    target: Target,
    /// The plugin's working directory: a fresh one, removed after the
    /// run, so what the plugin does to its working directory touches
    /// nothing of ours or the user's.
    workdir: tempfile::TempDir,
    log: Mutex<Vec<Arc<Call>>>,
    timeouts: AtomicUsize,
}

impl Runner {
    /// A runner for `target`, with a new working directory.
    pub fn new(target: &Target) -> Result<Runner, SetupError> {
        if target.private_mounts {
            let euid = nix::unistd::geteuid().as_raw();
            if euid != 0 {
                return Err(SetupError::PrivateMountsNeedRoot(euid));
            }
        }
        let workdir = tempfile::Builder::new()
            .prefix("cni-conformance-cwd-")
            .tempdir()
            .map_err(SetupError::TempDir)?;
        Ok(Runner {
            target: target.clone(),
            workdir,
            log: Mutex::default(),
            timeouts: AtomicUsize::new(0),
        })
    }

    /// Why the run stops before its end, once it must: the target's
    /// switch was thrown, or [`MAX_TIMEOUTS`] executions timed out.
    pub fn cut_short(&self) -> Option<String> {
        if self
            .target
            .cancel
            .as_ref()
            .is_some_and(|c| c.is_cancelled())
        {
            return Some("the run was cancelled".into());
        }
        let timeouts = self.timeouts.load(Ordering::SeqCst);
        (timeouts >= MAX_TIMEOUTS).then(|| {
            format!(
                "{timeouts} executions of the plugin timed out ({:?} each): it looks hung",
                self.target.timeout
            )
        })
    }

    /// Executes the plugin with `invocation`'s variables (empty ones left
    /// out, and any `CNI_*` of our own environment removed) and `stdin`,
    /// records the call and returns it. Once the run is cut short, the
    /// plugin is not started, and the call says why.
    pub fn exec(&self, step: String, invocation: &Invocation, stdin: &[u8]) -> Arc<Call> {
        let mut process = Process::new(&self.target.plugin);
        let mut env = Vec::new();
        for (name, value) in invocation.env() {
            process.env_remove(name);
            if !value.is_empty() {
                process.env(name, &value);
                env.push((name.to_owned(), value));
            }
        }
        let output = match self.cut_short() {
            Some(why) => not_started(format!("not run: {why}")),
            None => self.run(&mut process, stdin),
        };
        if matches!(output.exit, Exit::TimedOut(_)) {
            self.timeouts.fetch_add(1, Ordering::SeqCst);
        }
        let call = Arc::new(Call {
            step,
            command: Some(invocation.command.clone()).filter(|c| !c.as_str().is_empty()),
            env,
            stdin: stdin.to_vec(),
            output,
        });
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(call.clone());
        call
    }

    /// Runs another plugin (a delegate) with only `CNI_COMMAND` added to
    /// our environment, not recorded.
    pub fn exec_other(&self, plugin: &Path, command: Command, stdin: &[u8]) -> RawOutput {
        let mut process = Process::new(plugin);
        process.env("CNI_COMMAND", command.as_str());
        self.run(&mut process, stdin)
    }

    /// Every call made so far, in order.
    pub fn calls(&self) -> Vec<Arc<Call>> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Runs `process` in the working directory, within the timeout and
    /// the switch, keeping little of an output past cni-invoke's limits.
    fn run(&self, process: &mut Process, stdin: &[u8]) -> RawOutput {
        process.current_dir(self.workdir.path());
        if self.target.private_mounts {
            // SAFETY: between fork and exec the closure makes two system
            // calls and allocates nothing (its paths are C string
            // literals), as a pre_exec hook must.
            #[allow(unsafe_code)]
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(process, private_mount_namespace);
            }
        }
        let mut deadline = Deadline::after(self.target.timeout);
        if let Some(cancel) = &self.target.cancel {
            deadline = deadline.or_cancelled_by(cancel);
        }
        match exec_raw(process, stdin, Some(deadline)) {
            Ok(mut out) => {
                keep_little_of_a_cut_output(&mut out.stdout, &mut out.stdout_dropped);
                keep_little_of_a_cut_output(&mut out.stderr, &mut out.stderr_dropped);
                out
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                not_started("not run: the run was cancelled".into())
            }
            Err(e) => not_started(format!("cannot execute the plugin: {e}")),
        }
    }
}

/// The outcome of an execution that never started: exit status -1 and
/// why on stderr.
fn not_started(why: String) -> RawOutput {
    RawOutput {
        exit: Exit::Status(-1),
        stdout: Vec::new(),
        stderr: format!("cni-conformance: {why}").into_bytes(),
        stdout_dropped: 0,
        stderr_dropped: 0,
    }
}

/// An output cut at cni-invoke's limit holds no result: keep its first
/// few KiB, to show, and count the rest.
fn keep_little_of_a_cut_output(bytes: &mut Vec<u8>, dropped: &mut u64) {
    if *dropped > 0 && bytes.len() > KEPT_OF_CUT {
        *dropped += (bytes.len() - KEPT_OF_CUT) as u64;
        bytes.truncate(KEPT_OF_CUT);
        bytes.shrink_to_fit();
    }
}

/// In the child, before exec: a mount namespace of its own whose mounts
/// do not propagate back to ours (`MS_SLAVE`), while ours still reach it.
fn private_mount_namespace() -> std::io::Result<()> {
    use nix::mount::{mount, MsFlags};
    use nix::sched::{unshare, CloneFlags};
    unshare(CloneFlags::CLONE_NEWNS)?;
    mount(
        None::<&std::ffi::CStr>,
        c"/",
        None::<&std::ffi::CStr>,
        MsFlags::MS_REC | MsFlags::MS_SLAVE,
        None::<&std::ffi::CStr>,
    )?;
    Ok(())
}
