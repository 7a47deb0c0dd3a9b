//! Running a plugin in-process, for tests.

use std::collections::BTreeMap;
use std::ffi::OsString;

use cni_types::Error;
use cni_version::PluginInfo;

use crate::{dispatch, Plugin};

/// One invocation built by hand: environment variables and stdin bytes.
/// Running it goes through exactly the path a real invocation takes, without
/// touching the process environment or exiting.
///
/// ```
/// use cni_skel::TestRequest;
/// # use cni_skel::{Plugin, Reply, Request, BoxError};
/// # struct Noop;
/// # impl Plugin for Noop {
/// #     type Config = cni_types::NetConf;
/// #     fn add(&self, _: &Request<Self::Config>) -> Result<Reply, BoxError> { Ok(cni_types::Result100::new(cni_types::SpecVersion::V1_0_0).into()) }
/// #     fn del(&self, _: &Request<Self::Config>) -> Result<(), BoxError> { Ok(()) }
/// # }
/// let out = TestRequest::new("DEL")
///     .env("CNI_CONTAINERID", "c1")
///     .env("CNI_IFNAME", "eth0")
///     .stdin(r#"{"cniVersion":"1.0.0","name":"net","type":"noop"}"#)
///     .run(&Noop, &cni_version::PluginInfo::all());
/// assert_eq!(out.exit_code, 0);
/// assert!(out.stdout.is_empty());
/// ```
///
/// Go: the closest is plugins `testutils.CmdAddWithArgs`, which calls the plugin's function directly and skips skel's checks; this runs them.
#[derive(Debug, Clone, Default)]
pub struct TestRequest {
    env: BTreeMap<String, OsString>,
    stdin: Vec<u8>,
    about: String,
}

/// What an invocation produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The exit status the process would have.
    pub exit_code: i32,
    /// Everything written to stdout.
    pub stdout: Vec<u8>,
    /// Everything written to stderr.
    pub stderr: Vec<u8>,
}

impl TestRequest {
    /// A request with `CNI_COMMAND` set (empty string: unset).
    pub fn new(command: &str) -> TestRequest {
        let req = TestRequest::default();
        if command.is_empty() {
            req
        } else {
            req.env("CNI_COMMAND", command)
        }
    }

    /// Sets an environment variable (any bytes, as the OS allows).
    pub fn env(mut self, name: &str, value: impl Into<OsString>) -> TestRequest {
        self.env.insert(name.to_owned(), value.into());
        self
    }

    /// Removes an environment variable.
    pub fn without(mut self, name: &str) -> TestRequest {
        self.env.remove(name);
        self
    }

    /// Sets stdin.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> TestRequest {
        self.stdin = bytes.into();
        self
    }

    /// Sets the about string printed when `CNI_COMMAND` is unset.
    pub fn about(mut self, about: &str) -> TestRequest {
        self.about = about.to_owned();
        self
    }

    /// Runs the plugin and collects what it wrote.
    pub fn run<P: Plugin>(&self, plugin: &P, versions: &PluginInfo) -> Outcome {
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        let exit_code = dispatch(
            plugin,
            versions,
            &self.about,
            &self.env,
            &mut self.stdin.as_slice(),
            &mut stdout,
            &mut stderr,
        );
        Outcome {
            exit_code,
            stdout,
            stderr,
        }
    }
}

impl Outcome {
    /// stdout as JSON (panics if it is not: this is for tests).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.stdout)
            )
        })
    }

    /// The CNI error on stdout, if the invocation failed with one.
    pub fn error(&self) -> Option<Error> {
        if self.exit_code == 0 {
            return None;
        }
        serde_json::from_slice(&self.stdout).ok()
    }
}
