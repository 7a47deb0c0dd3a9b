//! The plugin half: each command forwarded to the daemon.
//!
//! Go: `cmdAdd`, `cmdDel`, `cmdCheck` and `rpcCall` (plugins
//! `plugins/ipam/dhcp/main.go`).

use cni_skel::{BoxError, Command, Plugin, Reply, Request};
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

    fn status(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
        self.ask(req)?;
        Ok(())
    }
}
