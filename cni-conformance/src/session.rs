//! One run against one plugin: the namespace and data directory it uses,
//! the configurations it builds, every call it makes (kept for the output
//! checks), and the scenarios' outcomes, each run once for all the cases
//! that read it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::sync::{Arc, Mutex, OnceLock};

use cni_invoke::{exec_raw, Deadline, Exit, Invocation};
use cni_skel::Command;
use cni_types::SpecVersion;
use serde_json::{json, Map, Value};

use crate::call::Call;
use crate::case::Kind;
use crate::cases::{concurrency, env, gc, lifecycle, version};
use crate::config::base_config;
use crate::netns::{self, NetnsError, TempNetns};
use crate::target::{NetnsChoice, Target};

/// The version the `VERSION` probe sends: the newest, as a current
/// runtime does.
const PROBE_VERSION: SpecVersion = SpecVersion::V1_1_0;

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The plugin is not an executable file.
    #[error("{0}: not an executable file")]
    NotExecutable(PathBuf),
    /// `--config` is not a JSON object.
    #[error("the configuration is not a JSON object")]
    ConfigNotObject,
    /// The namespace could not be created.
    #[error(transparent)]
    Netns(#[from] NetnsError),
    /// The temporary data directory could not be created.
    #[error("cannot create a temporary directory")]
    TempDir(#[source] std::io::Error),
    /// `--only` or `--skip` names no case.
    #[error(transparent)]
    UnknownCase(#[from] crate::run::UnknownCase),
}

/// The state of one run; cases read it through their `check` function.
pub struct Session {
    target: Target,
    netns: PathBuf,
    netns_name: Option<String>,
    owned_netns: Option<TempNetns>,
    data_dir: tempfile::TempDir,
    pub(crate) base: Map<String, Value>,
    versions: Vec<SpecVersion>,
    log: Mutex<Vec<Call>>,
    pub(crate) version: OnceLock<version::Probes>,
    pub(crate) env: OnceLock<env::Probes>,
    pub(crate) lifecycles: Mutex<HashMap<SpecVersion, Arc<lifecycle::Lifecycle>>>,
    pub(crate) concurrency: OnceLock<concurrency::Outcome>,
    pub(crate) gc: OnceLock<gc::Outcome>,
}

impl Session {
    /// Prepares a run: checks the plugin, creates the namespace and data
    /// directory, and settles the versions (asking `VERSION` when the
    /// target names none).
    pub fn new(target: &Target) -> Result<Session, SetupError> {
        if !is_executable(&target.plugin) {
            return Err(SetupError::NotExecutable(target.plugin.clone()));
        }
        let data_dir = tempfile::Builder::new()
            .prefix("cni-conformance-")
            .tempdir()
            .map_err(SetupError::TempDir)?;
        let base = base_config(target, data_dir.path())?;
        let (netns, owned_netns) = match &target.netns {
            NetnsChoice::Auto => {
                let ns = TempNetns::create()?;
                (ns.path(), Some(ns))
            }
            NetnsChoice::Path(p) => (p.clone(), None),
        };
        let netns_name = netns::ip_name(&netns);
        let mut session = Session {
            target: target.clone(),
            netns,
            netns_name,
            owned_netns,
            data_dir,
            base,
            versions: Vec::new(),
            log: Mutex::default(),
            version: OnceLock::new(),
            env: OnceLock::new(),
            lifecycles: Mutex::default(),
            concurrency: OnceLock::new(),
            gc: OnceLock::new(),
        };
        session.versions = match &target.versions {
            Some(v) => v.clone(),
            None => session.default_versions(),
        };
        Ok(session)
    }

    /// What the plugin's VERSION lists; for a chained plugin from 0.3.0
    /// on (chaining and `prevResult` begin there); for an interface plugin
    /// with the minimal configuration, only what its IPAM plugin supports
    /// too, so the delegate's limits are not blamed on the plugin.
    fn default_versions(&mut self) -> Vec<SpecVersion> {
        let mut versions = self.version_probes().supported.clone();
        if self.kind() == Kind::Chained {
            versions.retain(|v| *v >= SpecVersion::V0_3_0);
        }
        if self.kind() == Kind::Interface && self.target.config.is_none() {
            if let Some(ipam) = self.delegate_versions(&self.target.ipam) {
                versions.retain(|v| ipam.contains(v));
            }
        }
        versions
    }

    /// The versions the plugin `name` on `CNI_PATH` lists (not a call of
    /// the plugin under test, so not recorded).
    fn delegate_versions(&self, name: &str) -> Option<Vec<SpecVersion>> {
        let path = cni_invoke::find_in_path(name, &self.target.cni_path).ok()?;
        let mut process = Process::new(path);
        process.env("CNI_COMMAND", "VERSION");
        let stdin = json!({"cniVersion": PROBE_VERSION.to_string()}).to_string();
        let out = exec_raw(
            &mut process,
            stdin.as_bytes(),
            Some(Deadline::after(self.target.timeout)),
        )
        .ok()?;
        let reply: Value = serde_json::from_slice(&out.stdout).ok()?;
        let listed = reply["supportedVersions"].as_array()?;
        Some(
            listed
                .iter()
                .filter_map(|v| SpecVersion::parse(v.as_str()?).ok())
                .collect(),
        )
    }

    /// The target.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// What the plugin is.
    pub fn kind(&self) -> Kind {
        self.target.kind
    }

    /// The versions exercised, oldest first.
    pub fn versions(&self) -> &[SpecVersion] {
        &self.versions
    }

    /// The newest version exercised at or above `floor`.
    pub fn newest_from(&self, floor: SpecVersion) -> Option<SpecVersion> {
        self.versions.iter().rev().find(|v| **v >= floor).cloned()
    }

    /// `CNI_NETNS` of the run's namespace.
    pub fn netns(&self) -> &Path {
        &self.netns
    }

    /// The run's namespace as `ip -n` names it, when it can.
    pub fn netns_name(&self) -> Option<&str> {
        self.netns_name.as_deref()
    }

    /// Whether the run owns its namespace (`--netns auto`).
    pub fn owns_netns(&self) -> bool {
        self.owned_netns.is_some()
    }

    /// The links in the run's namespace, when `ip` can name it and the
    /// plugin is an interface plugin (the others leave links alone).
    pub fn links(&self) -> Option<Vec<String>> {
        if self.kind() != Kind::Interface {
            return None;
        }
        netns::links(self.netns_name.as_deref()?).ok()
    }

    /// Makes sure `ifname` exists in the namespace at `netns` before a
    /// chained plugin's ADD (an earlier plugin would have made it).
    pub fn prepare_link(&self, netns: &Path, ifname: &str) {
        if self.kind() != Kind::Chained {
            return;
        }
        if let Some(name) = netns::ip_name(netns) {
            let present = netns::links(&name).is_ok_and(|l| l.iter().any(|n| n == ifname));
            if !present {
                let _ = netns::add_link(&name, ifname);
            }
        }
    }

    /// The data directory of the run (IPAM state of the minimal configs).
    pub fn data_dir(&self) -> &Path {
        self.data_dir.path()
    }

    /// The VERSION probes, run once.
    pub fn version_probes(&self) -> &version::Probes {
        self.version
            .get_or_init(|| version::probe(self, PROBE_VERSION))
    }

    /// An invocation of `command` for one attachment in the run's
    /// namespace, with the target's `CNI_PATH` and `CNI_ARGS`. Clear a
    /// field to leave its variable out.
    pub fn invocation(&self, command: Command, container_id: &str, ifname: &str) -> Invocation {
        let attachment = matches!(command, Command::Add | Command::Del | Command::Check);
        let (container_id, ifname, netns) = if attachment {
            (
                container_id.to_owned(),
                ifname.to_owned(),
                self.netns.display().to_string(),
            )
        } else {
            Default::default()
        };
        Invocation {
            command: command.as_str().to_owned(),
            container_id,
            netns,
            ifname,
            args: self.target.cni_args.clone(),
            path: self.target.cni_path.clone(),
            ..Invocation::default()
        }
    }

    /// Executes the plugin with `invocation`'s variables (empty ones left
    /// out, and any `CNI_*` of our own environment removed) and `stdin`,
    /// records the call for the output checks and returns it.
    pub fn exec(&self, step: impl Into<String>, invocation: &Invocation, stdin: &[u8]) -> Call {
        let mut process = Process::new(&self.target.plugin);
        let mut env = Vec::new();
        for (name, value) in invocation.env() {
            process.env_remove(name);
            if !value.is_empty() {
                process.env(name, &value);
                env.push((name.to_owned(), value));
            }
        }
        let (exit, stdout, stderr) = match exec_raw(
            &mut process,
            stdin,
            Some(Deadline::after(self.target.timeout)),
        ) {
            Ok(out) => (out.exit, out.stdout, out.stderr),
            Err(e) => (
                Exit::Status(-1),
                Vec::new(),
                format!("cni-conformance: cannot execute the plugin: {e}").into_bytes(),
            ),
        };
        let call = Call {
            step: step.into(),
            command: (!invocation.command.is_empty()).then(|| invocation.command.clone()),
            env,
            stdin: stdin.to_vec(),
            exit,
            stdout,
            stderr,
        };
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(call.clone());
        call
    }

    /// Every call made so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
