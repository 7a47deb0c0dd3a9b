//! What a plugin method receives.

use std::cell::RefCell;
use std::ffi::OsStr;
use std::fmt;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use cni_types::{CniArgs, Code, Error, ValidAttachments};
use cni_version::peek_fields;

use crate::Command;

/// One invocation: the attachment parameters from the environment, the
/// configuration from stdin, and a stderr handle for logging.
pub struct Request<'a, C> {
    /// The command being run.
    pub command: Command,
    /// `CNI_CONTAINERID` (empty for GC and STATUS).
    pub container_id: String,
    /// `CNI_NETNS`, when set.
    pub netns: Option<PathBuf>,
    /// `CNI_IFNAME` (empty for GC and STATUS).
    pub ifname: String,
    /// `CNI_ARGS`, raw; see [`Request::cni_args`].
    pub args: String,
    /// `CNI_PATH`, split into directories.
    pub path: Vec<PathBuf>,
    /// `CNI_PATH` as given.
    pub raw_path: String,
    /// `CNI_NETNS_OVERRIDE` as given.
    pub netns_override: String,
    /// The configuration's `cniVersion` (0.1.0 when absent).
    pub config_version: String,
    /// The configuration, parsed.
    pub config: C,
    /// The bytes read from stdin.
    pub stdin: Vec<u8>,
    pub(crate) stderr: &'a dyn Stderr,
}

impl<C> Request<'_, C> {
    /// `CNI_ARGS` parsed; a malformed pair is code 4 naming it.
    pub fn cni_args(&self) -> Result<CniArgs, Error> {
        CniArgs::parse(&self.args).map_err(|e| {
            Error::new(Code::INVALID_ENVIRONMENT_VARIABLES, "invalid CNI_ARGS")
                .with_details(e.to_string())
        })
    }

    /// GC: the attachments still in use, from `cni.dev/valid-attachments`
    /// (or the older `cni.dev/attachments`), read from stdin whatever the
    /// plugin's configuration type, as [`cni_types::NetConf`] reads them.
    ///
    /// Absent or `null` is [`ValidAttachments::Unspecified`], which a GC
    /// must read as "keep everything"; `[]` is an empty list, "nothing is
    /// valid". A malformed list is code 6.
    ///
    /// ```
    /// use cni_skel::{Outcome, Plugin, Reply, Request, BoxError};
    /// use cni_types::NetConf;
    ///
    /// struct Gc;
    /// impl Plugin for Gc {
    ///     type Config = NetConf;
    ///     fn add(&self, _: &Request<NetConf>) -> Result<Reply, BoxError> { Ok(Reply::Empty) }
    ///     fn del(&self, _: &Request<NetConf>) -> Result<Reply, BoxError> { Ok(Reply::Empty) }
    ///     fn gc(&self, req: &Request<NetConf>) -> Result<Reply, BoxError> {
    ///         let valid = req.valid_attachments()?;
    ///         if valid.is_unspecified() {
    ///             req.log("GC: no cni.dev/valid-attachments, releasing nothing");
    ///         }
    ///         assert!(valid.keeps("c1", "eth0"));
    ///         Ok(Reply::Empty)
    ///     }
    /// }
    /// let out: Outcome = cni_skel::TestRequest::new("GC")
    ///     .env("CNI_PATH", "/opt/cni/bin")
    ///     .stdin(r#"{"cniVersion": "1.1.0", "name": "n", "type": "t"}"#)
    ///     .run(&Gc, &cni_version::PluginInfo::all());
    /// assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    /// assert!(String::from_utf8_lossy(&out.stderr).contains("releasing nothing"));
    /// ```
    pub fn valid_attachments(&self) -> Result<ValidAttachments, Error> {
        let [valid, legacy] = peek_fields(
            &self.stdin,
            ["cni.dev/valid-attachments", "cni.dev/attachments"],
        )
        .map_err(|e| Error::new(Code::DECODING_FAILURE, e.to_string()))?;
        let given = |v: Option<serde_json::Value>| v.filter(|v| !v.is_null());
        match given(valid).or(given(legacy)) {
            None => Ok(ValidAttachments::Unspecified),
            Some(v) => serde_json::from_value(v).map_err(|e| {
                Error::new(Code::DECODING_FAILURE, "invalid cni.dev/valid-attachments")
                    .with_details(e.to_string())
            }),
        }
    }

    /// Writes one line to stderr (never stdout, which carries the result).
    pub fn log(&self, message: impl fmt::Display) {
        self.stderr.write_bytes(format!("{message}\n").as_bytes());
    }

    /// Writes bytes to stderr as they are.
    pub fn write_stderr(&self, bytes: &[u8]) {
        self.stderr.write_bytes(bytes);
    }
}

impl<C: fmt::Debug> fmt::Debug for Request<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("command", &self.command)
            .field("container_id", &self.container_id)
            .field("netns", &self.netns)
            .field("ifname", &self.ifname)
            .field("args", &self.args)
            .field("path", &self.path)
            .field("config_version", &self.config_version)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The dispatcher's stderr, shared with the request.
pub(crate) trait Stderr {
    fn write_bytes(&self, bytes: &[u8]);
}

impl<W: Write + ?Sized> Stderr for RefCell<&mut W> {
    fn write_bytes(&self, bytes: &[u8]) {
        let _ = self.borrow_mut().write_all(bytes);
    }
}

/// Splits `CNI_PATH` on `:` into directories, skipping empty entries.
pub(crate) fn split_path(path: &[u8]) -> Vec<PathBuf> {
    path.split(|b| *b == b':')
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(OsStr::from_bytes(p)))
        .collect()
}
