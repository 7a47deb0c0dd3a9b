//! Typed IP networks that keep their host part.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An address with a prefix length, such as `10.1.0.5/16`.
///
/// Unlike a pure network type, the host part is kept: a result's
/// `"address": "10.1.0.5/16"` names the interface's address *and* its subnet,
/// and prints back exactly as it came. Parsing follows the reference library
/// (Go's `net.ParseCIDR`): dotted-quad IPv4 without leading zeros, IPv6
/// without a zone, and a decimal prefix no longer than the address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IpNetwork {
    addr: IpAddr,
    prefix: u8,
}

/// Text that is not an `address/prefix`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CIDR address: {0:?}")]
pub struct IpNetworkError(pub String);

impl IpNetwork {
    /// Builds a network from an address and prefix length; `None` when the
    /// prefix is longer than the address.
    pub fn new(addr: IpAddr, prefix: u8) -> Option<IpNetwork> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        (prefix <= max).then_some(IpNetwork { addr, prefix })
    }

    /// The single address `addr` as a network of full length: `ADDR/32`
    /// or `ADDR/128`, as host routes and the reference's rules name it.
    ///
    /// ```
    /// use cni_types::IpNetwork;
    ///
    /// assert_eq!(IpNetwork::host("10.88.0.5".parse().unwrap()).to_string(), "10.88.0.5/32");
    /// assert_eq!(IpNetwork::host("fd00::5".parse().unwrap()).to_string(), "fd00::5/128");
    /// ```
    pub fn host(addr: IpAddr) -> IpNetwork {
        let prefix = if addr.is_ipv4() { 32 } else { 128 };
        IpNetwork { addr, prefix }
    }

    /// Every address of `addr`'s family: `0.0.0.0/0` or `::/0`, the
    /// destination of a default route.
    ///
    /// ```
    /// use cni_types::IpNetwork;
    ///
    /// assert_eq!(IpNetwork::any_of("fd00::5".parse().unwrap()).to_string(), "::/0");
    /// ```
    pub fn any_of(addr: IpAddr) -> IpNetwork {
        let addr = match addr {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        IpNetwork { addr, prefix: 0 }
    }

    /// The subnet this address is in: the host part cleared, the prefix
    /// kept (`10.88.0.5/16` is in `10.88.0.0/16`).
    ///
    /// ```
    /// use cni_types::IpNetwork;
    ///
    /// let address: IpNetwork = "10.88.0.5/16".parse().unwrap();
    /// assert_eq!(address.subnet().to_string(), "10.88.0.0/16");
    /// ```
    pub fn subnet(&self) -> IpNetwork {
        IpNetwork {
            addr: self.network(),
            prefix: self.prefix,
        }
    }

    /// The address, host part included.
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether this is an IPv4 network (an IPv4-mapped IPv6 address counts
    /// as IPv4, as in the reference library).
    pub fn is_ipv4(&self) -> bool {
        is_ipv4(self.addr)
    }

    /// IPv4 or IPv6, as [`IpNetwork::is_ipv4`] tells.
    pub fn family(&self) -> IpFamily {
        IpFamily::of(self.addr)
    }

    /// The network address: the host part cleared.
    pub fn network(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(a) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask))
            }
            IpAddr::V6(a) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask))
            }
        }
    }

    /// Whether `ip` lies inside this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => {
                IpNetwork {
                    addr: ip,
                    prefix: self.prefix,
                }
                .network()
                    == self.network()
            }
            _ => false,
        }
    }
}

/// Whether an address is IPv4 in the reference's sense (Go's `To4() != nil`):
/// IPv4, or IPv4-mapped IPv6.
pub fn is_ipv4(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(_) => true,
        IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some(),
    }
}

/// IPv4 or IPv6: the `version` tag of a 0.3.x/0.4.0 `ips` entry (`"4"` or
/// `"6"`), and what a table, a rule or a set of addresses is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum IpFamily {
    /// `"4"`
    #[serde(rename = "4")]
    V4,
    /// `"6"`
    #[serde(rename = "6")]
    V6,
}

impl IpFamily {
    /// Both, IPv4 first.
    pub const BOTH: [IpFamily; 2] = [IpFamily::V4, IpFamily::V6];

    /// The family of an address; an IPv4-mapped IPv6 address is IPv4, as
    /// [`is_ipv4`] says.
    ///
    /// ```
    /// use cni_types::IpFamily;
    /// assert_eq!(IpFamily::of("::ffff:10.0.0.1".parse().unwrap()), IpFamily::V4);
    /// assert_eq!(IpFamily::of("fd00::1".parse().unwrap()), IpFamily::V6);
    /// ```
    pub fn of(ip: IpAddr) -> IpFamily {
        if is_ipv4(ip) {
            IpFamily::V4
        } else {
            IpFamily::V6
        }
    }

    /// The network of all addresses of the family: `0.0.0.0/0` or `::/0`.
    pub fn any(self) -> IpNetwork {
        let addr = match self {
            IpFamily::V4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpFamily::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        };
        IpNetwork { addr, prefix: 0 }
    }
}

impl fmt::Display for IpFamily {
    /// `IPv4` or `IPv6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IpFamily::V4 => "IPv4",
            IpFamily::V6 => "IPv6",
        })
    }
}

impl FromStr for IpNetwork {
    type Err = IpNetworkError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || IpNetworkError(s.to_owned());
        let (addr, prefix) = s.split_once('/').ok_or_else(err)?;
        // Rust's parsers already reject zones and IPv4 leading zeros; the
        // prefix must be plain digits (u8's parser would take a `+`).
        if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        let addr: IpAddr = addr.parse().map_err(|_| err())?;
        IpNetwork::new(addr, prefix.parse().map_err(|_| err())?).ok_or_else(err)
    }
}

impl fmt::Display for IpNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match IpText::network(self) {
            Some(text) => f.write_str(text.as_str()),
            None => write!(f, "{}/{}", self.addr, self.prefix),
        }
    }
}

impl serde::Serialize for IpNetwork {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match IpText::network(self) {
            Some(text) => s.serialize_str(text.as_str()),
            None => s.collect_str(self),
        }
    }
}

/// An address or network as text, formatted on the stack. Every result
/// prints its addresses, and through `collect_str` serde_json escapes each
/// fragment a formatter writes separately: addresses were half the cost of
/// printing a result that way.
struct IpText {
    buf: [u8; IpText::CAPACITY],
    len: usize,
}

impl IpText {
    /// The longest text: a full IPv6 address (39 characters), `/` and 3
    /// digits.
    const CAPACITY: usize = 43;

    /// `addr/prefix`; `None` only if it did not fit, which cannot happen.
    fn network(n: &IpNetwork) -> Option<IpText> {
        let mut text = IpText::addr(n.addr)?;
        text.push(b"/")?;
        text.push_decimal(n.prefix)?;
        Some(text)
    }

    /// An address as `Display` writes it: IPv4 digits by hand, IPv6 by
    /// the standard library (its zero compression is the one we print).
    fn addr(addr: IpAddr) -> Option<IpText> {
        let mut text = IpText {
            buf: [0; IpText::CAPACITY],
            len: 0,
        };
        match addr {
            IpAddr::V4(v4) => {
                let [a, b, c, d] = v4.octets();
                text.push_decimal(a)?;
                for octet in [b, c, d] {
                    text.push(b".")?;
                    text.push_decimal(octet)?;
                }
            }
            IpAddr::V6(v6) => fmt::Write::write_fmt(&mut text, format_args!("{v6}")).ok()?,
        }
        Some(text)
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(self.buf.get(..self.len).unwrap_or_default()).unwrap_or_default()
    }

    fn push(&mut self, bytes: &[u8]) -> Option<()> {
        let end = self.len + bytes.len();
        self.buf.get_mut(self.len..end)?.copy_from_slice(bytes);
        self.len = end;
        Some(())
    }

    fn push_decimal(&mut self, n: u8) -> Option<()> {
        let digits = [b'0' + n / 100, b'0' + n / 10 % 10, b'0' + n % 10];
        let skip = if n >= 100 {
            0
        } else if n >= 10 {
            1
        } else {
            2
        };
        self.push(&digits[skip..])
    }
}

impl fmt::Write for IpText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push(s.as_bytes()).ok_or(fmt::Error)
    }
}

impl<'de> serde::Deserialize<'de> for IpNetwork {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Serde for optional IP addresses: absent, `null` and `""` all mean none,
/// as the reference's `net.IP` decoding treats them.
pub(crate) mod opt_ip_serde {
    use std::net::IpAddr;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(ip: &Option<IpAddr>, s: S) -> Result<S::Ok, S::Error> {
        match ip {
            Some(ip) => match super::IpText::addr(*ip) {
                Some(text) => s.serialize_str(text.as_str()),
                None => s.collect_str(ip),
            },
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<IpAddr>, D::Error> {
        match Option::<std::borrow::Cow<'de, str>>::deserialize(d)? {
            None => Ok(None),
            Some(s) if s.is_empty() => Ok(None),
            Some(s) => s
                .parse()
                .map(Some)
                .map_err(|_| serde::de::Error::custom(format_args!("invalid IP address: {s:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_part_is_kept_on_round_trip() {
        for s in [
            "10.1.0.5/16",
            "0.0.0.0/0",
            "2001:db8::5/64",
            "::/0",
            "192.168.1.1/32",
            "fe80::1/128",
        ] {
            assert_eq!(s.parse::<IpNetwork>().unwrap().to_string(), s);
        }
        let n: IpNetwork = "10.1.0.5/16".parse().unwrap();
        assert_eq!(n.network().to_string(), "10.1.0.0");
        assert!(n.contains("10.1.255.1".parse().unwrap()));
        assert!(!n.contains("10.2.0.1".parse().unwrap()));
    }

    #[test]
    fn addresses_print_as_the_standard_library_prints_them() {
        let mut addrs: Vec<IpAddr> = (0..=255u8)
            .map(|n| IpAddr::from([n, 255 - n, n / 10, 100 + n % 100]))
            .collect();
        for v6 in [
            "::",
            "::1",
            "2001:db8::5",
            "fe80::1:0:0:1",
            "1:0:0:2::3",
            "::ffff:10.1.0.5",
            "::10.1.0.5",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "1:2:3:4:5:6:7:8",
        ] {
            addrs.push(v6.parse().unwrap());
        }
        for addr in addrs {
            assert_eq!(IpText::addr(addr).unwrap().as_str(), addr.to_string());
            for prefix in [0, 8, 32] {
                let net = IpNetwork::new(addr, prefix).unwrap();
                let expected = format!("{addr}/{prefix}");
                assert_eq!(net.to_string(), expected);
                assert_eq!(
                    serde_json::to_string(&net).unwrap(),
                    format!("{expected:?}")
                );
            }
        }
        let widest = IpNetwork::new(
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff".parse().unwrap(),
            128,
        );
        assert_eq!(widest.unwrap().to_string().len(), IpText::CAPACITY);
    }

    #[test]
    fn malformed_networks_are_rejected_naming_the_value() {
        for bad in [
            "10.1.0.5",
            "10.1.0.5/33",
            "10.1.0.5/",
            "10.1.0.5/+8",
            "10.1.0.5/-1",
            "010.1.0.5/8",
            "fe80::1%eth0/64",
            "2001:db8::/129",
            "/8",
            "x/8",
            "10.1.0.5/8/8",
            " 10.1.0.5/8",
        ] {
            let err = bad.parse::<IpNetwork>().unwrap_err();
            assert!(err.to_string().contains(&format!("{bad:?}")), "{bad}");
        }
    }

    #[test]
    fn ipv4_mapped_ipv6_counts_as_ipv4_like_the_reference() {
        let n: IpNetwork = "::ffff:10.0.0.1/120".parse().unwrap();
        assert!(n.is_ipv4());
        assert!(!"2001:db8::1/64".parse::<IpNetwork>().unwrap().is_ipv4());
    }
}
