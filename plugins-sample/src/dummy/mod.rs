//! `dummy`: the container gets a dummy link carrying IPAM's addresses (a
//! stable local address that no wire can take down), a drop-in
//! replacement for the reference `dummy` plugin.
//!
//! ADD creates link `CNI_IFNAME` of kind dummy inside `CNI_NETNS` and
//! configures IPAM's addresses and routes on it (an `ipam` section is
//! required). The result: the one interface (name, MAC, sandbox), `ips`
//! on interface 0, and IPAM's routes and DNS.
//!
//! DEL releases the IPAM reservation and deletes `CNI_IFNAME`; a
//! namespace or link already gone is success. CHECK compares the link
//! with `prevResult` (a dummy, its MAC, addresses and routes). STATUS and
//! GC go to IPAM.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "local", "type": "dummy",
//!  "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.1.2.0/24"}]]}}
//! ```
//!
//! Where we deliberately differ: no `ipam` is code 7 naming `ipam.type`
//! (the reference: 999). A kernel without the dummy driver is an error
//! saying so. DEL deletes the link even when IPAM's DEL fails; GC goes to
//! IPAM.
//!
//! Go: containernetworking/plugins `plugins/main/dummy`.

use cni_net::link_plugin::{self, Addressing, Expected};
use cni_net::{LinkKind, Netns};
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request, Undo};
use cni_types::{Error, NetConf};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI dummy sample plugin v0.1.0";

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Dummy;

type Req<'a> = Request<'a, NetConf>;

fn ipam(req: &Req) -> Result<String, Error> {
    req.config.ipam_plugin().map(str::to_owned).ok_or_else(|| {
        Error::invalid_config(
            "ipam.type",
            "missing: dummy interface requires an IPAM configuration",
        )
    })
}

impl Plugin for Dummy {
    type Config = NetConf;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let addressing = Addressing {
            ipam: Some(ipam(req)?),
            chained: None,
            ipam_dns: true,
        };
        let netns = Netns::of(req)?;
        let mut inside = netns.socket()?;
        Undo::scope(|undo| {
            let dummy = inside.add_dummy(&req.ifname)?;
            link_plugin::push_delete(undo, &netns, dummy.index);
            link_plugin::attach(req, &addressing, &netns, &mut inside, undo)
        })
    }

    /// DEL needs only the namespace and `ipam.type`.
    fn del(&self, req: &Req) -> Result<(), BoxError> {
        link_plugin::del(req)
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let expected = Expected {
            kind: Some(LinkKind::Dummy),
            settings: None,
            ipam: Some(ipam(req)?),
            mtu: None,
            missing_prev_result: Some("dummy: Required prevResult missing"),
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
