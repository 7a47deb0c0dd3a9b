//! Links: find, create (dummy), change and delete them, like `ip link`;
//! veth pairs are in `veth.rs`, bridges in `bridge.rs`.

use std::io;
use std::time::{Duration, Instant};

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::link::{
    InfoKind, LinkAttribute, LinkFlags, LinkInfo, LinkMessage, State,
};
use netlink_packet_route::RouteNetlinkMessage;

use crate::{Mac, NetError, Netlink};

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

/// Checks an MTU a configuration asks for a link: 68 (the least an IPv4
/// link must carry, RFC 791) to 65535 (the largest IP packet), the range
/// the sample `bridge` and `veth` plugins accept.
pub fn validate_mtu(mtu: u32) -> Result<(), NetError> {
    if (68..=65535).contains(&mtu) {
        Ok(())
    } else {
        Err(NetError::InvalidMtu(mtu))
    }
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

    pub(crate) fn set_link(&mut self, msg: LinkMessage, op: &'static str) -> Result<(), NetError> {
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

pub(crate) fn link_message(index: u32) -> LinkMessage {
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
    fn mtus_outside_68_to_65535_are_rejected_naming_the_value() {
        for mtu in [0, 67, 65536] {
            let err = validate_mtu(mtu).unwrap_err();
            assert!(matches!(err, NetError::InvalidMtu(m) if m == mtu), "{err}");
            assert_eq!(
                err.to_string(),
                format!("{mtu}: must be between 68 and 65535")
            );
        }
        for mtu in [68, 1500, 65535] {
            validate_mtu(mtu).unwrap();
        }
    }
}
