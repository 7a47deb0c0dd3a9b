//! What each scenario recorded: the data the session memoises and the
//! cases read, below both (the scenarios themselves run in `cases/`).

use std::sync::Arc;

use cni_types::SpecVersion;
use serde_json::Value;

use crate::call::Call;

/// The VERSION calls, made once per run.
#[derive(Debug)]
pub struct VersionProbes {
    /// The version sent on stdin.
    pub asked: SpecVersion,
    /// VERSION with `{"cniVersion": asked}` on stdin.
    pub reply: Arc<Call>,
    /// VERSION with nothing on stdin.
    pub no_stdin: Arc<Call>,
    /// What `supportedVersions` lists, as printed.
    pub listed: Vec<String>,
    /// The listed versions the tool knows (0.1.0 ..= 1.1.0), oldest first;
    /// all of them when the plugin lists none.
    pub supported: Vec<SpecVersion>,
}

/// The calls with something wrong in the input, made once per run.
#[derive(Debug)]
pub struct EnvProbes {
    /// One call per (command, variable) with that variable left out.
    pub missing: Vec<(&'static str, Arc<Call>)>,
    /// ADD without `CNI_COMMAND`.
    pub no_command: Option<Arc<Call>>,
    /// ADD with a truncated configuration.
    pub malformed: Option<Arc<Call>>,
    /// ADD with `cniVersion` 99.0.0.
    pub unsupported: Option<Arc<Call>>,
}

/// What happened to one attachment through its lifecycle.
#[derive(Debug)]
pub struct Lifecycle {
    /// The configuration's version.
    pub version: SpecVersion,
    /// The first ADD.
    pub add: Arc<Call>,
    /// Its configuration (with the built `prevResult` of a chained plugin).
    pub add_config: Value,
    /// Its result: the one JSON object it printed on success.
    pub result: Option<Value>,
    /// CHECK right after the ADD, with its result as `prevResult`; below
    /// 0.4.0 this CHECK must be refused.
    pub check: Arc<Call>,
    /// DEL (with `prevResult` from 0.4.0 on).
    pub del: Arc<Call>,
    /// The namespace's links around the first ADD and DEL (interface
    /// plugins in a named namespace only).
    pub links: Option<Links>,
    /// The same DEL again.
    pub del_again: Arc<Call>,
    /// ADD after the DELs.
    pub add_again: Arc<Call>,
    /// DEL of that attachment without `prevResult`.
    pub del_no_prev: Arc<Call>,
    /// ADD in a second namespace, and DEL after that namespace was
    /// removed (with `--netns auto` only).
    pub gone: Option<(Arc<Call>, Arc<Call>)>,
}

/// The names of the links in the namespace at three moments.
#[derive(Debug)]
pub struct Links {
    /// Before the ADD.
    pub before: Vec<String>,
    /// After the ADD.
    pub after_add: Vec<String>,
    /// After the DEL.
    pub after_del: Vec<String>,
}

impl Links {
    /// The ADD created the interface `ifname`.
    pub fn created(&self, ifname: &str) -> bool {
        let has = |links: &[String]| links.iter().any(|l| l == ifname);
        !has(&self.before) && has(&self.after_add)
    }
}

/// The concurrent ADDs.
#[derive(Debug)]
pub struct ConcurrentAdds {
    /// One ADD per container, `cnic-par-<i>`.
    pub adds: Vec<Arc<Call>>,
}

/// The GC scenario: two attachments, a GC naming only the first, a CHECK
/// of the first.
#[derive(Debug)]
pub struct GcOutcome {
    /// ADD of the attachment GC is told to keep.
    pub add_kept: Arc<Call>,
    /// ADD of the attachment GC is not told to keep, before the GC.
    pub add_other: Arc<Call>,
    /// The GC.
    pub gc: Arc<Call>,
    /// CHECK of the kept attachment after the GC.
    pub check: Arc<Call>,
    /// ADD of a new attachment after the GC, which must not be given the
    /// kept attachment's addresses.
    pub add_new: Arc<Call>,
}
