//! The plugin half: each command forwarded to the daemon.
//!
//! Go: `cmdAdd`, `cmdDel`, `cmdCheck` and `rpcCall` (plugins
//! `plugins/ipam/dhcp/main.go`).

use cni_skel::{BoxError, CheckSupport, Command, Plugin, Reply, Request};
use cni_types::{CniResult, Code, Error, NetConf};

use crate::config::NetConfig;
use crate::protocol::{self, Answer, Call, CallError};

/// The `dhcp` IPAM plugin: asks the daemon at `ipam.daemonSocketPath`
/// (default `/run/cni/dhcp.sock`) for the attachment's lease.
#[derive(Debug, Clone, Copy, Default)]
pub struct DhcpPlugin;

impl DhcpPlugin {
    /// Sends `req` to the daemon and returns its answer, or a CNI error.
    fn ask(&self, req: &Request<NetConf>) -> Result<Answer, Error> {
        let conf = NetConfig::parse(&req.stdin)?;
        let config: serde_json::Value = serde_json::from_slice(&req.stdin)
            .map_err(|e| Error::decoding("the network configuration", e))?;
        // The daemon may run in another directory: the path goes absolute.
        let netns = match &req.netns {
            Some(p) => std::path::absolute(p)
                .map_err(|e| Error::io("make absolute", p, e))?
                .display()
                .to_string(),
            None => String::new(),
        };
        let call = Call {
            version: protocol::VERSION,
            command: req.command.to_string(),
            container_id: req.container_id.clone(),
            netns,
            ifname: req.ifname.clone(),
            args: req.args.clone(),
            config,
        };
        match protocol::call(&conf.socket_path(), &call) {
            Ok(Answer::Error(e)) => Err(e),
            Ok(answer) => Ok(answer),
            Err(e @ CallError::Connect { .. }) if req.command == Command::Status => {
                Err(Error::new(Code::PLUGIN_NOT_AVAILABLE, e.to_string())
                    .with_details("start it with `dhcp daemon`"))
            }
            Err(e) => Err(e.into()),
        }
    }
}

impl Plugin for DhcpPlugin {
    type Config = NetConf;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Request<NetConf>) -> Result<Reply, BoxError> {
        match self.ask(req)? {
            Answer::Result(value) => {
                let result = CniResult::from_value("1.0.0", value).map_err(|e| {
                    Error::new(
                        Code::DECODING_FAILURE,
                        "unreadable result from the DHCP daemon",
                    )
                    .with_details(e.to_string())
                })?;
                Ok(result.into())
            }
            _ => Err(Error::new(
                Code::INTERNAL,
                "the DHCP daemon answered ADD without a result",
            )
            .into()),
        }
    }

    fn del(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
        self.ask(req)?;
        Ok(())
    }

    fn check(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
        self.ask(req)?;
        Ok(())
    }

    /// Releases the leases of this network whose attachments are not in
    /// `cni.dev/valid-attachments` (the reference has no GC).
    fn gc(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
        self.ask(req)?;
        Ok(())
    }

    fn status(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
        self.ask(req)?;
        Ok(())
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
