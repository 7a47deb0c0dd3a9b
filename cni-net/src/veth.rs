//! Veth pairs: the usual link between a container and its host.

use std::os::fd::{AsFd, AsRawFd};

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoVeth, LinkAttribute, LinkInfo, LinkMessage,
};
use netlink_packet_route::RouteNetlinkMessage;

use crate::link::link_of;
use crate::{validate_ifname, Link, Mac, NetError, Netlink, Netns, Op};

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
    /// The bridge (or bond) this end joins as it is created, by index (as
    /// `ip link add NAME master BRIDGE type veth ...`): the end never
    /// exists outside it, and no request of its own sets it.
    pub master: Option<u32>,
}

/// How many host names [`host_veth_names`] derives for one attachment.
pub const HOST_VETH_NAMES: u32 = 16;

/// A host-side veth name for an attachment: `veth` and 8 hex digits of a
/// hash of the container id and interface name, so it is stable (a
/// runtime or a test can find it again), fits the 15-byte limit, and
/// differs between attachments. The first of [`host_veth_names`].
///
/// Go: `ip.RandomVethName` is random instead.
pub fn host_veth_name(container_id: &str, ifname: &str) -> String {
    veth_name(container_id, ifname, 0)
}

/// The host-side veth names of an attachment, in the order to try them:
/// [`host_veth_name`], then [`HOST_VETH_NAMES`]` - 1` more, each with a
/// counter folded into the hash. Two attachments whose first names
/// collide (a 32-bit hash) take the next free one instead of failing; DEL
/// and CHECK find the host end from the container's side (its
/// [`Link::veth_peer`]), never by recomputing the name.
///
/// ```
/// let names: Vec<String> = cni_net::host_veth_names("c1", "eth0").collect();
/// assert_eq!(names[0], cni_net::host_veth_name("c1", "eth0"));
/// assert_eq!(names.len(), cni_net::HOST_VETH_NAMES as usize);
/// ```
///
/// Go: `ip.SetupVeth` draws another random name when one is taken.
pub fn host_veth_names<'a>(
    container_id: &'a str,
    ifname: &'a str,
) -> impl Iterator<Item = String> + 'a {
    (0..HOST_VETH_NAMES).map(move |n| veth_name(container_id, ifname, n))
}

/// `veth` and 8 hex digits of FNV-1a over the container id, NUL, the
/// interface name and, after the first, NUL and the counter `n`.
fn veth_name(container_id: &str, ifname: &str, n: u32) -> String {
    // FNV-1a: a stable, dependency-free hash.
    let counter = (n > 0).then(|| [0].into_iter().chain(n.to_le_bytes()));
    let hash = container_id
        .bytes()
        .chain([0])
        .chain(ifname.bytes())
        .chain(counter.into_iter().flatten())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("veth{:08x}", hash as u32)
}

/// A container's veth pair, created from the host: the end in the
/// container is `ifname` in `netns`, the host end takes the first of
/// [`host_veth_names`] that no host link holds.
///
/// Go: `ip.SetupVeth` (plugins `pkg/ip`).
#[derive(Debug, Clone, Copy)]
pub struct ContainerVeth<'a> {
    /// `CNI_CONTAINERID`, from which the host end's name derives.
    pub container_id: &'a str,
    /// `CNI_IFNAME`: the container end's name.
    pub ifname: &'a str,
    /// `CNI_NETNS`: where the container end goes.
    pub netns: &'a Netns,
    /// MTU of both ends; the kernel default when `None`.
    pub mtu: Option<u32>,
    /// The container end's MAC; random when `None`.
    pub mac: Option<Mac>,
    /// The bridge the host end joins as it is created, by index
    /// ([`VethPair::master`]); none: no master.
    pub master: Option<u32>,
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
        if let Some(master) = pair.master {
            msg.attributes.push(LinkAttribute::Controller(master));
        }
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Veth),
            LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer))),
        ]));
        let object = format!("{:?} (peer {:?})", pair.name, pair.peer_name);
        let echoed = self
            .change_echoed(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL)
            .map_err(NetError::kernel(Op::CreateVeth, &object))?;
        // The kernel's echo of the new link saves a lookup, which waits
        // for the kernel's link lock as the creation did; a kernel that
        // echoes nothing is asked.
        match echoed
            .iter()
            .filter_map(link_of)
            .find(|l| l.name == pair.name)
        {
            Some(link) => Ok(link),
            None => self.link(pair.name),
        }
    }

    /// Creates a container's veth pair from this (the host's) side and
    /// returns the host end (down, as is the container end). A host name
    /// already taken moves on to the next of [`host_veth_names`]; a
    /// container end name already taken, or all host names taken, is the
    /// kernel's `EEXIST` naming the pair.
    ///
    /// Like `ip link add vethXXXXXXXX type veth peer name IFNAME netns NS`;
    /// Go: `ip.SetupVeth`.
    pub fn add_container_veth(&mut self, veth: &ContainerVeth) -> Result<Link, NetError> {
        let mut more = host_veth_names(veth.container_id, veth.ifname).skip(1);
        let mut name = host_veth_name(veth.container_id, veth.ifname);
        loop {
            let pair = VethPair {
                name: &name,
                peer_name: veth.ifname,
                peer_netns: Some(veth.netns),
                mtu: veth.mtu,
                peer_mac: veth.mac,
                master: veth.master,
            };
            match self.add_veth(&pair) {
                // The host name is another attachment's: derive again,
                // unless the container's name was the clash.
                Err(e) if e.is_exists() => {
                    if self.find_link(name.as_str())?.is_none() {
                        return Err(e);
                    }
                    name = more.next().ok_or(e)?;
                }
                done => return done,
            }
        }
    }
}

/// Creates the container's pair from the host (`host`) and returns the
/// host end (both ends down); a link already named `CNI_IFNAME` in the
/// container (`veth.netns`) is refused first, code 999 with the
/// reference's message, so a repeated ADD never touches the live pair.
/// Only that refusal opens a socket in the container.
///
/// Go: `ip.SetupVeth`, whose "container veth name provided (..) already
/// exists" this keeps.
pub fn add_container_pair(
    host: &mut Netlink,
    veth: &ContainerVeth,
) -> Result<Link, cni_types::Error> {
    // The kernel refuses the whole pair when the container's name is
    // taken, creating nothing: the name is looked up only then, for the
    // reference's words (a lookup per ADD waits for the link lock).
    match host.add_container_veth(veth) {
        Err(e) if e.is_exists() && veth.netns.socket()?.find_link(veth.ifname)?.is_some() => {
            let what = format!(
                "container veth name provided ({}) already exists",
                veth.ifname
            );
            Err(cni_types::Error::new(cni_types::Code::INTERNAL, what))
        }
        other => Ok(other?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::MAX_IFNAME_LEN;

    /// A socket in `netns` that hears of every link created, changed or
    /// deleted there (`RTMGRP_LINK`).
    fn watch_links(netns: &Netns) -> netlink_sys::Socket {
        netns
            .on_thread(|| {
                let mut socket = netlink_sys::Socket::new(netlink_sys::protocols::NETLINK_ROUTE)
                    .expect("socket");
                socket
                    .bind(&netlink_sys::SocketAddr::new(0, 1))
                    .expect("bind to RTMGRP_LINK");
                socket.set_non_blocking(true).expect("non-blocking");
                Ok::<_, NetError>(socket)
            })
            .unwrap()
    }

    /// The indices of the links `socket` heard of so far.
    fn heard_of(socket: &netlink_sys::Socket) -> Vec<u32> {
        use netlink_packet_core::{NetlinkMessage, NetlinkPayload};
        let mut indices = Vec::new();
        while let Ok((bytes, _)) = socket.recv_from_full() {
            let mut at = 0;
            while at < bytes.len() {
                let Ok(msg) = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes[at..])
                else {
                    break;
                };
                at += (msg.header.length as usize).max(16);
                if let NetlinkPayload::InnerMessage(
                    RouteNetlinkMessage::NewLink(link) | RouteNetlinkMessage::DelLink(link),
                ) = msg.payload
                {
                    indices.push(link.header.index);
                }
            }
        }
        indices
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn the_container_end_is_created_in_the_container_and_never_seen_on_the_host() {
        let host = crate::testing::TempNetns::new("veth-host").unwrap();
        let container = crate::testing::TempNetns::new("veth-ctr").unwrap();
        let watch = watch_links(&host);
        let veth = ContainerVeth {
            container_id: "c1",
            ifname: "eth0",
            netns: &container,
            mtu: None,
            mac: None,
            master: None,
        };
        let host_end = host.socket().unwrap().add_container_veth(&veth).unwrap();
        let heard = heard_of(&watch);
        assert!(heard.contains(&host_end.index), "{heard:?}");
        assert!(heard.iter().all(|&i| i == host_end.index), "{heard:?}");
        // The watch does hear a peer made on the host and moved, as
        // `ip link add .. peer name P; ip link set P netns NS` would.
        let mut nl = host.socket().unwrap();
        let other = nl
            .add_veth(&VethPair {
                name: "other0",
                peer_name: "moved0",
                peer_netns: None,
                mtu: None,
                peer_mac: None,
                master: None,
            })
            .unwrap();
        let moved = nl.link("moved0").unwrap().index;
        nl.move_to_netns(moved, &container).unwrap();
        let heard = heard_of(&watch);
        assert!(
            heard.contains(&moved) && heard.contains(&other.index),
            "{heard:?}"
        );
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn the_created_host_end_is_what_a_lookup_reads_and_a_taken_container_name_creates_nothing() {
        let host = crate::testing::TempNetns::new("veth-host2").unwrap();
        let container = crate::testing::TempNetns::new("veth-ctr2").unwrap();
        let veth = |id| ContainerVeth {
            container_id: id,
            ifname: "eth0",
            netns: &container,
            mtu: Some(1400),
            mac: None,
            master: None,
        };
        let mut nl = host.socket().unwrap();
        // What the creation answers (the kernel's echo where it gives one)
        // is the link as read afterwards.
        let made = add_container_pair(&mut nl, &veth("c1")).unwrap();
        let read = nl.link(made.index).unwrap();
        let seen = |l: &Link| (l.index, l.name.clone(), l.mac, l.mtu, l.up, l.kind.clone());
        assert_eq!(seen(&made), seen(&read));
        assert_eq!(read.mtu, 1400);
        // Another attachment's pair for the same container name: the
        // reference's words, and no host end made for it.
        let before = nl.links().unwrap().len();
        let err = add_container_pair(&mut nl, &veth("c2")).unwrap_err();
        assert_eq!(err.code, cni_types::Code::INTERNAL);
        assert_eq!(
            err.msg,
            "container veth name provided (eth0) already exists"
        );
        assert_eq!(nl.links().unwrap().len(), before, "a link was left");
    }

    #[test]
    fn an_attachment_has_distinct_fallback_names_all_fitting() {
        let names: Vec<String> = host_veth_names("c1", "eth0").collect();
        let distinct: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(distinct.len(), names.len());
        assert!(names.iter().all(|n| validate_ifname(n).is_ok()));
    }

    #[test]
    fn host_veth_names_are_stable_short_and_distinct() {
        let a = host_veth_name("c1", "eth0");
        assert_eq!(a, host_veth_name("c1", "eth0"));
        assert!(a.len() <= MAX_IFNAME_LEN && a.starts_with("veth"));
        assert_ne!(a, host_veth_name("c1", "eth1"));
        assert_ne!(a, host_veth_name("c2", "eth0"));
    }
}
