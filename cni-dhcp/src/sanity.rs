//! Whether what a server offers makes sense as a container's address:
//! the client refuses an offer (and declines an acknowledged lease) that
//! would give the container an address no host may hold, or routes that
//! cannot work.
//!
//! The reference takes whatever the server sends: `0.0.0.0`, a mask of
//! `0.0.0.0` (every IPv4 destination on-link) and a router off the subnet
//! all end up in its result. This is a departure, listed in the crate's
//! "Where we deliberately differ".

use std::net::Ipv4Addr;

use crate::message::{code, Message};

/// Why the lease in `m` (an OFFER or an ACK) is refused, or `None` when
/// it makes sense: an address that is unspecified, broadcast, loopback,
/// multicast or class E (reserved); a subnet mask (option 1) that is zero
/// or not contiguous; an address that is its subnet's network or
/// broadcast address (on subnets of 30 bits or shorter); a router (first
/// of option 3) outside the subnet.
///
/// ```
/// use cni_dhcp::message::{code, Message, MessageType};
/// let mut offer = Message::client(MessageType::Offer, 1, [0; 6]);
/// offer.yiaddr = "10.1.2.0".parse().unwrap();
/// offer.set_option(code::SUBNET_MASK, vec![255, 255, 255, 0]);
/// let why = cni_dhcp::sanity::refusal(&offer).unwrap();
/// assert_eq!(why, "10.1.2.0, the network address of 10.1.2.0/24");
/// ```
pub fn refusal(m: &Message) -> Option<String> {
    let a = m.yiaddr;
    let kind = if a.is_unspecified() {
        Some("the unspecified address")
    } else if a.is_broadcast() {
        Some("the broadcast address")
    } else if a.is_loopback() {
        Some("a loopback address")
    } else if a.is_multicast() {
        Some("a multicast address")
    } else if a.octets()[0] >= 240 {
        Some("a reserved (class E) address")
    } else {
        None
    };
    if let Some(kind) = kind {
        return Some(format!("{a}, {kind}"));
    }
    let mask = m.ipv4_option(code::SUBNET_MASK)?;
    let bits = u32::from(mask);
    if bits == 0 {
        return Some(format!("{a} with a subnet mask of {mask}"));
    }
    if bits.leading_ones() + bits.trailing_zeros() != 32 {
        return Some(format!("{a} with a non-contiguous subnet mask {mask}"));
    }
    let prefix = bits.leading_ones();
    let network = Ipv4Addr::from(u32::from(a) & bits);
    let broadcast = Ipv4Addr::from(u32::from(a) | !bits);
    if prefix <= 30 && a == network {
        return Some(format!("{a}, the network address of {network}/{prefix}"));
    }
    if prefix <= 30 && a == broadcast {
        return Some(format!("{a}, the broadcast address of {network}/{prefix}"));
    }
    let router = m.ipv4_option(code::ROUTER)?;
    if u32::from(router) & bits != u32::from(network) {
        return Some(format!("{a}/{prefix} with a router outside it, {router}"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::MessageType;

    fn offer(address: &str, mask: Option<[u8; 4]>, router: Option<[u8; 4]>) -> Message {
        let mut m = Message::client(MessageType::Offer, 1, [0; 6]);
        m.yiaddr = address.parse().unwrap();
        if let Some(mask) = mask {
            m.set_option(code::SUBNET_MASK, mask.to_vec());
        }
        if let Some(router) = router {
            m.set_option(code::ROUTER, router.to_vec());
        }
        m
    }

    #[test]
    fn addresses_no_host_may_hold_are_refused_naming_why() {
        let mask = Some([255, 255, 255, 0]);
        for (address, mask, router, why) in [
            ("0.0.0.0", mask, None, "unspecified"),
            ("255.255.255.255", mask, None, "the broadcast address"),
            ("127.0.0.1", mask, None, "loopback"),
            ("224.0.0.1", mask, None, "multicast"),
            ("240.0.0.5", mask, None, "class E"),
            ("10.1.2.3", Some([0, 0, 0, 0]), None, "mask of 0.0.0.0"),
            ("10.1.2.3", Some([255, 0, 255, 0]), None, "non-contiguous"),
            ("10.1.2.0", mask, None, "network address of 10.1.2.0/24"),
            ("10.1.2.255", mask, None, "broadcast address of 10.1.2.0/24"),
            (
                "10.1.2.3",
                mask,
                Some([10, 9, 0, 1]),
                "router outside it, 10.9.0.1",
            ),
        ] {
            let refused = refusal(&offer(address, mask, router));
            let refused = refused.unwrap_or_else(|| panic!("{address} accepted"));
            assert!(refused.contains(why), "{address}: {refused}");
        }
    }

    #[test]
    fn a_sound_lease_and_point_to_point_subnets_are_accepted() {
        let mask = Some([255, 255, 255, 0]);
        assert_eq!(refusal(&offer("10.1.2.3", mask, Some([10, 1, 2, 1]))), None);
        assert_eq!(refusal(&offer("10.1.2.3", None, None)), None);
        // RFC 3021: both addresses of a /31 are hosts.
        let p2p = Some([255, 255, 255, 254]);
        assert_eq!(refusal(&offer("10.1.2.2", p2p, None)), None);
        assert_eq!(refusal(&offer("10.1.2.3", Some([255; 4]), None)), None);
    }
}
