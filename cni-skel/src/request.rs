//! What a plugin method receives.

use std::borrow::Cow;
use std::cell::RefCell;
use std::ffi::OsStr;
use std::fmt;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Mutex;
use std::thread::ThreadId;

use cni_types::{CniArgs, Error, NetConf, Result100, ValidAttachments};
use cni_version::json_key_matches;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::{Command, TraceContext};

/// One invocation: the attachment parameters from the environment, the
/// configuration from stdin, and a stderr handle for logging.
///
/// `Request` is `Send` and `Sync` when its configuration is, so a plugin
/// can use `&Request` on another thread, as entering a network namespace
/// needs (a scoped thread that calls `setns`). [`Request::log`] works
/// there too: lines logged on another thread are written to stderr by the
/// plugin's main thread, at its next log line or when the method returns,
/// whichever comes first.
///
/// ```
/// use cni_skel::{BoxError, Plugin, Reply, Request, TestRequest};
/// use cni_types::NetConf;
///
/// struct InNamespace;
/// impl Plugin for InNamespace {
///     type Config = NetConf;
///     const CHECK: cni_skel::CheckSupport = cni_skel::CheckSupport::Unsupported;
///     fn add(&self, req: &Request<NetConf>) -> Result<Reply, BoxError> {
///         let ifname = std::thread::scope(|s| {
///             // Here a real plugin would enter req.netns first.
///             s.spawn(|| {
///                 req.log("configuring inside the namespace");
///                 req.ifname.clone()
///             })
///             .join()
///             .unwrap()
///         });
///         assert_eq!(ifname, "eth0");
///         Ok(cni_types::Result100::new(cni_types::SpecVersion::V1_0_0).into())
///     }
///     fn del(&self, _: &Request<NetConf>) -> Result<(), BoxError> { Ok(()) }
/// }
///
/// let out = TestRequest::add()
///     .stdin(r#"{"cniVersion":"1.0.0","name":"net","type":"in-ns"}"#)
///     .run(&InNamespace, &cni_version::PluginInfo::all());
/// assert_eq!(out.exit_code, 0);
/// assert_eq!(out.stderr, b"configuring inside the namespace\n");
/// ```
///
/// Go: `skel.CmdArgs`.
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
    /// The caller's trace context (`TRACEPARENT`, `TRACESTATE`,
    /// `BAGGAGE`); empty when the runtime passed none. `cni-invoke` passes
    /// it on to delegates.
    pub trace: TraceContext,
    pub(crate) stderr: &'a (dyn Stderr + Sync + 'a),
}

impl<C> Request<'_, C> {
    /// `CNI_ARGS` parsed; a malformed pair is code 4 naming it.
    ///
    /// Go: `types.LoadArgs`.
    pub fn cni_args(&self) -> Result<CniArgs, Error> {
        Ok(CniArgs::parse(&self.args)?)
    }

    /// `CNI_ARGS` read into the plugin's own struct, in one call (see
    /// [`CniArgs::deserialize`] for the rules). A malformed pair, an
    /// unknown key without `IgnoreUnknown=1` or a value of the wrong form is
    /// code 4, "invalid CNI_ARGS", with the pair in the details.
    ///
    /// Go: `types.LoadArgs`.
    ///
    /// ```
    /// use cni_skel::{BoxError, Plugin, Reply, Request, TestRequest};
    /// use cni_types::NetConf;
    ///
    /// #[derive(serde::Deserialize)]
    /// #[allow(non_snake_case)]
    /// struct Args { K8S_POD_NAME: Option<String> }
    ///
    /// struct Named;
    /// impl Plugin for Named {
    ///     type Config = NetConf;
    ///     const CHECK: cni_skel::CheckSupport = cni_skel::CheckSupport::Unsupported;
    ///     fn add(&self, req: &Request<NetConf>) -> Result<Reply, BoxError> {
    ///         let args: Args = req.cni_args_as()?;
    ///         req.log(format_args!("pod {:?}", args.K8S_POD_NAME));
    ///         Ok(cni_types::Result100::new(cni_types::SpecVersion::V1_0_0).into())
    ///     }
    ///     fn del(&self, _: &Request<NetConf>) -> Result<(), BoxError> { Ok(()) }
    /// }
    ///
    /// let out = TestRequest::add()
    ///     .env("CNI_ARGS", "K8S_POD_NAME=web;OTHER=1")
    ///     .stdin(r#"{"cniVersion":"1.0.0","name":"net","type":"named"}"#)
    ///     .run(&Named, &cni_version::PluginInfo::all());
    /// let err = out.error().unwrap();
    /// assert_eq!(err.code.0, 4); // OTHER is unknown and IgnoreUnknown is not set
    /// assert!(err.details.contains("OTHER=1"));
    /// ```
    pub fn cni_args_as<T: DeserializeOwned>(&self) -> Result<T, Error> {
        Ok(self.cni_args()?.deserialize()?)
    }

    /// `CNI_NETNS` as text, empty when unset: what an interface created
    /// in the container carries as its `sandbox`, and what a delegate or
    /// an agent is told.
    ///
    /// SPEC-1.0.0: "`sandbox`: \[...\] For interfaces created inside the
    /// container, this should be the value passed via `CNI_NETNS`."
    pub fn sandbox(&self) -> String {
        self.netns
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    }

    /// GC: the attachments still in use, from `cni.dev/valid-attachments`
    /// (or the older `cni.dev/attachments` when that key is absent), read
    /// from stdin whatever the plugin's configuration type, as
    /// [`cni_types::NetConf`] reads them.
    ///
    /// Both keys absent is [`ValidAttachments::Unspecified`], which a GC
    /// must read as "keep everything". `null` and `[]` are the empty list,
    /// "nothing is valid": libcni's `GCNetworkList` sends the runtime's
    /// list as Go marshals it, and an empty Go slice is `null` (CRI-O's GC
    /// at start, for a network without a live pod). A malformed list is
    /// code 6. Keys match as Go's decoder matches them (another case
    /// names the same key).
    ///
    /// This is the one to call in a plugin's `gc`: it works whatever the
    /// plugin's `Config` type is. [`cni_types::NetConf::valid_attachments`]
    /// holds the same value for code that has a `NetConf` but no request
    /// (a library's GC over a parsed configuration, a test).
    ///
    /// ```
    /// use cni_skel::{Outcome, Plugin, Reply, Request, BoxError};
    /// use cni_types::NetConf;
    ///
    /// struct Gc;
    /// impl Plugin for Gc {
    ///     type Config = NetConf;
    ///     const CHECK: cni_skel::CheckSupport = cni_skel::CheckSupport::Unsupported;
    ///     fn add(&self, _: &Request<NetConf>) -> Result<Reply, BoxError> { Ok(cni_types::Result100::new(cni_types::SpecVersion::V1_0_0).into()) }
    ///     fn del(&self, _: &Request<NetConf>) -> Result<(), BoxError> { Ok(()) }
    ///     fn gc(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
    ///         let valid = req.valid_attachments()?;
    ///         if valid.is_unspecified() {
    ///             req.log("GC: no cni.dev/valid-attachments, releasing nothing");
    ///         } else {
    ///             req.log(format!("GC: keeping c1: {}", valid.keeps("c1", "eth0")));
    ///         }
    ///         Ok(())
    ///     }
    /// }
    /// let gc = |stdin: &str| {
    ///     let out: Outcome = cni_skel::TestRequest::gc()
    ///         .stdin(stdin)
    ///         .run(&Gc, &cni_version::PluginInfo::all());
    ///     assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    ///     String::from_utf8_lossy(&out.stderr).into_owned()
    /// };
    /// assert!(gc(r#"{"cniVersion": "1.1.0", "name": "n", "type": "t"}"#)
    ///     .contains("releasing nothing"));
    /// assert!(gc(r#"{"cniVersion": "1.1.0", "name": "n", "type": "t",
    ///     "cni.dev/valid-attachments": null}"#).contains("keeping c1: false"));
    /// ```
    pub fn valid_attachments(&self) -> Result<ValidAttachments, Error> {
        let decoding = |e| Error::decoding("the network configuration", e);
        let serde_json::Value::Object(conf) =
            serde_json::from_slice(&self.stdin).map_err(decoding)?
        else {
            return Ok(ValidAttachments::Unspecified);
        };
        for name in ["cni.dev/valid-attachments", "cni.dev/attachments"] {
            let value = conf.get(name).or_else(|| {
                // Go's decoder: another case names the key, the last one wins.
                conf.iter()
                    .filter(|(k, _)| json_key_matches(k, name))
                    .map(|(_, v)| v)
                    .next_back()
            });
            if let Some(value) = value {
                return ValidAttachments::deserialize(value)
                    .map_err(|e| Error::decoding("cni.dev/valid-attachments", e));
            }
        }
        Ok(ValidAttachments::Unspecified)
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

impl<T> Request<'_, NetConf<T>> {
    /// The previous result for a plugin that must be chained, in the
    /// current shape (1.x): code 7, "prevResult required", naming the
    /// plugin, when the configuration has none. Borrowed when it is 1.x
    /// already (the SDK reads `prevResult` in the configuration's version),
    /// else converted; `.into_owned()` to modify it, which copies it
    /// because the request only lends the configuration (an owned
    /// [`NetConf`] gives it up without a copy:
    /// [`NetConf::take_prev_result`]).
    ///
    /// ```
    /// use cni_skel::{BoxError, Plugin, Reply, Request, TestRequest};
    /// use cni_types::NetConf;
    ///
    /// struct SetMac;
    /// impl Plugin for SetMac {
    ///     type Config = NetConf;
    ///     const CHECK: cni_skel::CheckSupport = cni_skel::CheckSupport::Unsupported;
    ///     fn add(&self, req: &Request<NetConf>) -> Result<Reply, BoxError> {
    ///         let mut result = req.prev_result()?.into_owned();
    ///         if let Some(iface) = result.interface_mut(&req.ifname) {
    ///             iface.mac = "0a:58:0a:00:00:02".into();
    ///         }
    ///         Ok(result.into())
    ///     }
    ///     fn del(&self, _: &Request<NetConf>) -> Result<(), BoxError> { Ok(()) }
    /// }
    ///
    /// let out = TestRequest::add()
    ///     .stdin(r#"{"cniVersion":"1.0.0","name":"net","type":"set-mac"}"#)
    ///     .run(&SetMac, &cni_version::PluginInfo::all());
    /// let err = out.error().unwrap();
    /// assert_eq!((err.code.0, err.msg.as_str()), (7, "prevResult required"));
    /// assert!(err.details.contains("set-mac"));
    ///
    /// let out = TestRequest::add()
    ///     .stdin(r#"{"cniVersion":"1.0.0","name":"net","type":"set-mac",
    ///         "prevResult":{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/var/run/netns/c1"}]}}"#)
    ///     .run(&SetMac, &cni_version::PluginInfo::all());
    /// assert_eq!(out.json()["interfaces"][0]["mac"], "0a:58:0a:00:00:02");
    /// ```
    pub fn prev_result(&self) -> Result<Cow<'_, Result100>, Error> {
        self.config.prev_result_current()
    }

    /// [`Request::prev_result`] for a drop-in that answers its absence in
    /// its reference plugin's words: code 7 whose message is exactly
    /// `missing` ([`NetConf::prev_result_or`]).
    pub fn prev_result_or(&self, missing: &str) -> Result<Cow<'_, Result100>, Error> {
        self.config.prev_result_current_or(missing)
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
            .field("trace", &self.trace)
            .finish_non_exhaustive()
    }
}

/// Where a request's log lines go.
pub(crate) trait Stderr {
    fn write_bytes(&self, bytes: &[u8]);
}

/// The dispatcher's stderr, shared with the request, usable from any
/// thread. The writer need not be `Send` (the process's stderr lock is
/// not), so only the dispatcher's own thread ever touches it; bytes logged
/// on another thread wait in a queue that the dispatcher's thread writes
/// first at its next write, and at the latest when the method returns.
pub(crate) struct StderrSink<'w> {
    owner: ThreadId,
    /// Touched only on `owner`.
    writer: RefCell<&'w mut dyn Write>,
    queued: Mutex<Vec<u8>>,
}

// SAFETY: `writer`, the one field that is not `Sync`, is only accessed on
// the `owner` thread: `on_owner` checks before every access, and the other
// threads only append to the mutex-guarded queue.
#[allow(unsafe_code)]
unsafe impl Sync for StderrSink<'_> {}

impl<'w> StderrSink<'w> {
    /// A sink owned by the calling thread.
    pub(crate) fn new(writer: &'w mut dyn Write) -> StderrSink<'w> {
        StderrSink {
            owner: std::thread::current().id(),
            writer: RefCell::new(writer),
            queued: Mutex::new(Vec::new()),
        }
    }

    fn on_owner(&self) -> bool {
        std::thread::current().id() == self.owner
    }

    /// Writes what other threads queued (on the owner thread only).
    fn write_queued(&self, writer: &mut dyn Write) {
        let queued = std::mem::take(&mut *self.queued.lock().unwrap_or_else(|e| e.into_inner()));
        if !queued.is_empty() {
            let _ = writer.write_all(&queued);
        }
    }

    /// The writer back, once everything queued is written.
    pub(crate) fn into_inner(self) -> &'w mut dyn Write {
        let writer = self.writer.into_inner();
        let queued = self.queued.into_inner().unwrap_or_else(|e| e.into_inner());
        let _ = writer.write_all(&queued);
        writer
    }
}

impl Stderr for StderrSink<'_> {
    fn write_bytes(&self, bytes: &[u8]) {
        if self.on_owner() {
            let mut writer = self.writer.borrow_mut();
            self.write_queued(&mut **writer);
            let _ = writer.write_all(bytes);
        } else {
            let mut queued = self.queued.lock().unwrap_or_else(|e| e.into_inner());
            queued.extend_from_slice(bytes);
        }
    }
}

/// Splits `CNI_PATH` on `:` into directories, skipping empty entries.
pub(crate) fn split_path(path: &[u8]) -> Vec<PathBuf> {
    path.split(|b| *b == b':')
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(OsStr::from_bytes(p)))
        .collect()
}

#[cfg(test)]
mod tests {
    use cni_types::NetConf;
    use cni_version::PluginInfo;

    use crate::{BoxError, Plugin, Reply, Request, TestRequest};

    fn send_and_sync<T: Send + Sync>() {}

    #[test]
    fn a_request_is_send_and_sync_when_its_config_is() {
        send_and_sync::<Request<'_, NetConf>>();
    }

    struct LogsFromTwoThreads;
    impl Plugin for LogsFromTwoThreads {
        type Config = NetConf;
        const CHECK: crate::CheckSupport = crate::CheckSupport::Unsupported;
        fn add(&self, _: &Request<NetConf>) -> Result<Reply, BoxError> {
            Err("not used".into())
        }
        fn del(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
            req.log("main 1");
            std::thread::scope(|s| s.spawn(|| req.log("other")).join())
                .map_err(|_| "the scoped thread panicked")?;
            req.log("main 2");
            std::thread::scope(|s| s.spawn(|| req.log("other, last")).join())
                .map_err(|_| "the scoped thread panicked")?;
            Ok(())
        }
    }

    #[test]
    fn lines_logged_on_another_thread_reach_stderr_in_order() {
        let out = TestRequest::del()
            .stdin(r#"{"cniVersion":"1.0.0","name":"net","type":"t"}"#)
            .run(&LogsFromTwoThreads, &PluginInfo::all());
        assert_eq!(out.exit_code, 0);
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "main 1\nother\nmain 2\nother, last\n"
        );
    }
}
