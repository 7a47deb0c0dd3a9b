//! The kind of a link, as `ip -d link` shows it (`veth`, `bridge`, `ifb`).

use std::fmt;
use std::str::FromStr;

use netlink_packet_route::link::InfoKind;

/// What a link is: the kernel's `IFLA_INFO_KIND`, typed for the kinds
/// this crate creates, with [`LinkKind::Other`] for the rest.
///
/// Carried by [`Link::kind`](crate::Link::kind), so CHECK compares kinds
/// rather than strings:
///
/// ```
/// use cni_net::LinkKind;
///
/// assert_eq!("bridge".parse::<LinkKind>(), Ok(LinkKind::Bridge));
/// assert_eq!(LinkKind::Veth.as_str(), "veth");
/// assert_eq!("vxlan".parse::<LinkKind>(), Ok(LinkKind::Other("vxlan".into())));
/// ```
///
/// Go: the concrete types of `netlink.Link` (`*netlink.Veth`,
/// `*netlink.Bridge`, `*netlink.Dummy`, ...) and `Link.Type()`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LinkKind {
    /// One end of a veth pair (`ip link add type veth`).
    Veth,
    /// A software bridge (`ip link add type bridge`).
    Bridge,
    /// A dummy link (`ip link add type dummy`).
    Dummy,
    /// An intermediate functional block (`ip link add type ifb`): traffic
    /// redirected to it by a tc action goes through its qdiscs and then
    /// back where it came from; how a plugin shapes what a link receives.
    Ifb,
    /// A link with a MAC of its own on a parent's wire (`ip link add
    /// link PARENT type macvlan`).
    Macvlan,
    /// A link sharing its parent's MAC (`ip link add link PARENT type
    /// ipvlan`).
    Ipvlan,
    /// An 802.1Q tagged link on a parent (`ip link add link PARENT type
    /// vlan`).
    Vlan,
    /// A tun or tap device (`ip tuntap add`): its other side is a file a
    /// process (a VMM) holds open.
    Tun,
    /// Any other kind, by the kernel's name for it (`vxlan`, `bond`).
    Other(String),
}

impl LinkKind {
    /// The kernel's name for the kind, as `ip link add type NAME` takes it.
    pub fn as_str(&self) -> &str {
        match self {
            LinkKind::Veth => "veth",
            LinkKind::Bridge => "bridge",
            LinkKind::Dummy => "dummy",
            LinkKind::Ifb => "ifb",
            LinkKind::Macvlan => "macvlan",
            LinkKind::Ipvlan => "ipvlan",
            LinkKind::Vlan => "vlan",
            LinkKind::Tun => "tun",
            LinkKind::Other(name) => name,
        }
    }
}

impl fmt::Display for LinkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LinkKind {
    type Err = std::convert::Infallible;

    /// Any name: the known ones become their variant, the rest
    /// [`LinkKind::Other`].
    fn from_str(name: &str) -> Result<LinkKind, Self::Err> {
        Ok(match name {
            "veth" => LinkKind::Veth,
            "bridge" => LinkKind::Bridge,
            "dummy" => LinkKind::Dummy,
            "ifb" => LinkKind::Ifb,
            "macvlan" => LinkKind::Macvlan,
            "ipvlan" => LinkKind::Ipvlan,
            "vlan" => LinkKind::Vlan,
            "tun" => LinkKind::Tun,
            other => LinkKind::Other(other.to_owned()),
        })
    }
}

impl From<&InfoKind> for LinkKind {
    fn from(kind: &InfoKind) -> LinkKind {
        match kind {
            InfoKind::Veth => LinkKind::Veth,
            InfoKind::Bridge => LinkKind::Bridge,
            InfoKind::Dummy => LinkKind::Dummy,
            InfoKind::Ifb => LinkKind::Ifb,
            InfoKind::MacVlan => LinkKind::Macvlan,
            InfoKind::IpVlan => LinkKind::Ipvlan,
            InfoKind::Vlan => LinkKind::Vlan,
            InfoKind::Tun => LinkKind::Tun,
            other => LinkKind::Other(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_read_from_the_kernel_keep_their_name() {
        for kind in [
            InfoKind::Veth,
            InfoKind::Bridge,
            InfoKind::Dummy,
            InfoKind::Ifb,
            InfoKind::MacVlan,
            InfoKind::IpVlan,
            InfoKind::Vlan,
            InfoKind::Tun,
            InfoKind::Vxlan,
        ] {
            let typed = LinkKind::from(&kind);
            assert_eq!(typed.as_str(), kind.to_string());
            assert_eq!(typed.as_str().parse::<LinkKind>(), Ok(typed.clone()));
        }
    }
}
