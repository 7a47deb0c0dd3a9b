//! The bridge's configuration, validated before anything changes.

use cni_netfilter::{masquerade, BackendKind};
use cni_types::{Code, Error, Extra};
use serde::Deserialize;

use super::{Req, DEFAULT_BRIDGE};

/// The plugin's own configuration keys, as the reference names them.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// The bridge's name.
    #[serde(default)]
    pub bridge: Option<String>,
    /// Put the gateway address on the bridge.
    #[serde(rename = "isGateway", default)]
    pub is_gateway: bool,
    /// Route the container's default traffic through the bridge (implies
    /// `isGateway`).
    #[serde(rename = "isDefaultGateway", default)]
    pub is_default_gateway: bool,
    /// Replace another IPv4 address on the bridge instead of failing.
    #[serde(rename = "forceAddress", default)]
    pub force_address: bool,
    /// MTU of the bridge and both ends of the pair; 0, as the reference's
    /// Go structs always write it, means the kernel's default.
    #[serde(default)]
    pub mtu: Option<u32>,
    /// Let traffic leave a port and come back on it.
    #[serde(rename = "hairpinMode", default)]
    pub hairpin_mode: bool,
    /// Promiscuous mode on the bridge.
    #[serde(rename = "promiscMode", default)]
    pub promisc_mode: bool,
    /// Masquerade the container's traffic to outside its subnets (with
    /// IPAM only, as the reference).
    #[serde(rename = "ipMasq", default)]
    pub ip_masq: bool,
    /// `"iptables"` or `"nftables"`; absent, the reference's choice
    /// ([`cni_netfilter::choose`]).
    #[serde(rename = "ipMasqBackend", default)]
    pub ip_masq_backend: Option<String>,
    /// IPv6 duplicate address detection in the container (off otherwise).
    #[serde(rename = "enabledad", default)]
    pub enable_dad: bool,
    /// Everything else, checked against what this plugin implements.
    #[serde(flatten)]
    pub other: Extra,
}

/// Reference fields this plugin does not implement: code 2 naming the
/// field when one asks for something (`vlan: 0` asks for nothing).
fn reject_unimplemented(fields: &Extra) -> Result<(), Error> {
    use serde_json::Value;
    for key in ["vlan", "vlanTrunk", "macspoofchk"] {
        let asks = match fields.get(key) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(Value::Number(n)) => n.as_u64() != Some(0),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(_) => true,
        };
        if asks {
            return Err(Error::new(
                Code::UNSUPPORTED_FIELD,
                format!("bridge: {key} is not implemented"),
            )
            .with_details(format!("{key}: {}", fields[key])));
        }
    }
    Ok(())
}

/// The validated configuration.
pub(super) struct Plan {
    /// `bridge`, else `cni0`.
    pub bridge: String,
    /// `ipam.type`; none for a layer-2 port.
    pub ipam: Option<String>,
    /// The bridge holds the gateways (`isGateway` or `isDefaultGateway`).
    pub gateway: bool,
    /// `mtu`, unless absent or 0 (see [`cni_net::configured_mtu`]).
    pub mtu: Option<u32>,
    /// `Some` with the backend asked for (`None`: the default) when
    /// `ipMasq` is on and there is IPAM.
    pub masquerade: Option<Option<BackendKind>>,
}

/// Validates the configuration for ADD, CHECK, GC and STATUS: code 2 for
/// a field not implemented, 7 for a bad value, before anything changes.
pub(super) fn plan(req: &Req) -> Result<Plan, Error> {
    let f = &req.config.plugin;
    reject_unimplemented(&f.other)?;
    let bridge = f.bridge.clone().filter(|b| !b.is_empty());
    let bridge = bridge.unwrap_or_else(|| DEFAULT_BRIDGE.to_owned());
    cni_net::validate_ifname(&bridge).map_err(|e| Error::invalid_config("bridge", e))?;
    let mtu = cni_net::configured_mtu(f.mtu).map_err(|e| Error::invalid_config("mtu", e))?;
    if f.hairpin_mode && f.promisc_mode {
        return Err(Error::new(
            Code::INVALID_NETWORK_CONFIG,
            "cannot set hairpin mode and promiscuous mode at the same time",
        ));
    }
    let backend = masquerade::requested_backend(f.ip_masq_backend.as_deref())?;
    let ipam = ipam_type(req);
    Ok(Plan {
        bridge,
        masquerade: (f.ip_masq && ipam.is_some()).then_some(backend),
        ipam,
        gateway: f.is_gateway || f.is_default_gateway,
        mtu,
    })
}

/// `ipam.type`, when the bridge delegates addresses at all.
pub(super) fn ipam_type(req: &Req) -> Option<String> {
    let ipam = req.config.ipam.as_ref().map(|i| i.ipam_type.clone());
    ipam.filter(|t| !t.is_empty())
}
