//! `agent-forward`: an async plugin that forwards each command to a local
//! agent over a Unix socket, the shape of a daemon shim (the plugin is a
//! thin client, the agent holds the state). [`server`] is the agent.
//!
//! Each command is one JSON line to the agent and one JSON line back. An
//! agent that cannot be reached, or does not answer within `timeoutMs`
//! (default 5000), is code 11 ("try again later": the agent may be
//! starting or busy, and the plugin did nothing); for STATUS the same is
//! code 50 (not available).
//!
//! ```json
//! {"type": "agent-forward", "socket": "/run/cni-agent.sock", "timeoutMs": 2000}
//! ```
//!
//! The methods are `async` ([`AsyncPlugin`]) and the binary serves them
//! with [`Blocking`](cni_skel::Blocking) on the SDK's own dispatcher. The
//! socket and the timer come from `async-io`, which drives its own reactor,
//! so no runtime is involved.

pub mod server;

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_io::{Async, Timer};
use cni_skel::{AsyncPlugin, BoxError, CheckSupport, Command, Reply, Request};
use cni_types::{CniResult, Code, Error, NetConf};
use futures_lite::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use serde::{Deserialize, Serialize};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI agent-forward sample plugin v0.1.0";

/// The versions it speaks: 0.3.0 on, the first whose results can hold an
/// interface without an address (0.1.0 and 0.2.0 results are `ip4`/`ip6`
/// only, and the agent assigns no address), so every listed version can
/// answer ADD.
pub fn versions() -> cni_version::PluginInfo {
    cni_version::PluginInfo::from_version(cni_types::SpecVersion::V0_3_0)
}

/// The plugin's own configuration keys.
#[derive(Debug, Deserialize)]
pub struct Fields {
    /// The agent's socket.
    pub socket: PathBuf,
    /// How long to wait for the agent's answer, in milliseconds.
    #[serde(rename = "timeoutMs", default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_timeout_ms() -> u64 {
    5000
}

/// One command, as sent to the agent.
#[derive(Debug, Serialize, Deserialize)]
pub struct Ask {
    /// `ADD`, `DEL`, `CHECK`, `GC` or `STATUS`.
    pub command: String,
    /// `CNI_CONTAINERID`.
    #[serde(rename = "containerId")]
    pub container_id: String,
    /// `CNI_NETNS`, empty when unset.
    pub netns: String,
    /// `CNI_IFNAME`.
    pub ifname: String,
    /// The network configuration, as the plugin received it.
    pub config: Box<serde_json::value::RawValue>,
}

/// The agent's answer: a result (ADD), nothing, or a CNI error.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Answer {
    /// ADD's result, in any version.
    Result(Box<serde_json::value::RawValue>),
    /// Success without output.
    Done,
    /// The agent's error, passed on with its code.
    Error(Error),
}

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct AgentForward;

impl AsyncPlugin for AgentForward {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    async fn add(&self, req: &Request<'_, Self::Config>) -> Result<Reply, BoxError> {
        forward(req).await?.ok_or_else(|| {
            Error::new(
                Code::DECODING_FAILURE,
                "the agent answered ADD without a result",
            )
            .into()
        })
    }

    async fn del(&self, req: &Request<'_, Self::Config>) -> Result<(), BoxError> {
        forward(req).await.map(drop)
    }

    async fn check(&self, req: &Request<'_, Self::Config>) -> Result<(), BoxError> {
        forward(req).await.map(drop)
    }

    async fn gc(&self, req: &Request<'_, Self::Config>) -> Result<(), BoxError> {
        forward(req).await.map(drop)
    }

    async fn status(&self, req: &Request<'_, Self::Config>) -> Result<(), BoxError> {
        forward(req).await.map(drop).map_err(|e| {
            let mut e = Error::from_boxed(e);
            if e.code == Code::TRY_AGAIN_LATER {
                e.code = Code::PLUGIN_NOT_AVAILABLE;
            }
            e.into()
        })
    }
}

/// Sends the request to the agent and turns its answer into a reply: a
/// result for ADD, nothing for the other commands.
async fn forward(req: &Request<'_, NetConf<Fields>>) -> Result<Option<Reply>, BoxError> {
    let ask = Ask {
        command: req.command.to_string(),
        container_id: req.container_id.clone(),
        netns: req.sandbox(),
        ifname: req.ifname.clone(),
        config: serde_json::value::RawValue::from_string(
            String::from_utf8_lossy(&req.stdin).into_owned(),
        )?,
    };
    let fields = &req.config.plugin;
    let timeout = Duration::from_millis(fields.timeout_ms);
    let line = ask_agent(&fields.socket, &serde_json::to_vec(&ask)?, timeout)
        .await
        .map_err(|e| match e {
            Failure::Unreachable(io) => Error::new(
                Code::TRY_AGAIN_LATER,
                format!("agent at {} is not reachable", fields.socket.display()),
            )
            .with_details(io.to_string()),
            Failure::Silent => Error::new(
                Code::TRY_AGAIN_LATER,
                format!(
                    "agent at {} did not answer {} within {timeout:?}",
                    fields.socket.display(),
                    req.command
                ),
            ),
            Failure::Broken(io) => Error::new(
                Code::IO_FAILURE,
                format!("lost the agent at {} mid-request", fields.socket.display()),
            )
            .with_details(io.to_string()),
        })?;
    let answer: Answer = serde_json::from_slice(&line).map_err(|e| {
        Error::new(Code::DECODING_FAILURE, "unreadable answer from the agent")
            .with_details(format!("{e}; answer: {:?}", String::from_utf8_lossy(&line)))
    })?;
    match answer {
        Answer::Result(raw) if req.command == Command::Add => {
            let result = CniResult::parse_as_given(&req.config_version, raw.get().as_bytes())
                .map_err(|e| {
                    Error::new(Code::DECODING_FAILURE, "unreadable result from the agent")
                        .with_details(e.to_string())
                })?;
            Ok(Some(result.into()))
        }
        Answer::Result(_) | Answer::Done => Ok(None),
        Answer::Error(e) => Err(e.into()),
    }
}

/// Why the agent gave no answer.
enum Failure {
    /// Connecting failed: no agent listening.
    Unreachable(std::io::Error),
    /// Connected, but no answer in time.
    Silent,
    /// The connection broke while talking.
    Broken(std::io::Error),
}

/// One exchange with the agent: a line out, a line back, within `timeout`.
async fn ask_agent(socket: &Path, ask: &[u8], timeout: Duration) -> Result<Vec<u8>, Failure> {
    let exchange = async {
        let mut stream = Async::<std::os::unix::net::UnixStream>::connect(socket)
            .await
            .map_err(Failure::Unreachable)?;
        stream.write_all(ask).await.map_err(Failure::Broken)?;
        stream.write_all(b"\n").await.map_err(Failure::Broken)?;
        let mut line = Vec::new();
        BufReader::new(stream)
            .read_until(b'\n', &mut line)
            .await
            .map_err(Failure::Broken)?;
        if line.is_empty() {
            return Err(Failure::Broken(std::io::ErrorKind::UnexpectedEof.into()));
        }
        Ok(line)
    };
    let deadline = async {
        Timer::after(timeout).await;
        Err(Failure::Silent)
    };
    futures_lite::future::or(exchange, deadline).await
}

#[cfg(test)]
mod tests;
