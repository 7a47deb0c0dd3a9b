//! Veth pairs: the usual link between a container and its host.

use std::os::fd::{AsFd, AsRawFd};

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoVeth, LinkAttribute, LinkInfo, LinkMessage,
};
use netlink_packet_route::RouteNetlinkMessage;

use crate::{validate_ifname, Link, Mac, NetError, Netlink, Netns};

/// A veth pair to create: `name` in the socket's namespace, `peer_name` in
/// `peer_netns` (the socket's own when `None`), both with `mtu` when given.
///
/// Go: `ip.SetupVethWithName` (plugins `pkg/ip`), which creates the pair
/// from the container's side; here either side can.
#[derive(Debug, Clone, Copy)]
pub struct VethPair<'a> {
    /// This end's name.
    pub name: &'a str,
    /// The other end's name, in `peer_netns`.
    pub peer_name: &'a str,
    /// Where the other end goes.
    pub peer_netns: Option<&'a Netns>,
    /// MTU of both ends; the kernel default when `None`.
    pub mtu: Option<u32>,
    /// The other end's MAC; random when `None`.
    pub peer_mac: Option<Mac>,
}

/// A host-side veth name for an attachment: `veth` and 8 hex digits of a
/// hash of the container id and interface name, so it is stable (a
/// runtime or a test can find it again), fits the 15-byte limit, and
/// differs between attachments.
///
/// Go: `ip.RandomVethName` is random instead; a stable name lets DEL and
/// CHECK find the host end without a result.
pub fn host_veth_name(container_id: &str, ifname: &str) -> String {
    // FNV-1a: a stable, dependency-free hash; collisions only mean EEXIST.
    let hash = container_id
        .bytes()
        .chain([0])
        .chain(ifname.bytes())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("veth{:08x}", hash as u32)
}

impl Netlink {
    /// Creates a veth pair and returns this end (down; the peer is down
    /// too, in its namespace under its name).
    ///
    /// Like `ip link add NAME type veth peer name PEER netns NS`.
    pub fn add_veth(&mut self, pair: &VethPair) -> Result<Link, NetError> {
        validate_ifname(pair.name)?;
        validate_ifname(pair.peer_name)?;
        let mut peer = LinkMessage::default();
        peer.attributes
            .push(LinkAttribute::IfName(pair.peer_name.to_owned()));
        if let Some(netns) = pair.peer_netns {
            peer.attributes
                .push(LinkAttribute::NetNsFd(netns.as_fd().as_raw_fd()));
        }
        if let Some(mac) = pair.peer_mac {
            peer.attributes.push(LinkAttribute::Address(mac.0.to_vec()));
        }
        let mut msg = LinkMessage::default();
        msg.attributes
            .push(LinkAttribute::IfName(pair.name.to_owned()));
        if let Some(mtu) = pair.mtu {
            peer.attributes.push(LinkAttribute::Mtu(mtu));
            msg.attributes.push(LinkAttribute::Mtu(mtu));
        }
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Veth),
            LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer))),
        ]));
        let object = format!("{:?} (peer {:?})", pair.name, pair.peer_name);
        self.change(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL)
            .map_err(NetError::kernel("create veth pair", &object))?;
        self.link(pair.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::MAX_IFNAME_LEN;

    #[test]
    fn host_veth_names_are_stable_short_and_distinct() {
        let a = host_veth_name("c1", "eth0");
        assert_eq!(a, host_veth_name("c1", "eth0"));
        assert!(a.len() <= MAX_IFNAME_LEN && a.starts_with("veth"));
        assert_ne!(a, host_veth_name("c1", "eth1"));
        assert_ne!(a, host_veth_name("c2", "eth0"));
    }
}
