//! The NETLINK_NETFILTER socket: batches sent and acknowledged, dumps read
//! whole and bounded.

use std::io;

use netlink_sys::{protocols::NETLINK_NETFILTER, Socket, SocketAddr};
use nix::sys::socket::MsgFlags;

use super::message::{encode, nfproto, Batch, Kind, NLM_F_DUMP, NLM_F_REQUEST};
use super::nla::{self, malformed, Attrs};
use crate::{Family, FilterError};

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// The kernel's flag on a dump that a concurrent change interrupted.
const NLM_F_DUMP_INTR: u16 = 0x10;
/// How often an interrupted dump is read again before giving up, as the
/// reference's `netlinksafe` does for rtnetlink.
const DUMP_ATTEMPTS: usize = 10;
/// The most a dump may bring: far above any CNI host's ruleset, and a
/// bound on what a misbehaving peer makes us hold.
const MAX_DUMP_BYTES: usize = 64 << 20;
/// The largest datagram the kernel sends (a dump fills at most 32 KiB).
const RECEIVE_BUFFER: usize = 64 * 1024;

/// A message the kernel sent: its header fields and payload (after the
/// `nfgenmsg` for nf_tables messages, the error code for errors).
pub(crate) struct Reply {
    pub(crate) kind: u16,
    pub(crate) flags: u16,
    pub(crate) seq: u32,
    pub(crate) payload: Vec<u8>,
}

/// Where a batch failed: which request (0 is the begin message) and the
/// errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) index: usize,
    pub(crate) errno: i32,
}

/// A netlink socket of the netfilter family, bound to the network
/// namespace it was opened in.
pub(crate) struct NftSocket {
    socket: Socket,
    seq: u32,
    buffer: Vec<u8>,
}

impl NftSocket {
    /// A socket in the calling thread's network namespace.
    pub(crate) fn open() -> io::Result<NftSocket> {
        let mut socket = Socket::new(NETLINK_NETFILTER)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        // Error replies then carry the request's header, not all of it.
        let _ = socket.set_cap_ack(true);
        Ok(NftSocket {
            socket,
            seq: std::process::id().wrapping_mul(1 << 12),
            buffer: Vec::with_capacity(RECEIVE_BUFFER),
        })
    }

    /// Sequence numbers for `n` messages.
    pub(crate) fn reserve(&mut self, n: usize) -> u32 {
        let first = self.seq.wrapping_add(1);
        self.seq = self.seq.wrapping_add(n as u32 + 1);
        first
    }

    /// Sends a batch and reads every acknowledgement: `Ok(None)` when the
    /// kernel accepted every request, else the first refusal. The kernel
    /// handles a batch inside `send`, so its answers are all queued when
    /// it returns; they are read without waiting.
    pub(crate) fn send_batch(&mut self, batch: &Batch) -> Result<Option<Refusal>, FilterError> {
        let os = |e: io::Error| FilterError::Kernel {
            op: "send",
            object: "an nf_tables batch".into(),
            source: e,
        };
        self.socket.send(&batch.bytes, 0).map_err(os)?;
        let expected = batch.described.len();
        let mut answered = 0;
        let mut refusal: Option<Refusal> = None;
        while answered < expected {
            let replies = match self.receive(MsgFlags::MSG_DONTWAIT) {
                Ok(replies) => replies,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(os(e)),
            };
            for reply in replies.iter().filter(|r| r.kind == NLMSG_ERROR) {
                let index = reply.seq.wrapping_sub(batch.begin) as usize;
                if index > expected {
                    continue;
                }
                answered += usize::from(index > 0);
                let errno = error_code(&reply.payload)?;
                if errno != 0 && refusal.is_none_or(|r| index < r.index) {
                    refusal = Some(Refusal { index, errno });
                }
            }
        }
        if answered < expected && refusal.is_none() {
            return Err(malformed(format!(
                "it acknowledged {answered} of the {expected} requests of a batch"
            )));
        }
        Ok(refusal)
    }

    /// A dump: every reply's payload after the `nfgenmsg`, read again
    /// while a concurrent change interrupts it.
    pub(crate) fn dump(
        &mut self,
        kind: Kind,
        family: Family,
        attrs: &Attrs,
    ) -> Result<Vec<Vec<u8>>, io::Error> {
        for _ in 0..DUMP_ATTEMPTS {
            let seq = self.reserve(0);
            let mut request = Vec::new();
            let flags = NLM_F_REQUEST | NLM_F_DUMP;
            encode(
                &mut request,
                kind.message_type(),
                flags,
                seq,
                nfproto(family),
                0,
                &attrs.buf,
            );
            self.socket.send(&request, 0)?;
            let (payloads, interrupted) = self.collect(seq)?;
            if !interrupted {
                return Ok(payloads);
            }
        }
        Err(io::Error::from_raw_os_error(
            nix::errno::Errno::EINTR as i32,
        ))
    }

    /// The ruleset generation (`NFT_MSG_GETGEN`), which a batch can be
    /// tied to.
    pub(crate) fn generation(&mut self) -> Result<u32, io::Error> {
        let seq = self.reserve(0);
        let mut request = Vec::new();
        encode(
            &mut request,
            Kind::GetGen.message_type(),
            NLM_F_REQUEST,
            seq,
            0,
            0,
            &[],
        );
        self.socket.send(&request, 0)?;
        loop {
            for reply in self.receive(MsgFlags::empty())? {
                if reply.seq != seq {
                    continue;
                }
                if reply.kind == NLMSG_ERROR {
                    let errno = error_code(&reply.payload).map_err(io::Error::other)?;
                    return Err(io::Error::from_raw_os_error(errno));
                }
                let attrs = nla::parse(&reply.payload).map_err(io::Error::other)?;
                let id = attrs.iter().find(|(kind, _)| *kind == 1);
                let id = id.map(|(_, v)| nla::number(v)).transpose();
                return match id.map_err(io::Error::other)? {
                    Some(id) => Ok(id as u32),
                    None => Err(io::Error::other("the generation reply has no id")),
                };
            }
        }
    }

    /// The replies of one dump, until its end.
    fn collect(&mut self, seq: u32) -> Result<(Vec<Vec<u8>>, bool), io::Error> {
        let mut payloads = Vec::new();
        let mut total = 0;
        let mut interrupted = false;
        loop {
            for reply in self.receive(MsgFlags::empty())? {
                if reply.seq != seq {
                    continue;
                }
                interrupted |= reply.flags & NLM_F_DUMP_INTR != 0;
                match reply.kind {
                    NLMSG_DONE => return Ok((payloads, interrupted)),
                    NLMSG_ERROR => {
                        let errno = error_code(&reply.payload).map_err(io::Error::other)?;
                        if errno == 0 {
                            return Ok((payloads, interrupted));
                        }
                        return Err(io::Error::from_raw_os_error(errno));
                    }
                    _ => {
                        total += reply.payload.len();
                        if total > MAX_DUMP_BYTES {
                            return Err(io::Error::other(format!(
                                "a dump of more than {MAX_DUMP_BYTES} bytes"
                            )));
                        }
                        payloads.push(reply.payload);
                    }
                }
            }
        }
    }

    /// One datagram, split into messages.
    fn receive(&mut self, flags: MsgFlags) -> Result<Vec<Reply>, io::Error> {
        self.buffer.clear();
        let flags = flags | MsgFlags::MSG_TRUNC;
        let len = self.socket.recv(&mut self.buffer, flags.bits())?;
        if len > self.buffer.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a netlink datagram of {len} bytes exceeds the receive buffer"),
            ));
        }
        split(&self.buffer).map_err(io::Error::other)
    }
}

/// The messages of a datagram; nf_tables payloads without their
/// `nfgenmsg` (other subsystems' keep it).
pub(crate) fn split(mut data: &[u8]) -> Result<Vec<Reply>, FilterError> {
    let mut replies = Vec::new();
    while data.len() >= 16 {
        let word =
            |at: usize| u32::from_ne_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
        let len = word(0) as usize;
        if len < 16 || len > data.len() {
            return Err(malformed(format!(
                "a message of {len} bytes in {} bytes",
                data.len()
            )));
        }
        let kind = u16::from_ne_bytes([data[4], data[5]]);
        let flags = u16::from_ne_bytes([data[6], data[7]]);
        let skip = if kind >> 8 == 10 { 20.min(len) } else { 16 };
        replies.push(Reply {
            kind,
            flags,
            seq: word(8),
            payload: data[skip..len].to_vec(),
        });
        data = &data[len.next_multiple_of(4).min(data.len())..];
    }
    Ok(replies)
}

/// The errno of an `NLMSG_ERROR` payload (0 for an acknowledgement).
pub(crate) fn error_code(payload: &[u8]) -> Result<i32, FilterError> {
    match payload.get(..4) {
        Some(code) => Ok(-i32::from_ne_bytes([code[0], code[1], code[2], code[3]])),
        None => Err(malformed("an error message without its code")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_split_and_truncated_ones_refused() {
        let mut data = Vec::new();
        encode(
            &mut data,
            Kind::NewRule.message_type(),
            0,
            7,
            2,
            0,
            &[8, 0, 3, 0, 0, 0, 0, 5],
        );
        let replies = split(&data).unwrap();
        assert_eq!(replies.len(), 1);
        assert_eq!((replies[0].seq, replies[0].payload.len()), (7, 8));
        assert!(split(&data[..data.len() - 1]).is_err());
        assert_eq!(error_code(&(-2i32).to_ne_bytes()).unwrap(), 2);
        assert!(error_code(&[0, 0]).is_err());
    }
}
