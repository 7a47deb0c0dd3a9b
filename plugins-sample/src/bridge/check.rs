//! CHECK: the bridge, its port and the container end as `prevResult`
//! says.

use cni_net::{differs, sysctl_for_ifname, Link, LinkKind, Netlink, Netns};
use cni_netfilter::macspoof;
use cni_types::{Code, Error, Result100};

use super::setup::ref_id;
use super::{Plan, Req};

/// CHECK: the bridge, the port and the container end as `prev` says.
///
/// Go: bridge `cmdCheck`.
pub(super) fn check(req: &Req, plan: &Plan, netns: &Netns, prev: &Result100) -> Result<(), Error> {
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
    check_layer2(req, plan, netns, &mut host, &port, &container)
}

/// CHECK of the layer-2 fields, none of which the reference's CHECK
/// looks at: port isolation, the port's VLANs, the spoof check, the
/// container end's state and its DAD sysctl.
fn check_layer2(
    req: &Req,
    plan: &Plan,
    netns: &Netns,
    host: &mut Netlink,
    port: &Link,
    container: &Link,
) -> Result<(), Error> {
    let f = &req.config.plugin;
    let isolated = host.isolated(port.index)?;
    if isolated != f.port_isolation {
        return Err(differs(format!(
            "Bridge port {} configured portIsolation {} doesn't match current state: {isolated}",
            port.name, f.port_isolation
        )));
    }
    if let Some(vlans) = &plan.vlans {
        let live = host.port_vlans(port.index)?;
        if let Some(missing) = vlans.expected().into_iter().find(|w| !live.contains(w)) {
            return Err(differs(format!(
                "Bridge port {} lacks VLAN {} ({}) of vlan/vlanTrunk",
                port.name,
                missing.vid,
                if missing.pvid {
                    "pvid untagged"
                } else {
                    "tagged"
                }
            )));
        }
    }
    if f.macspoofchk {
        macspoof::check(&ref_id(req)).map_err(Error::from)?;
    }
    if container.up == f.disable_container_interface {
        return Err(differs(format!(
            "Container interface {} is {} with disableContainerInterface {}",
            container.name,
            if container.up { "up" } else { "down" },
            f.disable_container_interface
        )));
    }
    // Set only with IPAM, and unreadable when IPv6 is off in the namespace.
    if plan.ipam.is_some() {
        let key = sysctl_for_ifname("net.ipv6.conf.IFNAME.accept_dad", &req.ifname)?;
        if let Ok(live) = netns.sysctl(&key) {
            let want = if f.enable_dad { "1" } else { "0" };
            if live.trim() != want {
                return Err(differs(format!(
                    "Container interface {} has {key} {} with enabledad {}",
                    req.ifname,
                    live.trim(),
                    f.enable_dad
                )));
            }
        }
    }
    Ok(())
}

fn same_mac(expected: &str, link: &Link) -> Result<(), Error> {
    let live = link.mac_text();
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
