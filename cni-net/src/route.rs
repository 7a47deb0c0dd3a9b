//! Routes: add, list, delete, with the spec 1.1.0 fields, like `ip route`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cni_types::{IpNetwork, Route};
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteMetric, RouteProtocol,
    RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::addr::family;
use crate::{NetError, Netlink, Op};

/// The main routing table, where a route without `table` goes.
pub const MAIN_TABLE: u32 = 254;

/// A route in the kernel: a CNI [`Route`] (destination, gateway, and the
/// 1.1.0 fields `table`, `scope`, `mtu`, `advmss`, `priority`, all filled
/// in) and the link it leaves by.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LiveRoute {
    /// The route; `dst` is the network (host bits cleared).
    pub route: Route,
    /// The outgoing link's index, when the route has one.
    pub oif: Option<u32>,
}

impl Netlink {
    /// Adds a route through link `oif`; an identical one already there is
    /// an error naming it (`EEXIST`).
    ///
    /// The route's gateway is its `gw`; without one the destination is on
    /// the link (scope link). The 1.1.0 fields apply when set: `table`
    /// (else the main table), `scope` (else universe with a gateway, link
    /// without), `mtu` and `advmss` (route metrics), `priority` (the
    /// metric).
    ///
    /// Like `ip route add DST [via GW] dev NAME ..`; Go: `netlink.RouteAdd`.
    pub fn add_route(&mut self, oif: u32, route: &Route) -> Result<(), NetError> {
        self.new_route(oif, route, NLM_F_EXCL)
    }

    /// [`Netlink::add_route`], replacing a route to the same destination
    /// (same table, metric) if there is one.
    ///
    /// Like `ip route replace`; Go: `netlink.RouteReplace`.
    pub fn replace_route(&mut self, oif: u32, route: &Route) -> Result<(), NetError> {
        self.new_route(oif, route, NLM_F_REPLACE)
    }

    /// [`Netlink::add_route`] with a preferred source address: what the
    /// kernel puts as the source of packets this route sends out that
    /// name none (`RTA_PREFSRC`). The CNI [`Route`] has no such field;
    /// `ptp` sets it on the container's routes.
    ///
    /// Like `ip route add DST [via GW] dev NAME src SRC`; Go:
    /// `netlink.RouteAdd` with `Src`.
    pub fn add_route_from(&mut self, oif: u32, route: &Route, src: IpAddr) -> Result<(), NetError> {
        let mut msg = route_message(oif, route);
        msg.attributes
            .push(RouteAttribute::PrefSource(route_address(src)));
        self.send_route(msg, oif, route, NLM_F_EXCL)
    }

    /// [`Netlink::add_route_from`], replacing a route to the same
    /// destination (same table, metric) if there is one: how `sbr` gives
    /// a subnet route its source hint.
    ///
    /// Like `ip route replace DST dev NAME src SRC`; Go:
    /// `netlink.RouteReplace` with `Src`.
    pub fn replace_route_from(
        &mut self,
        oif: u32,
        route: &Route,
        src: IpAddr,
    ) -> Result<(), NetError> {
        let mut msg = route_message(oif, route);
        msg.attributes
            .push(RouteAttribute::PrefSource(route_address(src)));
        self.send_route(msg, oif, route, NLM_F_REPLACE)
    }

    fn new_route(&mut self, oif: u32, route: &Route, flags: u16) -> Result<(), NetError> {
        self.send_route(route_message(oif, route), oif, route, flags)
    }

    fn send_route(
        &mut self,
        msg: RouteMessage,
        oif: u32,
        route: &Route,
        flags: u16,
    ) -> Result<(), NetError> {
        match self.change(RouteNetlinkMessage::NewRoute(msg), NLM_F_CREATE | flags) {
            Ok(()) => Ok(()),
            Err(e) => Err(NetError::kernel(Op::AddRoute, describe(self, oif, route))(
                e,
            )),
        }
    }

    /// Deletes a route through link `oif`.
    ///
    /// Like `ip route del`; Go: `netlink.RouteDel`.
    pub fn delete_route(&mut self, oif: u32, route: &Route) -> Result<(), NetError> {
        let mut msg = route_message(oif, route);
        // Match any protocol and scope, as `ip route del` does.
        msg.header.protocol = RouteProtocol::Unspec;
        msg.header.scope = RouteScope::NoWhere;
        match self.change(RouteNetlinkMessage::DelRoute(msg), 0) {
            Ok(()) => Ok(()),
            Err(e) => Err(NetError::kernel(
                Op::DeleteRoute,
                describe(self, oif, route),
            )(e)),
        }
    }

    /// Deletes a route through link `oif` if it is there; whether it was.
    /// For DEL, where a route already gone (with its link, or removed by
    /// hand) is success.
    ///
    /// Like `ip route del`, ignoring "No such process"; Go:
    /// `netlink.RouteDel`, ignoring `ESRCH`.
    pub fn delete_route_if_present(&mut self, oif: u32, route: &Route) -> Result<bool, NetError> {
        match self.delete_route(oif, route) {
            Ok(()) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The link the kernel would send a packet to `ip` out of: its own
    /// route lookup, policy rules and all, without listing a table (a
    /// node's IPv6 table holds a route per bridge port). `None` when no
    /// route leads there (none, or an `unreachable` one), or the route has
    /// no link; an error when the kernel refuses the lookup (a `prohibit`
    /// route: `EACCES`; a `blackhole`: `EINVAL`), which a caller may read
    /// as none as the reference's portmap does.
    ///
    /// Like `ip route get IP`; Go: `netlink.RouteGet`.
    pub fn route_to(&mut self, ip: IpAddr) -> Result<Option<u32>, NetError> {
        let mut msg = RouteMessage::default();
        msg.header.address_family = family(ip);
        msg.header.destination_prefix_length = if ip.is_ipv4() { 32 } else { 128 };
        msg.attributes
            .push(RouteAttribute::Destination(route_address(ip)));
        let replies = match self.get(RouteNetlinkMessage::GetRoute(msg)) {
            Ok(replies) => replies,
            Err(e) if unreachable(&e) => return Ok(None),
            Err(e) => return Err(NetError::kernel(Op::List, format!("the route to {ip}"))(e)),
        };
        Ok(replies.iter().find_map(|reply| match reply {
            RouteNetlinkMessage::NewRoute(route) => route.attributes.iter().find_map(|a| match a {
                RouteAttribute::Oif(oif) => Some(*oif),
                _ => None,
            }),
            _ => None,
        }))
    }

    /// The unicast routes of every table, both families.
    ///
    /// Go: `netlink.RouteListFiltered(.., RT_FILTER_TABLE)` with table 0.
    pub fn routes(&mut self) -> Result<Vec<LiveRoute>, NetError> {
        Ok(self.dump_routes()?.iter().filter_map(route_of).collect())
    }

    /// Every route the kernel holds, both families, as it sends them.
    pub(crate) fn dump_routes(&mut self) -> Result<Vec<RouteNetlinkMessage>, NetError> {
        let mut out = Vec::new();
        for af in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut msg = RouteMessage::default();
            msg.header.address_family = af;
            let replies = self
                .dump(RouteNetlinkMessage::GetRoute(msg))
                .map_err(NetError::kernel(Op::List, "routes"))?;
            out.extend(replies);
        }
        Ok(out)
    }
}

fn describe(netlink: &mut Netlink, oif: u32, route: &Route) -> String {
    let mut text = format!("{}", route.dst);
    if let Some(gw) = route.gw {
        text += &format!(" via {gw}");
    }
    text + &format!(" dev {}", netlink.label(oif).trim_start_matches("link "))
}

fn route_address(ip: IpAddr) -> RouteAddress {
    match ip {
        IpAddr::V4(v4) => RouteAddress::Inet(v4),
        IpAddr::V6(v6) => RouteAddress::Inet6(v6),
    }
}

fn route_message(oif: u32, route: &Route) -> RouteMessage {
    let dst = route.dst;
    let table = route.table.unwrap_or(MAIN_TABLE);
    let mut msg = RouteMessage::default();
    msg.header.address_family = family(dst.addr());
    msg.header.destination_prefix_length = dst.prefix();
    // Tables above 255 only fit the attribute; the header then says so.
    msg.header.table = u8::try_from(table).unwrap_or(RouteHeader::RT_TABLE_UNSPEC);
    msg.header.protocol = RouteProtocol::Boot;
    msg.header.scope = match route.scope {
        Some(scope) => RouteScope::from(u8::try_from(scope).unwrap_or(u8::MAX)),
        None if route.gw.is_some() => RouteScope::Universe,
        None => RouteScope::Link,
    };
    msg.header.kind = RouteType::Unicast;
    if dst.prefix() > 0 {
        msg.attributes
            .push(RouteAttribute::Destination(route_address(dst.network())));
    }
    if let Some(gw) = route.gw {
        msg.attributes
            .push(RouteAttribute::Gateway(route_address(gw)));
    }
    msg.attributes.push(RouteAttribute::Oif(oif));
    msg.attributes.push(RouteAttribute::Table(table));
    if let Some(priority) = route.priority {
        msg.attributes.push(RouteAttribute::Priority(priority));
    }
    let metrics: Vec<RouteMetric> = [
        route.mtu.map(RouteMetric::Mtu),
        route.advmss.map(RouteMetric::Advmss),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !metrics.is_empty() {
        msg.attributes.push(RouteAttribute::Metrics(metrics));
    }
    msg
}

fn route_of(reply: &RouteNetlinkMessage) -> Option<LiveRoute> {
    let RouteNetlinkMessage::NewRoute(msg) = reply else {
        return None;
    };
    if msg.header.kind != RouteType::Unicast {
        return None;
    }
    let unspecified = match msg.header.address_family {
        AddressFamily::Inet => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        AddressFamily::Inet6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        _ => return None,
    };
    let ip_of = |a: &RouteAddress| match a {
        RouteAddress::Inet(ip) => Some(IpAddr::V4(*ip)),
        RouteAddress::Inet6(ip) => Some(IpAddr::V6(*ip)),
        _ => None,
    };
    let mut dst = unspecified;
    let mut live = LiveRoute {
        route: Route {
            dst: IpNetwork::new(unspecified, 0)?,
            gw: None,
            mtu: None,
            advmss: None,
            priority: None,
            table: Some(u32::from(msg.header.table)),
            scope: Some(u32::from(u8::from(msg.header.scope))),
        },
        oif: None,
    };
    for attr in &msg.attributes {
        match attr {
            RouteAttribute::Destination(a) => dst = ip_of(a)?,
            RouteAttribute::Gateway(a) => live.route.gw = ip_of(a),
            RouteAttribute::Oif(i) => live.oif = Some(*i),
            RouteAttribute::Table(t) => live.route.table = Some(*t),
            RouteAttribute::Priority(p) => live.route.priority = Some(*p).filter(|p| *p != 0),
            RouteAttribute::Metrics(metrics) => {
                for metric in metrics {
                    match metric {
                        RouteMetric::Mtu(m) => live.route.mtu = Some(*m),
                        RouteMetric::Advmss(m) => live.route.advmss = Some(*m),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    live.route.dst = IpNetwork::new(dst, msg.header.destination_prefix_length)?;
    Some(live)
}

/// Whether a route lookup failed for want of a route.
fn unreachable(e: &std::io::Error) -> bool {
    use nix::errno::Errno;
    let errno = e.raw_os_error().map(Errno::from_raw);
    matches!(errno, Some(Errno::ENETUNREACH | Errno::EHOSTUNREACH))
}
