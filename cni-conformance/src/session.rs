//! One run against one plugin: the namespace and data directory it uses,
//! the configurations it builds, the versions it exercises, and the
//! scenarios' outcomes, each run once for all the cases that read it.
//! Executing the plugin is the runner's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use cni_invoke::Invocation;
use cni_net::testing::TempNetns;
use cni_skel::Command;
use cni_types::SpecVersion;
use serde_json::{json, Map, Value};

use crate::call::Call;
use crate::config::{base_config, interface_result};
use crate::error::SetupError;
use crate::netns;
use crate::runner::Runner;
use crate::scenarios::{ConcurrentAdds, EnvProbes, GcOutcome, Lifecycle, VersionProbes};
use crate::target::{Kind, NetnsChoice, Target};

/// The version the `VERSION` probe sends: the newest, as a current
/// runtime does.
const PROBE_VERSION: SpecVersion = SpecVersion::V1_1_0;

/// The state of one run; cases read it through their `check` function.
pub struct Session {
    target: Target,
    runner: Runner,
    netns: PathBuf,
    netns_name: Option<String>,
    owned_netns: Option<TempNetns>,
    data_dir: tempfile::TempDir,
    base: Map<String, Value>,
    versions: Vec<SpecVersion>,
    version: OnceLock<VersionProbes>,
    pub(crate) env: OnceLock<EnvProbes>,
    pub(crate) lifecycles: Mutex<HashMap<SpecVersion, Arc<Lifecycle>>>,
    pub(crate) concurrency: OnceLock<ConcurrentAdds>,
    pub(crate) gc: OnceLock<GcOutcome>,
}

impl Session {
    /// Prepares a run: checks the plugin, creates the namespace, the data
    /// directory and the plugin's working directory, and settles the
    /// versions (asking `VERSION` when the target names none).
    pub fn new(target: &Target) -> Result<Session, SetupError> {
        let target = &target.with_absolute_paths();
        if !is_executable(&target.plugin) {
            return Err(SetupError::NotExecutable(target.plugin.clone()));
        }
        let runner = Runner::new(target)?;
        let data_dir = tempfile::Builder::new()
            .prefix("cni-conformance-")
            .tempdir()
            .map_err(SetupError::TempDir)?;
        let base = base_config(target, data_dir.path())?;
        let (netns, owned_netns) = match &target.netns {
            NetnsChoice::Auto => {
                let ns = netns::temporary()?;
                (ns.path().to_owned(), Some(ns))
            }
            NetnsChoice::Path(p) => (p.clone(), None),
        };
        let netns_name = netns::ip_name(&netns);
        let mut session = Session {
            target: target.clone(),
            runner,
            netns,
            netns_name,
            owned_netns,
            data_dir,
            base,
            versions: Vec::new(),
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
        let stdin = json!({"cniVersion": PROBE_VERSION.to_string()}).to_string();
        let out = self
            .runner
            .exec_other(&path, Command::Version, stdin.as_bytes());
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

    /// The configuration for `version`, with `prevResult` when given.
    pub fn config(&self, version: &SpecVersion, prev_result: Option<&Value>) -> Value {
        let mut conf = self.base.clone();
        conf.insert("cniVersion".into(), json!(version.to_string()));
        if let Some(prev) = prev_result {
            conf.insert("prevResult".into(), prev.clone());
        }
        Value::Object(conf)
    }

    /// The configuration of an ADD: for a chained plugin, with the
    /// `prevResult` an interface plugin would have produced for `ifname`
    /// in `netns` (address number `host` of the test subnet); chaining
    /// exists from 0.3.0 on.
    pub fn add_config(&self, version: &SpecVersion, netns: &Path, ifname: &str, host: u8) -> Value {
        let prev = (self.kind() == Kind::Chained && *version >= SpecVersion::V0_3_0)
            .then(|| interface_result(version, netns, ifname, host));
        self.config(version, prev.as_ref())
    }

    /// The VERSION probes, run once: VERSION with the newest version on
    /// stdin, then with nothing.
    pub fn version_probes(&self) -> &VersionProbes {
        self.version.get_or_init(|| {
            let invocation = self.invocation(Command::Version, "", "");
            let stdin = json!({"cniVersion": PROBE_VERSION.to_string()}).to_string();
            let reply = self.exec("VERSION", &invocation, stdin.as_bytes());
            let no_stdin = self.exec("VERSION without stdin", &invocation, b"");
            let listed: Vec<String> = reply
                .object()
                .and_then(|o| o.get("supportedVersions").cloned())
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default();
            let mut supported: Vec<SpecVersion> = SpecVersion::ALL
                .into_iter()
                .filter(|v| listed.iter().any(|l| *l == v.to_string()))
                .collect();
            if supported.is_empty() {
                supported = SpecVersion::ALL.to_vec();
            }
            VersionProbes {
                asked: PROBE_VERSION,
                reply,
                no_stdin,
                listed,
                supported,
            }
        })
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
            command,
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
    /// in a working directory of the run's own, records the call for the
    /// output checks and returns it. Once the run is cut short (see
    /// [`Session::cut_short`]), the plugin is not started, and the call
    /// says why.
    pub fn exec(
        &self,
        step: impl Into<String>,
        invocation: &Invocation,
        stdin: &[u8],
    ) -> Arc<Call> {
        self.runner.exec(step.into(), invocation, stdin)
    }

    /// Every call made so far, in order.
    pub fn calls(&self) -> Vec<Arc<Call>> {
        self.runner.calls()
    }

    /// Why the run stops before its end, once it must: the target's
    /// cancel switch was thrown, or [`MAX_TIMEOUTS`](crate::MAX_TIMEOUTS)
    /// executions timed out.
    pub fn cut_short(&self) -> Option<String> {
        self.runner.cut_short()
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
