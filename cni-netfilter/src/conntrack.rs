//! Connection tracking entries removed over netlink (`NETLINK_NETFILTER`,
//! subsystem ctnetlink), as `conntrack -D -p udp --orig-port-dst N` does:
//! a new DNAT rule is bypassed by the entries of flows that started
//! before it, so portmap removes them.

use std::io;

use netlink_sys::{protocols::NETLINK_NETFILTER, Socket, SocketAddr};
use nix::sys::socket::MsgFlags;

use crate::nft::nla::{self, Attrs};
use crate::nft::socket::{split, Reply};
use crate::{Family, FilterError, Protocol};

/// `NFNL_SUBSYS_CTNETLINK`.
const SUBSYS_CTNETLINK: u16 = 1;
/// `IPCTNL_MSG_CT_GET`.
const MSG_CT_GET: u16 = 1;
/// `IPCTNL_MSG_CT_DELETE`.
const MSG_CT_DELETE: u16 = 2;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
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
/// The largest datagram the kernel sends a dump in.
const RECEIVE_BUFFER: usize = 64 * 1024;

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
    let mut socket = CtSocket::open().map_err(kernel("open a socket for"))?;
    let doomed = socket
        .matching(af, |tuple| tuple_matches(tuple, protocol.number(), port))
        .map_err(kernel("list"))?;
    let mut deleted = 0;
    for entry in &doomed {
        match socket.delete(af, entry) {
            Ok(()) => deleted += 1,
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ENOENT as i32) => {}
            Err(e) => return Err(kernel("delete")(e)),
        }
    }
    Ok(deleted)
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

/// A ctnetlink socket in the namespace it was opened in.
struct CtSocket {
    socket: Socket,
    seq: u32,
    buffer: Vec<u8>,
}

impl CtSocket {
    fn open() -> io::Result<CtSocket> {
        let mut socket = Socket::new(NETLINK_NETFILTER)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        // Every wait for the kernel has a deadline, as the nf_tables
        // socket's (a lost answer is an error, not a hang).
        let deadline = crate::nft::socket::RECEIVE_DEADLINE;
        let deadline = nix::sys::time::TimeVal::new(deadline.as_secs() as i64, 0);
        nix::sys::socket::setsockopt(
            &socket,
            nix::sys::socket::sockopt::ReceiveTimeout,
            &deadline,
        )
        .map_err(io::Error::from)?;
        Ok(CtSocket {
            socket,
            seq: std::process::id().wrapping_mul(1 << 12),
            buffer: Vec::with_capacity(RECEIVE_BUFFER),
        })
    }

    fn send(&mut self, kind: u16, flags: u16, af: u8, attrs: &[u8]) -> io::Result<u32> {
        self.seq = self.seq.wrapping_add(1);
        let mut msg = Vec::with_capacity(20 + attrs.len());
        msg.extend_from_slice(&((20 + attrs.len()) as u32).to_ne_bytes());
        msg.extend_from_slice(&((SUBSYS_CTNETLINK << 8) | kind).to_ne_bytes());
        msg.extend_from_slice(&flags.to_ne_bytes());
        msg.extend_from_slice(&self.seq.to_ne_bytes());
        msg.extend_from_slice(&0u32.to_ne_bytes());
        // nfgenmsg: family, version 0, resource id 0.
        msg.extend_from_slice(&[af, 0, 0, 0]);
        msg.extend_from_slice(attrs);
        self.socket.send(&msg, 0)?;
        Ok(self.seq)
    }

    /// Dumps the table and keeps the entries whose original tuple `wanted`
    /// accepts (at most [`MAX_DELETIONS`]); nothing else is held.
    fn matching(&mut self, af: u8, wanted: impl Fn(&[u8]) -> bool) -> io::Result<Vec<Entry>> {
        let seq = self.send(MSG_CT_GET, NLM_F_REQUEST | NLM_F_DUMP, af, &[])?;
        let mut found = Vec::new();
        loop {
            for reply in self.receive()? {
                if reply.seq != seq {
                    continue;
                }
                let payload = reply.payload;
                match reply.kind {
                    NLMSG_DONE => return Ok(found),
                    NLMSG_ERROR => {
                        return match error_code(&payload)? {
                            0 => Ok(found),
                            errno => Err(io::Error::from_raw_os_error(errno)),
                        }
                    }
                    _ => {}
                }
                // After the nfgenmsg.
                let attrs =
                    nla::parse(payload.get(4..).unwrap_or_default()).map_err(io::Error::other)?;
                let get = |k| attrs.iter().find(|(kind, _)| *kind == k).map(|(_, v)| *v);
                if let Some(tuple) = get(CTA_TUPLE_ORIG).filter(|t| wanted(t)) {
                    if found.len() < MAX_DELETIONS {
                        found.push(Entry {
                            tuple: tuple.to_vec(),
                            zone: get(CTA_ZONE).map(<[u8]>::to_vec),
                        });
                    }
                }
            }
        }
    }

    fn delete(&mut self, af: u8, entry: &Entry) -> io::Result<()> {
        let mut attrs = Attrs::default();
        attrs.nested(CTA_TUPLE_ORIG, |inner| {
            inner.buf.extend_from_slice(&entry.tuple)
        });
        if let Some(zone) = &entry.zone {
            attrs.bytes(CTA_ZONE, zone);
        }
        let seq = self.send(MSG_CT_DELETE, NLM_F_REQUEST | NLM_F_ACK, af, &attrs.buf)?;
        loop {
            for reply in self.receive()? {
                if reply.seq == seq && reply.kind == NLMSG_ERROR {
                    return match error_code(&reply.payload)? {
                        0 => Ok(()),
                        errno => Err(io::Error::from_raw_os_error(errno)),
                    };
                }
            }
        }
    }

    /// One datagram's messages.
    fn receive(&mut self) -> io::Result<Vec<Reply>> {
        self.buffer.clear();
        let flags = MsgFlags::MSG_TRUNC.bits();
        let len = self.socket.recv(&mut self.buffer, flags)?;
        if len > self.buffer.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a netlink datagram of {len} bytes exceeds the receive buffer"),
            ));
        }
        split(&self.buffer).map_err(io::Error::other)
    }
}

/// The errno of an `NLMSG_ERROR` payload (0 for an acknowledgement).
fn error_code(payload: &[u8]) -> io::Result<i32> {
    crate::nft::socket::error_code(payload).map_err(io::Error::other)
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

    #[test]
    fn a_truncated_reply_is_an_error_not_a_panic() {
        assert!(error_code(&[0]).is_err());
    }
}
