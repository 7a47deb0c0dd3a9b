//! Our runtime on the command line: `cnitool`, built with cargo and run
//! with the same knobs as the reference's [`Driver`](crate::Driver).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;

use crate::binaries::{cargo_build, target_dir};
use crate::process::{run_with_clean_env, RawOutput, StdoutJson};
use crate::runtime_knobs::runtime_knobs;

static CNITOOL: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// Builds our runtime on the command line (`cargo build -p cnitool --bin
/// cnitool`, debug profile) once per test process and returns the binary's
/// path, or the build failure as text.
pub fn try_cnitool_bin() -> Result<PathBuf, String> {
    CNITOOL
        .get_or_init(|| {
            cargo_build(&["-p", "cnitool", "--bin", "cnitool"])?;
            Ok(target_dir().join("debug").join("cnitool"))
        })
        .clone()
}

/// Builds `cnitool` once per test process and returns its path.
///
/// # Panics
/// If the build fails (the cargo output is part of the message).
pub fn cnitool_bin() -> PathBuf {
    try_cnitool_bin().unwrap_or_else(|e| panic!("{e}"))
}

/// Our runtime (`cni_invoke::Runtime`, through the `cnitool` binary) with
/// the same knobs as [`Driver`](crate::Driver): networks are looked up by name in a
/// configuration directory (`NETCONFPATH`), plugins on `CNI_PATH`, results
/// cached in `--cache-dir`. Runs with a cleared environment (plus `PATH`).
///
/// Every command returns a report shaped like the driver's:
/// `{"ok":true,"result":R|null}` or `{"ok":false,"error":E}` where `E` is the
/// CNI error JSON cnitool printed (exit status 1).
#[derive(Clone, Debug)]
pub struct Cnitool {
    bin: PathBuf,
    conf_dir: PathBuf,
    cni_path: Vec<PathBuf>,
    cache_dir: PathBuf,
    container_id: String,
    ifname: String,
    cni_args: Option<String>,
    cap_args: Option<Value>,
}

impl Cnitool {
    /// A runtime reading configurations from `conf_dir`, searching plugins
    /// in `cni_path` and caching results in `cache_dir`, with container id
    /// `cnitool-container`, ifname `eth0`, no CNI_ARGS and no capability
    /// args. Builds `cnitool` (once per process) via [`cnitool_bin`].
    pub fn new<I, P>(
        conf_dir: impl Into<PathBuf>,
        cni_path: I,
        cache_dir: impl Into<PathBuf>,
    ) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        Cnitool {
            bin: cnitool_bin(),
            conf_dir: conf_dir.into(),
            cni_path: cni_path.into_iter().map(Into::into).collect(),
            cache_dir: cache_dir.into(),
            container_id: "cnitool-container".to_owned(),
            ifname: "eth0".to_owned(),
            cni_args: None,
            cap_args: None,
        }
    }

    runtime_knobs!("cnitool");

    /// Runs `cnitool ARGS...` with `NETCONFPATH`, `CNI_PATH`, `CNI_ARGS`
    /// and `CAP_ARGS` set from this runtime, plus `--cache-dir`,
    /// `--container-id` and `--ifname`; returns the process outcome.
    pub fn run_outcome(&self, args: &[&str]) -> RawOutput {
        let conf_dir = self.conf_dir.to_str().expect("UTF-8 config dir");
        let cni_path = self.cni_path();
        let caps = self.cap_args.as_ref().map(Value::to_string);
        let mut env = vec![("NETCONFPATH", conf_dir), ("CNI_PATH", cni_path.as_str())];
        if let Some(a) = &self.cni_args {
            env.push(("CNI_ARGS", a));
        }
        if let Some(c) = &caps {
            env.push(("CAP_ARGS", c));
        }
        let mut argv: Vec<OsString> = vec![
            "--cache-dir".into(),
            self.cache_dir.as_os_str().to_owned(),
            "--container-id".into(),
            self.container_id.clone().into(),
            "--ifname".into(),
            self.ifname.clone().into(),
        ];
        argv.extend(args.iter().map(OsString::from));
        run_with_clean_env(&self.bin, argv, &env, b"")
    }

    /// Runs `cnitool ARGS...` and returns its report (see the type's docs).
    ///
    /// # Panics
    /// If cnitool exits with anything but 0 or 1 (misuse), or prints
    /// something other than one JSON value (or nothing, on success).
    pub fn run(&self, args: &[&str]) -> Value {
        let out = self.run_outcome(args);
        match out.status() {
            Some(0) if out.stdout.iter().all(u8::is_ascii_whitespace) => {
                serde_json::json!({"ok": true, "result": null})
            }
            Some(0) => serde_json::json!({"ok": true, "result": out.stdout_json()}),
            Some(1) => serde_json::json!({"ok": false, "error": out.stdout_json()}),
            _ => panic!("cnitool {args:?} failed: {out:?}"),
        }
    }

    /// `cnitool add NETWORK NETNS`.
    pub fn add(&self, network: &str, netns: &str) -> Value {
        self.run(&["add", network, netns])
    }

    /// `cnitool check NETWORK NETNS`.
    pub fn check(&self, network: &str, netns: &str) -> Value {
        self.run(&["check", network, netns])
    }

    /// `cnitool del NETWORK NETNS`.
    pub fn del(&self, network: &str, netns: &str) -> Value {
        self.run(&["del", network, netns])
    }

    /// `cnitool status NETWORK`.
    pub fn status(&self, network: &str) -> Value {
        self.run(&["status", network])
    }

    /// `cnitool gc NETWORK [--valid ID/IFNAME]...`.
    pub fn gc(&self, network: &str, valid: &[&str]) -> Value {
        let mut args = vec!["gc", network];
        for v in valid {
            args.extend(["--valid", v]);
        }
        self.run(&args)
    }
}
