//! Probing what versions a plugin supports.

use std::path::Path;

use cni_skel::{Command, TraceContext};
use cni_types::{Code, Error, SpecVersion};
use cni_version::PluginInfo;

use crate::{exec_plugin, Deadline, Invocation};

/// Asks a plugin for its supported versions (`VERSION`), as runtimes do:
/// stdin names the current spec version, and a plugin that predates
/// `VERSION` (it answers "unknown CNI_COMMAND: VERSION") supports 0.1.0.
///
/// Go: `invoke.GetVersionInfo`.
pub fn get_version_info(plugin: &Path) -> Result<PluginInfo, Error> {
    probe(plugin, None, TraceContext::default())
}

/// [`get_version_info`] within a deadline and with a trace context (a
/// runtime's probe).
pub(crate) fn probe(
    plugin: &Path,
    deadline: Option<Deadline>,
    trace: TraceContext,
) -> Result<PluginInfo, Error> {
    let invocation = Invocation {
        deadline,
        trace,
        command: Command::Version,
        netns: "dummy".into(),
        ifname: "dummy".into(),
        path: vec!["dummy".into()],
        ..Invocation::default()
    };
    let stdin = format!(r#"{{"cniVersion":"{}"}}"#, SpecVersion::CURRENT);
    match exec_plugin(plugin, &invocation, stdin.as_bytes()) {
        Ok(stdout) => PluginInfo::decode(&stdout).map_err(|e| {
            Error::decoding(&format!("the VERSION answer of {}", plugin.display()), e)
        }),
        Err(e) if e.msg == "unknown CNI_COMMAND: VERSION" => Ok(PluginInfo::new(["0.1.0"])),
        Err(e) => Err(e),
    }
}

/// Checks that a plugin supports a configuration's version: code 1 naming
/// both when it does not.
pub fn check_plugin_version(plugin: &Path, config_version: &str) -> Result<(), Error> {
    let info = get_version_info(plugin)?;
    let wanted = if config_version.is_empty() {
        "0.1.0"
    } else {
        config_version
    };
    info.reconcile(wanted).map_err(|e| {
        Error::new(
            Code::INCOMPATIBLE_CNI_VERSION,
            format!(
                "plugin {} does not support config version {wanted:?}",
                plugin.display()
            ),
        )
        .with_details(e.details())
    })
}
