//! ptp's configuration, validated before anything changes.

use cni_netfilter::{masquerade, BackendKind};
use cni_types::Error;
use serde::Deserialize;

use super::Req;

/// The plugin's own configuration keys, as the reference names them.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// Masquerade the container's traffic to outside its subnets.
    #[serde(rename = "ipMasq", default)]
    pub ip_masq: bool,
    /// `"iptables"` or `"nftables"`; absent, the reference's choice
    /// ([`cni_netfilter::choose`]).
    #[serde(rename = "ipMasqBackend", default)]
    pub ip_masq_backend: Option<String>,
    /// MTU of both ends of the pair; 0, as the reference's Go structs
    /// always write it, means the kernel's default.
    #[serde(default)]
    pub mtu: Option<u32>,
}

/// The validated configuration.
#[derive(Debug)]
pub(super) struct Plan {
    /// `ipam.type`.
    pub ipam: String,
    /// `mtu`, unless absent or 0 (see [`cni_net::configured_mtu`]).
    pub mtu: Option<u32>,
    /// `Some` with the backend asked for (`None`: the default) when
    /// `ipMasq` is on.
    pub masquerade: Option<Option<BackendKind>>,
}

/// Validates the configuration for every command but DEL: code 7 naming
/// the field, before anything changes.
pub(super) fn plan(req: &Req) -> Result<Plan, Error> {
    let f = &req.config.plugin;
    let mtu = cni_net::configured_mtu(f.mtu).map_err(|e| Error::invalid_config("mtu", e))?;
    let ipam = req.config.ipam_plugin().map(str::to_owned).ok_or_else(|| {
        Error::invalid_config("ipam.type", "missing: ptp gets its addresses from IPAM")
    })?;
    let backend = masquerade::requested_backend(f.ip_masq_backend.as_deref())?;
    Ok(Plan {
        ipam,
        mtu,
        masquerade: f.ip_masq.then_some(backend),
    })
}
