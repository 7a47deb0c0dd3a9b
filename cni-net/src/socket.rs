//! The rtnetlink socket and its request/reply loop.

use std::io;
use std::ops::ControlFlow;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_DUMP, NLM_F_ECHO, NLM_F_REQUEST,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

use crate::{NetError, Op};

/// "Dump was inconsistent due to sequence change": the kernel's flag on a
/// dump that a concurrent change interrupted.
const NLM_F_DUMP_INTR: u16 = 0x10;

/// `MSG_TRUNC`: `recv` returns a datagram's real length even when it
/// did not fit, so a truncation is detected rather than parsed.
fn libc_msg_trunc() -> i32 {
    nix::sys::socket::MsgFlags::MSG_TRUNC.bits()
}

/// How often an interrupted dump is retried before giving up, as the
/// reference's `netlinksafe` does.
const DUMP_ATTEMPTS: usize = 10;

/// An rtnetlink socket, bound to the network namespace it was opened in
/// for its whole life, whichever thread uses it.
///
/// Open one in the caller's namespace with [`Netlink::open`], in another
/// with [`Netns::socket`](crate::Netns::socket), or receive one inside
/// [`Netns::run`](crate::Netns::run). The operations are methods, one file
/// per kind of object: links, addresses, routes.
///
/// Go: `netlink.Handle` (vishvananda/netlink), `netlink.NewHandleAt`.
pub struct Netlink {
    socket: Socket,
    sequence: u32,
    /// Receive buffer, reused: one `recv` per datagram.
    buffer: Vec<u8>,
}

/// The largest datagram the kernel sends: a dump fills at most 32 KiB.
const RECEIVE_BUFFER: usize = 64 * 1024;

impl std::fmt::Debug for Netlink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Netlink")
            .field("sequence", &self.sequence)
            .finish_non_exhaustive()
    }
}

impl Netlink {
    /// A socket in the calling thread's network namespace; a refusal is
    /// [`NetError::Kernel`] with [`Op::OpenSocket`].
    ///
    /// Go: `netlink.NewHandle`.
    pub fn open() -> Result<Netlink, NetError> {
        Netlink::open_here().map_err(NetError::kernel(
            Op::OpenSocket,
            "the calling thread's network namespace",
        ))
    }

    /// [`Netlink::open`], keeping the system's error for the caller to
    /// name the namespace.
    pub(crate) fn open_here() -> io::Result<Netlink> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        // Extended acks: the kernel's reason string is not needed, but
        // capped acks keep an error reply small.
        let _ = socket.set_cap_ack(true);
        Ok(Netlink {
            socket,
            sequence: 0,
            buffer: Vec::with_capacity(RECEIVE_BUFFER),
        })
    }

    /// A change: sends one request and waits for its acknowledgement; a
    /// refusal is the kernel's errno.
    pub(crate) fn change(&mut self, message: RouteNetlinkMessage, flags: u16) -> io::Result<()> {
        self.exchange(message, NLM_F_ACK | flags).map(drop)
    }

    /// A change whose result the kernel is asked to send back
    /// (`NLM_F_ECHO`, honoured for links since Linux 6.3): the replies
    /// before the acknowledgement, none on older kernels.
    pub(crate) fn change_echoed(
        &mut self,
        message: RouteNetlinkMessage,
        flags: u16,
    ) -> io::Result<Vec<RouteNetlinkMessage>> {
        self.exchange(message, NLM_F_ACK | NLM_F_ECHO | flags)
            .map(|(replies, _)| replies)
    }

    /// A query for one object: its replies until the acknowledgement.
    pub(crate) fn get(
        &mut self,
        message: RouteNetlinkMessage,
    ) -> io::Result<Vec<RouteNetlinkMessage>> {
        self.exchange(message, NLM_F_ACK)
            .map(|(replies, _)| replies)
    }

    /// A dump of all objects of a kind, retried when a concurrent change
    /// interrupted it (Go: plugins `pkg/netlinksafe`).
    pub(crate) fn dump(
        &mut self,
        message: RouteNetlinkMessage,
    ) -> io::Result<Vec<RouteNetlinkMessage>> {
        retry_interrupted(|| self.exchange(message.clone(), NLM_F_DUMP))
    }

    /// Sends one request and collects the replies until the ACK or the
    /// end of a dump; also says whether the dump was interrupted.
    fn exchange(
        &mut self,
        message: RouteNetlinkMessage,
        flags: u16,
    ) -> io::Result<(Vec<RouteNetlinkMessage>, bool)> {
        let mut replies = Vec::new();
        let (interrupted, _) = self.exchange_with(message, flags, |reply| {
            replies.push(reply);
            ControlFlow::Continue(())
        })?;
        Ok((replies, interrupted))
    }

    /// A dump whose replies `visit` reads one by one, until it answers
    /// `Break`: then reading stops, and so does the socket, which is why
    /// this takes it by value (the kernel's half-read dump ends when the
    /// socket closes; reading it to its end would cost what stopping
    /// saves). A dump that a concurrent change interrupted is read again
    /// from the start unless `visit` stopped it. `None` when `visit` read
    /// every reply without stopping.
    pub(crate) fn dump_until<B>(
        mut self,
        message: RouteNetlinkMessage,
        mut visit: impl FnMut(RouteNetlinkMessage) -> ControlFlow<B>,
    ) -> io::Result<Option<B>> {
        retry_interrupted(|| {
            let mut found = None;
            let (interrupted, stopped) =
                self.exchange_with(message.clone(), NLM_F_DUMP, |reply| match visit(reply) {
                    ControlFlow::Break(b) => {
                        found = Some(b);
                        ControlFlow::Break(())
                    }
                    ControlFlow::Continue(()) => ControlFlow::Continue(()),
                })?;
            Ok((found, interrupted && !stopped))
        })
    }

    /// Sends one request and hands each reply to `visit` until the ACK,
    /// the end of a dump, or `visit`'s `Break`; answers whether the dump
    /// was interrupted and whether `visit` stopped it (the rest of the
    /// answer then stays unread on the socket).
    fn exchange_with(
        &mut self,
        message: RouteNetlinkMessage,
        flags: u16,
        mut visit: impl FnMut(RouteNetlinkMessage) -> ControlFlow<()>,
    ) -> io::Result<(bool, bool)> {
        self.sequence = self.sequence.wrapping_add(1);
        let mut packet =
            NetlinkMessage::new(NetlinkHeader::default(), NetlinkPayload::from(message));
        packet.header.flags = NLM_F_REQUEST | flags;
        packet.header.sequence_number = self.sequence;
        packet.finalize();
        let mut buf = vec![0; packet.buffer_len()];
        packet.serialize(&mut buf);
        self.socket.send(&buf, 0)?;

        let mut interrupted = false;
        loop {
            self.buffer.clear();
            let len = self.socket.recv(&mut self.buffer, libc_msg_trunc())?;
            if len > self.buffer.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("netlink datagram of {len} bytes exceeds the receive buffer"),
                ));
            }
            let data = &self.buffer[..];
            let mut offset = 0;
            while offset < data.len() {
                let reply: NetlinkMessage<RouteNetlinkMessage> =
                    NetlinkMessage::deserialize(&data[offset..])
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
                let len = reply.header.length as usize;
                if len == 0 {
                    break;
                }
                offset += len;
                if reply.header.sequence_number != self.sequence {
                    continue;
                }
                interrupted |= reply.header.flags & NLM_F_DUMP_INTR != 0;
                match reply.payload {
                    NetlinkPayload::Done(_) => return Ok((interrupted, false)),
                    NetlinkPayload::Error(e) if e.code.is_none() => {
                        return Ok((interrupted, false))
                    }
                    NetlinkPayload::Error(e) => return Err(e.to_io()),
                    NetlinkPayload::InnerMessage(m) => {
                        let stop = visit(m).is_break();
                        if stop {
                            return Ok((interrupted, true));
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

/// Runs a dump until one comes back whole: `attempt` says whether the
/// kernel flagged its answer interrupted; after [`DUMP_ATTEMPTS`]
/// interrupted ones, `EINTR`.
fn retry_interrupted<T>(mut attempt: impl FnMut() -> io::Result<(T, bool)>) -> io::Result<T> {
    for _ in 0..DUMP_ATTEMPTS {
        let (replies, interrupted) = attempt()?;
        if !interrupted {
            return Ok(replies);
        }
    }
    Err(io::Error::from_raw_os_error(
        nix::errno::Errno::EINTR as i32,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupted_dump_is_run_again_until_it_comes_back_whole() {
        let mut calls = 0;
        let whole = retry_interrupted(|| {
            calls += 1;
            Ok((calls, calls < 3))
        });
        assert_eq!(whole.unwrap(), 3);
    }

    #[test]
    fn a_dump_interrupted_every_time_gives_up_with_eintr() {
        let mut calls = 0;
        let err = retry_interrupted(|| {
            calls += 1;
            Ok(((), true))
        })
        .unwrap_err();
        assert_eq!(err.raw_os_error(), Some(nix::errno::Errno::EINTR as i32));
        assert_eq!(calls, DUMP_ATTEMPTS);
    }
}
