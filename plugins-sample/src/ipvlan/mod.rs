//! `ipvlan`: the container gets an ipvlan link on a host link (the
//! master), sharing the master's MAC, a drop-in replacement for the
//! reference `ipvlan` plugin.
//!
//! ADD creates the link on `master` (when unset: in a chain, the one
//! interface of `prevResult`; else the host's default-route interface; a
//! link of the container's namespace with `linkInContainer`) straight
//! into `CNI_NETNS` under a temporary name, with `mode` (`l2`, the
//! default, `l3` or `l3s`) and `mtu` (at most the master's), renames it
//! `CNI_IFNAME`, and configures IPAM's addresses and routes on it, or,
//! without an `ipam` section in a chain, those of `prevResult`. The
//! result: the one interface (name, MAC, sandbox), `ips` on interface 0,
//! the routes, and the configuration's `dns`.
//!
//! DEL releases the IPAM reservation and deletes `CNI_IFNAME`; a
//! namespace or link already gone is success. CHECK compares the link
//! with `prevResult` (an ipvlan, its mode, MAC, addresses and routes).
//! STATUS and GC go to IPAM.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "lan", "type": "ipvlan", "master": "eth0",
//!  "mode": "l2", "ipam": {"type": "host-local", "ranges": [[{"subnet": "192.168.1.0/24"}]]}}
//! ```
//!
//! Where we deliberately differ: bad input (`mode`, `mtu`, `master`, no
//! `ipam` and nothing to chain on) is code 7 naming the field, checked
//! before anything changes; a `master` found only in the other namespace
//! says so. The reference runs an IPAM plugin named "" in the last case.
//! A kernel without ipvlan is an error saying so
//! ([`cni_net::NetError::NoKernelSupport`]). The temporary name is derived
//! rather than random; DEL deletes the link even when IPAM's DEL fails;
//! GC goes to IPAM.
//!
//! Go: containernetworking/plugins `plugins/main/ipvlan`.

use cni_net::link_plugin::{self, Expected, Plan};
use cni_net::{IpvlanMode, Netns, SublinkKind};
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{Error, NetConf};
use serde::Deserialize;

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI ipvlan sample plugin v0.1.0";

/// The plugin's own configuration keys, as the reference names them.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// The host link to attach to; when empty, `prevResult`'s one
    /// interface in a chain, else the default-route interface.
    #[serde(default)]
    pub master: String,
    /// `l2` (default), `l3` or `l3s`.
    #[serde(default)]
    pub mode: String,
    /// MTU of the link, at most the master's; 0 or absent: the master's.
    #[serde(default)]
    pub mtu: Option<i64>,
    /// `master` is a link of the container's namespace.
    #[serde(rename = "linkInContainer", default)]
    pub link_in_container: bool,
}

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Ipvlan;

type Req<'a> = Request<'a, NetConf<Fields>>;

fn mode(req: &Req) -> Result<SublinkKind, Error> {
    let mode: IpvlanMode = req
        .config
        .plugin
        .mode
        .parse()
        .map_err(|e| Error::invalid_config("mode", e))?;
    Ok(SublinkKind::Ipvlan { mode })
}

/// Validates the configuration for ADD: code 7 naming the field, before
/// anything changes.
fn plan(req: &Req) -> Result<Plan, Error> {
    let f = &req.config.plugin;
    let kind = mode(req)?;
    let prev = match req.config.prev_result {
        Some(_) => Some(req.prev_result()?.into_owned()),
        None => None,
    };
    let ipam = req.config.ipam_plugin().map(str::to_owned);
    let master_name = match (&prev, f.master.as_str()) {
        (Some(prev), "") => match prev.interfaces.as_slice() {
            [one] if !one.name.is_empty() => one.name.clone(),
            _ => {
                return Err(Error::invalid_config(
                    "master",
                    "not set, and prevResult lacks a single named interface to chain on",
                ))
            }
        },
        (_, name) => name.to_owned(),
    };
    let chained = prev.filter(|p| ipam.is_none() && !p.ips.is_empty());
    if ipam.is_none() && chained.is_none() {
        return Err(Error::invalid_config(
            "ipam.type",
            "missing, and no prevResult addresses to chain on: ipvlan needs one of them",
        ));
    }
    let netns = Netns::of(req)?;
    let master = link_plugin::find_master(&netns, &master_name, f.link_in_container)?;
    Ok(Plan {
        mtu: link_plugin::check_mtu(f.mtu, &master)?,
        master,
        in_container: f.link_in_container,
        kind,
        mac: None,
        ipam,
        chained,
    })
}

impl Plugin for Ipvlan {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        link_plugin::add(req, &plan(req)?)
    }

    /// DEL needs only the namespace and `ipam.type`.
    fn del(&self, req: &Req) -> Result<(), BoxError> {
        link_plugin::del(req)
    }

    /// CHECK does not look for the master, as the reference does not:
    /// in a chain, `prevResult` is this plugin's own result.
    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let expected = Expected {
            kind: Some(cni_net::LinkKind::Ipvlan),
            settings: Some(mode(req)?),
            ipam: req.config.ipam_plugin().map(str::to_owned),
            mtu: None,
            missing_prev_result: Some("Required prevResult missing"),
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
