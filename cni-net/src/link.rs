//! Links: find, create (veth, bridge, dummy), change and delete them, like
//! `ip link`.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::link::{
    InfoBridgePort, InfoData, InfoKind, InfoPortData, InfoPortKind, InfoVeth, LinkAttribute,
    LinkFlags, LinkInfo, LinkMessage, State,
};
use netlink_packet_route::RouteNetlinkMessage;

use crate::{Mac, NetError, Netlink, Netns};

/// The kernel's limit on interface names: `IFNAMSIZ` (16) with its NUL.
pub const MAX_IFNAME_LEN: usize = 15;

/// A link as the kernel reports it.
///
/// Go: `netlink.Link` / `LinkAttrs`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Link {
    /// Interface index, unique within its namespace.
    pub index: u32,
    /// Interface name.
    pub name: String,
    /// Hardware address, when the link has a 48-bit one.
    pub mac: Option<Mac>,
    /// MTU.
    pub mtu: u32,
    /// Administratively up (`ip link set up`).
    pub up: bool,
    /// Operationally up: carrier on, able to carry traffic.
    pub oper_up: bool,
    /// Promiscuous mode set.
    pub promisc: bool,
    /// All-multicast mode set.
    pub allmulti: bool,
    /// The index of the bridge (or bond) this link is a port of.
    pub master: Option<u32>,
    /// The link's kind (`veth`, `bridge`), when it has one.
    pub kind: Option<String>,
}

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

/// Checks a name the kernel will be asked to give a link: not empty, at
/// most 15 bytes, not `.` or `..`, no `/`, `:` or whitespace.
///
/// Go: `ip.ValidateIfName` (plugins `pkg/ip`: containernetworking/cni
/// `pkg/utils`).
pub fn validate_ifname(name: &str) -> Result<(), NetError> {
    let reason = if name.is_empty() {
        "empty"
    } else if name.len() > MAX_IFNAME_LEN {
        "longer than 15 bytes"
    } else if name == "." || name == ".." {
        "not a name"
    } else if name.contains(['/', ':']) || name.contains(char::is_whitespace) {
        "contains '/', ':' or whitespace"
    } else {
        return Ok(());
    };
    Err(NetError::InvalidName {
        name: name.to_owned(),
        reason,
    })
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
    /// The link named `name`; [`NetError::NoSuchLink`] naming it when
    /// there is none.
    ///
    /// Go: `netlink.LinkByName`.
    pub fn link(&mut self, name: &str) -> Result<Link, NetError> {
        self.link_by_name(name)?
            .ok_or_else(|| NetError::NoSuchLink(format!("{name:?}")))
    }

    /// The link named `name`, if there is one.
    pub fn link_by_name(&mut self, name: &str) -> Result<Option<Link>, NetError> {
        validate_ifname(name)?;
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
        self.get_link(msg)
            .map_err(NetError::kernel("look up link", format!("{name:?}")))
    }

    /// The link with index `index`, if there is one.
    ///
    /// Go: `netlink.LinkByIndex`.
    pub fn link_by_index(&mut self, index: u32) -> Result<Option<Link>, NetError> {
        let mut msg = LinkMessage::default();
        msg.header.index = index;
        self.get_link(msg)
            .map_err(NetError::kernel("look up link", format!("#{index}")))
    }

    /// All links of the namespace.
    ///
    /// Go: `netlink.LinkList`.
    pub fn links(&mut self) -> Result<Vec<Link>, NetError> {
        let replies = self
            .dump(RouteNetlinkMessage::GetLink(LinkMessage::default()))
            .map_err(NetError::kernel("list", "links"))?;
        Ok(replies.iter().filter_map(link_of).collect())
    }

    fn get_link(&mut self, msg: LinkMessage) -> io::Result<Option<Link>> {
        match self.get(RouteNetlinkMessage::GetLink(msg)) {
            Ok(replies) => Ok(replies.iter().find_map(link_of)),
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ENODEV as i32) => Ok(None),
            Err(e) => Err(e),
        }
    }

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

    /// Creates a dummy link. Kernels built without `CONFIG_DUMMY` refuse
    /// with `EOPNOTSUPP`.
    ///
    /// Like `ip link add NAME type dummy`; Go: `netlink.LinkAdd(&netlink.Dummy{..})`.
    pub fn add_dummy(&mut self, name: &str) -> Result<Link, NetError> {
        validate_ifname(name)?;
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
        msg.attributes
            .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(
                InfoKind::Dummy,
            )]));
        self.change(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL)
            .map_err(NetError::kernel("create dummy link", format!("{name:?}")))?;
        self.link(name)
    }

    /// The bridge named `name`, created (with `mtu` when given) when there
    /// is none; a link of that name that is not a bridge is an error.
    ///
    /// Go: `ensureBridge` of the reference bridge plugin.
    pub fn ensure_bridge(&mut self, name: &str, mtu: Option<u32>) -> Result<Link, NetError> {
        if let Some(link) = self.link_by_name(name)? {
            if link.kind.as_deref() != Some("bridge") {
                return Err(NetError::Kernel {
                    op: "use",
                    object: format!("{name:?} as a bridge"),
                    source: io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!(
                            "a link of that name exists and is a {}",
                            link.kind.as_deref().unwrap_or("device without a kind")
                        ),
                    ),
                });
            }
            return Ok(link);
        }
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
        if let Some(mtu) = mtu {
            msg.attributes.push(LinkAttribute::Mtu(mtu));
        }
        msg.attributes
            .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(
                InfoKind::Bridge,
            )]));
        match self.change(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL) {
            // Another plugin run created it meanwhile: use it.
            Err(e) if e.raw_os_error() != Some(nix::errno::Errno::EEXIST as i32) => {
                return Err(NetError::kernel("create bridge", format!("{name:?}"))(e))
            }
            _ => {}
        }
        self.link(name)
    }

    /// Makes link `port` a port of the bridge `bridge` (`None`: of no
    /// bridge).
    ///
    /// Like `ip link set PORT master BRIDGE`; Go: `netlink.LinkSetMaster`.
    pub fn set_master(&mut self, port: u32, bridge: Option<u32>) -> Result<(), NetError> {
        let mut msg = link_message(port);
        msg.attributes
            .push(LinkAttribute::Controller(bridge.unwrap_or(0)));
        self.set_link(msg, "set the master of")
    }

    /// Sets hairpin mode of a bridge port (traffic may leave by the port
    /// it came in).
    ///
    /// Like `ip link set PORT type bridge_slave hairpin on`; Go:
    /// `netlink.LinkSetHairpin`.
    pub fn set_hairpin(&mut self, port: u32, on: bool) -> Result<(), NetError> {
        let mut msg = link_message(port);
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::PortKind(InfoPortKind::Bridge),
            LinkInfo::PortData(InfoPortData::BridgePort(vec![InfoBridgePort::HairpinMode(
                on,
            )])),
        ]));
        // Port settings go through RTM_NEWLINK on the existing link.
        let object = self.label(port);
        self.change(RouteNetlinkMessage::NewLink(msg), 0)
            .map_err(NetError::kernel("set hairpin mode of", object))
    }

    /// Whether hairpin mode is on for a bridge port.
    pub fn hairpin(&mut self, port: u32) -> Result<bool, NetError> {
        let msg = link_message(port);
        let replies = self
            .get(RouteNetlinkMessage::GetLink(msg))
            .map_err(NetError::kernel("look up link", format!("#{port}")))?;
        Ok(replies.iter().any(|r| match r {
            RouteNetlinkMessage::NewLink(link) => link.attributes.iter().any(|a| {
                matches!(a, LinkAttribute::LinkInfo(infos) if infos.iter().any(|i| matches!(
                    i,
                    LinkInfo::PortData(InfoPortData::BridgePort(opts))
                        if opts.contains(&InfoBridgePort::HairpinMode(true))
                )))
            }),
            _ => false,
        }))
    }

    /// Renames a link (it must be down).
    ///
    /// Like `ip link set OLD name NEW`; Go: `netlink.LinkSetName`.
    pub fn rename(&mut self, index: u32, name: &str) -> Result<(), NetError> {
        validate_ifname(name)?;
        let mut msg = link_message(index);
        msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
        self.set_link(msg, "rename")
    }

    /// Sets a link up.
    ///
    /// Like `ip link set NAME up`; Go: `netlink.LinkSetUp`.
    pub fn set_up(&mut self, index: u32) -> Result<(), NetError> {
        self.set_flag(index, LinkFlags::Up, true, "set up")
    }

    /// Sets a link down.
    ///
    /// Like `ip link set NAME down`; Go: `netlink.LinkSetDown`.
    pub fn set_down(&mut self, index: u32) -> Result<(), NetError> {
        self.set_flag(index, LinkFlags::Up, false, "set down")
    }

    /// Sets promiscuous mode on or off.
    ///
    /// Like `ip link set NAME promisc on`; Go: `netlink.SetPromiscOn`.
    pub fn set_promisc(&mut self, index: u32, on: bool) -> Result<(), NetError> {
        self.set_flag(index, LinkFlags::Promisc, on, "set promiscuous mode of")
    }

    /// Sets all-multicast mode on or off.
    ///
    /// Like `ip link set NAME allmulticast on`; Go: `netlink.LinkSetAllmulticastOn`.
    pub fn set_allmulti(&mut self, index: u32, on: bool) -> Result<(), NetError> {
        self.set_flag(index, LinkFlags::Allmulti, on, "set all-multicast mode of")
    }

    /// Sets the MTU.
    ///
    /// Like `ip link set NAME mtu N`; Go: `netlink.LinkSetMTU`.
    pub fn set_mtu(&mut self, index: u32, mtu: u32) -> Result<(), NetError> {
        let mut msg = link_message(index);
        msg.attributes.push(LinkAttribute::Mtu(mtu));
        self.set_link(msg, "set the MTU of")
    }

    /// Sets the hardware address.
    ///
    /// Like `ip link set NAME address MAC`; Go: `netlink.LinkSetHardwareAddr`.
    pub fn set_mac(&mut self, index: u32, mac: Mac) -> Result<(), NetError> {
        let mut msg = link_message(index);
        msg.attributes.push(LinkAttribute::Address(mac.0.to_vec()));
        self.set_link(msg, "set the MAC address of")
    }

    /// Deletes a link (both ends, for a veth).
    ///
    /// Like `ip link del NAME`; Go: `netlink.LinkDel`.
    pub fn delete_link(&mut self, index: u32) -> Result<(), NetError> {
        let object = self.label(index);
        self.change(RouteNetlinkMessage::DelLink(link_message(index)), 0)
            .map_err(NetError::kernel("delete", object))
    }

    /// Deletes the link named `name` if there is one; whether there was.
    /// For DEL, where "already gone" is success.
    ///
    /// Go: `ip.DelLinkByName`, ignoring `ip.ErrLinkNotFound`.
    pub fn delete_link_if_present(&mut self, name: &str) -> Result<bool, NetError> {
        let Some(link) = self.link_by_name(name)? else {
            return Ok(false);
        };
        match self.change(RouteNetlinkMessage::DelLink(link_message(link.index)), 0) {
            Ok(()) => Ok(true),
            // Gone meanwhile (its peer's namespace went away).
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ENODEV as i32) => Ok(false),
            Err(e) => Err(NetError::kernel("delete", format!("link {name:?}"))(e)),
        }
    }

    /// Waits until a link is operationally up (a veth is once both ends
    /// are set up), polling for at most `timeout`.
    pub fn wait_until_up(&mut self, index: u32, timeout: Duration) -> Result<Link, NetError> {
        let start = Instant::now();
        let mut delay = Duration::from_micros(200);
        loop {
            let link = self
                .link_by_index(index)?
                .ok_or_else(|| NetError::NoSuchLink(format!("#{index}")))?;
            if link.oper_up {
                return Ok(link);
            }
            if start.elapsed() >= timeout {
                return Err(NetError::Timeout(format!(
                    "link {:?} to come up",
                    link.name
                )));
            }
            std::thread::sleep(delay);
            delay = (delay * 2).min(Duration::from_millis(50));
        }
    }

    fn set_flag(
        &mut self,
        index: u32,
        flag: LinkFlags,
        on: bool,
        op: &'static str,
    ) -> Result<(), NetError> {
        let mut msg = link_message(index);
        msg.header.flags = if on { flag } else { LinkFlags::empty() };
        msg.header.change_mask = flag;
        self.set_link(msg, op)
    }

    fn set_link(&mut self, msg: LinkMessage, op: &'static str) -> Result<(), NetError> {
        let index = msg.header.index;
        match self.change(RouteNetlinkMessage::SetLink(msg), 0) {
            Ok(()) => Ok(()),
            Err(e) => Err(NetError::kernel(op, self.label(index))(e)),
        }
    }

    /// `link "eth0"` when the link can be found, else `link #7`: for
    /// errors, so each names its object.
    pub(crate) fn label(&mut self, index: u32) -> String {
        match self.link_by_index(index) {
            Ok(Some(link)) => format!("link {:?}", link.name),
            _ => format!("link #{index}"),
        }
    }
}

fn link_message(index: u32) -> LinkMessage {
    let mut msg = LinkMessage::default();
    msg.header.index = index;
    msg
}

fn link_of(reply: &RouteNetlinkMessage) -> Option<Link> {
    let RouteNetlinkMessage::NewLink(msg) = reply else {
        return None;
    };
    let flags = msg.header.flags;
    let mut link = Link {
        index: msg.header.index,
        name: String::new(),
        mac: None,
        mtu: 0,
        up: flags.contains(LinkFlags::Up),
        oper_up: false,
        promisc: flags.contains(LinkFlags::Promisc),
        allmulti: flags.contains(LinkFlags::Allmulti),
        master: None,
        kind: None,
    };
    for attr in &msg.attributes {
        match attr {
            LinkAttribute::IfName(n) => link.name = n.clone(),
            LinkAttribute::Address(a) => link.mac = <[u8; 6]>::try_from(&a[..]).ok().map(Mac),
            LinkAttribute::Mtu(m) => link.mtu = *m,
            LinkAttribute::OperState(state) => link.oper_up = *state == State::Up,
            LinkAttribute::Controller(m) => link.master = Some(*m),
            LinkAttribute::LinkInfo(infos) => {
                link.kind = infos.iter().find_map(|i| match i {
                    LinkInfo::Kind(kind) => Some(kind.to_string()),
                    _ => None,
                })
            }
            _ => {}
        }
    }
    Some(link)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_kernel_would_refuse_are_rejected_naming_the_reason() {
        for (name, reason) in [
            ("", "empty"),
            ("sixteen-bytes-xx", "longer than 15 bytes"),
            ("..", "not a name"),
            ("a/b", "contains '/', ':' or whitespace"),
            ("eth0:1", "contains '/', ':' or whitespace"),
            ("e th", "contains '/', ':' or whitespace"),
        ] {
            let err = validate_ifname(name).unwrap_err();
            assert!(
                matches!(&err, NetError::InvalidName { reason: r, .. } if *r == reason),
                "{name:?}: {err}"
            );
        }
        validate_ifname("fifteen-bytes-x").unwrap();
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
