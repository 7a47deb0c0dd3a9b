//! `echo-config`: a test plugin whose ADD prints back the configuration it
//! read, through a struct that keeps unknown keys as the SDK documents
//! (`#[serde(flatten)] unknown: UnknownFields`). Tests run it as a process
//! to check that unknown fields survive ADD exactly.

use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{NetConf, UnknownFields};

/// A plugin's own fields, and every other key kept as written.
#[derive(serde::Deserialize, serde::Serialize)]
struct Config {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mtu: Option<u32>,
    #[serde(flatten)]
    unknown: UnknownFields,
}

struct EchoConfig;

impl Plugin for EchoConfig {
    type Config = NetConf<Config>;
    const CHECK: CheckSupport = CheckSupport::Full;
    // A test double: its ADD changes nothing on the host, so there is
    // nothing to verify and CHECK succeeds.
    fn check(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        Ok(Reply::Raw {
            stdout: serde_json::to_vec(&req.config)?,
            exit_code: 0,
        })
    }

    fn del(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }
}

fn main() {
    cni_skel::run(
        &EchoConfig,
        &cni_version::PluginInfo::all(),
        "CNI echo-config test plugin",
    );
}
