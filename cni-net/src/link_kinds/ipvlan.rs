//! The mode of an ipvlan link: at which layer it shares its parent.

use std::fmt;
use std::str::FromStr;

use netlink_packet_route::link::IpVlanMode;

/// Where an ipvlan link meets its parent (`ip link add ... type ipvlan
/// mode MODE`).
///
/// ```
/// use cni_net::IpvlanMode;
///
/// assert_eq!("l3s".parse::<IpvlanMode>(), Ok(IpvlanMode::L3s));
/// assert_eq!(IpvlanMode::default().as_str(), "l2");
/// assert!("l4".parse::<IpvlanMode>().is_err());
/// ```
///
/// Go: `netlink.IPVlanMode`; the names are the reference ipvlan
/// plugin's (`modeFromString`), where an empty mode is `l2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IpvlanMode {
    /// Layer 2: the link takes part in ARP/NDP on the parent's network.
    #[default]
    L2,
    /// Layer 3: the parent routes for the link; no broadcast or multicast.
    L3,
    /// Layer 3 with the host's netfilter (conntrack) on the way.
    L3s,
}

/// A mode name that is none of [`IpvlanMode`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown ipvlan mode {0:?}: expected l2, l3 or l3s")]
pub struct UnknownIpvlanMode(pub String);

impl IpvlanMode {
    /// The name `ip link` and the configuration's `mode` use.
    pub fn as_str(self) -> &'static str {
        match self {
            IpvlanMode::L2 => "l2",
            IpvlanMode::L3 => "l3",
            IpvlanMode::L3s => "l3s",
        }
    }

    pub(crate) fn to_netlink(self) -> IpVlanMode {
        match self {
            IpvlanMode::L2 => IpVlanMode::L2,
            IpvlanMode::L3 => IpVlanMode::L3,
            IpvlanMode::L3s => IpVlanMode::L3S,
        }
    }

    pub(crate) fn from_netlink(mode: IpVlanMode) -> Option<IpvlanMode> {
        match mode {
            IpVlanMode::L2 => Some(IpvlanMode::L2),
            IpVlanMode::L3 => Some(IpvlanMode::L3),
            IpVlanMode::L3S => Some(IpvlanMode::L3s),
            _ => None,
        }
    }
}

impl fmt::Display for IpvlanMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for IpvlanMode {
    type Err = UnknownIpvlanMode;

    /// `l2`, `l3` or `l3s`; the empty name is `l2`, as in the reference.
    fn from_str(name: &str) -> Result<IpvlanMode, UnknownIpvlanMode> {
        match name {
            "" | "l2" => Ok(IpvlanMode::L2),
            "l3" => Ok(IpvlanMode::L3),
            "l3s" => Ok(IpvlanMode::L3s),
            other => Err(UnknownIpvlanMode(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_round_trips_through_its_name_and_the_kernel_value() {
        for mode in [IpvlanMode::L2, IpvlanMode::L3, IpvlanMode::L3s] {
            assert_eq!(mode.as_str().parse(), Ok(mode));
            assert_eq!(IpvlanMode::from_netlink(mode.to_netlink()), Some(mode));
        }
        assert_eq!("".parse(), Ok(IpvlanMode::L2));
        assert!("L2".parse::<IpvlanMode>().is_err());
    }
}
