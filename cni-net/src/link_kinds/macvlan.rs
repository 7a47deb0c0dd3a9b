//! The mode of a macvlan link: how its siblings on one parent reach each
//! other.

use std::fmt;
use std::str::FromStr;

use netlink_packet_route::link::MacVlanMode;

/// How a macvlan link's frames travel between it and its siblings on
/// the same parent (`ip link add ... type macvlan mode MODE`).
///
/// ```
/// use cni_net::MacvlanMode;
///
/// assert_eq!("vepa".parse::<MacvlanMode>(), Ok(MacvlanMode::Vepa));
/// assert_eq!(MacvlanMode::default().as_str(), "bridge");
/// assert!("source".parse::<MacvlanMode>().is_err());
/// ```
///
/// Go: `netlink.MacvlanMode`; the names are the reference macvlan
/// plugin's (`modeFromString`), where an empty mode is `bridge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MacvlanMode {
    /// Siblings reach each other directly, inside the kernel.
    #[default]
    Bridge,
    /// Siblings cannot reach each other at all.
    Private,
    /// Frames between siblings go out to the switch and back (802.1Qbg).
    Vepa,
    /// The one macvlan takes over the parent (its MAC, promiscuity).
    Passthru,
}

/// A mode name that is none of [`MacvlanMode`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown macvlan mode {0:?}: expected bridge, private, vepa or passthru")]
pub struct UnknownMacvlanMode(pub String);

impl MacvlanMode {
    /// The name `ip link` and the configuration's `mode` use.
    pub fn as_str(self) -> &'static str {
        match self {
            MacvlanMode::Bridge => "bridge",
            MacvlanMode::Private => "private",
            MacvlanMode::Vepa => "vepa",
            MacvlanMode::Passthru => "passthru",
        }
    }

    pub(crate) fn to_netlink(self) -> MacVlanMode {
        match self {
            MacvlanMode::Bridge => MacVlanMode::Bridge,
            MacvlanMode::Private => MacVlanMode::Private,
            MacvlanMode::Vepa => MacVlanMode::Vepa,
            MacvlanMode::Passthru => MacVlanMode::Passthrough,
        }
    }

    /// The mode of a link the kernel reports; `None` for `source` and
    /// modes this crate does not create.
    pub(crate) fn from_netlink(mode: MacVlanMode) -> Option<MacvlanMode> {
        match mode {
            MacVlanMode::Bridge => Some(MacvlanMode::Bridge),
            MacVlanMode::Private => Some(MacvlanMode::Private),
            MacVlanMode::Vepa => Some(MacvlanMode::Vepa),
            MacVlanMode::Passthrough => Some(MacvlanMode::Passthru),
            _ => None,
        }
    }
}

impl fmt::Display for MacvlanMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MacvlanMode {
    type Err = UnknownMacvlanMode;

    /// `bridge`, `private`, `vepa` or `passthru`; the empty name is
    /// `bridge`, as in the reference.
    fn from_str(name: &str) -> Result<MacvlanMode, UnknownMacvlanMode> {
        match name {
            "" | "bridge" => Ok(MacvlanMode::Bridge),
            "private" => Ok(MacvlanMode::Private),
            "vepa" => Ok(MacvlanMode::Vepa),
            "passthru" => Ok(MacvlanMode::Passthru),
            other => Err(UnknownMacvlanMode(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_round_trips_through_its_name_and_the_kernel_value() {
        use MacvlanMode::*;
        for mode in [Bridge, Private, Vepa, Passthru] {
            assert_eq!(mode.as_str().parse(), Ok(mode));
            assert_eq!(MacvlanMode::from_netlink(mode.to_netlink()), Some(mode));
        }
        assert_eq!("".parse(), Ok(Bridge));
        let err = "Bridge".parse::<MacvlanMode>().unwrap_err();
        assert!(err.to_string().contains("\"Bridge\""), "{err}");
    }
}
