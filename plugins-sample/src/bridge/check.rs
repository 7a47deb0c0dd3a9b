//! CHECK: the bridge, its port and the container end as `prevResult`
//! says.

use cni_net::{Link, LinkKind, Netlink, Netns};
use cni_types::{Code, Error, Result100};

use super::{Plan, Req};

/// CHECK: the bridge, the port and the container end as `prev` says.
///
/// Go: bridge `cmdCheck`.
pub(super) fn check(req: &Req, plan: &Plan, netns: &Netns, prev: &Result100) -> Result<(), Error> {
    let differs = |what: String| Error::new(Code::INTERNAL, what);
    let sandbox = netns.path().display().to_string();
    let mut host = Netlink::open()?;
    let named = |name: &str| {
        prev.interfaces
            .iter()
            .find(|i| i.name == name && i.sandbox.is_empty())
    };
    let expected = named(&plan.bridge).ok_or_else(|| {
        differs(format!(
            "CNI created bridge {} in host namespace was not found",
            plan.bridge
        ))
    })?;
    let bridge = host
        .find_link(&plan.bridge)?
        .filter(|l| l.kind == Some(LinkKind::Bridge))
        .ok_or_else(|| {
            differs(format!(
                "Interface {} does not have link type of bridge",
                plan.bridge
            ))
        })?;
    same_mac(&expected.mac, &bridge)?;
    if bridge.promisc != req.config.plugin.promisc_mode {
        return Err(differs(format!(
            "Bridge interface {} configured Promisc Mode {} doesn't match current state: {}",
            bridge.name, req.config.plugin.promisc_mode, bridge.promisc
        )));
    }
    // The host end is the container end's peer: found by index from
    // inside, never by recomputing its name.
    let mut inside = netns.socket()?;
    let container = inside.link(&req.ifname)?;
    let peer = container
        .veth_peer()
        .ok_or_else(|| differs(format!("Container interface {} is not a veth", req.ifname)))?;
    let port = host
        .find_link(peer)?
        .filter(|l| l.master == Some(bridge.index))
        .ok_or_else(|| {
            differs(format!(
                "CNI veth created for bridge {} was not found",
                plan.bridge
            ))
        })?;
    let listed = prev
        .interfaces
        .iter()
        .find(|i| i.sandbox.is_empty() && i.name == port.name)
        .ok_or_else(|| {
            differs(format!(
                "Host veth {} of container interface {} is not in prevResult",
                port.name, req.ifname
            ))
        })?;
    same_mac(&listed.mac, &port)?;
    cni_net::check_interface(&mut inside, prev, &req.ifname, &sandbox)
        .map_err(|e| e.with_code(Code::INTERNAL))?;
    Ok(())
}

fn same_mac(expected: &str, link: &Link) -> Result<(), Error> {
    let live = link.mac.map(|m| m.to_string()).unwrap_or_default();
    if !expected.is_empty() && !expected.eq_ignore_ascii_case(&live) {
        return Err(Error::new(
            Code::INTERNAL,
            format!(
                "Interface {} Mac doesn't match: {expected} not found",
                link.name
            ),
        ));
    }
    Ok(())
}
