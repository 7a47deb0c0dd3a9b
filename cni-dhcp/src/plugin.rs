//! The plugin half: each command forwarded to the daemon.
//!
//! Go: `cmdAdd`, `cmdDel`, `cmdCheck` and `rpcCall` (plugins
//! `plugins/ipam/dhcp/main.go`).

use cni_skel::{BoxError, CheckSupport, Command, Plugin, Reply, Request};
use cni_types::{CniResult, Code, Error, NetConf};

use crate::config::NetConfig;
use crate::daemon::NO_MORE_TRIES;
use crate::gob::Value;
use crate::rpc::{self, CallError, CmdArgs};

/// The `dhcp` IPAM plugin: asks the daemon at `ipam.daemonSocketPath`
/// (default `/run/cni/dhcp.sock`) for the attachment's lease, over the
/// reference's protocol ([`crate::rpc`]), so it works with the reference's
/// daemon too.
#[derive(Debug, Clone, Copy, Default)]
pub struct DhcpPlugin;

/// A failed call as a CNI error: a daemon that is not running, or that
/// found no server in time ("no more tries"), is code 11 (try again
/// later); anything else the daemon says is code 999, as the reference's
/// plugin reports every error.
fn call_error(e: CallError) -> Error {
    match &e {
        CallError::Dial { .. } => {
            Error::try_again_later(e.to_string(), "start it with `dhcp daemon`")
        }
        CallError::Remote { error, .. } if error.starts_with(NO_MORE_TRIES) => {
            Error::try_again_later(
                e.to_string(),
                "is a DHCP server reachable on the interface?",
            )
        }
        _ => Error::new(Code::INTERNAL, e.to_string()),
    }
}

impl DhcpPlugin {
    /// The daemon's socket and the call's arguments; the configuration
    /// (and for ADD its options) is checked here first, so a bad one is
    /// refused (code 6 or 7) before the daemon is asked.
    fn args(req: &Request<NetConf>) -> Result<(std::path::PathBuf, CmdArgs), Error> {
        let conf = NetConfig::parse(&req.stdin)?;
        // Only an ADD sends the options; a DEL must release whatever the
        // configuration has become.
        if req.command == Command::Add {
            conf.ipam
                .clone()
                .unwrap_or_default()
                .client_options(&req.args)?;
        }
        // The daemon may run in another directory: the path goes absolute.
        let netns = match &req.netns {
            Some(p) => std::path::absolute(p)
                .map_err(|e| Error::io("make absolute", p, e))?
                .display()
                .to_string(),
            None => String::new(),
        };
        let args = CmdArgs {
            container_id: req.container_id.clone(),
            netns,
            ifname: req.ifname.clone(),
            args: req.args.clone(),
            path: req.raw_path.clone(),
            netns_override: req.netns_override.clone(),
            stdin_data: req.stdin.clone(),
        };
        Ok((conf.socket_path(), args))
    }

    /// Calls `method` of the daemon with the request's arguments.
    ///
    /// Go: `rpcCall`.
    fn ask(&self, req: &Request<NetConf>, method: &str) -> Result<Value, Error> {
        let (socket, args) = DhcpPlugin::args(req)?;
        rpc::call(&socket, method, &args).map_err(call_error)
    }
}

impl Plugin for DhcpPlugin {
    type Config = NetConf;
    const CHECK: CheckSupport = CheckSupport::Full;

    /// Go: `cmdAdd`, which calls `DHCP.Allocate`.
    fn add(&self, req: &Request<NetConf>) -> Result<Reply, BoxError> {
        let value = self.ask(req, "DHCP.Allocate")?;
        let json = rpc::result_from_value(&value)
            .map_err(|e| Error::new(Code::DECODING_FAILURE, e.to_string()))?;
        let result = CniResult::from_value("1.0.0", json).map_err(|e| {
            Error::new(
                Code::DECODING_FAILURE,
                "unreadable result from the DHCP daemon",
            )
            .with_details(e.to_string())
        })?;
        Ok(result.into())
    }

    /// Go: `cmdDel`, which calls `DHCP.Release`.
    fn del(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
        self.ask(req, "DHCP.Release")?;
        Ok(())
    }

    /// Asks our daemon whether it holds the attachment's lease
    /// (`DHCP.Check`); the reference's daemon does not serve that, and is
    /// asked as the reference's plugin asks it (`DHCP.Allocate`).
    fn check(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
        let (socket, args) = DhcpPlugin::args(req)?;
        match rpc::call(&socket, "DHCP.Check", &args) {
            Err(e) if e.is_unknown_method() => rpc::call(&socket, "DHCP.Allocate", &args),
            other => other,
        }
        .map_err(call_error)?;
        Ok(())
    }

    /// Releases the leases of this network whose attachments are not in
    /// `cni.dev/valid-attachments` (`DHCP.GC`); the reference has no GC,
    /// and its daemon, which cannot be asked, is left alone.
    fn gc(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
        let (socket, args) = DhcpPlugin::args(req)?;
        match rpc::call(&socket, "DHCP.GC", &args) {
            Err(e) if e.is_unknown_method() => Ok(()),
            other => other.map(drop).map_err(|e| call_error(e).into()),
        }
    }

    /// Whether the daemon answers: code 50 (not available) when it does
    /// not. The reference's daemon answers, without serving `DHCP.Status`.
    fn status(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
        let (socket, args) = DhcpPlugin::args(req)?;
        match rpc::call(&socket, "DHCP.Status", &args) {
            Ok(_) => Ok(()),
            Err(e) if e.is_unknown_method() => Ok(()),
            Err(e @ CallError::Dial { .. }) => {
                Err(Error::new(Code::PLUGIN_NOT_AVAILABLE, e.to_string())
                    .with_details("start it with `dhcp daemon`")
                    .into())
            }
            Err(e) => Err(call_error(e).into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use cni_skel::TestRequest;
    use cni_version::PluginInfo;

    use super::*;
    use crate::daemon::{Daemon, DaemonOptions};

    fn conf(version: &str, socket: &Path, ipam: serde_json::Value) -> String {
        let mut ipam_section = serde_json::json!({"type": "dhcp", "daemonSocketPath": socket});
        if let (Some(s), Some(extra)) = (ipam_section.as_object_mut(), ipam.as_object()) {
            s.extend(extra.clone());
        }
        serde_json::json!({"cniVersion": version, "name": "net", "type": "macvlan", "ipam": ipam_section})
            .to_string()
    }

    /// A daemon serving on `socket` on a thread of this process.
    fn serve(socket: &Path) {
        let daemon = Arc::new(Daemon::new(DaemonOptions {
            socket_path: socket.to_path_buf(),
            ..DaemonOptions::default()
        }));
        let listener = daemon.listen().unwrap();
        std::thread::spawn(move || daemon.serve(listener));
    }

    #[test]
    fn without_a_daemon_add_is_try_again_later_and_status_not_available_naming_the_socket() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("absent.sock");
        for (req, version, code) in [
            (TestRequest::add(), "1.0.0", Code::TRY_AGAIN_LATER),
            (TestRequest::del(), "1.0.0", Code::TRY_AGAIN_LATER),
            (TestRequest::status(), "1.1.0", Code::PLUGIN_NOT_AVAILABLE),
        ] {
            let out = req
                .stdin(conf(version, &socket, serde_json::json!({})))
                .run(&DhcpPlugin, &PluginInfo::all());
            let err = out.error().expect("an error");
            assert_eq!(err.code, code, "{err}");
            assert!(err.msg.contains(&socket.display().to_string()), "{err}");
        }
    }

    #[test]
    fn a_running_daemon_answers_status_and_del_of_an_unknown_attachment() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("dhcp.sock");
        serve(&socket);
        let status = TestRequest::status()
            .stdin(conf("1.1.0", &socket, serde_json::json!({})))
            .run(&DhcpPlugin, &PluginInfo::all());
        assert_eq!(status.exit_code, 0, "{:?}", status.error());
        let del = TestRequest::del()
            .stdin(conf("1.0.0", &socket, serde_json::json!({})))
            .run(&DhcpPlugin, &PluginInfo::all());
        assert_eq!(del.exit_code, 0, "{:?}", del.error());
        let check = TestRequest::check()
            .stdin(conf("1.0.0", &socket, serde_json::json!({})))
            .run(&DhcpPlugin, &PluginInfo::all());
        assert_eq!(check.error().map(|e| e.code), Some(Code::INTERNAL));
    }

    #[test]
    fn a_bad_option_is_refused_naming_the_field_before_any_namespace_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("dhcp.sock");
        serve(&socket);
        let ipam = serde_json::json!({"provide": [{"option": "host-nam", "value": "x"}]});
        // The namespace does not exist: refusing the option comes first.
        let out = TestRequest::add()
            .stdin(conf("1.0.0", &socket, ipam))
            .run(&DhcpPlugin, &PluginInfo::all());
        let err = out.error().expect("an error");
        assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG, "{err}");
        assert!(err.to_string().contains("ipam.provide[0].option"), "{err}");
        assert!(err.to_string().contains("host-nam"), "{err}");
    }
}

#[cfg(test)]
mod reference_daemon_tests {
    use std::os::unix::net::UnixListener;
    use std::path::Path;
    use std::sync::{Arc, Mutex};

    use cni_skel::TestRequest;
    use cni_version::PluginInfo;

    use super::*;
    use crate::rpc::{Answer, EMPTY, RESULT};

    /// A daemon serving only what the reference's serves, recording the
    /// methods called.
    fn reference_like(socket: &Path) -> Arc<Mutex<Vec<String>>> {
        let listener = UnixListener::bind(socket).unwrap();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&calls);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let seen = Arc::clone(&seen);
                let _ = rpc::serve(stream.unwrap(), rpc::READ_DEADLINE, move |m, _, _| {
                    seen.lock().unwrap().push(m.to_string());
                    let answer: Answer = match m {
                        "DHCP.Allocate" => {
                            let result = serde_json::json!({"cniVersion": "1.0.0",
                                "ips": [{"address": "10.1.2.3/24"}]});
                            Ok((&RESULT, rpc::result_to_value(&result).unwrap()))
                        }
                        "DHCP.Release" => Ok((&EMPTY, Value::Struct(Vec::new()))),
                        other => Err(format!("rpc: can't find method {other}")),
                    };
                    answer
                });
            }
        });
        calls
    }

    fn conf(version: &str, socket: &Path) -> String {
        serde_json::json!({"cniVersion": version, "name": "net", "type": "macvlan",
            "cni.dev/valid-attachments": [],
            "ipam": {"type": "dhcp", "daemonSocketPath": socket}})
        .to_string()
    }

    #[test]
    fn with_the_references_daemon_check_allocates_gc_does_nothing_and_status_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("dhcp.sock");
        let calls = reference_like(&socket);
        for (req, version) in [
            (TestRequest::check(), "1.0.0"),
            (TestRequest::gc(), "1.1.0"),
            (TestRequest::status(), "1.1.0"),
        ] {
            let out = req
                .stdin(conf(version, &socket))
                .run(&DhcpPlugin, &PluginInfo::all());
            assert_eq!(out.exit_code, 0, "{:?}", out.error());
        }
        assert_eq!(
            *calls.lock().unwrap(),
            ["DHCP.Check", "DHCP.Allocate", "DHCP.GC", "DHCP.Status"]
        );
    }
}
