//! The plugin under test and how to run it.

use std::path::PathBuf;
use std::time::Duration;

use cni_invoke::Cancel;
use cni_types::SpecVersion;
use serde_json::Value;

/// What the plugin under test is, which decides the configuration it gets
/// and which checks apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Creates `CNI_IFNAME` in `CNI_NETNS` (and delegates IPAM).
    Interface,
    /// A delegated IPAM plugin: returns addresses, touches no interface.
    Ipam,
    /// Adjusts an existing interface and passes `prevResult` on.
    Chained,
}

impl Kind {
    /// Reads `interface`, `ipam` or `chained`.
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "interface" => Some(Kind::Interface),
            "ipam" => Some(Kind::Ipam),
            "chained" => Some(Kind::Chained),
            _ => None,
        }
    }
}

/// Where the container's namespace comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetnsChoice {
    /// A temporary namespace the tool creates and removes (root needed);
    /// also enables the "namespace already gone" checks.
    Auto,
    /// An existing namespace, used as `CNI_NETNS` and left as it was found.
    Path(PathBuf),
}

/// A plugin binary and everything the tool needs to exercise it.
///
/// ```no_run
/// use cni_conformance::{Kind, Target};
///
/// let target = Target::new("/usr/lib/cni/host-local", Kind::Ipam);
/// let report = cni_conformance::run(&target, &cni_conformance::Selection::all())?;
/// assert_eq!(report.failed(), 0, "{}", report.text());
/// # Ok::<(), cni_conformance::SetupError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Target {
    /// The executable.
    pub plugin: PathBuf,
    /// What it is.
    pub kind: Kind,
    /// A network configuration for the plugin (`cniVersion` is set per
    /// version, `type` filled in when missing); `None` for a minimal one.
    pub config: Option<Value>,
    /// The versions to exercise; `None` for what the plugin's `VERSION`
    /// reports, intersected with 0.1.0 ..= 1.1.0.
    pub versions: Option<Vec<SpecVersion>>,
    /// The container's namespace.
    pub netns: NetnsChoice,
    /// `CNI_PATH`: where delegated (IPAM) plugins are found. Default: the
    /// plugin's own directory, then `/usr/lib/cni`.
    pub cni_path: Vec<PathBuf>,
    /// `CNI_IFNAME` (scenarios that need several use it as a prefix).
    pub ifname: String,
    /// `CNI_ARGS`, passed to every call.
    pub cni_args: Vec<(String, String)>,
    /// The IPAM plugin of the minimal configuration of an interface plugin.
    pub ipam: String,
    /// How long one execution may run before it is killed. After
    /// [`MAX_TIMEOUTS`](crate::MAX_TIMEOUTS) executions ran out of it, the
    /// plugin is taken for hung and the remaining checks are not run.
    pub timeout: Duration,
    /// Runs each execution of the plugin in a mount namespace of its own,
    /// a slave of ours: the host's mounts (the run's network namespaces
    /// among them) stay visible to it, and what it mounts vanishes when it
    /// exits instead of landing on the host. Needs root. A plugin that
    /// must leave a mount behind for the runtime cannot pass under it.
    pub private_mounts: bool,
    /// A switch that stops the run early (a command-line tool throws it on
    /// `SIGINT`): the running executions are stopped as at their
    /// deadline, no more are started, the checks left are reported as not
    /// run, and the run's namespaces and directories are removed as after
    /// any run.
    pub cancel: Option<Cancel>,
}

impl Target {
    /// The plugin at `plugin`, of `kind`, with every default.
    pub fn new(plugin: impl Into<PathBuf>, kind: Kind) -> Target {
        let plugin = plugin.into();
        let mut cni_path: Vec<PathBuf> = plugin.parent().map(PathBuf::from).into_iter().collect();
        let reference = PathBuf::from("/usr/lib/cni");
        if !cni_path.contains(&reference) {
            cni_path.push(reference);
        }
        Target {
            plugin,
            kind,
            config: None,
            versions: None,
            netns: NetnsChoice::Auto,
            cni_path,
            ifname: "eth0".into(),
            cni_args: Vec::new(),
            ipam: "host-local".into(),
            timeout: Duration::from_secs(10),
            private_mounts: false,
            cancel: None,
        }
    }

    /// This target with its plugin, `CNI_PATH` entries and namespace made
    /// absolute against the current directory: each execution runs in a
    /// working directory of the run's own, where a relative path would
    /// name nothing (or another file).
    pub(crate) fn with_absolute_paths(&self) -> Target {
        let absolute = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        let mut target = self.clone();
        target.plugin = absolute(&self.plugin);
        target.cni_path = self.cni_path.iter().map(absolute).collect();
        if let NetnsChoice::Path(p) = &self.netns {
            target.netns = NetnsChoice::Path(absolute(p));
        }
        target
    }

    /// The plugin's file name, the `type` filled into configurations.
    pub fn plugin_name(&self) -> String {
        self.plugin
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}
