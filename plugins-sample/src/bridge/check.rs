//! CHECK: the bridge, its port and the container end as `prevResult`
//! says.

use cni_net::{Link, Netns};
use cni_types::{Code, Error, Result100};

use super::{host_netlink, Plan, Req};

/// CHECK: the bridge, the port and the container end as `prev` says.
///
/// Go: bridge `cmdCheck`.
pub(super) fn check(req: &Req, plan: &Plan, netns: &Netns, prev: &Result100) -> Result<(), Error> {
    let differs = |what: String| Error::new(Code::INTERNAL, what);
    let sandbox = netns.path().display().to_string();
    let mut host = host_netlink()?;
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
        .link_by_name(&plan.bridge)?
        .filter(|l| l.kind.as_deref() == Some("bridge"))
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
    let port = prev
        .interfaces
        .iter()
        .filter(|i| i.sandbox.is_empty() && i.name != plan.bridge)
        .find_map(|i| match host.link_by_name(&i.name) {
            Ok(Some(l)) if l.master == Some(bridge.index) => Some((i, l)),
            _ => None,
        })
        .ok_or_else(|| {
            differs(format!(
                "CNI veth created for bridge {} was not found",
                plan.bridge
            ))
        })?;
    same_mac(&port.0.mac, &port.1)?;
    cni_net::check_interface(&mut netns.socket()?, prev, &req.ifname, &sandbox)
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
