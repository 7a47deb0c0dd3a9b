//! A result's interface, put into the kernel.

use std::net::IpAddr;
use std::time::Duration;

use cni_types::{Result100, Route};

use crate::{Dad, Link, NetError, Netlink};

/// How long IPv6 addresses may stay tentative, as the reference waits.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Configures link `ifname` as `result` describes it: its MTU (from its
/// `interfaces` entry, when set), up, the `ips` whose `interface` index
/// names it, and every route of `result` through it, a route without `gw`
/// going via the gateway of the first address of its family. With
/// [`Dad::Run`] and an IPv6 gateway (routes go through it), waits for
/// IPv6 addresses to leave tentative state first, as the reference does;
/// without one nothing waits, so a link without carrier (a device whose
/// duplicate address detection cannot finish) still gets its addresses.
/// Returns the link as configured: as read before, with the MTU and the
/// up flag set here (not read again, which would wait for the kernel's
/// link lock once more; [`Netlink::link`] reads its operational state).
///
/// The index is the spec's: "`interface` (uint): the index into the
/// `interfaces` list for a CNI Plugin Result indicating which interface
/// this IP configuration should be applied to" (section 5).
///
/// ```no_run
/// use cni_net::{configure_iface, Dad, NetError, Netns};
/// # fn result() -> cni_types::Result100 { unimplemented!() }
///
/// let result = result(); // from the IPAM plugin, interfaces filled in
/// let netns = Netns::open("/run/netns/blue")?;
/// netns.run(|nl| configure_iface(nl, "eth0", &result, Dad::Run))?;
/// # Ok::<(), NetError>(())
/// ```
///
/// An `ips` entry whose index points outside `interfaces`, or to an
/// interface of another name, is an error naming it; entries without an
/// index are left alone. Routes are added with replace semantics, so a
/// route the kernel already holds (the same destination, table and
/// metric) is updated rather than refused.
///
/// Go: `ipam.ConfigureIface` (plugins `pkg/ipam`). It leaves
/// `disable_ipv6` to the caller (Go sets it to 0): the socket may be used
/// outside its namespace's thread, where `/proc/sys` would be the wrong
/// namespace's; call [`Netns::set_sysctl`](crate::Netns::set_sysctl).
pub fn configure_iface(
    netlink: &mut Netlink,
    ifname: &str,
    result: &Result100,
    dad: Dad,
) -> Result<Link, NetError> {
    let mut link = netlink.link(ifname)?;
    let entry = result.interfaces.iter().position(|i| i.name == ifname);
    if let Some(mtu) = entry.and_then(|i| result.interfaces[i].mtu) {
        if mtu != link.mtu {
            netlink.set_mtu(link.index, mtu)?;
            link.mtu = mtu;
        }
    }
    netlink.set_up(link.index)?;
    link.up = true;

    let mut gateways: (Option<IpAddr>, Option<IpAddr>) = (None, None);
    for ip in &result.ips {
        let Some(index) = ip.interface else { continue };
        if result.interfaces.get(index).map(|i| i.name.as_str()) != Some(ifname) {
            return Err(NetError::InvalidResult(format!(
                "ips entry {} has interface index {index}, which is not {ifname:?}",
                ip.address
            )));
        }
        netlink.add_address(link.index, ip.address, dad)?;
        let slot = if ip.address.is_ipv4() {
            &mut gateways.0
        } else {
            &mut gateways.1
        };
        if slot.is_none() {
            *slot = ip.gateway;
        }
    }
    if gateways.1.is_some() && dad == Dad::Run {
        netlink.settle_addresses(link.index, SETTLE_TIMEOUT)?;
    }
    for route in &result.routes {
        let gw = if route.dst.is_ipv4() {
            gateways.0
        } else {
            gateways.1
        };
        let route = Route {
            gw: route.gw.or(gw),
            ..route.clone()
        };
        netlink.replace_route(link.index, &route)?;
    }
    Ok(link)
}
