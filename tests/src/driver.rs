//! The reference runtime: libcni, driven by the `cnidriver` Go program.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::go::go_binary;
use crate::process::{run_with_clean_env, RawOutput, StdoutJson, FAKE_NETNS};
use crate::runtime_knobs::runtime_knobs;

/// A CNI runtime built on the reference `libcni`: runs the `cnidriver` Go
/// program (see `tests/go/src/cnidriver/main.go` for its full CLI and output
/// schema) with a cleared environment (plus `PATH`) and returns its JSON
/// report.
///
/// ```no_run
/// # use tests::Driver;
/// # let (bin_dir, cache, conflist) = (std::path::PathBuf::new(), std::path::PathBuf::new(), std::path::PathBuf::new());
/// let out = Driver::new([bin_dir], cache).with_ifname("net1").add(&conflist);
/// assert_eq!(out["ok"], true);
/// ```
#[derive(Clone, Debug)]
pub struct Driver {
    bin: PathBuf,
    cni_path: Vec<PathBuf>,
    cache_dir: PathBuf,
    container_id: String,
    netns: String,
    ifname: String,
    cni_args: Option<String>,
    cap_args: Option<Value>,
    stderr_log: Option<Arc<Mutex<String>>>,
}

impl Driver {
    /// A driver searching plugins in `cni_path` and caching results in
    /// `cache_dir`, with container id `cnidriver-container`, netns
    /// [`FAKE_NETNS`], ifname `eth0`, no CNI_ARGS and no capability args.
    /// Builds `cnidriver` (once per process) via [`go_binary`].
    pub fn new<I, P>(cni_path: I, cache_dir: impl Into<PathBuf>) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        Driver {
            bin: go_binary("cnidriver"),
            cni_path: cni_path.into_iter().map(Into::into).collect(),
            cache_dir: cache_dir.into(),
            container_id: "cnidriver-container".to_owned(),
            netns: FAKE_NETNS.to_owned(),
            ifname: "eth0".to_owned(),
            cni_args: None,
            cap_args: None,
            stderr_log: None,
        }
    }

    runtime_knobs!("cnidriver");

    /// Appends the driver's stderr (plugin stderr that libcni forwards on
    /// success, driver diagnostics) of every later run to `log`, so tests
    /// can compare it even when they only look at the JSON report.
    pub fn with_stderr_log(mut self, log: Arc<Mutex<String>>) -> Self {
        self.stderr_log = Some(log);
        self
    }

    /// Sets `CNI_NETNS`.
    pub fn with_netns(mut self, netns: &str) -> Self {
        self.netns = netns.to_owned();
        self
    }

    /// Command-line arguments for `command` (`add`, `check`, `del`,
    /// `addcheckdel` with a conflist; `version` with a plugin type).
    pub fn args(
        &self,
        command: &str,
        conflist: Option<&Path>,
        plugin: Option<&str>,
    ) -> Vec<OsString> {
        let mut a: Vec<OsString> =
            vec![command.into(), "--cni-path".into(), self.cni_path().into()];
        if let Some(c) = conflist {
            a.extend(["--conflist".into(), c.as_os_str().to_owned()]);
        }
        if let Some(p) = plugin {
            a.extend(["--plugin".into(), p.into()]);
        }
        if command != "version" {
            a.extend([
                "--cache-dir".into(),
                self.cache_dir.as_os_str().to_owned(),
                "--container-id".into(),
                self.container_id.clone().into(),
                "--netns".into(),
                self.netns.clone().into(),
                "--ifname".into(),
                self.ifname.clone().into(),
            ]);
            if let Some(caps) = &self.cap_args {
                a.extend(["--cap-args".into(), caps.to_string().into()]);
            }
        }
        if let Some(args) = &self.cni_args {
            a.extend(["--cni-args".into(), args.clone().into()]);
        }
        a
    }

    /// Runs `cnidriver` with raw arguments and returns the process outcome
    /// (the JSON report is on stdout; plugin stderr that libcni forwards on
    /// success is on stderr).
    pub fn run_outcome<I, S>(&self, args: I) -> RawOutput
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = run_with_clean_env(&self.bin, args, &[], b"");
        if let Some(log) = &self.stderr_log {
            log.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push_str(&out.stderr_str());
        }
        out
    }

    /// Runs `cnidriver` with raw arguments and returns its JSON report.
    ///
    /// # Panics
    /// If the driver exits non-zero (misuse) or prints no JSON.
    pub fn run<I, S>(&self, args: I) -> Value
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = self.run_outcome(args);
        if !out.success() {
            panic!("cnidriver failed: {out:?}");
        }
        out.stdout_json()
    }

    /// `AddNetworkList`: `{"ok","command","result","cachedResult"[,"error"]}`.
    pub fn add(&self, conflist: &Path) -> Value {
        self.run(self.args("add", Some(conflist), None))
    }

    /// `CheckNetworkList`: `{"ok","command","result":null,"cachedResult"[,"error"]}`.
    pub fn check(&self, conflist: &Path) -> Value {
        self.run(self.args("check", Some(conflist), None))
    }

    /// `DelNetworkList`: `{"ok","command","result":null,"cachedResult"[,"error"]}`.
    pub fn del(&self, conflist: &Path) -> Value {
        self.run(self.args("del", Some(conflist), None))
    }

    /// ADD, CHECK (0.4.0+, unless disabled or ADD failed), DEL:
    /// `{"ok","add","cachedAfterAdd","check","del","cachedAfterDel"}`.
    pub fn add_check_del(&self, conflist: &Path) -> Value {
        self.run(self.args("addcheckdel", Some(conflist), None))
    }

    /// GC as libcni 1.2's `GCNetworkList` runs it (see the driver's docs:
    /// Debian's libcni predates it): DEL of the cached attachments not in
    /// `valid`, then GC of every plugin with `valid` injected as Go
    /// marshals it, `Value::Null` as a nil slice; `None` sends no key.
    /// `{"ok","command":"gc","sent":[each plugin's stdin][,"error"]}`.
    pub fn gc(&self, conflist: &Path, valid: Option<&Value>) -> Value {
        let mut args = self.args("gc", Some(conflist), None);
        if let Some(valid) = valid {
            args.extend(["--valid-attachments".into(), valid.to_string().into()]);
        }
        self.run(args)
    }

    /// `GetVersionInfo(plugin_type)`: `{"ok","cniVersion","supportedVersions"}`
    /// or `{"ok":false,"error"}`. With [`Driver::with_cni_args`], the
    /// plugin sees that `CNI_ARGS` instead of libcni's empty one.
    pub fn version(&self, plugin_type: &str) -> Value {
        self.run(self.args("version", None, Some(plugin_type)))
    }
}
