//! Why a run could not start.

use std::path::PathBuf;

use crate::netns::NetnsError;

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
    /// A temporary directory (the data directory, the plugin's working
    /// directory) could not be created.
    #[error("cannot create a temporary directory")]
    TempDir(#[source] std::io::Error),
    /// `--private-mounts` without root: a mount namespace cannot be made.
    #[error("--private-mounts runs the plugin in a mount namespace of its own and needs root (effective uid is {0})")]
    PrivateMountsNeedRoot(u32),
    /// `--only` or `--skip` names no case.
    #[error(transparent)]
    UnknownCase(#[from] UnknownCase),
}

/// Why a selection names a case that does not exist.
#[derive(Debug, thiserror::Error)]
#[error("unknown check id {0:?} (see `cni-conformance --list`)")]
pub struct UnknownCase(pub String);
