//! Links: find (by [`LinkId`]), create (dummy, ifb), change and delete them,
//! like `ip link`; veth pairs are in `veth.rs`, bridges in `bridge.rs`,
//! names and MTUs are checked in `validate.rs`.

use std::io;
use std::time::{Duration, Instant};

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::link::{
    InfoKind, LinkAttribute, LinkExtentMask, LinkFlags, LinkInfo, LinkMessage, State,
};
use netlink_packet_route::RouteNetlinkMessage;

use crate::ifreq::IfReq;
use crate::{validate_ifname, LinkKind, Mac, NetError, Netlink, Op};

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
    /// The link's kind, when it has one (a physical device or `lo` has
    /// none).
    pub kind: Option<LinkKind>,
    /// The link this one is tied to (`IFLA_LINK`): a veth end's peer, whose
    /// index is in the peer's namespace (see [`Link::veth_peer`]), or the
    /// parent of a vlan or macvlan.
    pub parent: Option<u32>,
}

impl Link {
    /// The index of a veth end's peer, in the peer's namespace: how to
    /// find the host end of a pair from inside the container.
    ///
    /// Go: `ip.GetVethPeerIfindex` (plugins `pkg/ip`).
    pub fn veth_peer(&self) -> Option<u32> {
        self.parent.filter(|_| self.kind == Some(LinkKind::Veth))
    }

    /// The link as a result's interface on the host: its name and MAC
    /// (as text, `aa:bb:..`; empty when it has none).
    ///
    /// ```no_run
    /// let bridge = cni_net::Netlink::open()?.link("cni0")?;
    /// let mut result = cni_types::Result100::new(cni_types::SpecVersion::V1_0_0);
    /// result.interfaces.push(bridge.interface());
    /// # Ok::<(), cni_net::NetError>(())
    /// ```
    pub fn interface(&self) -> cni_types::Interface {
        cni_types::Interface {
            mac: self.mac_text(),
            ..cni_types::Interface::named(self.name.clone())
        }
    }

    /// The link's MAC as a result writes it (`0a:58:..`), empty when it
    /// has none.
    pub fn mac_text(&self) -> String {
        self.mac.map(|m| m.to_string()).unwrap_or_default()
    }

    /// The link as a result's interface in a container: name, MAC and
    /// `sandbox` (the container's namespace path, `CNI_NETNS`).
    pub fn interface_in(&self, sandbox: impl Into<String>) -> cni_types::Interface {
        cni_types::Interface {
            sandbox: sandbox.into(),
            ..self.interface()
        }
    }
}

/// How to name a link: by index or by name.
///
/// Each lookup takes one (`nl.link("eth0")`, `nl.link(7)`,
/// `nl.find_link(&name)`). Its `Display` is how errors name the link:
/// `"eth0"` or `#7`.
///
/// Go: the `LinkByName` / `LinkByIndex` pair (vishvananda/netlink).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LinkId {
    /// The interface index, unique within its namespace.
    Index(u32),
    /// The interface name.
    Name(String),
}

impl From<u32> for LinkId {
    fn from(index: u32) -> LinkId {
        LinkId::Index(index)
    }
}

impl From<&str> for LinkId {
    fn from(name: &str) -> LinkId {
        LinkId::Name(name.to_owned())
    }
}

impl From<&String> for LinkId {
    fn from(name: &String) -> LinkId {
        LinkId::Name(name.clone())
    }
}

impl From<String> for LinkId {
    fn from(name: String) -> LinkId {
        LinkId::Name(name)
    }
}

impl std::fmt::Display for LinkId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkId::Index(index) => write!(f, "#{index}"),
            LinkId::Name(name) => write!(f, "{name:?}"),
        }
    }
}

/// The name of the link with index `index` in the calling thread's
/// network namespace, as `if_indextoname(3)` reads it: an `SIOCGIFNAME`
/// ioctl, which the kernel answers under RCU, without the link lock
/// (RTNL) every [`Netlink::link`] request takes; during a burst of pods
/// that lock is where link work queues (bench/process/burst.sh).
/// [`NetError::NoSuchLink`] when there is none.
///
/// Like `ip -o link show` printing a name for an index; Go:
/// `net.InterfaceByIndex`.
///
/// ```no_run
/// // The interface the host routes a container's address through.
/// let mut host = cni_net::Netlink::open()?;
/// if let Some(index) = host.route_to("10.88.0.2".parse()?)? {
///     println!("{}", cni_net::link_name(index)?);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn link_name(index: u32) -> Result<String, NetError> {
    use nix::errno::Errno;
    // nix 0.29 takes the C function's NULL for a name, the empty one (its
    // sentinel for pointers is -1): a link's name is never empty, so an
    // empty one is the failure, with its errno.
    let errno = match nix::net::if_::if_indextoname(index) {
        Ok(name) if !name.is_empty() => return Ok(name.to_string_lossy().into_owned()),
        Ok(_) => Errno::last(),
        Err(e) => e,
    };
    match errno {
        Errno::ENXIO | Errno::ENODEV => Err(NetError::NoSuchLink(LinkId::Index(index))),
        e => Err(NetError::Kernel {
            op: Op::LookUpLink,
            object: format!("link #{index}"),
            source: e.into(),
        }),
    }
}

nix::ioctl_readwrite_bad!(get_hw_addr, nix::libc::SIOCGIFHWADDR, IfReq);

/// The MAC address the link named `name` has now, in the calling thread's
/// network namespace (`None` for a link without an Ethernet address):
/// an `SIOCGIFHWADDR` ioctl, which the kernel answers without the link
/// lock (RTNL) every [`Netlink::link`] request takes.
/// [`NetError::NoSuchLink`] naming it when there is none.
///
/// Like `cat /sys/class/net/NAME/address` in the namespace; Go:
/// `net.InterfaceByName(NAME).HardwareAddr`.
///
/// ```no_run
/// // A bridge's MAC follows its lowest port's until set: read it again.
/// let mac = cni_net::link_mac("cni0")?;
/// # Ok::<(), cni_net::NetError>(())
/// ```
pub fn link_mac(name: &str) -> Result<Option<Mac>, NetError> {
    use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
    use std::os::fd::AsRawFd;
    validate_ifname(name)?;
    let failed = |e: nix::errno::Errno| match e {
        nix::errno::Errno::ENODEV => NetError::NoSuchLink(LinkId::Name(name.to_owned())),
        e => NetError::Kernel {
            op: Op::LookUpLink,
            object: format!("link {name:?}"),
            source: e.into(),
        },
    };
    // Any socket of this namespace takes the ioctl (as if_indextoname's).
    let fd = socket(
        AddressFamily::Unix,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(failed)?;
    let mut req = IfReq::named(name);
    // SAFETY: `req` is a live `struct ifreq` of the kernel's size, with
    // a NUL-terminated name (at most 15 bytes, validated above).
    #[allow(unsafe_code)]
    let answered = unsafe { get_hw_addr(fd.as_raw_fd(), &mut req) };
    answered.map_err(failed)?;
    // The union holds a `struct sockaddr`: its family, then its data.
    let [f0, f1, data @ ..] = req.union;
    if u16::from_ne_bytes([f0, f1]) != nix::libc::ARPHRD_ETHER {
        return Ok(None);
    }
    let mut mac = [0u8; 6];
    mac.copy_from_slice(&data[..6]);
    Ok(Some(Mac(mac)))
}

impl Netlink {
    /// The link `id` names; [`NetError::NoSuchLink`] naming it when there
    /// is none.
    ///
    /// Like `ip link show NAME`; Go: `netlink.LinkByName`,
    /// `netlink.LinkByIndex`.
    pub fn link(&mut self, id: impl Into<LinkId>) -> Result<Link, NetError> {
        let id = id.into();
        match self.find_link(id.clone())? {
            Some(link) => Ok(link),
            None => Err(NetError::NoSuchLink(id)),
        }
    }

    /// The link `id` names, if there is one (a name the kernel would
    /// refuse is [`NetError::InvalidName`]).
    pub fn find_link(&mut self, id: impl Into<LinkId>) -> Result<Option<Link>, NetError> {
        let id = id.into();
        let mut msg = LinkMessage::default();
        match &id {
            LinkId::Index(index) => msg.header.index = *index,
            LinkId::Name(name) => {
                validate_ifname(name)?;
                msg.attributes.push(LinkAttribute::IfName(name.clone()));
            }
        }
        self.get_link(without_stats(msg))
            .map_err(NetError::kernel(Op::LookUpLink, id))
    }

    /// All links of the namespace.
    ///
    /// Go: `netlink.LinkList`.
    pub fn links(&mut self) -> Result<Vec<Link>, NetError> {
        let replies = self
            .dump(RouteNetlinkMessage::GetLink(without_stats(
                LinkMessage::default(),
            )))
            .map_err(NetError::kernel(Op::List, "links"))?;
        Ok(replies.iter().filter_map(link_of).collect())
    }

    fn get_link(&mut self, msg: LinkMessage) -> io::Result<Option<Link>> {
        match self.get(RouteNetlinkMessage::GetLink(msg)) {
            Ok(replies) => Ok(replies.iter().find_map(link_of)),
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ENODEV as i32) => Ok(None),
            Err(e) => Err(e),
        }
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
            .map_err(|e| {
                NetError::for_new_link("dummy", Op::CreateDummy, format!("{name:?}"), e)
            })?;
        self.link(name)
    }

    /// Creates an ifb link (see [`LinkKind::Ifb`]), up, with `mtu` and a
    /// transmit queue length of 0, as the reference bandwidth plugin
    /// creates it (its comment: a length other than 0 awaits fixes to the
    /// ifb's queue counts upstream).
    ///
    /// Like `ip link add NAME mtu MTU txqueuelen 0 up type ifb`; Go:
    /// `netlink.LinkAdd(&netlink.Ifb{..})`.
    pub fn add_ifb(&mut self, name: &str, mtu: u32) -> Result<Link, NetError> {
        validate_ifname(name)?;
        let mut msg = LinkMessage::default();
        msg.header.flags = LinkFlags::Up;
        msg.header.change_mask = LinkFlags::Up;
        msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
        msg.attributes.push(LinkAttribute::Mtu(mtu));
        msg.attributes.push(LinkAttribute::TxQueueLen(0));
        msg.attributes
            .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(InfoKind::Ifb)]));
        self.change(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL)
            .map_err(NetError::kernel(Op::CreateIfb, format!("{name:?}")))?;
        self.link(name)
    }

    /// Renames a link (it must be down).
    ///
    /// Like `ip link set OLD name NEW`; Go: `netlink.LinkSetName`.
    pub fn rename(&mut self, index: u32, name: &str) -> Result<(), NetError> {
        validate_ifname(name)?;
        let mut msg = link_message(index);
        msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
        self.set_link(msg, Op::Rename)
    }

    /// Sets a link up.
    ///
    /// Like `ip link set NAME up`; Go: `netlink.LinkSetUp`.
    pub fn set_up(&mut self, index: u32) -> Result<(), NetError> {
        self.set_flag(index, LinkFlags::Up, true, Op::SetUp)
    }

    /// Sets a link down.
    ///
    /// Like `ip link set NAME down`; Go: `netlink.LinkSetDown`.
    pub fn set_down(&mut self, index: u32) -> Result<(), NetError> {
        self.set_flag(index, LinkFlags::Up, false, Op::SetDown)
    }

    /// Sets promiscuous mode on or off.
    ///
    /// Like `ip link set NAME promisc on`; Go: `netlink.SetPromiscOn`.
    pub fn set_promisc(&mut self, index: u32, on: bool) -> Result<(), NetError> {
        self.set_flag(index, LinkFlags::Promisc, on, Op::SetPromisc)
    }

    /// Sets all-multicast mode on or off.
    ///
    /// Like `ip link set NAME allmulticast on`; Go: `netlink.LinkSetAllmulticastOn`.
    pub fn set_allmulti(&mut self, index: u32, on: bool) -> Result<(), NetError> {
        self.set_flag(index, LinkFlags::Allmulti, on, Op::SetAllmulti)
    }

    /// Sets the MTU.
    ///
    /// Like `ip link set NAME mtu N`; Go: `netlink.LinkSetMTU`.
    pub fn set_mtu(&mut self, index: u32, mtu: u32) -> Result<(), NetError> {
        let mut msg = link_message(index);
        msg.attributes.push(LinkAttribute::Mtu(mtu));
        self.set_link(msg, Op::SetMtu)
    }

    /// Sets the hardware address.
    ///
    /// Like `ip link set NAME address MAC`; Go: `netlink.LinkSetHardwareAddr`.
    pub fn set_mac(&mut self, index: u32, mac: Mac) -> Result<(), NetError> {
        let mut msg = link_message(index);
        msg.attributes.push(LinkAttribute::Address(mac.0.to_vec()));
        self.set_link(msg, Op::SetMac)
    }

    /// Deletes a link (both ends, for a veth).
    ///
    /// Like `ip link del NAME`; Go: `netlink.LinkDel`.
    pub fn delete_link(&mut self, index: u32) -> Result<(), NetError> {
        let object = self.label(index);
        self.change(RouteNetlinkMessage::DelLink(link_message(index)), 0)
            .map_err(NetError::kernel(Op::DeleteLink, object))
    }

    /// Deletes the link `id` names if there is one; whether there was.
    /// For DEL, where "already gone" is success.
    ///
    /// Like `ip link del NAME`; Go: `ip.DelLinkByName`, ignoring
    /// `ip.ErrLinkNotFound`.
    pub fn delete_link_if_present(&mut self, id: impl Into<LinkId>) -> Result<bool, NetError> {
        let Some(link) = self.find_link(id)? else {
            return Ok(false);
        };
        match self.delete_link(link.index) {
            Ok(()) => Ok(true),
            // Gone meanwhile (its peer's namespace went away).
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes the link `id` names if there is one and returns the
    /// addresses it had that are global unicast (what a plugin set up
    /// masquerading for); none when there was no link. For DEL.
    ///
    /// Like `ip addr show dev NAME` then `ip link del NAME`; Go:
    /// `ip.DelLinkByNameAddr`, ignoring `ip.ErrLinkNotFound`.
    pub fn delete_link_returning_addresses(
        &mut self,
        id: impl Into<LinkId>,
    ) -> Result<Vec<cni_types::IpNetwork>, NetError> {
        let Some(link) = self.find_link(id)? else {
            return Ok(Vec::new());
        };
        let addresses = self.addresses(Some(link.index))?;
        match self.delete_link(link.index) {
            Err(e) if e.is_not_found() => return Ok(Vec::new()),
            other => other?,
        }
        Ok(addresses
            .into_iter()
            .map(|a| a.network)
            .filter(|n| crate::addr::is_global_unicast(n.addr()))
            .collect())
    }

    /// Waits until a link is operationally up (a veth is once both ends
    /// are set up), polling for at most `timeout`.
    pub fn wait_until_up(&mut self, index: u32, timeout: Duration) -> Result<Link, NetError> {
        let start = Instant::now();
        let mut delay = Duration::from_micros(200);
        loop {
            let link = self.link(index)?;
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

    fn set_flag(&mut self, index: u32, flag: LinkFlags, on: bool, op: Op) -> Result<(), NetError> {
        let mut msg = link_message(index);
        msg.header.flags = if on { flag } else { LinkFlags::empty() };
        msg.header.change_mask = flag;
        self.set_link(msg, op)
    }

    pub(crate) fn set_link(&mut self, msg: LinkMessage, op: Op) -> Result<(), NetError> {
        let index = msg.header.index;
        match self.change(RouteNetlinkMessage::SetLink(msg), 0) {
            Ok(()) => Ok(()),
            Err(e) => Err(NetError::kernel(op, self.label(index))(e)),
        }
    }

    /// `link "eth0"` when the link can be found, else `link #7`: for
    /// errors, so each names its object.
    pub(crate) fn label(&mut self, index: u32) -> String {
        match self.find_link(index) {
            Ok(Some(link)) => format!("link {:?}", link.name),
            _ => format!("link #{index}"),
        }
    }
}

pub(crate) fn link_message(index: u32) -> LinkMessage {
    let mut msg = LinkMessage::default();
    msg.header.index = index;
    msg
}

/// `msg` as a request for links that asks the kernel to leave out their
/// statistics (`IFLA_EXT_MASK` `RTEXT_FILTER_SKIP_STATS`: the link's
/// counters and IPv6's), which [`Link`] and its readers never use.
///
/// Why: link lookups were 14 % of the bridge plugin's CPU samples in a
/// burst of 100 Podman pods (perf), and the counters are a fifth of a
/// veth's answer (1,888 bytes with them, 1,520 without), each filled by
/// the kernel and parsed by netlink-packet-route. Go's
/// `netlink.LinkByName` asks for `RTEXT_FILTER_VF` instead.
pub(crate) fn without_stats(mut msg: LinkMessage) -> LinkMessage {
    msg.attributes
        .push(LinkAttribute::ExtMask(vec![LinkExtentMask::SkipStats]));
    msg
}

pub(crate) fn link_of(reply: &RouteNetlinkMessage) -> Option<Link> {
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
        parent: None,
    };
    for attr in &msg.attributes {
        match attr {
            LinkAttribute::IfName(n) => link.name = n.clone(),
            LinkAttribute::Address(a) => link.mac = <[u8; 6]>::try_from(&a[..]).ok().map(Mac),
            LinkAttribute::Mtu(m) => link.mtu = *m,
            LinkAttribute::OperState(state) => link.oper_up = *state == State::Up,
            LinkAttribute::Controller(m) => link.master = Some(*m),
            LinkAttribute::Link(parent) => link.parent = Some(*parent),
            LinkAttribute::LinkInfo(infos) => {
                link.kind = infos.iter().find_map(|i| match i {
                    LinkInfo::Kind(kind) => Some(LinkKind::from(kind)),
                    _ => None,
                })
            }
            _ => {}
        }
    }
    Some(link)
}
