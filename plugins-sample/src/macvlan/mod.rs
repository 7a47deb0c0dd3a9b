//! `macvlan`: the container gets a macvlan link on a host link (the
//! master), with a MAC of its own on the master's wire, a drop-in
//! replacement for the reference `macvlan` plugin.
//!
//! ADD creates the link on `master` (the host's default-route interface
//! when unset; a link of the container's namespace with
//! `linkInContainer`) straight into `CNI_NETNS` under a temporary name,
//! with `mode` (`bridge`, the default, `private`, `vepa` or `passthru`),
//! `mtu` (at most the master's; 0 or absent is the master's), the
//! requested MAC (`runtimeConfig.mac`, `args.cni.mac`, `CNI_ARGS` `MAC`,
//! then `mac`) and `bcqueuelen`, renames it `CNI_IFNAME`, and with an
//! `ipam` section configures IPAM's addresses and routes on it (else sets
//! it up, layer 2 only). The result: the one interface (name, MAC,
//! sandbox), `ips` on interface 0, IPAM's routes, and the configuration's
//! `dns`.
//!
//! DEL releases the IPAM reservation and deletes `CNI_IFNAME`; a
//! namespace or link already gone is success. CHECK compares the link
//! with `prevResult` (a macvlan, its mode, MAC, addresses and routes).
//! STATUS and GC go to IPAM.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "lan", "type": "macvlan", "master": "eth0",
//!  "mode": "bridge", "ipam": {"type": "host-local", "ranges": [[{"subnet": "192.168.1.0/24"}]]}}
//! ```
//!
//! Where we deliberately differ: bad input (`mode`, `mtu`, `master`,
//! a MAC) is code 7 naming the field, checked before anything changes,
//! and a `master` found only in the other namespace says so
//! (`linkInContainer`); the reference answers 999. The temporary name is
//! derived ([`cni_net::host_veth_name`]) rather than random. `args.cni.mac`
//! is read too (as the reference `bridge` does). DEL deletes the link
//! even when IPAM's DEL fails, reporting IPAM's error after. GC goes to
//! IPAM (the reference's is a FIXME).
//!
//! Go: containernetworking/plugins `plugins/main/macvlan`.

use cni_net::link_plugin::{self, Expected, Plan};
use cni_net::{MacvlanMode, Netns, SublinkKind};
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::conventions::{requested_mac, MacPrecedence};
use cni_types::{Error, NetConf};
use serde::Deserialize;

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI macvlan sample plugin v0.1.0";

/// The plugin's own configuration keys, as the reference names them.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// The host link to attach to; the default-route interface when empty.
    #[serde(default)]
    pub master: String,
    /// `bridge` (default), `private`, `vepa` or `passthru`.
    #[serde(default)]
    pub mode: String,
    /// MTU of the link, at most the master's; 0 or absent: the master's.
    #[serde(default)]
    pub mtu: Option<i64>,
    /// The link's MAC, unless the runtime asks for another.
    #[serde(default)]
    pub mac: Option<String>,
    /// `master` is a link of the container's namespace.
    #[serde(rename = "linkInContainer", default)]
    pub link_in_container: bool,
    /// Length of the master's queue of broadcast frames; 0 or absent: the
    /// kernel's default.
    #[serde(default)]
    pub bcqueuelen: Option<u32>,
}

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Macvlan;

type Req<'a> = Request<'a, NetConf<Fields>>;

/// Validates the configuration for ADD and CHECK: code 7 naming the
/// field, before anything changes.
fn plan(req: &Req) -> Result<Plan, Error> {
    let f = &req.config.plugin;
    let mode: MacvlanMode = f
        .mode
        .parse()
        .map_err(|e| Error::invalid_config("mode", e))?;
    let mac = requested_mac(
        &req.config,
        &req.args,
        f.mac.as_deref(),
        MacPrecedence::Interface,
    )?;
    let netns = Netns::of(req)?;
    let master = link_plugin::find_master(&netns, &f.master, f.link_in_container)?;
    Ok(Plan {
        mtu: link_plugin::check_mtu(f.mtu, &master)?,
        master,
        in_container: f.link_in_container,
        kind: SublinkKind::Macvlan {
            mode,
            bcqueuelen: f.bcqueuelen.filter(|n| *n != 0),
        },
        mac: mac.map(|m| m.mac),
        ipam: req.config.ipam_plugin().map(str::to_owned),
        chained: None,
    })
}

impl Plugin for Macvlan {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        link_plugin::add(req, &plan(req)?)
    }

    /// DEL needs only the namespace and `ipam.type`: a configuration ADD
    /// would refuse still lets the runtime clean up.
    fn del(&self, req: &Req) -> Result<(), BoxError> {
        link_plugin::del(req)
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let expected = Expected {
            missing_prev_result: Some("required prevResult missing"),
            ..plan(req)?.expected(false)
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
