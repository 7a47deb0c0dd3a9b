//! Links made on top of another one (macvlan, ipvlan, vlan: [`Sublink`])
//! and tap devices ([`Tap`]), each like the `ip` command it replaces.
//!
//! A sublink is created from the parent's namespace straight into the
//! container's (`netns`), as the reference plugins do, or inside the
//! container's namespace when the parent is there (`linkInContainer`).
//! A kernel without the kind's module refuses with `EOPNOTSUPP`, which
//! becomes [`NetError::NoKernelSupport`] naming the missing module.

use std::os::fd::{AsFd, AsRawFd};

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::link::{
    InfoData, InfoIpVlan, InfoKind, InfoMacVlan, InfoVlan, LinkAttribute, LinkInfo, LinkMessage,
};
use netlink_packet_route::RouteNetlinkMessage;

use crate::{validate_ifname, LinkKind, Mac, NetError, Netlink, Netns, Op};

mod ipvlan;
mod macvlan;
mod tap;
mod vlan;

pub use ipvlan::{IpvlanMode, UnknownIpvlanMode};
pub use macvlan::{MacvlanMode, UnknownMacvlanMode};
pub use tap::Tap;
pub use vlan::{InvalidVlanId, VlanId};

/// What a [`Sublink`] is, with the settings of its kind.
///
/// Go: `*netlink.Macvlan`, `*netlink.IPVlan`, `*netlink.Vlan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SublinkKind {
    /// `type macvlan mode MODE [bcqueuelen N]`: a link with a MAC of its
    /// own on the parent's wire.
    Macvlan {
        /// How siblings reach each other.
        mode: MacvlanMode,
        /// The length of the queue of broadcast frames waiting for
        /// delivery to the macvlans of the parent (`bcqueuelen`); `None`
        /// leaves the kernel's default (1000).
        bcqueuelen: Option<u32>,
    },
    /// `type ipvlan mode MODE`: a link sharing the parent's MAC.
    Ipvlan {
        /// Where the link meets its parent.
        mode: IpvlanMode,
    },
    /// `type vlan id ID`: the parent's frames tagged with one 802.1Q id.
    Vlan {
        /// The tag.
        id: VlanId,
    },
}

impl SublinkKind {
    /// The kernel's name for the kind (`macvlan`, `ipvlan`, `vlan`).
    pub fn name(&self) -> &'static str {
        match self {
            SublinkKind::Macvlan { .. } => "macvlan",
            SublinkKind::Ipvlan { .. } => "ipvlan",
            SublinkKind::Vlan { .. } => "vlan",
        }
    }

    /// The [`LinkKind`] a link of this kind reports.
    pub fn link_kind(&self) -> LinkKind {
        match self {
            SublinkKind::Macvlan { .. } => LinkKind::Macvlan,
            SublinkKind::Ipvlan { .. } => LinkKind::Ipvlan,
            SublinkKind::Vlan { .. } => LinkKind::Vlan,
        }
    }

    /// The kernel feature it needs, as an error names it when missing.
    fn feature(&self) -> &'static str {
        match self {
            SublinkKind::Macvlan { .. } => "macvlan",
            SublinkKind::Ipvlan { .. } => "ipvlan",
            SublinkKind::Vlan { .. } => "vlan (8021q)",
        }
    }

    fn op(&self) -> Op {
        match self {
            SublinkKind::Macvlan { .. } => Op::CreateMacvlan,
            SublinkKind::Ipvlan { .. } => Op::CreateIpvlan,
            SublinkKind::Vlan { .. } => Op::CreateVlan,
        }
    }

    fn link_info(&self) -> Vec<LinkInfo> {
        let (kind, data) = match *self {
            SublinkKind::Macvlan { mode, bcqueuelen } => {
                let mut data = vec![InfoMacVlan::Mode(mode.to_netlink())];
                data.extend(bcqueuelen.map(InfoMacVlan::BcQueueLen));
                (InfoKind::MacVlan, InfoData::MacVlan(data))
            }
            SublinkKind::Ipvlan { mode } => (
                InfoKind::IpVlan,
                InfoData::IpVlan(vec![InfoIpVlan::Mode(mode.to_netlink())]),
            ),
            SublinkKind::Vlan { id } => {
                (InfoKind::Vlan, InfoData::Vlan(vec![InfoVlan::Id(id.get())]))
            }
        };
        vec![LinkInfo::Kind(kind), LinkInfo::Data(data)]
    }

    /// The kind and settings of a link the kernel reports, when it is a
    /// sublink with settings this crate knows.
    fn of_reply(msg: &LinkMessage) -> Option<SublinkKind> {
        let infos = msg.attributes.iter().find_map(|a| match a {
            LinkAttribute::LinkInfo(infos) => Some(infos),
            _ => None,
        })?;
        infos.iter().find_map(|info| match info {
            LinkInfo::Data(InfoData::MacVlan(data)) => {
                let mode = data.iter().find_map(|d| match d {
                    InfoMacVlan::Mode(m) => MacvlanMode::from_netlink(*m),
                    _ => None,
                })?;
                let bcqueuelen = data.iter().find_map(|d| match d {
                    InfoMacVlan::BcQueueLen(n) => Some(*n),
                    _ => None,
                });
                Some(SublinkKind::Macvlan { mode, bcqueuelen })
            }
            LinkInfo::Data(InfoData::IpVlan(data)) => data.iter().find_map(|d| match d {
                InfoIpVlan::Mode(m) => {
                    IpvlanMode::from_netlink(*m).map(|mode| SublinkKind::Ipvlan { mode })
                }
                _ => None,
            }),
            LinkInfo::Data(InfoData::Vlan(data)) => data.iter().find_map(|d| match d {
                InfoVlan::Id(id) => Some(SublinkKind::Vlan {
                    id: VlanId::from_kernel(*id),
                }),
                _ => None,
            }),
            _ => None,
        })
    }
}

/// A macvlan, ipvlan or vlan link to create on a parent, for
/// [`Netlink::add_sublink`].
#[derive(Debug, Clone, Copy)]
pub struct Sublink<'a> {
    /// The new link's name (in `netns` when given).
    pub name: &'a str,
    /// The parent's index, in the socket's namespace.
    pub parent: u32,
    /// What to create.
    pub kind: SublinkKind,
    /// The namespace to create it in; the socket's own when `None`.
    pub netns: Option<&'a Netns>,
    /// Its MTU; the parent's when `None`.
    pub mtu: Option<u32>,
    /// Its MAC; the kernel's choice (random, or the parent's for ipvlan
    /// and vlan) when `None`.
    pub mac: Option<Mac>,
}

impl Netlink {
    /// Creates a macvlan, ipvlan or vlan link on a parent of this
    /// namespace, down, in `link.netns` (look it up there).
    ///
    /// Like `ip link add link PARENT name NAME [mtu MTU] [address MAC]
    /// [netns NS] type macvlan mode MODE [bcqueuelen N]` (or `type ipvlan
    /// mode MODE`, `type vlan id ID`); Go: `netlink.LinkAdd` with a
    /// `*netlink.Macvlan`, `*netlink.IPVlan` or `*netlink.Vlan`.
    pub fn add_sublink(&mut self, link: &Sublink) -> Result<(), NetError> {
        validate_ifname(link.name)?;
        let mut msg = LinkMessage::default();
        msg.attributes
            .push(LinkAttribute::IfName(link.name.to_owned()));
        msg.attributes.push(LinkAttribute::Link(link.parent));
        if let Some(mtu) = link.mtu {
            msg.attributes.push(LinkAttribute::Mtu(mtu));
        }
        if let Some(mac) = link.mac {
            msg.attributes.push(LinkAttribute::Address(mac.0.to_vec()));
        }
        if let Some(netns) = link.netns {
            msg.attributes
                .push(LinkAttribute::NetNsFd(netns.as_fd().as_raw_fd()));
        }
        msg.attributes
            .push(LinkAttribute::LinkInfo(link.kind.link_info()));
        let object = format!(
            "{} link {:?} on {}",
            link.kind.name(),
            link.name,
            self.label(link.parent)
        );
        self.change(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL)
            .map_err(|source| {
                NetError::for_new_link(link.kind.feature(), link.kind.op(), object, source)
            })
    }

    /// The kind and settings of a macvlan, ipvlan or vlan link; `None`
    /// for a link of another kind.
    ///
    /// Like `ip -d link show NAME`; Go: the fields of `*netlink.Macvlan`,
    /// `*netlink.IPVlan`, `*netlink.Vlan` from `netlink.LinkByName`.
    pub fn sublink_kind(&mut self, index: u32) -> Result<Option<SublinkKind>, NetError> {
        let replies = self
            .get(RouteNetlinkMessage::GetLink(crate::link::without_stats(
                crate::link::link_message(index),
            )))
            .map_err(NetError::kernel(Op::LookUpLink, format!("#{index}")))?;
        Ok(replies.iter().find_map(|r| match r {
            RouteNetlinkMessage::NewLink(msg) => SublinkKind::of_reply(msg),
            _ => None,
        }))
    }
}
