//! firewall's configuration, read and checked whole before anything
//! changes: every field of the reference's `FirewallNetConf`, each error
//! naming the field.

use std::path::PathBuf;

use cni_netfilter::firewall::{validate_admin_chain, IngressPolicy, DEFAULT_ADMIN_CHAIN};
use cni_netfilter::BackendKind;
use cni_types::{Code, Error, IpNetwork, NetConf};
use serde::Deserialize;

use super::records::{Records, DEFAULT_DATA_DIR};

/// The zone when `firewalldZone` is not given.
pub const DEFAULT_ZONE: &str = "trusted";

/// firewall's own keys.
///
/// Go: `FirewallNetConf` (plugins `plugins/meta/firewall/firewall.go`).
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// `"iptables"`, `"firewalld"` or (ours) `"nftables"`; absent or `""`:
    /// firewalld when it runs, else iptables unless only nftables is
    /// usable.
    #[serde(default)]
    pub backend: Option<String>,
    /// The chain `CNI-FORWARD` jumps to first, for the administrator's
    /// rules (iptables; default `CNI-ADMIN`).
    #[serde(default, rename = "iptablesAdminChainName")]
    pub iptables_admin_chain_name: Option<String>,
    /// The zone container addresses are put in (firewalld; default
    /// `trusted`).
    #[serde(default, rename = "firewalldZone")]
    pub firewalld_zone: Option<String>,
    /// `"open"` (default), `"same-bridge"` or `"isolated"`.
    #[serde(default, rename = "ingressPolicy")]
    pub ingress_policy: Option<String>,
    /// Where ADD records each attachment's addresses for GC (ours; default
    /// [`DEFAULT_DATA_DIR`]).
    #[serde(default, rename = "dataDir")]
    pub data_dir: Option<PathBuf>,
}

/// The backend a configuration asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requested {
    /// Nothing (absent or `""`): the reference's probe.
    Default,
    /// A packet filter backend.
    Filter(BackendKind),
    /// `"firewalld"`.
    Firewalld,
}

/// Everything an invocation does, validated.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The network's name.
    pub network: String,
    /// `backend`.
    pub requested: Requested,
    /// `iptablesAdminChainName`, or `CNI-ADMIN`.
    pub admin_chain: String,
    /// `firewalldZone`, or `trusted`.
    pub zone: String,
    /// `ingressPolicy`.
    pub policy: IngressPolicy,
    /// The records of this network's attachments (under `dataDir`).
    pub records: Records,
    /// The container's addresses from the previous result.
    pub addresses: Vec<IpNetwork>,
    /// The name of the previous result's first interface (the bridge,
    /// when chained after `bridge`).
    pub bridge: Option<String>,
    /// The names of the previous result's host-side interfaces other than
    /// the bridge (the container's bridge port).
    pub host_ports: Vec<String>,
}

impl Setup {
    /// Reads and checks the configuration.
    ///
    /// Go: `parseConf` and `getBackend`'s switch.
    pub fn read(conf: &NetConf<Fields>) -> Result<Setup, Error> {
        let fields = &conf.plugin;
        let requested = match fields.backend.as_deref() {
            None | Some("") => Requested::Default,
            Some("firewalld") => Requested::Firewalld,
            Some(name) => Requested::Filter(name.parse::<BackendKind>().map_err(|_| {
                Error::invalid_config(
                    "backend",
                    format!("{name:?}: must be \"iptables\", \"nftables\" or \"firewalld\""),
                )
            })?),
        };
        let admin_chain = match fields.iptables_admin_chain_name.as_deref() {
            None | Some("") => DEFAULT_ADMIN_CHAIN.to_string(),
            Some(name) => {
                validate_admin_chain(name)
                    .map_err(|e| e.with_code(Code::INVALID_NETWORK_CONFIG))?;
                name.to_string()
            }
        };
        let zone = match fields.firewalld_zone.as_deref() {
            None | Some("") => DEFAULT_ZONE.to_string(),
            Some(zone) if zone.len() <= 64 && zone.bytes().all(|b| b.is_ascii_graphic()) => {
                zone.to_string()
            }
            Some(zone) => {
                return Err(Error::invalid_config(
                    "firewalldZone",
                    format!("{zone:?}: must be 1 to 64 printable ASCII characters"),
                ))
            }
        };
        let policy = fields
            .ingress_policy
            .as_deref()
            .unwrap_or_default()
            .parse::<IngressPolicy>()
            .map_err(|e| e.with_code(Code::INVALID_NETWORK_CONFIG))?;
        let data_dir = fields
            .data_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        let mut setup = Setup {
            records: Records::of(&data_dir, &conf.name)?,
            network: conf.name.clone(),
            requested,
            admin_chain,
            zone,
            policy,
            addresses: Vec::new(),
            bridge: None,
            host_ports: Vec::new(),
        };
        if let Some(prev) = &conf.prev_result {
            let result = prev
                .to_current()
                .map_err(|e| Error::invalid_config("prevResult", e))?;
            setup.addresses = result.ips.iter().map(|ip| ip.address).collect();
            setup.bridge = result
                .interfaces
                .first()
                .map(|i| i.name.clone())
                .filter(|n| !n.is_empty());
            setup.host_ports = result
                .interfaces
                .iter()
                .skip(1)
                .filter(|i| i.sandbox.is_empty() && !i.name.is_empty())
                .map(|i| i.name.clone())
                .collect();
        }
        if policy.isolates() && conf.prev_result.is_some() {
            let Some(bridge) = &setup.bridge else {
                return Err(Error::invalid_config(
                    "prevResult.interfaces",
                    format!(
                        "ingressPolicy {:?} needs the bridge as the first interface: chain \"firewall\" after \"bridge\"",
                        policy.as_str()
                    ),
                ));
            };
            cni_net::validate_ifname(bridge).map_err(|e| {
                Error::invalid_config("prevResult.interfaces[0].name", format!("{bridge:?}: {e}"))
            })?;
        }
        Ok(setup)
    }
}

/// The reference's words for ADD and CHECK without a previous result
/// (`NetConf::prev_result_or`).
pub const NOT_CHAINED: &str = "missing prevResult from earlier plugin";
