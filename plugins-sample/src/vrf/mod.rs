//! `vrf`: a drop-in for the reference chained plugin of that name, which
//! puts the container's interface into a VRF (a routing domain of its
//! own, `ip link add NAME type vrf table T`) inside the container's
//! namespace.
//!
//! ADD finds the VRF `vrfname`, or creates it with routing table `table`
//! (0 or absent: the lowest table no other VRF uses), up; then makes
//! `CNI_IFNAME` its port (`ip link set IFNAME master VRF`), puts back the
//! IPv6 addresses the kernel drops then, and moves the interface's
//! main-table routes through a gateway to the VRF's table. The result is
//! `prevResult`. DEL takes the interface out of the VRF and deletes the
//! VRF when no port is left. CHECK verifies that the interface is the
//! VRF's port. Kernels without VRF support (`CONFIG_NET_VRF`) refuse the
//! VRF: the error names the missing support.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "blue", "plugins": [
//!   {"type": "macvlan", "master": "eth0", "ipam": {"type": "static",
//!    "addresses": [{"address": "10.10.0.5/24", "gateway": "10.10.0.1"}]}},
//!   {"type": "vrf", "vrfname": "blue", "table": 1001}]}
//! ```
//!
//! Where we deliberately differ from the reference:
//! - A missing or invalid `vrfname`, a `table` that differs from the
//!   existing VRF's, a link of that name that is not a VRF, and an
//!   interface that already has a master are code 7 (or 999 for the
//!   last), found before the VRF is created; the reference creates the
//!   VRF first and leaves it behind.
//! - DEL succeeds when the interface is gone (the reference fails).
//!
//! Go: containernetworking/plugins `plugins/meta/vrf`.

mod enslave;

use cni_net::Netns;
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{Error, NetConf};
use serde::Deserialize;

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI vrf plugin v0.1.0 (cni-rs)";

/// The plugin's own configuration keys, as the reference names them.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// The VRF device's name.
    #[serde(default)]
    pub vrfname: String,
    /// Its routing table; 0 or absent: the lowest one free.
    #[serde(default)]
    pub table: u32,
}

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Vrf;

type Req<'a> = Request<'a, NetConf<Fields>>;

/// The reference's words for ADD and CHECK without a previous result.
const NOT_CHAINED: &str = "missing prevResult from earlier plugin";

/// `vrfname`, validated: code 7 naming it.
fn vrfname<'a>(req: &'a Req) -> Result<&'a str, Error> {
    let name = req.config.plugin.vrfname.as_str();
    if name.is_empty() {
        return Err(Error::invalid_config(
            "vrfname",
            "configuration is expected to have a valid vrf name",
        ));
    }
    cni_net::validate_ifname(name).map_err(|e| Error::invalid_config("vrfname", e))?;
    Ok(name)
}

impl Plugin for Vrf {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let name = vrfname(req)?;
        let prev = req.config.prev_result_or(NOT_CHAINED)?.clone();
        let table = req.config.plugin.table;
        Netns::of(req)?.run(|nl| enslave::add(nl, name, table, &req.ifname))?;
        Ok(prev.into())
    }

    fn del(&self, req: &Req) -> Result<(), BoxError> {
        let name = vrfname(req)?;
        let Some(netns) = Netns::of_for_del(req)? else {
            return Ok(());
        };
        netns.run(|nl| enslave::del(nl, name, &req.ifname))?;
        Ok(())
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let name = vrfname(req)?;
        req.config.prev_result_or(NOT_CHAINED)?;
        Netns::of(req)?.run(|nl| enslave::check(nl, name, &req.ifname))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
