//! `static`: a drop-in for the reference IPAM plugin of that name, which
//! hands out the addresses it is configured with.
//!
//! ADD answers `ipam.addresses` (each `address` in CIDR notation with an
//! optional `gateway`), `ipam.routes` and `ipam.dns` as a result in the
//! configuration's version. A runtime may add or replace addresses:
//! `CNI_ARGS` `IP=10.10.0.1/24,...` appends (and `GATEWAY=10.10.0.254,...`
//! gives a gateway to each address whose subnet holds it); `args.cni.ips`
//! replaces them all; `runtimeConfig.ips` (the `ips` capability) replaces
//! them all again. Nothing is allocated, so DEL has nothing to release;
//! CHECK looks for each address (and its gateway) in `prevResult`.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "net", "type": "macvlan", "master": "eth0",
//!  "ipam": {"type": "static",
//!           "addresses": [{"address": "10.10.0.1/24", "gateway": "10.10.0.254"},
//!                         {"address": "3ffe:ffff:0:01ff::1/64"}],
//!           "routes": [{"dst": "0.0.0.0/0"}],
//!           "dns": {"nameservers": ["8.8.8.8"]}}}
//! ```
//!
//! Where we deliberately differ from the reference:
//! - Bad input is code 7 naming the field (`invalid ipam.addresses[0].address`,
//!   `invalid runtimeConfig.ips[1]`), or code 4 for `CNI_ARGS`; the
//!   reference answers 999 with the same reasons.
//! - CHECK fails when a configured address is missing from `prevResult`;
//!   the reference passes it (it only compares the gateway of an address
//!   it finds), so its CHECK cannot notice a lost address.
//!
//! Go: containernetworking/plugins `plugins/ipam/static`.

mod config;

use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{Code, Error, IpConfig, NetConf, Result100, SpecVersion};

pub use config::{Address, StaticConfig};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI static IPAM plugin v0.1.0 (cni-rs)";

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Static;

impl Plugin for Static {
    type Config = NetConf;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Request<NetConf>) -> Result<Reply, BoxError> {
        let conf = StaticConfig::load(req)?;
        let mut result = Result100::new(SpecVersion::V1_0_0);
        result.ips = conf
            .addresses
            .iter()
            .map(|a| IpConfig::new(a.address, a.gateway))
            .collect();
        result.routes = conf.routes;
        result.dns = conf.dns.unwrap_or_default();
        Ok(result.into())
    }

    /// Nothing was allocated: nothing to release.
    fn del(&self, _req: &Request<NetConf>) -> Result<(), BoxError> {
        Ok(())
    }

    /// Each configured address must be in `prevResult`, with the
    /// configured gateway when there is one.
    fn check(&self, req: &Request<NetConf>) -> Result<(), BoxError> {
        let conf = StaticConfig::load(req)?;
        let prev = req.prev_result()?;
        for want in &conf.addresses {
            let found = prev
                .ips
                .iter()
                .find(|ip| ip.address.addr() == want.address.addr());
            match found {
                None => {
                    return Err(Error::new(
                        Code::INTERNAL,
                        format!(
                            "static: address {} is missing from prevResult for interface {}",
                            want.address.addr(),
                            req.ifname
                        ),
                    )
                    .into())
                }
                Some(ip) if want.gateway.is_some() && ip.gateway != want.gateway => {
                    return Err(Error::new(
                        Code::INTERNAL,
                        format!(
                            "static: Failed to match addr {} on interface {}",
                            want.address.addr(),
                            req.ifname
                        ),
                    )
                    .into())
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
