//! Routes as the kernel holds them, put into another routing table
//! unchanged otherwise (source-based routing, VRFs), like `ip route show
//! table T` and `ip route replace ... table T`.

use std::net::IpAddr;

use cni_types::IpNetwork;
use netlink_packet_core::{NLM_F_CREATE, NLM_F_REPLACE};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteHeader, RouteMessage, RouteScope,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::{NetError, Netlink, Op};

/// A route read from the kernel, kept whole (protocol, scope, type,
/// preferred source, metric, metrics), so that it can go into another
/// table as it is.
///
/// Go: `netlink.Route` as `netlink.RouteList` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRoute {
    /// The destination network (`0.0.0.0/0` for a default route).
    pub dst: IpNetwork,
    /// The gateway, if the route has one.
    pub gw: Option<IpAddr>,
    /// The preferred source address (`src`), if any.
    pub src: Option<IpAddr>,
    /// The outgoing link's index.
    pub oif: Option<u32>,
    /// The table it is in.
    pub table: u32,
    msg: RouteMessage,
}

impl TableRoute {
    /// Whether its scope is `link` (a route to a directly connected
    /// network, such as a subnet route).
    pub fn is_link_scope(&self) -> bool {
        self.msg.header.scope == RouteScope::Link
    }

    /// Whether its scope is `universe` (a route through a gateway, or to
    /// anywhere): not a connected or local route.
    pub fn is_universe_scope(&self) -> bool {
        self.msg.header.scope == RouteScope::Universe
    }
}

impl std::fmt::Display for TableRoute {
    /// As `ip route` names it: `DST [via GW] [src SRC] table T`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.dst)?;
        if let Some(gw) = self.gw {
            write!(f, " via {gw}")?;
        }
        if let Some(src) = self.src {
            write!(f, " src {src}")?;
        }
        write!(f, " table {}", self.table)
    }
}

/// What a copy keeps: the route itself, not the kernel's bookkeeping
/// (cache info, expiry), which a new route may not carry.
fn is_copied(attr: &RouteAttribute) -> bool {
    matches!(
        attr,
        RouteAttribute::Destination(_)
            | RouteAttribute::Source(_)
            | RouteAttribute::Gateway(_)
            | RouteAttribute::PrefSource(_)
            | RouteAttribute::Oif(_)
            | RouteAttribute::Priority(_)
            | RouteAttribute::Metrics(_)
            | RouteAttribute::Preference(_)
            | RouteAttribute::MultiPath(_)
    )
}

impl Netlink {
    /// The routes through link `oif` in table `table`, both families, of
    /// every type, without the kernel's cached clones.
    ///
    /// Like `ip route show dev NAME table T`; Go:
    /// `netlink.RouteListFiltered(FAMILY_ALL, &Route{LinkIndex, Table},
    /// RT_FILTER_OIF|RT_FILTER_TABLE)`.
    pub fn table_routes(&mut self, oif: u32, table: u32) -> Result<Vec<TableRoute>, NetError> {
        Ok(self
            .dump_routes()?
            .into_iter()
            .filter_map(table_route)
            .filter(|r| r.oif == Some(oif) && r.table == table)
            .collect())
    }

    /// Puts a copy of `route` into `table`, replacing a route with the
    /// same destination, metric and type there; the route's flags are
    /// cleared (the kernel refuses a copy of a route it made with them).
    ///
    /// Like `ip route replace ROUTE table T`; Go: `netlink.RouteReplace`
    /// of a listed route with `Table` changed and `Flags` reset.
    pub fn copy_route_to_table(&mut self, route: &TableRoute, table: u32) -> Result<(), NetError> {
        let mut msg = route.msg.clone();
        msg.header.table = u8::try_from(table).unwrap_or(RouteHeader::RT_TABLE_UNSPEC);
        msg.header.flags = RouteFlags::empty();
        msg.attributes.retain(is_copied);
        msg.attributes.push(RouteAttribute::Table(table));
        let object = format!("{} to table {table}", route.dst);
        self.change(
            RouteNetlinkMessage::NewRoute(msg),
            NLM_F_CREATE | NLM_F_REPLACE,
        )
        .map_err(NetError::kernel(Op::AddRoute, object))
    }

    /// Deletes `route` as it was listed.
    ///
    /// Like `ip route del ROUTE table T`; Go: `netlink.RouteDel`.
    pub fn delete_table_route(&mut self, route: &TableRoute) -> Result<(), NetError> {
        let mut msg = route.msg.clone();
        msg.attributes.retain(is_copied);
        msg.attributes.push(RouteAttribute::Table(route.table));
        self.change(RouteNetlinkMessage::DelRoute(msg), 0)
            .map_err(NetError::kernel(Op::DeleteRoute, route))
    }
}

fn ip_of(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(ip) => Some(IpAddr::V4(*ip)),
        RouteAddress::Inet6(ip) => Some(IpAddr::V6(*ip)),
        _ => None,
    }
}

fn table_route(reply: RouteNetlinkMessage) -> Option<TableRoute> {
    let RouteNetlinkMessage::NewRoute(msg) = reply else {
        return None;
    };
    if msg.header.flags.contains(RouteFlags::Cloned) {
        return None;
    }
    let unspecified = match msg.header.address_family {
        AddressFamily::Inet => IpAddr::from([0u8; 4]),
        AddressFamily::Inet6 => IpAddr::from([0u8; 16]),
        _ => return None,
    };
    let mut dst = unspecified;
    let mut route = TableRoute {
        dst: IpNetwork::new(unspecified, 0)?,
        gw: None,
        src: None,
        oif: None,
        table: u32::from(msg.header.table),
        msg: msg.clone(),
    };
    for attr in &msg.attributes {
        match attr {
            RouteAttribute::Destination(a) => dst = ip_of(a)?,
            RouteAttribute::Gateway(a) => route.gw = ip_of(a),
            RouteAttribute::PrefSource(a) => route.src = ip_of(a),
            RouteAttribute::Oif(i) => route.oif = Some(*i),
            RouteAttribute::Table(t) => route.table = *t,
            _ => {}
        }
    }
    route.dst = IpNetwork::new(dst, msg.header.destination_prefix_length)?;
    Some(route)
}

#[cfg(test)]
mod tests {
    use crate::testing::TempNetns;
    use crate::{Dad, MAIN_TABLE};

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn a_links_routes_move_to_another_table_as_they_are() {
        let ns = TempNetns::new("table").unwrap();
        let link = ns.add_veth("eth0", "peer0", None).unwrap();
        let mut nl = ns.socket().unwrap();
        nl.add_address(link.index, "10.3.0.2/24".parse().unwrap(), Dad::Skip)
            .unwrap();
        nl.set_up(link.index).unwrap();
        let main = nl.table_routes(link.index, MAIN_TABLE).unwrap();
        let subnet = main
            .iter()
            .find(|r| r.dst.to_string() == "10.3.0.0/24")
            .expect("the kernel's subnet route");
        assert!(subnet.is_link_scope());
        assert_eq!(subnet.src, Some("10.3.0.2".parse().unwrap()));
        nl.copy_route_to_table(subnet, 100).unwrap();
        nl.delete_table_route(subnet).unwrap();
        let moved = nl.table_routes(link.index, 100).unwrap();
        assert_eq!(moved.len(), 1, "{moved:?}");
        assert_eq!((moved[0].dst, moved[0].src), (subnet.dst, subnet.src));
        let left = nl.table_routes(link.index, MAIN_TABLE).unwrap();
        assert!(left.iter().all(|r| r.dst != subnet.dst), "{left:?}");
    }
}
