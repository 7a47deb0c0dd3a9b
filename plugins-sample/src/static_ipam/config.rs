//! The static IPAM configuration: `ipam.addresses`, `ipam.routes`,
//! `ipam.dns`, and the addresses a runtime may put in their place
//! (`CNI_ARGS` `IP`/`GATEWAY`, `args.cni.ips`, `runtimeConfig.ips`).

use std::net::IpAddr;

use cni_skel::Request;
use cni_types::{Dns, Error, IpNetwork, NetConf, Route};
use cni_version::SpecVersion;
use serde::Deserialize;

/// The `ipam` section, as the reference reads it.
///
/// Go: `IPAMConfig` in `plugins/ipam/static/main.go`.
#[derive(Debug, Default, Deserialize)]
struct Section {
    /// Routes returned as they are.
    #[serde(default)]
    routes: Option<Vec<Route>>,
    /// The addresses, with an optional gateway each.
    #[serde(default)]
    addresses: Option<Vec<Address>>,
    /// DNS settings returned as they are.
    #[serde(default)]
    dns: Option<Dns>,
}

/// One address the plugin returns: `address` in CIDR notation, host bits
/// kept (`10.10.0.1/24`), and an optional `gateway`.
///
/// Go: `Address`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Address {
    /// The address and its prefix length.
    pub address: IpNetwork,
    /// The gateway reported with it.
    #[serde(default)]
    pub gateway: Option<IpAddr>,
}

/// `CNI_ARGS` keys the plugin reads: comma-separated addresses in CIDR
/// notation, and gateways given to the addresses whose subnet holds them.
///
/// Go: `IPAMEnvArgs`.
#[derive(Debug, Default, Deserialize)]
#[allow(non_snake_case)]
struct EnvArgs {
    IP: Option<String>,
    GATEWAY: Option<String>,
}

/// What ADD answers and CHECK verifies, once every source is merged.
///
/// Go: the `*IPAMConfig` `LoadIPAMConfig` returns.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticConfig {
    /// The addresses, in the order of the result's `ips`.
    pub addresses: Vec<Address>,
    /// `ipam.routes`.
    pub routes: Vec<Route>,
    /// `ipam.dns`.
    pub dns: Option<Dns>,
}

impl StaticConfig {
    /// Reads and merges the sources as the reference does: `ipam.addresses`,
    /// then `CNI_ARGS` `IP` appended (with `GATEWAY`s given to the
    /// addresses whose subnet holds them), then `args.cni.ips` replacing
    /// them all, then `runtimeConfig.ips` replacing them all again.
    ///
    /// Every error is code 7 (4 for `CNI_ARGS`) naming the field and the
    /// value.
    ///
    /// Go: `LoadIPAMConfig`.
    pub fn load(req: &Request<'_, NetConf>) -> Result<StaticConfig, Error> {
        let conf = &req.config;
        let ipam = conf
            .ipam
            .as_ref()
            .ok_or_else(|| Error::invalid_config("ipam", "IPAM config missing 'ipam' key"))?;
        let section: Section = ipam.parse()?;
        let mut addresses = section.addresses.unwrap_or_default();

        let env: EnvArgs = req.cni_args()?.deserialize()?;
        if let Some(ips) = env.IP.as_deref().filter(|s| !s.is_empty()) {
            for item in ips.split(',') {
                let address = cidr(item.trim()).map_err(|()| {
                    Error::invalid_env(
                        "CNI_ARGS",
                        format!("the 'IP' value is expected to be in CIDR notation, got: {item:?}"),
                    )
                })?;
                addresses.push(Address {
                    address,
                    gateway: None,
                });
            }
        }
        if let Some(gateways) = env.GATEWAY.as_deref().filter(|s| !s.is_empty()) {
            for item in gateways.split(',') {
                let gw: IpAddr = item.trim().parse().map_err(|_| {
                    Error::invalid_env("CNI_ARGS", format!("invalid gateway address: {item:?}"))
                })?;
                for a in addresses.iter_mut().filter(|a| a.address.contains(gw)) {
                    a.gateway = Some(gw);
                }
            }
        }

        if let Some(ips) = conf
            .args
            .as_ref()
            .map(|a| a.cni_ips())
            .transpose()?
            .flatten()
        {
            if !ips.is_empty() {
                addresses = requested("args.cni.ips", &ips)?;
            }
        }
        if let Some(ips) = conf
            .runtime_config
            .as_ref()
            .map(|r| r.ips())
            .transpose()?
            .flatten()
        {
            if !ips.is_empty() {
                addresses = requested("runtimeConfig.ips", &ips)?;
            }
        }

        // Results before 0.3.0 hold one address of each family.
        let version = SpecVersion::parse(conf.version()).ok();
        if version.is_some_and(|v| v < SpecVersion::V0_3_0) {
            for v4 in [true, false] {
                if addresses
                    .iter()
                    .filter(|a| a.address.is_ipv4() == v4)
                    .count()
                    > 1
                {
                    return Err(Error::invalid_config(
                        "ipam.addresses",
                        format!(
                            "CNI version {} does not support more than 1 address per family",
                            conf.version()
                        ),
                    ));
                }
            }
        }
        Ok(StaticConfig {
            addresses,
            routes: section.routes.unwrap_or_default(),
            dns: section.dns,
        })
    }
}

/// An address in CIDR notation, host bits kept.
fn cidr(text: &str) -> Result<IpNetwork, ()> {
    text.parse().map_err(drop)
}

/// Requested addresses, which replace the configured ones; each must be in
/// CIDR notation (a bare address has no prefix length to give the
/// interface).
fn requested(field: &str, ips: &[String]) -> Result<Vec<Address>, Error> {
    ips.iter()
        .enumerate()
        .map(|(i, ip)| {
            let address = cidr(ip).map_err(|()| {
                Error::invalid_config(
                    &format!("{field}[{i}]"),
                    format!("an entry in the 'ips' field is NOT in CIDR notation, got: {ip:?}"),
                )
            })?;
            Ok(Address {
                address,
                gateway: None,
            })
        })
        .collect()
}
