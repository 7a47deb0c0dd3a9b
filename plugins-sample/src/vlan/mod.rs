//! `vlan`: the container gets an 802.1Q VLAN link on a host link (the
//! master), a drop-in replacement for the reference `vlan` plugin.
//!
//! ADD creates the link for `vlanId` on `master` (required; a link of
//! the container's namespace with `linkInContainer`) straight into
//! `CNI_NETNS` under a temporary name, with `mtu` (at most the master's),
//! renames it `CNI_IFNAME`, and configures IPAM's addresses and routes on
//! it. The result: the one interface (name, MAC, sandbox), `ips` on
//! interface 0, IPAM's routes, and the configuration's `dns`.
//!
//! DEL releases the IPAM reservation and deletes `CNI_IFNAME`; a
//! namespace or link already gone is success. CHECK compares the link
//! with `prevResult` (a vlan, its id, MTU when configured, MAC, addresses
//! and routes). STATUS and GC go to IPAM.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "vlan100", "type": "vlan", "master": "eth0",
//!  "vlanId": 100, "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.100.0.0/24"}]]}}
//! ```
//!
//! Where we deliberately differ: a VLAN id of 0 is refused with 4095 and
//! the rest (code 7 naming `vlanId`: 0 means untagged, so a link of id 0
//! is no VLAN; the reference takes it), and all bad input (`master`,
//! `mtu`, no `ipam`) is code 7 naming the field before anything changes.
//! A kernel without 8021q is an error saying so
//! ([`cni_net::NetError::NoKernelSupport`]). The temporary name is derived
//! rather than random; DEL deletes the link even when IPAM's DEL fails;
//! GC goes to IPAM.
//!
//! Go: containernetworking/plugins `plugins/main/vlan`.

use cni_net::link_plugin::{self, Expected, Plan};
use cni_net::{Netns, SublinkKind, VlanId};
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{Error, NetConf};
use serde::Deserialize;

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI vlan sample plugin v0.1.0";

/// The plugin's own configuration keys, as the reference names them.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// The host link to tag on (required).
    #[serde(default)]
    pub master: String,
    /// The 802.1Q id, 1 to 4094.
    #[serde(rename = "vlanId", default)]
    pub vlan_id: i64,
    /// MTU of the link, at most the master's; 0 or absent: the master's.
    #[serde(default)]
    pub mtu: Option<i64>,
    /// `master` is a link of the container's namespace.
    #[serde(rename = "linkInContainer", default)]
    pub link_in_container: bool,
}

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Vlan;

type Req<'a> = Request<'a, NetConf<Fields>>;

/// Validates the configuration for ADD and CHECK: code 7 naming the
/// field, before anything changes.
fn plan(req: &Req) -> Result<Plan, Error> {
    let f = &req.config.plugin;
    if f.master.is_empty() {
        return Err(Error::invalid_config(
            "master",
            "\"master\" field is required. It specifies the host interface name to create the VLAN for",
        ));
    }
    let id = VlanId::new(f.vlan_id).map_err(|e| Error::invalid_config("vlanId", e))?;
    let ipam = req.config.ipam_plugin().map(str::to_owned).ok_or_else(|| {
        Error::invalid_config("ipam.type", "missing: vlan gets its addresses from IPAM")
    })?;
    let netns = Netns::of(req)?;
    let master = link_plugin::find_master(&netns, &f.master, f.link_in_container)?;
    Ok(Plan {
        mtu: link_plugin::check_mtu(f.mtu, &master)?,
        master,
        in_container: f.link_in_container,
        kind: SublinkKind::Vlan { id },
        mac: None,
        ipam: Some(ipam),
        chained: None,
    })
}

impl Plugin for Vlan {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        link_plugin::add(req, &plan(req)?)
    }

    /// DEL needs only the namespace and `ipam.type`.
    fn del(&self, req: &Req) -> Result<(), BoxError> {
        link_plugin::del(req)
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let expected = Expected {
            missing_prev_result: Some("vlan: Required prevResult missing"),
            ..plan(req)?.expected(true)
        };
        link_plugin::check(req, &expected)
    }

    fn gc(&self, req: &Req) -> Result<(), BoxError> {
        link_plugin::gc(req)
    }

    fn status(&self, req: &Req) -> Result<(), BoxError> {
        link_plugin::status(req)
    }
}

#[cfg(test)]
mod tests;
