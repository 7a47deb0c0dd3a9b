//! Connection tracking entries removed over netlink (`NETLINK_NETFILTER`,
//! subsystem ctnetlink), as `conntrack -D -p udp --orig-port-dst N` does:
//! a new DNAT rule is bypassed by the entries of flows that started
//! before it, so portmap removes them.

use std::io;

use crate::nft::nla::{self, Attrs};
use crate::nft::socket::NftSocket;
use crate::{Family, FilterError, Protocol};

/// `NFNL_SUBSYS_CTNETLINK`.
const SUBSYS_CTNETLINK: u16 = 1;
/// `IPCTNL_MSG_CT_GET`.
const MSG_CT_GET: u16 = 1;
/// `IPCTNL_MSG_CT_DELETE`.
const MSG_CT_DELETE: u16 = 2;
/// `CTA_TUPLE_ORIG`: the original direction's tuple.
const CTA_TUPLE_ORIG: u16 = 1;
/// `CTA_ZONE`: the entry's zone, part of what identifies it.
const CTA_ZONE: u16 = 18;
/// `CTA_TUPLE_PROTO` inside a tuple.
const CTA_TUPLE_PROTO: u16 = 2;
/// `CTA_PROTO_NUM`, `CTA_PROTO_DST_PORT` inside the protocol part.
const CTA_PROTO_NUM: u16 = 1;
const CTA_PROTO_DST_PORT: u16 = 3;
/// The most entries one call deletes: a bound on what a busy table makes
/// us hold. A host with more flows to one port than this has them
/// removed over several ADDs.
pub const MAX_DELETIONS: usize = 1 << 16;
/// The most a dump of the table may bring: about four million entries,
/// far above `nf_conntrack_max` on any node; only matching entries are
/// kept, so this bounds the time spent reading, not memory.
const MAX_DUMP_BYTES: usize = 1 << 30;

/// Deletes the connection tracking entries of `family` (IPv4 or IPv6)
/// whose original direction is `protocol` to destination port `port`, in
/// the calling thread's network namespace; answers how many went.
///
/// The whole table is dumped and filtered here, as the reference does
/// (the kernel's own dump filter is missing before Linux 5.11); the
/// matching entries are then deleted by their original tuple and zone,
/// one request each. An entry that expired in between is not an error.
/// At most [`MAX_DELETIONS`] entries go per call.
///
/// ```no_run
/// use cni_netfilter::{conntrack, Family, Protocol};
///
/// // Stale UDP flows to host port 5353 no longer bypass a new DNAT rule.
/// let removed = conntrack::delete_by_destination_port(Family::Ip, Protocol::Udp, 5353)?;
/// # Ok::<(), cni_netfilter::FilterError>(())
/// ```
///
/// Go: plugins `utils.DeleteConntrackEntriesForDstPort` (through
/// vishvananda/netlink's `ConntrackDeleteFilters`).
pub fn delete_by_destination_port(
    family: Family,
    protocol: Protocol,
    port: u16,
) -> Result<usize, FilterError> {
    let af = match family {
        Family::Ip => libc_af::INET,
        Family::Ip6 => libc_af::INET6,
        Family::Inet | Family::Bridge => {
            return Err(FilterError::invalid(
                "conntrack family",
                family.as_str(),
                "must be ip or ip6",
            ))
        }
    };
    let what = format!(
        "conntrack entries {family} {} dport {port}",
        protocol.as_str()
    );
    let kernel = |op: &'static str| {
        let what = what.clone();
        move |source: io::Error| FilterError::Kernel {
            op,
            object: what,
            source,
        }
    };
    let mut socket = NftSocket::open().map_err(kernel("open a socket for"))?;
    let doomed = socket
        .dump_of(
            message_type(MSG_CT_GET),
            af,
            &[],
            MAX_DUMP_BYTES,
            |found: &mut Vec<Entry>, payload| {
                // After the nfgenmsg.
                let attrs = nla::parse(payload.get(4..).unwrap_or_default())?;
                let get = |k| attrs.iter().find(|(kind, _)| *kind == k).map(|(_, v)| *v);
                let wanted = |tuple: &&[u8]| tuple_matches(tuple, protocol.number(), port);
                if let Some(tuple) = get(CTA_TUPLE_ORIG).filter(wanted) {
                    if found.len() < MAX_DELETIONS {
                        found.push(Entry {
                            tuple: tuple.to_vec(),
                            zone: get(CTA_ZONE).map(<[u8]>::to_vec),
                        });
                    }
                }
                Ok(())
            },
        )
        .map_err(|e| e.into_filter("list", || what.clone()))?;
    let mut deleted = 0;
    for entry in &doomed {
        match socket.acknowledged(message_type(MSG_CT_DELETE), af, &entry.attributes()) {
            Ok(()) => deleted += 1,
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ENOENT as i32) => {}
            Err(e) => return Err(kernel("delete")(e)),
        }
    }
    Ok(deleted)
}

/// A ctnetlink message type: the subsystem in the high byte.
fn message_type(message: u16) -> u16 {
    (SUBSYS_CTNETLINK << 8) | message
}

/// Address family numbers of `nfgenmsg`.
mod libc_af {
    pub(super) const INET: u8 = 2;
    pub(super) const INET6: u8 = 10;
}

/// What deletes one entry: its original tuple's attribute bytes and its
/// zone, as the kernel listed them.
struct Entry {
    tuple: Vec<u8>,
    zone: Option<Vec<u8>>,
}

impl Entry {
    /// The attributes of the request that deletes it.
    fn attributes(&self) -> Vec<u8> {
        let mut attrs = Attrs::default();
        attrs.nested(CTA_TUPLE_ORIG, |inner| {
            inner.buf.extend_from_slice(&self.tuple)
        });
        if let Some(zone) = &self.zone {
            attrs.bytes(CTA_ZONE, zone);
        }
        attrs.buf
    }
}

/// Whether an original tuple (the content of `CTA_TUPLE_ORIG`) has this
/// protocol number and destination port.
fn tuple_matches(tuple: &[u8], protocol: u8, port: u16) -> bool {
    let Ok(parts) = nla::parse(tuple) else {
        return false;
    };
    let Some((_, proto)) = parts.iter().find(|(kind, _)| *kind == CTA_TUPLE_PROTO) else {
        return false;
    };
    let Ok(fields) = nla::parse(proto) else {
        return false;
    };
    let field = |kind| fields.iter().find(|(k, _)| *k == kind).map(|(_, v)| *v);
    field(CTA_PROTO_NUM) == Some(&[protocol][..])
        && field(CTA_PROTO_DST_PORT) == Some(&port.to_be_bytes()[..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(protocol: u8, port: u16) -> Vec<u8> {
        let mut attrs = Attrs::default();
        attrs.nested(1, |ip| ip.bytes(2, &[10, 0, 0, 1]));
        attrs.nested(CTA_TUPLE_PROTO, |p| {
            p.bytes(CTA_PROTO_NUM, &[protocol]);
            p.bytes(2, &1234u16.to_be_bytes());
            p.bytes(CTA_PROTO_DST_PORT, &port.to_be_bytes());
        });
        attrs.buf
    }

    #[test]
    fn only_tuples_of_the_protocol_and_destination_port_match() {
        assert!(tuple_matches(&tuple(17, 5353), 17, 5353));
        assert!(!tuple_matches(&tuple(6, 5353), 17, 5353));
        assert!(!tuple_matches(&tuple(17, 5354), 17, 5353));
        // The source port (1234) is not the destination port.
        assert!(!tuple_matches(&tuple(17, 5353), 17, 1234));
        assert!(!tuple_matches(&[1, 2, 3], 17, 5353));
    }
}
