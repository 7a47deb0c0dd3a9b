//! Named sets (nftables only): a rule looks an address up in a set, and
//! elements come and go without touching the rule.

use std::net::IpAddr;

use crate::FilterError;

/// A named set of one key type, in the transaction's table.
///
/// ```
/// use cni_netfilter::{Set, SetKey};
///
/// let set = Set::new("allowed", SetKey::Ipv4Addr);
/// assert_eq!(set.key.as_str(), "ipv4_addr");
/// ```
///
/// Go: `knftables.Set`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Set {
    /// Its name.
    pub name: String,
    /// The type of its elements.
    pub key: SetKey,
}

impl Set {
    /// A set named `name` of `key` elements.
    pub fn new(name: impl Into<String>, key: SetKey) -> Set {
        Set {
            name: name.into(),
            key,
        }
    }
}

/// The type of a set's elements, as nft names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetKey {
    /// `ipv4_addr`.
    Ipv4Addr,
    /// `ipv6_addr`.
    Ipv6Addr,
    /// `inet_service`: a port.
    InetService,
}

impl SetKey {
    /// The name nft gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            SetKey::Ipv4Addr => "ipv4_addr",
            SetKey::Ipv6Addr => "ipv6_addr",
            SetKey::InetService => "inet_service",
        }
    }

    /// nft's datatype number (`TYPE_IPADDR` ..), which `nft list` reads
    /// back to print the type.
    pub(crate) fn datatype(self) -> u32 {
        match self {
            SetKey::Ipv4Addr => 7,
            SetKey::Ipv6Addr => 8,
            SetKey::InetService => 13,
        }
    }

    /// The length of a key in bytes.
    pub(crate) fn len(self) -> u32 {
        match self {
            SetKey::Ipv4Addr => 4,
            SetKey::Ipv6Addr => 16,
            SetKey::InetService => 2,
        }
    }
}

/// One element of a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetElement {
    /// An address, for `ipv4_addr` and `ipv6_addr` sets.
    Addr(IpAddr),
    /// A port, for `inet_service` sets.
    Port(u16),
}

impl SetElement {
    /// The key's bytes, in network order, checked against the set's type.
    pub(crate) fn key_bytes(self, set: &Set) -> Result<Vec<u8>, FilterError> {
        match (self, set.key) {
            (SetElement::Addr(IpAddr::V4(a)), SetKey::Ipv4Addr) => Ok(a.octets().to_vec()),
            (SetElement::Addr(IpAddr::V6(a)), SetKey::Ipv6Addr) => Ok(a.octets().to_vec()),
            (SetElement::Port(p), SetKey::InetService) => Ok(p.to_be_bytes().to_vec()),
            (element, key) => Err(FilterError::invalid(
                "set element",
                format!("{element:?}"),
                format!("set {} holds {}", set.name, key.as_str()),
            )),
        }
    }
}
