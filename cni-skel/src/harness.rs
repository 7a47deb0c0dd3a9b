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
/// #     const CHECK: cni_skel::CheckSupport = cni_skel::CheckSupport::Unsupported;
/// #     fn add(&self, _: &Request<Self::Config>) -> Result<Reply, BoxError> { Ok(cni_types::Result100::new(cni_types::SpecVersion::V1_0_0).into()) }
/// #     fn del(&self, _: &Request<Self::Config>) -> Result<(), BoxError> { Ok(()) }
/// # }
/// let out = TestRequest::del() // CNI_COMMAND=DEL, CNI_CONTAINERID=c1, CNI_IFNAME=eth0
///     .stdin(r#"{"cniVersion":"1.0.0","name":"net","type":"noop"}"#)
///     .run(&Noop, &cni_version::PluginInfo::all());
/// assert_eq!(out.exit_code, 0);
/// assert!(out.stdout.is_empty());
///
/// // Anything else by hand: a missing variable is code 4.
/// let out = TestRequest::new("ADD")
///     .env("CNI_CONTAINERID", "c1")
///     .stdin(r#"{"cniVersion":"1.0.0","name":"net","type":"noop"}"#)
///     .run(&Noop, &cni_version::PluginInfo::all());
/// assert_eq!(out.error().unwrap().code, cni_types::Code::INVALID_ENVIRONMENT_VARIABLES);
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
    /// `CNI_CONTAINERID` in the presets ([`TestRequest::add`] ...).
    pub const CONTAINER_ID: &'static str = "c1";
    /// `CNI_IFNAME` in the presets.
    pub const IFNAME: &'static str = "eth0";
    /// `CNI_NETNS` in the ADD and CHECK presets: a path where no namespace
    /// is, so the skel's check that it is not the plugin's own namespace
    /// passes without root. A plugin that enters it must be given a real
    /// one: `.env("CNI_NETNS", netns.path())`.
    pub const NETNS: &'static str = "/var/run/netns/c1";
    /// `CNI_PATH` in the GC preset, the only command that requires it.
    pub const CNI_PATH: &'static str = "/opt/cni/bin";

    /// ADD with the variables the skel requires for it: `CNI_COMMAND=ADD`,
    /// `CNI_CONTAINERID` ([`Self::CONTAINER_ID`]), `CNI_NETNS`
    /// ([`Self::NETNS`]) and `CNI_IFNAME` ([`Self::IFNAME`]). Add stdin,
    /// and override or remove any of them with [`TestRequest::env`] and
    /// [`TestRequest::without`].
    ///
    /// ```
    /// use cni_skel::TestRequest;
    /// # use cni_skel::{Plugin, Reply, Request, BoxError};
    /// # struct Named;
    /// # impl Plugin for Named {
    /// #     type Config = cni_types::NetConf;
    /// #     const CHECK: cni_skel::CheckSupport = cni_skel::CheckSupport::Unsupported;
    /// #     fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
    /// #         let mut r = cni_types::Result100::new(cni_types::SpecVersion::V1_0_0);
    /// #         r.interfaces.push(cni_types::Interface { sandbox: req.sandbox(), ..cni_types::Interface::named(req.ifname.clone()) });
    /// #         Ok(r.into())
    /// #     }
    /// #     fn del(&self, _: &Request<Self::Config>) -> Result<(), BoxError> { Ok(()) }
    /// # }
    /// let out = TestRequest::add()
    ///     .env("CNI_IFNAME", "net1")
    ///     .stdin(r#"{"cniVersion":"1.0.0","name":"net","type":"named"}"#)
    ///     .run(&Named, &cni_version::PluginInfo::all());
    /// assert_eq!(out.json()["interfaces"][0]["name"], "net1");
    /// assert_eq!(out.json()["interfaces"][0]["sandbox"], TestRequest::NETNS);
    /// ```
    pub fn add() -> TestRequest {
        TestRequest::attachment("ADD").env("CNI_NETNS", TestRequest::NETNS)
    }

    /// CHECK with the same variables as [`TestRequest::add`].
    pub fn check() -> TestRequest {
        TestRequest::attachment("CHECK").env("CNI_NETNS", TestRequest::NETNS)
    }

    /// DEL with `CNI_CONTAINERID` and `CNI_IFNAME`, and no `CNI_NETNS`: the
    /// spec lets a runtime leave it out when the namespace is gone, and a
    /// DEL must still succeed then.
    pub fn del() -> TestRequest {
        TestRequest::attachment("DEL")
    }

    /// GC with `CNI_PATH` ([`Self::CNI_PATH`]), which GC requires; the
    /// configuration must be 1.1.0 or later.
    pub fn gc() -> TestRequest {
        TestRequest::new("GC").env("CNI_PATH", TestRequest::CNI_PATH)
    }

    /// STATUS, which needs no other variable; the configuration must be
    /// 1.1.0 or later.
    pub fn status() -> TestRequest {
        TestRequest::new("STATUS")
    }

    /// The variables of one attachment: ADD, CHECK and DEL.
    fn attachment(command: &str) -> TestRequest {
        TestRequest::new(command)
            .env("CNI_CONTAINERID", TestRequest::CONTAINER_ID)
            .env("CNI_IFNAME", TestRequest::IFNAME)
    }

    /// A request with `CNI_COMMAND` set (empty string: unset) and nothing
    /// else, for the cases the presets do not cover.
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

#[cfg(test)]
mod tests {
    use cni_types::{Code, NetConf, Result100, SpecVersion};

    use super::*;
    use crate::{BoxError, Reply, Request};

    /// Logs what each method received.
    struct Echo;

    impl Echo {
        fn log(req: &Request<NetConf>) {
            req.log(format_args!(
                "{} {:?} {:?} {:?}",
                req.command, req.container_id, req.ifname, req.netns
            ));
        }
    }

    impl Plugin for Echo {
        type Config = NetConf;
        const CHECK: crate::CheckSupport = crate::CheckSupport::Full;
        fn add(&self, req: &Request<NetConf>) -> Result<Reply, BoxError> {
            Echo::log(req);
            Ok(Result100::new(SpecVersion::V1_1_0).into())
        }
        fn del(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
            Echo::log(req);
            Ok(())
        }
        fn check(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
            Echo::log(req);
            Ok(())
        }
        fn gc(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
            Echo::log(req);
            Ok(())
        }
        fn status(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
            Echo::log(req);
            Ok(())
        }
    }

    #[test]
    fn each_preset_carries_what_its_command_requires_and_nothing_more() {
        let conf = r#"{"cniVersion":"1.1.0","name":"net","type":"echo"}"#;
        let attachment = r#""c1" "eth0""#;
        for (preset, logged) in [
            (
                TestRequest::add(),
                format!(r#"ADD {attachment} Some("/var/run/netns/c1")"#),
            ),
            (
                TestRequest::check(),
                format!(r#"CHECK {attachment} Some("/var/run/netns/c1")"#),
            ),
            (TestRequest::del(), format!("DEL {attachment} None")),
            (TestRequest::gc(), r#"GC "" "" None"#.to_owned()),
            (TestRequest::status(), r#"STATUS "" "" None"#.to_owned()),
        ] {
            let out = preset.stdin(conf).run(&Echo, &PluginInfo::all());
            assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
            assert_eq!(String::from_utf8_lossy(&out.stderr).trim_end(), logged);
        }
    }

    #[test]
    fn a_preset_without_a_required_variable_fails_as_a_runtime_would_see() {
        let conf = r#"{"cniVersion":"1.1.0","name":"net","type":"echo"}"#;
        for (preset, var) in [
            (TestRequest::add(), "CNI_NETNS"),
            (TestRequest::check(), "CNI_IFNAME"),
            (TestRequest::del(), "CNI_CONTAINERID"),
            (TestRequest::gc(), "CNI_PATH"),
        ] {
            let out = preset
                .without(var)
                .stdin(conf)
                .run(&Echo, &PluginInfo::all());
            let err = out.error().expect("an error");
            assert_eq!(err.code, Code::INVALID_ENVIRONMENT_VARIABLES, "{var}");
            assert!(err.msg.contains(var), "{}", err.msg);
        }
    }
}
