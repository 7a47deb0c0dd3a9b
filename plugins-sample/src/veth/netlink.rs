//! A small synchronous rtnetlink client: just the link, address and route
//! operations the veth plugin needs, over `netlink-sys` sockets.
//!
//! A netlink socket talks to the network namespace it was created in, so
//! [`Netlink::open_in`] creates one on a short-lived thread that has joined
//! the target namespace; the plugin's own threads never change namespace.

use std::fs::File;
use std::io;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, RawFd};

use cni_types::IpNetwork;
use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL,
    NLM_F_REPLACE, NLM_F_REQUEST,
};
use netlink_packet_route::address::{AddressAttribute, AddressFlags, AddressMessage, AddressScope};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoVeth, LinkAttribute, LinkFlags, LinkInfo, LinkMessage, State,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

/// An rtnetlink socket bound to one network namespace.
pub struct Netlink {
    socket: Socket,
    sequence: u32,
}

/// A link as the plugin needs to know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Interface index.
    pub index: u32,
    /// Interface name.
    pub name: String,
    /// Hardware address, `aa:bb:..`.
    pub mac: String,
}

impl Netlink {
    /// A socket in the caller's network namespace.
    pub fn open() -> io::Result<Netlink> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        Ok(Netlink {
            socket,
            sequence: 0,
        })
    }

    /// A socket in the network namespace `netns` (an open nsfs file).
    pub fn open_in(netns: &File) -> io::Result<Netlink> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    nix::sched::setns(netns, nix::sched::CloneFlags::CLONE_NEWNET)
                        .map_err(io::Error::from)?;
                    Netlink::open()
                })
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("netns thread panicked")))
        })
    }

    /// Sends one request and collects the replies until the ACK (or the end
    /// of a dump); a NACK becomes the kernel's errno.
    fn request(
        &mut self,
        message: RouteNetlinkMessage,
        flags: u16,
    ) -> io::Result<Vec<RouteNetlinkMessage>> {
        self.sequence += 1;
        let mut packet =
            NetlinkMessage::new(NetlinkHeader::default(), NetlinkPayload::from(message));
        packet.header.flags = NLM_F_REQUEST | flags;
        packet.header.sequence_number = self.sequence;
        packet.finalize();
        let mut buf = vec![0; packet.buffer_len()];
        packet.serialize(&mut buf);
        self.socket.send(&buf, 0)?;

        let mut replies = Vec::new();
        loop {
            let (data, _) = self.socket.recv_from_full()?;
            let mut offset = 0;
            while offset < data.len() {
                let reply: NetlinkMessage<RouteNetlinkMessage> =
                    NetlinkMessage::deserialize(&data[offset..])
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
                let len = reply.header.length as usize;
                if len == 0 {
                    break;
                }
                offset += len;
                if reply.header.sequence_number != self.sequence {
                    continue;
                }
                match reply.payload {
                    NetlinkPayload::Done(_) => return Ok(replies),
                    NetlinkPayload::Error(e) if e.code.is_none() => return Ok(replies),
                    NetlinkPayload::Error(e) => return Err(e.to_io()),
                    NetlinkPayload::InnerMessage(m) => replies.push(m),
                    _ => {}
                }
            }
        }
    }

    fn change(&mut self, message: RouteNetlinkMessage, flags: u16) -> io::Result<()> {
        self.request(message, NLM_F_ACK | flags).map(drop)
    }

    /// The link named `name`, if there is one.
    pub fn link_by_name(&mut self, name: &str) -> io::Result<Option<Link>> {
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
        match self.request(RouteNetlinkMessage::GetLink(msg), NLM_F_ACK) {
            Ok(replies) => Ok(replies.into_iter().find_map(|r| match r {
                RouteNetlinkMessage::NewLink(link) => Some(link_of(&link)),
                _ => None,
            })),
            Err(e) if e.raw_os_error() == Some(libc_enodev()) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Creates a veth pair: `host` here, its peer `peer` directly in the
    /// namespace `peer_netns`, both with `mtu` when given.
    pub fn add_veth(
        &mut self,
        host: &str,
        peer: &str,
        peer_netns: RawFd,
        mtu: Option<u32>,
    ) -> io::Result<()> {
        let mut peer_msg = LinkMessage::default();
        peer_msg
            .attributes
            .push(LinkAttribute::IfName(peer.to_owned()));
        peer_msg.attributes.push(LinkAttribute::NetNsFd(peer_netns));
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::IfName(host.to_owned()));
        if let Some(mtu) = mtu {
            peer_msg.attributes.push(LinkAttribute::Mtu(mtu));
            msg.attributes.push(LinkAttribute::Mtu(mtu));
        }
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Veth),
            LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer_msg))),
        ]));
        self.change(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL)
    }

    /// Sets a link up.
    pub fn set_up(&mut self, index: u32) -> io::Result<()> {
        let mut msg = LinkMessage::default();
        msg.header.index = index;
        msg.header.flags = LinkFlags::Up;
        msg.header.change_mask = LinkFlags::Up;
        self.change(RouteNetlinkMessage::SetLink(msg), 0)
    }

    /// Whether a link is operationally up (carrier on), not just set up.
    pub fn is_oper_up(&mut self, index: u32) -> io::Result<bool> {
        let mut msg = LinkMessage::default();
        msg.header.index = index;
        let replies = self.request(RouteNetlinkMessage::GetLink(msg), NLM_F_ACK)?;
        Ok(replies.iter().any(|r| match r {
            RouteNetlinkMessage::NewLink(link) => link
                .attributes
                .contains(&LinkAttribute::OperState(State::Up)),
            _ => false,
        }))
    }

    /// Deletes a link (both ends, for a veth).
    pub fn delete_link(&mut self, index: u32) -> io::Result<()> {
        let mut msg = LinkMessage::default();
        msg.header.index = index;
        self.change(RouteNetlinkMessage::DelLink(msg), 0)
    }

    /// Adds an address to a link (IPv6 without duplicate address
    /// detection, so it is usable at once).
    pub fn add_address(&mut self, index: u32, address: IpNetwork) -> io::Result<()> {
        let mut msg = AddressMessage::default();
        msg.header.family = family(address.addr());
        msg.header.prefix_len = address.prefix();
        msg.header.index = index;
        msg.header.scope = AddressScope::Universe;
        msg.attributes.push(AddressAttribute::Local(address.addr()));
        msg.attributes
            .push(AddressAttribute::Address(address.addr()));
        if address.addr().is_ipv6() {
            msg.attributes
                .push(AddressAttribute::Flags(AddressFlags::Nodad));
        }
        self.change(
            RouteNetlinkMessage::NewAddress(msg),
            NLM_F_CREATE | NLM_F_REPLACE,
        )
    }

    /// The addresses on a link.
    pub fn addresses(&mut self, index: u32) -> io::Result<Vec<IpNetwork>> {
        let replies = self.request(
            RouteNetlinkMessage::GetAddress(AddressMessage::default()),
            NLM_F_DUMP,
        )?;
        Ok(replies
            .into_iter()
            .filter_map(|r| match r {
                RouteNetlinkMessage::NewAddress(a) if a.header.index == index => {
                    a.attributes.iter().find_map(|attr| match attr {
                        AddressAttribute::Address(ip) => IpNetwork::new(*ip, a.header.prefix_len),
                        _ => None,
                    })
                }
                _ => None,
            })
            .collect())
    }

    /// Adds (or replaces) a route in the main table: via `gateway` when
    /// given, else directly on the link `oif`.
    pub fn add_route(
        &mut self,
        dst: IpNetwork,
        gateway: Option<IpAddr>,
        oif: u32,
    ) -> io::Result<()> {
        let mut msg = RouteMessage::default();
        msg.header.address_family = family(dst.addr());
        msg.header.destination_prefix_length = dst.prefix();
        msg.header.table = RouteHeader::RT_TABLE_MAIN;
        msg.header.protocol = RouteProtocol::Boot;
        msg.header.scope = if gateway.is_some() {
            RouteScope::Universe
        } else {
            RouteScope::Link
        };
        msg.header.kind = RouteType::Unicast;
        if dst.prefix() > 0 {
            msg.attributes
                .push(RouteAttribute::Destination(route_address(dst.network())));
        }
        if let Some(gw) = gateway {
            msg.attributes
                .push(RouteAttribute::Gateway(route_address(gw)));
        }
        msg.attributes.push(RouteAttribute::Oif(oif));
        self.change(
            RouteNetlinkMessage::NewRoute(msg),
            NLM_F_CREATE | NLM_F_REPLACE,
        )
    }

    /// The destinations of the main table's routes through link `oif`.
    pub fn route_destinations(&mut self, oif: u32) -> io::Result<Vec<IpNetwork>> {
        let mut out = Vec::new();
        for af in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut msg = RouteMessage::default();
            msg.header.address_family = af;
            for reply in self.request(RouteNetlinkMessage::GetRoute(msg), NLM_F_DUMP)? {
                let RouteNetlinkMessage::NewRoute(route) = reply else {
                    continue;
                };
                if route.header.table != RouteHeader::RT_TABLE_MAIN
                    || !route.attributes.contains(&RouteAttribute::Oif(oif))
                {
                    continue;
                }
                let dst = route.attributes.iter().find_map(|a| match a {
                    RouteAttribute::Destination(RouteAddress::Inet(ip)) => Some(IpAddr::V4(*ip)),
                    RouteAttribute::Destination(RouteAddress::Inet6(ip)) => Some(IpAddr::V6(*ip)),
                    _ => None,
                });
                let unspecified = if af == AddressFamily::Inet {
                    "0.0.0.0"
                } else {
                    "::"
                };
                let dst = dst
                    .unwrap_or_else(|| unspecified.parse().unwrap_or(IpAddr::from([0, 0, 0, 0])));
                if let Some(net) = IpNetwork::new(dst, route.header.destination_prefix_length) {
                    out.push(net);
                }
            }
        }
        Ok(out)
    }
}

fn family(ip: IpAddr) -> AddressFamily {
    if ip.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    }
}

fn route_address(ip: IpAddr) -> RouteAddress {
    match ip {
        IpAddr::V4(v4) => RouteAddress::Inet(v4),
        IpAddr::V6(v6) => RouteAddress::Inet6(v6),
    }
}

fn link_of(msg: &LinkMessage) -> Link {
    let mut link = Link {
        index: msg.header.index,
        name: String::new(),
        mac: String::new(),
    };
    for attr in &msg.attributes {
        match attr {
            LinkAttribute::IfName(n) => link.name = n.clone(),
            LinkAttribute::Address(a) => {
                link.mac = a
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(":");
            }
            _ => {}
        }
    }
    link
}

/// ENODEV: "no such device", the kernel's answer for an unknown link name.
fn libc_enodev() -> i32 {
    nix::errno::Errno::ENODEV as i32
}

/// The raw fd of an open namespace file, for [`Netlink::add_veth`].
pub fn fd_of(netns: &File) -> RawFd {
    netns.as_raw_fd()
}
