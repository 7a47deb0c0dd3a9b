//! The NETLINK_NETFILTER socket: batches sent and acknowledged, dumps read
//! whole and bounded, requests answered within a deadline. nf_tables and
//! ctnetlink ([`crate::conntrack`]) share it: one reader, one set of
//! bounds.

use std::io;

use netlink_sys::{protocols::NETLINK_NETFILTER, Socket, SocketAddr};
use nix::sys::socket::MsgFlags;

use super::message::{encode, nfproto, Batch, Kind, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST};
use super::nla::{self, malformed, Attrs};
use super::retry::Retry;
use super::spare::{self, Spare};
use super::MAX_RECORDED_RULES;
use crate::netns_id::NetnsId;
use crate::{Family, FilterError};

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// The kernel's flag on a dump that a concurrent change interrupted.
const NLM_F_DUMP_INTR: u16 = 0x10;
/// The most an nf_tables dump may bring: far above any CNI host's
/// ruleset, and a bound on what a misbehaving peer makes us read.
const MAX_DUMP_BYTES: usize = 64 << 20;
#[cfg(test)]
thread_local! {
    /// For tests of the readers that act on an interrupted dump (no test
    /// can make the kernel interrupt one between two chosen parts): the
    /// index of the reply that this thread's next
    /// [`NftSocket::dump_as_seen`] leaves out, the dump then reported
    /// interrupted, as a rule moved across a part's edge by another
    /// writer's commit is missed.
    pub(crate) static MISSED_IN_NEXT_AS_SEEN: std::cell::Cell<Option<usize>> =
        const { std::cell::Cell::new(None) };
}
/// The largest datagram the kernel sends (a dump fills at most 32 KiB).
const RECEIVE_BUFFER: usize = 64 * 1024;
/// The longest the kernel may take to answer: it answers a batch or a
/// generation request before `send` returns and each part of a dump as
/// it is read, so a wait this long means an answer was lost.
pub(crate) const RECEIVE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// A message the kernel sent: its type, sequence number and payload (after the
/// `nfgenmsg` for nf_tables messages, the error code for errors).
pub(crate) struct Reply {
    pub(crate) kind: u16,
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
/// namespace it was opened in: nf_tables batches and dumps, and
/// ctnetlink's dumps and requests.
///
/// In the process's own namespace the socket outlives its user: dropped
/// with its last exchange settled, it is kept for the next
/// [`open`](Self::open) there (see `spare.rs` for why).
pub(crate) struct NftSocket {
    /// `None` only once handed back as the spare, while dropped.
    socket: Option<Socket>,
    seq: u32,
    buffer: Vec<u8>,
    /// The namespace the socket is kept for once dropped: the process's
    /// own, where it was opened.
    keep_for: Option<NetnsId>,
    /// Whether every exchange ended with the kernel's last answer read:
    /// only then may another user have the socket.
    settled: bool,
}

impl Drop for NftSocket {
    fn drop(&mut self) {
        if let (Some(netns), true) = (self.keep_for, self.settled) {
            if let Some(socket) = self.socket.take() {
                spare::keep(Spare {
                    netns,
                    socket,
                    seq: self.seq,
                    buffer: std::mem::take(&mut self.buffer),
                });
            }
        }
    }
}

impl NftSocket {
    /// A socket in the calling thread's network namespace: the process's
    /// spare one when the thread is in the process's namespace and one is
    /// kept, else a new one.
    pub(crate) fn open() -> io::Result<NftSocket> {
        let keep_for = spare::own_namespace();
        if let Some(spare) = keep_for.and_then(spare::take) {
            return Ok(NftSocket {
                socket: Some(spare.socket),
                seq: spare.seq,
                buffer: spare.buffer,
                keep_for,
                settled: true,
            });
        }
        let mut socket = Socket::new(NETLINK_NETFILTER)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        // Error replies then carry the request's header, not all of it.
        let _ = socket.set_cap_ack(true);
        // Every wait for the kernel has a deadline.
        let deadline = nix::sys::time::TimeVal::new(RECEIVE_DEADLINE.as_secs() as i64, 0);
        nix::sys::socket::setsockopt(
            &socket,
            nix::sys::socket::sockopt::ReceiveTimeout,
            &deadline,
        )
        .map_err(io::Error::from)?;
        Ok(NftSocket {
            socket: Some(socket),
            seq: std::process::id().wrapping_mul(1 << 12),
            buffer: Vec::with_capacity(RECEIVE_BUFFER),
            keep_for,
            settled: true,
        })
    }

    /// The socket itself (there until dropped).
    fn socket(&self) -> io::Result<&Socket> {
        self.socket.as_ref().ok_or_else(handed_back)
    }

    /// The socket's inode: which socket this is (a port id is not: the
    /// kernel gives a thread's first socket the thread's id, again and
    /// again).
    #[cfg(test)]
    pub(crate) fn inode(&self) -> io::Result<u64> {
        use std::os::fd::AsRawFd;
        Ok(nix::sys::stat::fstat(self.socket()?.as_raw_fd())?.st_ino)
    }

    /// Sends one message: until its last answer is read, the socket is
    /// not fit for another user.
    pub(crate) fn send(&mut self, message: &[u8]) -> io::Result<()> {
        self.settled = false;
        self.socket()?.send(message, 0).map(drop)
    }

    /// Sequence numbers for `n` messages.
    pub(crate) fn reserve(&mut self, n: usize) -> u32 {
        let first = self.seq.wrapping_add(1);
        self.seq = self.seq.wrapping_add(n as u32 + 1);
        first
    }

    /// Sends a batch in one message and reads the kernel's answers:
    /// `Ok(None)` when it applied the batch, else the first refusal, after
    /// which the kernel holds none of it.
    ///
    /// The kernel handles a batch inside `send` and queues its answers
    /// before `send` returns: a refusal for each refused request, then the
    /// acknowledgement of the last one ([`Batch`] asks for no other). They
    /// are read until that last answer, each wait bounded by
    /// [`RECEIVE_DEADLINE`]. Answers that overflowed the receive buffer
    /// (`ENOBUFS`) can only be refusals, so the batch was refused. An
    /// error before the kernel saw the batch (a send that fails) changed
    /// nothing either.
    pub(crate) fn send_batch(&mut self, batch: &Batch) -> Result<Option<Refusal>, FilterError> {
        self.send_batch_echoed(batch, &mut Vec::new())
    }

    /// [`send_batch`](Self::send_batch), keeping in `echoed` the payload
    /// of each rule the kernel echoed back (a `NEWRULE` notification for
    /// each request of the batch that asked with `NLM_F_ECHO`: the rule
    /// as added, with its handle). The kernel sends them as it commits,
    /// before the batch's acknowledgement.
    ///
    /// At most [`MAX_RECORDED_RULES`] echoes (a batch asking for more is
    /// refused unsent): each is about 500 bytes queued at once, and only
    /// while they fit the receive buffer is an overflow (`ENOBUFS`) sure
    /// to mean a refusal, as [`send_batch`](Self::send_batch) reads it.
    pub(crate) fn send_batch_echoed(
        &mut self,
        batch: &Batch,
        echoed: &mut Vec<Vec<u8>>,
    ) -> Result<Option<Refusal>, FilterError> {
        if batch.echoes > MAX_RECORDED_RULES {
            return Err(FilterError::Unsupported {
                backend: crate::BackendKind::Nftables,
                what: format!(
                    "echoes of {} rules in one batch (at most {MAX_RECORDED_RULES})",
                    batch.echoes
                ),
            });
        }
        let send = |source: io::Error| FilterError::Kernel {
            op: "send",
            object: format!("an nf_tables batch of {} bytes", batch.bytes.len()),
            source,
        };
        self.make_room(batch.bytes.len()).map_err(send)?;
        self.send(&batch.bytes).map_err(send)?;
        let last = batch.described.len();
        let mut refusal: Option<Refusal> = None;
        let mut overflowed = false;
        let mut answered = false;
        loop {
            // Once the last request (or the batch itself) is answered,
            // whatever else the kernel queued is read without waiting.
            let settled = answered || refusal.is_some_and(|r| r.index == 0);
            let flags = match settled {
                true => MsgFlags::MSG_DONTWAIT,
                false => MsgFlags::empty(),
            };
            let replies = match self.receive(flags) {
                Ok(replies) => replies,
                Err(e) if settled && e.kind() == io::ErrorKind::WouldBlock => {
                    self.settled = true;
                    break;
                }
                Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ENOBUFS as i32) => {
                    overflowed = true;
                    answered = true;
                    continue;
                }
                Err(e) => {
                    return Err(FilterError::Kernel {
                        op: "read the answer to",
                        object: "an nf_tables batch".into(),
                        source: timed_out(e),
                    })
                }
            };
            let new_rule = Kind::NewRule.message_type();
            for reply in replies.iter().filter(|r| r.kind == new_rule) {
                if (reply.seq.wrapping_sub(batch.begin) as usize) <= last {
                    echoed.push(reply.payload.clone());
                }
            }
            for reply in replies.iter().filter(|r| r.kind == NLMSG_ERROR) {
                let index = reply.seq.wrapping_sub(batch.begin) as usize;
                if index > last {
                    continue;
                }
                let errno = error_code(&reply.payload)?;
                answered |= index == last;
                if errno != 0 && refusal.is_none_or(|r| index < r.index) {
                    refusal = Some(Refusal { index, errno });
                }
            }
        }
        if refusal.is_none() && overflowed {
            // More answers than the buffer holds: refusals, all of them.
            refusal = Some(Refusal {
                index: 0,
                errno: nix::errno::Errno::ENOBUFS as i32,
            });
        }
        if refusal.is_none() && batch.deletes && self.keep_for.is_some() {
            // The socket's release now waits for the kernel to retire what
            // the batch removed (an RCU grace period, under the commit
            // mutex every writer needs): a plugin process leaves that close
            // to a detached child, which makes it once the ruleset's
            // generation has stopped changing (cni_skel::close_after_exit).
            // Only in the process's own namespace: a socket would keep a
            // container's namespace, and the links in it, alive meanwhile.
            if let Some(socket) = self.socket.as_ref() {
                use std::os::fd::AsFd;
                let mut generation = Vec::new();
                encode(
                    &mut generation,
                    Kind::GetGen.message_type(),
                    NLM_F_REQUEST,
                    0,
                    0,
                    0,
                    &[],
                );
                cni_skel::close_after_exit(socket.as_fd(), Some(&generation));
            }
        }
        Ok(refusal)
    }

    /// Lets the socket send a message of `len` bytes at once, as nft does
    /// (`mnl_set_sndbuffer`): netlink refuses a message larger than the
    /// send buffer (`EMSGSIZE`; 208 KiB by default, about 700 of
    /// portmap's rules), and a batch must be one message to be one
    /// transaction. As root the buffer is forced to the size
    /// (`SO_SNDBUFFORCE`); otherwise `net.core.wmem_max` bounds it, and a
    /// larger batch is refused here, before the kernel sees any of it.
    fn make_room(&mut self, len: usize) -> io::Result<()> {
        use nix::sys::socket::{getsockopt, setsockopt, sockopt};
        // The kernel keeps 32 bytes of the buffer for itself.
        let needed = len + 64;
        let have = getsockopt(self.socket()?, sockopt::SndBuf).map_err(io::Error::from)?;
        if have >= needed {
            return Ok(());
        }
        // Both options store twice the value (the kernel's overhead).
        let asked = needed.div_ceil(2);
        if setsockopt(self.socket()?, sockopt::SndBufForce, &asked).is_err() {
            let _ = setsockopt(self.socket()?, sockopt::SndBuf, &asked);
        }
        let have = getsockopt(self.socket()?, sockopt::SndBuf).map_err(io::Error::from)?;
        if have >= needed {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!(
                "the socket sends at most {have} bytes at once without CAP_NET_ADMIN \
                 (net.core.wmem_max): the batch, one transaction, was not sent"
            ),
        ))
    }

    /// An nf_tables dump, each reply's payload (after the `nfgenmsg`)
    /// given to `visit` straight from the receive buffer, into a `T`
    /// begun afresh for each attempt: a dump that a concurrent change
    /// interrupted is read again after a short random pause, for up to
    /// 10 s ([`Retry`]), then `EINTR`. Nothing is copied per message, so
    /// listing a chain of thousands of rules costs no allocation but what
    /// `visit` keeps.
    pub(crate) fn dump<T: Default>(
        &mut self,
        kind: Kind,
        family: Family,
        attrs: &Attrs,
        visit: impl FnMut(&mut T, &[u8]) -> Result<(), FilterError>,
    ) -> Result<T, DumpError> {
        let message_type = kind.message_type();
        self.dump_of(
            message_type,
            nfproto(family),
            &attrs.buf,
            MAX_DUMP_BYTES,
            visit,
        )
    }

    /// As [`dump`](Self::dump), in one attempt whose replies are all
    /// given to `visit` even when a concurrent change interrupted the
    /// dump, which the `bool` then says. What such a dump lists is each
    /// object as it was when read: one deleted after its part was read
    /// is listed, one moved across a part's edge can be missed or listed
    /// twice. For a reader that acts only on what it found, and learns
    /// of a miss from the kernel (a DEL looking for its own rules among
    /// every pod's): in a burst, a dump of more than one part (a chain of
    /// a hundred pods' rules) is interrupted again and again, and reading
    /// it whole costs each DEL a pause and a full read per commit of
    /// every other pod.
    pub(crate) fn dump_as_seen<T: Default>(
        &mut self,
        kind: Kind,
        family: Family,
        attrs: &Attrs,
        mut visit: impl FnMut(&mut T, &[u8]) -> Result<(), FilterError>,
    ) -> Result<(T, bool), DumpError> {
        let message_type = kind.message_type();
        let (af, limit) = (nfproto(family), MAX_DUMP_BYTES);
        #[cfg(test)]
        if let Some(missed) = MISSED_IN_NEXT_AS_SEEN.take() {
            let mut index = 0;
            let mut visit = |found: &mut T, payload: &[u8]| {
                index += 1;
                if index - 1 == missed {
                    return Ok(());
                }
                visit(found, payload)
            };
            let (found, _) =
                self.dump_once(message_type, af, &attrs.buf, limit, true, &mut visit)?;
            return Ok((found, true));
        }
        self.dump_once(message_type, af, &attrs.buf, limit, true, &mut visit)
    }

    /// A dump of any netfilter subsystem (`message_type` is the subsystem
    /// in the high byte, the message in the low), `af` in its `nfgenmsg`,
    /// read as [`dump`](Self::dump) reads one and stopped once it passes
    /// `limit` bytes. Payloads of other subsystems than nf_tables keep
    /// their `nfgenmsg`.
    pub(crate) fn dump_of<T: Default>(
        &mut self,
        message_type: u16,
        af: u8,
        attrs: &[u8],
        limit: usize,
        mut visit: impl FnMut(&mut T, &[u8]) -> Result<(), FilterError>,
    ) -> Result<T, DumpError> {
        let mut retry = Retry::new();
        loop {
            let (found, interrupted) =
                self.dump_once(message_type, af, attrs, limit, false, &mut visit)?;
            if !interrupted {
                return Ok(found);
            }
            // Interrupted by another writer's commit (a burst commits
            // every few milliseconds): read again once it has passed.
            if !retry.pause() {
                return Err(DumpError::Io(io::Error::from_raw_os_error(
                    nix::errno::Errno::EINTR as i32,
                )));
            }
        }
    }

    /// One dump, sent and read to its end ([`collect`](Self::collect),
    /// `as_seen` as it takes it) into a `T` begun afresh: what was read,
    /// and whether a concurrent change interrupted it.
    fn dump_once<T: Default>(
        &mut self,
        message_type: u16,
        af: u8,
        attrs: &[u8],
        limit: usize,
        as_seen: bool,
        visit: &mut impl FnMut(&mut T, &[u8]) -> Result<(), FilterError>,
    ) -> Result<(T, bool), DumpError> {
        let seq = self.reserve(0);
        let mut request = Vec::new();
        let flags = NLM_F_REQUEST | NLM_F_DUMP;
        encode(&mut request, message_type, flags, seq, af, 0, attrs);
        self.send(&request).map_err(DumpError::Io)?;
        let mut found = T::default();
        let visit = &mut |payload: &[u8]| visit(&mut found, payload);
        let interrupted = self.collect(seq, limit, as_seen, visit)?;
        Ok((found, interrupted))
    }

    /// Sends one request asking for an acknowledgement and waits for it
    /// (each wait bounded by [`RECEIVE_DEADLINE`]): `Ok` when the kernel
    /// did what was asked, its errno otherwise.
    pub(crate) fn acknowledged(
        &mut self,
        message_type: u16,
        af: u8,
        attrs: &[u8],
    ) -> Result<(), io::Error> {
        self.answer(message_type, NLM_F_REQUEST | NLM_F_ACK, af, attrs)
            .map(drop)
    }

    /// Sends one request and reads until the kernel answers it: the
    /// payload of its reply, `None` for an acknowledgement, or the errno
    /// of its refusal. Each wait is bounded by [`RECEIVE_DEADLINE`].
    pub(crate) fn answer(
        &mut self,
        message_type: u16,
        flags: u16,
        af: u8,
        attrs: &[u8],
    ) -> Result<Option<Vec<u8>>, io::Error> {
        let seq = self.reserve(0);
        let mut request = Vec::new();
        encode(&mut request, message_type, flags, seq, af, 0, attrs);
        self.send(&request)?;
        loop {
            for reply in self.receive(MsgFlags::empty()).map_err(timed_out)? {
                if reply.seq != seq {
                    continue;
                }
                // The one answer asked for: nothing more follows.
                self.settled = true;
                if reply.kind != NLMSG_ERROR {
                    return Ok(Some(reply.payload));
                }
                return match error_code(&reply.payload).map_err(io::Error::other)? {
                    0 => Ok(None),
                    errno => Err(io::Error::from_raw_os_error(errno)),
                };
            }
        }
    }

    /// The ruleset generation (`NFT_MSG_GETGEN`), which a batch can be
    /// tied to.
    pub(crate) fn generation(&mut self) -> Result<u32, io::Error> {
        let Some(payload) = self.answer(Kind::GetGen.message_type(), NLM_F_REQUEST, 0, &[])? else {
            return Err(io::Error::other(
                "the generation request was only acknowledged",
            ));
        };
        let attrs = nla::parse(&payload).map_err(io::Error::other)?;
        let id = attrs.iter().find(|(kind, _)| *kind == 1);
        let id = id.map(|(_, v)| nla::number(v)).transpose();
        match id.map_err(io::Error::other)? {
            Some(id) => Ok(id as u32),
            None => Err(io::Error::other("the generation reply has no id")),
        }
    }

    /// The replies of one dump, until its end, each given to `visit`
    /// (once the dump is flagged interrupted, only with `as_seen`):
    /// whether a concurrent change interrupted it.
    fn collect(
        &mut self,
        seq: u32,
        limit: usize,
        as_seen: bool,
        visit: &mut dyn FnMut(&[u8]) -> Result<(), FilterError>,
    ) -> Result<bool, DumpError> {
        let mut total = 0;
        let mut interrupted = false;
        loop {
            self.receive_datagram(MsgFlags::empty())
                .map_err(|e| DumpError::Io(timed_out(e)))?;
            for message in Messages(&self.buffer) {
                let message = message.map_err(DumpError::Visit)?;
                if message.seq != seq {
                    continue;
                }
                interrupted |= message.flags & NLM_F_DUMP_INTR != 0;
                match message.kind {
                    NLMSG_DONE => {
                        self.settled = true;
                        return Ok(interrupted);
                    }
                    NLMSG_ERROR => {
                        // A dump ends at its error, as at its done.
                        self.settled = true;
                        let errno = error_code(message.payload).map_err(DumpError::Visit)?;
                        if errno == 0 {
                            return Ok(interrupted);
                        }
                        return Err(DumpError::Io(io::Error::from_raw_os_error(errno)));
                    }
                    _ => {
                        total += message.payload.len();
                        if total > limit {
                            return Err(DumpError::Io(io::Error::other(format!(
                                "a dump of more than {limit} bytes"
                            ))));
                        }
                        // An interrupted dump is read again whole: what
                        // it gave so far is not worth parsing, unless the
                        // reader takes it as seen.
                        if !interrupted || as_seen {
                            visit(message.payload).map_err(DumpError::Visit)?;
                        }
                    }
                }
            }
        }
    }

    /// One datagram, split into messages.
    fn receive(&mut self, flags: MsgFlags) -> Result<Vec<Reply>, io::Error> {
        self.receive_datagram(flags)?;
        split(&self.buffer).map_err(io::Error::other)
    }

    /// One datagram, into the receive buffer (whose capacity is kept).
    fn receive_datagram(&mut self, flags: MsgFlags) -> Result<(), io::Error> {
        self.buffer.clear();
        let flags = flags | MsgFlags::MSG_TRUNC;
        let Some(socket) = self.socket.as_ref() else {
            return Err(handed_back());
        };
        let len = socket.recv(&mut self.buffer, flags.bits())?;
        if len > self.buffer.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a netlink datagram of {len} bytes exceeds the receive buffer"),
            ));
        }
        Ok(())
    }
}

/// What a use of the socket after it was handed back would meet (none is
/// possible: it is handed back only as it is dropped).
fn handed_back() -> io::Error {
    io::Error::other("the netfilter socket was handed back")
}

/// A receive that ran out of time (`EAGAIN` under `SO_RCVTIMEO`) as
/// `ETIMEDOUT`, so the error says what happened.
fn timed_out(e: io::Error) -> io::Error {
    match e.kind() {
        io::ErrorKind::WouldBlock => io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the kernel did not answer within {} s",
                RECEIVE_DEADLINE.as_secs()
            ),
        ),
        _ => e,
    }
}

/// Why a dump gave nothing: the kernel or the socket failed
/// ([`DumpError::Io`]), or what it sent did not parse or `visit` refused
/// it ([`DumpError::Visit`]).
#[derive(Debug)]
pub(crate) enum DumpError {
    Io(io::Error),
    Visit(FilterError),
}

impl DumpError {
    /// As a [`FilterError`]: a kernel failure names `op` and `object`.
    pub(crate) fn into_filter(
        self,
        op: &'static str,
        object: impl FnOnce() -> String,
    ) -> FilterError {
        match self {
            DumpError::Io(source) => FilterError::Kernel {
                op,
                object: object(),
                source,
            },
            DumpError::Visit(e) => e,
        }
    }
}

/// A message of a datagram, borrowed from it: header fields and payload
/// (nf_tables payloads without their `nfgenmsg`, others' with it).
struct Message<'a> {
    kind: u16,
    flags: u16,
    seq: u32,
    payload: &'a [u8],
}

/// The messages of a datagram, in order; a length that runs past the end
/// is an error (and ends the iteration), not a panic.
struct Messages<'a>(&'a [u8]);

impl<'a> Iterator for Messages<'a> {
    type Item = Result<Message<'a>, FilterError>;

    fn next(&mut self) -> Option<Self::Item> {
        let data = self.0;
        if data.len() < 16 {
            return None;
        }
        let word =
            |at: usize| u32::from_ne_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
        let len = word(0) as usize;
        if len < 16 || len > data.len() {
            self.0 = &[];
            return Some(Err(malformed(format!(
                "a message of {len} bytes in {} bytes",
                data.len()
            ))));
        }
        let kind = u16::from_ne_bytes([data[4], data[5]]);
        let skip = if kind >> 8 == 10 { 20.min(len) } else { 16 };
        self.0 = &data[len.next_multiple_of(4).min(data.len())..];
        Some(Ok(Message {
            kind,
            flags: u16::from_ne_bytes([data[6], data[7]]),
            seq: word(8),
            payload: &data[skip..len],
        }))
    }
}

/// The messages of a datagram; nf_tables payloads without their
/// `nfgenmsg` (other subsystems' keep it).
pub(crate) fn split(data: &[u8]) -> Result<Vec<Reply>, FilterError> {
    Messages(data)
        .map(|message| {
            message.map(|m| Reply {
                kind: m.kind,
                seq: m.seq,
                payload: m.payload.to_vec(),
            })
        })
        .collect()
}

/// The errno of an `NLMSG_ERROR` payload (0 for an acknowledgement).
/// The kernel sends a negative errno; `i32::MIN`, which has no positive
/// counterpart, is malformed rather than an overflow.
pub(crate) fn error_code(payload: &[u8]) -> Result<i32, FilterError> {
    let code = payload
        .first_chunk::<4>()
        .ok_or_else(|| malformed("an error message without its code"))?;
    i32::from_ne_bytes(*code)
        .checked_neg()
        .ok_or_else(|| malformed(format!("error code {}", i32::MIN)))
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
        let mut two = data.clone();
        encode(&mut two, NLMSG_DONE, 0, 8, 0, 0, &[]);
        let kinds: Vec<_> = Messages(&two).map(|m| m.unwrap().seq).collect();
        assert_eq!(kinds, [7, 8]);
        let mut bad = Messages(&two[..two.len() - 1]);
        assert!(bad.nth(1).unwrap().is_err());
        assert!(
            bad.next().is_none(),
            "a malformed datagram ends the reading"
        );

        assert_eq!(error_code(&(-2i32).to_ne_bytes()).unwrap(), 2);
        assert!(error_code(&[0, 0]).is_err());
        // Found by the nft_netlink fuzz target: negating it overflowed.
        assert!(error_code(&i32::MIN.to_ne_bytes()).is_err());
    }
}
