//! Addresses: add, list, delete, wait for IPv6 ones to settle, like
//! `ip addr`.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use cni_types::{IpFamily, IpNetwork};
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::address::{AddressAttribute, AddressFlags, AddressMessage, AddressScope};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::{NetError, Netlink, Op};

/// An address on a link, as the kernel reports it.
///
/// Go: `netlink.Addr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Address {
    /// The link's index.
    pub index: u32,
    /// The address with its prefix length (`10.1.0.2/24`).
    pub network: IpNetwork,
    /// IPv6: duplicate address detection is still running; the address
    /// cannot be used yet.
    pub tentative: bool,
    /// IPv6: duplicate address detection found the address in use.
    pub dad_failed: bool,
}

/// Whether IPv6 duplicate address detection runs for a new address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dad {
    /// The kernel's default: the address is tentative for about a second,
    /// then usable (see [`Netlink::settle_addresses`]).
    Run,
    /// `nodad`: usable at once. Fine where no other host can hold the
    /// address, such as the container end of a veth pair.
    Skip,
}

/// Go's `net.IP.IsGlobalUnicast`: not unspecified, loopback, multicast,
/// link-local or the IPv4 broadcast address.
pub(crate) fn is_global_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_multicast()
                || v4.is_link_local()
                || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || v6.is_unicast_link_local())
        }
    }
}

pub(crate) fn family(ip: IpAddr) -> AddressFamily {
    if ip.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    }
}

impl Netlink {
    /// Adds an address to a link; one already there is an error naming
    /// it (`EEXIST`).
    ///
    /// Like `ip addr add ADDRESS dev NAME`; Go: `netlink.AddrAdd`.
    pub fn add_address(
        &mut self,
        index: u32,
        network: IpNetwork,
        dad: Dad,
    ) -> Result<(), NetError> {
        let mut msg = address_message(index, network);
        if network.addr().is_ipv6() && dad == Dad::Skip {
            msg.attributes
                .push(AddressAttribute::Flags(AddressFlags::Nodad));
        }
        match self.change(
            RouteNetlinkMessage::NewAddress(msg),
            NLM_F_CREATE | NLM_F_EXCL,
        ) {
            Ok(()) => Ok(()),
            Err(e) => {
                let object = format!("{network} to {}", self.label(index));
                Err(NetError::kernel(Op::AddAddress, object)(e))
            }
        }
    }

    /// Removes an address from a link.
    ///
    /// Like `ip addr del ADDRESS dev NAME`; Go: `netlink.AddrDel`.
    pub fn delete_address(&mut self, index: u32, network: IpNetwork) -> Result<(), NetError> {
        let msg = address_message(index, network);
        match self.change(RouteNetlinkMessage::DelAddress(msg), 0) {
            Ok(()) => Ok(()),
            Err(e) => {
                let object = format!("{network} from {}", self.label(index));
                Err(NetError::kernel(Op::DeleteAddress, object)(e))
            }
        }
    }

    /// The addresses on link `index` (all links' when `None`), both
    /// families.
    ///
    /// Go: `netlink.AddrList`.
    pub fn addresses(&mut self, index: Option<u32>) -> Result<Vec<Address>, NetError> {
        let replies = self
            .dump(RouteNetlinkMessage::GetAddress(AddressMessage::default()))
            .map_err(NetError::kernel(Op::List, "addresses"))?;
        Ok(replies
            .iter()
            .filter_map(address_of)
            .filter(|a| index.is_none_or(|i| a.index == i))
            .collect())
    }

    /// The addresses of one family on link `index` (all links' when
    /// `None`). The kernel dumps only that family: on a node whose bridge
    /// has a hundred ports, the IPv4 question no longer reads every
    /// port's IPv6 link-local address.
    ///
    /// Like `ip -4 addr show`; Go: `netlink.AddrList(link, FAMILY_V4)`.
    pub fn family_addresses(
        &mut self,
        family: IpFamily,
        index: Option<u32>,
    ) -> Result<Vec<Address>, NetError> {
        let mut msg = AddressMessage::default();
        msg.header.family = match family {
            IpFamily::V4 => AddressFamily::Inet,
            IpFamily::V6 => AddressFamily::Inet6,
        };
        let replies = self
            .dump(RouteNetlinkMessage::GetAddress(msg))
            .map_err(NetError::kernel(Op::List, format!("{family} addresses")))?;
        Ok(replies
            .iter()
            .filter_map(address_of)
            .filter(|a| a.network.family() == family && index.is_none_or(|i| a.index == i))
            .collect())
    }

    /// Waits until no IPv6 address of link `index` is tentative, for at
    /// most `timeout`; an address whose duplicate address detection
    /// failed is an error naming it.
    ///
    /// Go: `ip.SettleAddresses`.
    pub fn settle_addresses(&mut self, index: u32, timeout: Duration) -> Result<(), NetError> {
        let start = Instant::now();
        loop {
            let addresses = self.addresses(Some(index))?;
            if let Some(failed) = addresses.iter().find(|a| a.dad_failed) {
                return Err(NetError::Kernel {
                    op: Op::UseAddress,
                    object: format!("{} on {}", failed.network, self.label(index)),
                    source: std::io::Error::new(
                        std::io::ErrorKind::AddrInUse,
                        "duplicate address detection failed",
                    ),
                });
            }
            let Some(tentative) = addresses.iter().find(|a| a.tentative) else {
                return Ok(());
            };
            if start.elapsed() >= timeout {
                return Err(NetError::Timeout(format!(
                    "address {} on {} to leave tentative state",
                    tentative.network,
                    self.label(index)
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn address_message(index: u32, network: IpNetwork) -> AddressMessage {
    let mut msg = AddressMessage::default();
    msg.header.family = family(network.addr());
    msg.header.prefix_len = network.prefix();
    msg.header.index = index;
    msg.header.scope = AddressScope::Universe;
    msg.attributes.push(AddressAttribute::Local(network.addr()));
    msg.attributes
        .push(AddressAttribute::Address(network.addr()));
    msg
}

fn address_of(reply: &RouteNetlinkMessage) -> Option<Address> {
    let RouteNetlinkMessage::NewAddress(msg) = reply else {
        return None;
    };
    // IFA_FLAGS (32 bits) when present, else the header's 8 bits.
    let flags = msg
        .attributes
        .iter()
        .find_map(|a| match a {
            AddressAttribute::Flags(f) => Some(*f),
            _ => None,
        })
        .unwrap_or_else(|| AddressFlags::from_bits_retain(u32::from(msg.header.flags.bits())));
    // IFA_LOCAL is the address itself on point-to-point links, where
    // IFA_ADDRESS is the peer's.
    let ip = msg
        .attributes
        .iter()
        .find_map(|a| match a {
            AddressAttribute::Local(ip) => Some(*ip),
            _ => None,
        })
        .or_else(|| {
            msg.attributes.iter().find_map(|a| match a {
                AddressAttribute::Address(ip) => Some(*ip),
                _ => None,
            })
        })?;
    Some(Address {
        index: msg.header.index,
        network: IpNetwork::new(ip, msg.header.prefix_len)?,
        tentative: flags.contains(AddressFlags::Tentative),
        dad_failed: flags.contains(AddressFlags::Dadfailed),
    })
}
