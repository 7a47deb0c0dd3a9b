//! `bandwidth`: shapes what a container receives and sends with tc, a
//! drop-in replacement for the reference `bandwidth` meta plugin.
//!
//! Chained after an interface plugin whose result lists the host end of
//! a veth pair (`bridge`, `ptp`, `veth`). The entry is the configuration's
//! own `ingressRate`/`ingressBurst`/`egressRate`/`egressBurst` when it has
//! any of them, else the `bandwidth` capability's `runtimeConfig.bandwidth`
//! (the reference's order; its keys in any case, as containerd sends
//! `IngressRate`); rates in bits per second, bursts in bits:
//!
//! ```json
//! {"type": "bandwidth", "capabilities": {"bandwidth": true}}
//! {"type": "bandwidth", "ingressRate": 8000000, "ingressBurst": 80000,
//!  "egressRate": 16000000, "egressBurst": 160000}
//! ```
//!
//! ADD, as the reference (`config.rs` reads and validates, `shape.rs`
//! installs, checks and removes):
//! - ingress (what the container receives, which leaves the host end):
//!   the host end's root qdisc becomes a tbf, handle `1:`;
//! - egress (what the container sends, which the host end receives): an
//!   ifb link `bwp` + 12 hex digits of SHA-512(network name + container
//!   ID), up, with the host end's MTU, is added to the result; the host
//!   end gets the ingress qdisc `ffff:` with a u32 filter (priority 1,
//!   protocol all, flowid `1:1`) whose mirred action redirects every
//!   packet to the ifb, and the ifb's root qdisc is a tbf, handle `1:`.
//!
//! Each tbf: rate = rate/8 bytes per second, bucket = burst/8 bytes, queue
//! limit = 25 ms of the rate plus the bucket. DEL removes the ifb; CHECK
//! compares each tbf with the configuration.
//!
//! Where we deliberately differ:
//! - The bucket is sent to the kernel in bytes, as `tc` sends it, where
//!   the reference converts it to ticks in floating point and wraps: its
//!   4294967295-bit bursts (containerd's default) become a bucket of
//!   262 MB at 8 Mbit/s, 125 MB at 1 Mbit/s, instead of 537 MB (see
//!   [`cni_net::tc::Tbf`]). `tc qdisc show` reports such a bucket wrapped
//!   as the kernel reports it, and CHECK expects that report.
//! - Every invalid entry is code 7 naming the field, checked before
//!   anything changes: a negative or fractional number, a rate or burst
//!   under 8 bits and a queue over 4 GiB too (the reference: code 999, a
//!   JSON error or the kernel's `EINVAL` after the ifb exists).
//! - The filter has one mirred action (redirect, stolen); the reference's
//!   has a second, unreachable one behind it (pass), an artefact of its
//!   netlink library adding the `RedirIndex` action before the explicit
//!   one.
//! - The tbfs get the Ethernet link layer, as `tc` gives them (the
//!   reference leaves it unspecified; the kernel computes the same).
//! - `unshapedSubnets` and `shapedSubnets` (in the configuration or in
//!   `runtimeConfig.bandwidth`) holding anything are code 7 naming the
//!   field. The reference merged them for v1.6.0 and reverted them before
//!   the release; v1.9 ignores them and shapes everything, so an
//!   operator who asked for an exemption silently got none.
//! - A failed ADD removes what it installed.
//! - DEL also removes the host end's ingress qdisc (when its filter
//!   redirects to this attachment's ifb, or to a link gone, as after the
//!   reference's DEL) and its tbf (handle `1:`), found
//!   from the container's side; the reference leaves them until the veth
//!   goes. DEL reads only the network name, so an entry ADD would refuse
//!   does not keep it from cleaning up.
//! - CHECK without an entry succeeds at once, as ADD returns at once; the
//!   reference first looks for the host end and fails without a veth.
//! - CHECK also checks the ingress qdisc and the filter redirecting to
//!   the ifb, and names each difference; the reference checks only the
//!   tbfs and stops at the first qdisc that is not a tbf.
//! - GC exists (the reference has none) and removes orphaned ifbs: those
//!   of finished ADDs that no link redirects to any more, because their
//!   pod's host end went with its namespace and no DEL came. Nothing
//!   without `cni.dev/valid-attachments`; never an ifb derived from a
//!   valid attachment of this network. An ifb's name is a one-way hash of
//!   network name and container ID, so one a link still redirects to may
//!   be a live container's of another network, and is kept; the qdiscs
//!   on a host end go with the link.
//!
//! Go: containernetworking/plugins `plugins/meta/bandwidth`.

use cni_net::Netns;
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::NetConf;

mod config;
mod shape;

pub use self::config::{Fields, Shaping, LATENCY};
pub use self::shape::ifb_name;
use self::shape::{HostEnd, Installed};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI bandwidth sample plugin v0.1.0";

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Bandwidth;

type Req<'a> = Request<'a, NetConf<Fields>>;

impl Plugin for Bandwidth {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let shaping = Shaping::read(&req.config)?;
        let mut result = req
            .prev_result_or("must be called as chained plugin")?
            .into_owned();
        if shaping.is_none() {
            return Ok(result.into());
        }
        let netns = Netns::of(req)?;
        let mut host = HostEnd::find(&netns, &req.ifname, &result)?;
        let ifb = ifb_name(&req.config.name, &req.container_id);
        let installed = host.install(&shaping, &ifb)?;
        if let Installed { ifb: Some(link) } = installed {
            result.interfaces.push(link.interface());
        }
        Ok(result.into())
    }

    fn del(&self, req: &Req) -> Result<(), BoxError> {
        let ifb = ifb_name(&req.config.name, &req.container_id);
        let netns = Netns::of_for_del(req)?;
        Ok(shape::remove(netns.as_ref(), &req.ifname, &ifb)?)
    }

    fn gc(&self, req: &Req) -> Result<(), BoxError> {
        let valid = req.valid_attachments()?;
        let Some(list) = valid.list() else {
            return Ok(());
        };
        let kept: Vec<String> = list
            .iter()
            .map(|a| ifb_name(&req.config.name, &a.container_id))
            .collect();
        for name in shape::collect_orphans(&kept)? {
            req.log(format!("bandwidth GC: removed the orphaned ifb {name}"));
        }
        Ok(())
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let shaping = Shaping::read(&req.config)?;
        let result = req.prev_result_or("must be called as a chained plugin")?;
        if shaping.is_none() {
            return Ok(());
        }
        let netns = Netns::of(req)?;
        let mut host = HostEnd::find(&netns, &req.ifname, &result)?;
        let ifb = ifb_name(&req.config.name, &req.container_id);
        Ok(host.check(&shaping, &ifb)?)
    }
}

#[cfg(test)]
mod tests;
