//! The DHCPv4 client of one interface in one namespace: DISCOVER, OFFER,
//! REQUEST, ACK; RENEW, REBIND and RELEASE (RFC 2131 section 4.4).
//!
//! The socket is a UDP socket opened inside the container's namespace and
//! bound to port 68 on the interface (`SO_BINDTODEVICE`), so it keeps
//! working from any thread of the daemon. Before the interface has an
//! address, a unicast reply to the offered address would be dropped by the
//! kernel, so DISCOVER and the first REQUEST always set the broadcast
//! flag; the reference reads raw frames instead (an `AF_PACKET` socket).
//!
//! Go: `nclient4` (insomniacslk/dhcp), `AcquireLease`, `acquire`, `renew`,
//! `release` and `backoffRetry` (plugins `plugins/ipam/dhcp/lease.go`).

use std::ffi::OsString;
use std::hash::{BuildHasher, Hasher};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cni_net::{NetError, Netns};
use nix::sys::socket::{
    bind, setsockopt, socket, sockopt, AddressFamily, SockFlag, SockType, SockaddrIn,
};

use crate::config::ClientOptions;
use crate::lease::Lease;
use crate::message::{code, Message, MessageType, BROADCAST_FLAG};
use crate::DhcpError;

const CLIENT_PORT: u16 = 68;
const SERVER_PORT: u16 = 67;
/// The largest DHCP message read (an Ethernet frame's payload fits).
const MAX_MESSAGE: usize = 1500;

/// How long the client waits and retries.
///
/// Go: the daemon's `-timeout`, `-resendmax` and `-resendtimeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// The longest wait for one reply before sending again (`-timeout`,
    /// default 10 s).
    pub timeout: Duration,
    /// The longest delay between two sends (`-resendmax`, default 62 s).
    pub resend_max: Duration,
    /// No more sends after this long (`-resendtimeout`, default 29 s: when
    /// the reference's daemon, v1.9.1, gives up on a silent network with
    /// its default flags, as measured in issue 32, although its flag's
    /// default reads 208 s).
    pub resend_timeout: Duration,
    /// When set, every lease is shortened to at most this long, its T1 and
    /// T2 in proportion ([`Lease::shortened_to`]). No flag sets it: it is
    /// the daemon's clock for tests, which cannot wait for a real lease
    /// (dnsmasq's shortest is two minutes) to expire.
    pub lease_time_cap: Option<Duration>,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            timeout: Duration::from_secs(10),
            resend_max: Duration::from_secs(62),
            resend_timeout: DEFAULT_RESEND_TIMEOUT,
            lease_time_cap: None,
        }
    }
}

/// [`Timing::resend_timeout`] without `-resendtimeout`.
pub const DEFAULT_RESEND_TIMEOUT: Duration = Duration::from_secs(29);

/// The delay of the first [`FAST_RESENDS`] repetitions of a send.
///
/// Go: `resendFastDelay`, `resendFastMax`.
const FAST_RESEND: Duration = Duration::from_secs(2);
/// How many sends wait [`FAST_RESEND`].
const FAST_RESENDS: u32 = 4;

/// The delay after the fast repetitions; it doubles up to
/// [`Timing::resend_max`].
///
/// Go: `resendDelay0`.
const FIRST_RESEND: Duration = Duration::from_secs(4);

/// The pause after a DHCPDECLINE before starting over (RFC 2131 section
/// 3.1, step 5: "a minimum of ten seconds ... to avoid excessive network
/// traffic in case of looping").
const AFTER_DECLINE: Duration = Duration::from_secs(10);

/// A DHCP client bound to one interface of one namespace.
#[derive(Debug)]
pub struct Client {
    netns: Netns,
    index: u32,
    socket: UdpSocket,
    ifname: String,
    mac: [u8; 6],
    client_id: Vec<u8>,
    options: ClientOptions,
    timing: Timing,
    broadcast: bool,
    stopped: Arc<AtomicBool>,
}

/// Stops a [`Client`]'s exchanges from another thread.
///
/// Go: the lease's `cancelFunc`, which `DHCPLease.Stop` calls so that a
/// renewal under way ends at once.
#[derive(Debug)]
pub struct Stopper {
    socket: UdpSocket,
    stopped: Arc<AtomicBool>,
}

impl Stopper {
    /// Ends the exchange under way, and any later one, with
    /// [`DhcpError::Stopped`]; sending (a RELEASE) still works.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wakes a receive that is blocked. On an unconnected UDP socket
        // Linux answers ENOTCONN but still shuts reading down.
        let _ = nix::sys::socket::shutdown(
            std::os::fd::AsRawFd::as_raw_fd(&self.socket.as_fd()),
            nix::sys::socket::Shutdown::Read,
        );
    }
}

/// A new transaction id: std's randomly keyed hasher over the time.
fn new_xid() -> u32 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.finish() as u32
}

impl Client {
    /// Opens the client's socket on `ifname` inside `netns`, bringing the
    /// interface up first when it is down (as the reference does).
    /// `client_id` is sent as option 61 with type 0 (RFC 2132: "a type
    /// field whose value is normally 0 when a non-hardware identifier is
    /// used"); `broadcast` also asks for broadcast replies when renewing.
    pub fn open(
        netns: &Netns,
        ifname: &str,
        client_id: &str,
        options: ClientOptions,
        timing: Timing,
        broadcast: bool,
    ) -> Result<Client, DhcpError> {
        let (socket, mac, index) = netns.run(|nl| {
            let link = nl.link(ifname)?;
            if !link.up {
                nl.set_up(link.index)?;
            }
            // The kernel drops what a link sends until it is operationally
            // up (its queue is attached a moment after `set up`): wait for
            // that, then send. A link without carrier gets the retries.
            let _ = nl.wait_until_up(link.index, timing.timeout);
            let mac = link.mac.map(|m| m.0).unwrap_or_default();
            let socket = bound_socket(ifname).map_err(|source| DhcpError::Socket {
                ifname: ifname.to_string(),
                source,
            })?;
            Ok::<_, DhcpError>((socket, mac, link.index))
        })?;
        let mut id = vec![0u8];
        id.extend_from_slice(client_id.as_bytes());
        Ok(Client {
            netns: Netns::open(netns.path())?,
            index,
            socket,
            ifname: ifname.to_string(),
            mac,
            client_id: id,
            options,
            timing,
            broadcast,
            stopped: Arc::new(AtomicBool::new(false)),
        })
    }

    /// What stops this client's exchanges from another thread.
    pub fn stopper(&self) -> Result<Stopper, DhcpError> {
        let socket = self
            .socket
            .try_clone()
            .map_err(|source| DhcpError::Socket {
                ifname: self.ifname.clone(),
                source,
            })?;
        Ok(Stopper {
            socket,
            stopped: Arc::clone(&self.stopped),
        })
    }

    /// A client message with the client id, the parameter request list and
    /// the provided options.
    fn message(&self, kind: MessageType, xid: u32) -> Message {
        let mut m = Message::client(kind, xid, self.mac);
        m.set_option(code::CLIENT_ID, self.client_id.clone());
        if !matches!(kind, MessageType::Release | MessageType::Decline) {
            if !self.options.request.is_empty() {
                m.set_option(code::PARAMETER_REQUEST_LIST, self.options.request.clone());
            }
            for (c, v) in &self.options.provide {
                m.set_option(*c, v.clone());
            }
        }
        m
    }

    /// A new lease: DISCOVER, the first OFFER, REQUEST, ACK. A NAK starts
    /// over until [`Timing::resend_timeout`]. An offer that makes no sense
    /// ([`crate::sanity::refusal`]) is not requested, and an ACK that makes
    /// none is declined (DHCPDECLINE, RFC 2131 section 3.1, step 5); the
    /// client starts over after a pause, and when time runs out the last
    /// refusal is the error ([`DhcpError::Refused`]).
    pub fn acquire(&self) -> Result<Lease, DhcpError> {
        let deadline = Instant::now() + self.timing.resend_timeout;
        let mut refused: Option<(Ipv4Addr, String)> = None;
        let give_up = |e: DhcpError, refused: &Option<(Ipv4Addr, String)>| match (e, refused) {
            (DhcpError::NoAnswer { .. }, Some((server, why))) => DhcpError::Refused {
                ifname: self.ifname.clone(),
                server: *server,
                why: why.clone(),
            },
            (e, _) => e,
        };
        loop {
            let xid = new_xid();
            let mut discover = self.message(MessageType::Discover, xid);
            discover.flags = BROADCAST_FLAG;
            let offer = self
                .exchange(&discover, Ipv4Addr::BROADCAST, deadline, "DHCPOFFER", |m| {
                    m.kind == MessageType::Offer
                })
                .map_err(|e| give_up(e, &refused))?;
            let server = offer
                .ipv4_option(code::SERVER_ID)
                .ok_or(DhcpError::MissingOption("server identifier (54)"))?;
            if let Some(why) = crate::sanity::refusal(&offer) {
                eprintln!(
                    "dhcp: {}: refusing the offer of {server}: {why}",
                    self.ifname
                );
                refused = Some((server, why));
                self.pause_until(deadline, FAST_RESEND)
                    .map_err(|e| give_up(e, &refused))?;
                continue;
            }
            let mut request = self.message(MessageType::Request, xid);
            request.flags = BROADCAST_FLAG;
            request.set_option(code::REQUESTED_IP, offer.yiaddr.octets().to_vec());
            request.set_option(code::SERVER_ID, server.octets().to_vec());
            let reply = self
                .exchange(&request, Ipv4Addr::BROADCAST, deadline, "DHCPACK", |m| {
                    matches!(m.kind, MessageType::Ack | MessageType::Nak)
                })
                .map_err(|e| give_up(e, &refused))?;
            if reply.kind == MessageType::Ack {
                let Some(why) = crate::sanity::refusal(&reply) else {
                    return self.lease(reply);
                };
                eprintln!(
                    "dhcp: {}: declining the lease of {server}: {why}",
                    self.ifname
                );
                let mut decline = self.message(MessageType::Decline, new_xid());
                decline.set_option(code::REQUESTED_IP, reply.yiaddr.octets().to_vec());
                decline.set_option(code::SERVER_ID, server.octets().to_vec());
                self.send(&decline, Ipv4Addr::BROADCAST)?;
                refused = Some((server, why));
                self.pause_until(deadline, AFTER_DECLINE)
                    .map_err(|e| give_up(e, &refused))?;
                continue;
            }
            if Instant::now() >= deadline {
                return Err(DhcpError::Nak {
                    ifname: self.ifname.clone(),
                });
            }
        }
    }

    /// Waits `pause` before starting over after a refusal, or until
    /// `deadline` ([`DhcpError::NoAnswer`] then); a stop ends it.
    fn pause_until(&self, deadline: Instant, pause: Duration) -> Result<(), DhcpError> {
        let end = (Instant::now() + pause).min(deadline);
        while Instant::now() < end {
            if self.stopped.load(Ordering::SeqCst) {
                return Err(DhcpError::Stopped {
                    ifname: self.ifname.clone(),
                });
            }
            std::thread::sleep(Duration::from_millis(50).min(end - Instant::now()));
        }
        if Instant::now() >= deadline {
            return Err(DhcpError::NoAnswer {
                what: "acceptable lease",
                ifname: self.ifname.clone(),
                after: self.timing.resend_timeout,
            });
        }
        Ok(())
    }

    /// Extends `lease`: a REQUEST with its address, unicast to the server
    /// that granted it (renewing) or broadcast (`rebinding`), until
    /// `until`. A NAK is [`DhcpError::Nak`].
    pub fn extend(
        &self,
        lease: &Lease,
        rebinding: bool,
        until: Instant,
    ) -> Result<Lease, DhcpError> {
        let mut request = self.message(MessageType::Request, new_xid());
        request.ciaddr = lease.address;
        if self.broadcast {
            request.flags = BROADCAST_FLAG;
        }
        let to = if rebinding {
            Ipv4Addr::BROADCAST
        } else {
            self.server_of(lease)
        };
        let deadline = until.min(Instant::now() + self.timing.resend_timeout);
        let reply = self.exchange(&request, to, deadline, "DHCPACK", |m| {
            matches!(m.kind, MessageType::Ack | MessageType::Nak)
        })?;
        match reply.kind {
            MessageType::Ack => self.lease(reply),
            _ => Err(DhcpError::Nak {
                ifname: self.ifname.clone(),
            }),
        }
    }

    /// The lease `ack` grants from now, shortened to
    /// [`Timing::lease_time_cap`] when that is set.
    fn lease(&self, ack: Message) -> Result<Lease, DhcpError> {
        let lease = Lease::from_ack(ack, Instant::now())?;
        Ok(match self.timing.lease_time_cap {
            Some(cap) => lease.shortened_to(cap),
            None => lease,
        })
    }

    /// Whether the interface (by name, as the reference looks it up)
    /// still exists in the container's namespace.
    ///
    /// Go: `checkLinkByName`.
    pub fn link_exists(&self) -> Result<bool, DhcpError> {
        let ifname = self.ifname.as_str();
        Ok(self.netns.run(|nl| nl.find_link(ifname))?.is_some())
    }

    /// Brings the interface down.
    ///
    /// Go: `DHCPLease.downIface`.
    pub fn set_down(&self) -> Result<(), DhcpError> {
        self.netns.run(|nl| nl.set_down(self.index))?;
        Ok(())
    }

    /// The interface's name.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// Gives `lease` back: one DHCPRELEASE to its server, no reply.
    pub fn release(&self, lease: &Lease) -> Result<(), DhcpError> {
        let mut release = self.message(MessageType::Release, new_xid());
        release.ciaddr = lease.address;
        release.set_option(code::SERVER_ID, lease.server.octets().to_vec());
        self.send(&release, self.server_of(lease))
    }

    fn send(&self, m: &Message, to: Ipv4Addr) -> Result<(), DhcpError> {
        self.socket
            .send_to(&m.encode(), SocketAddrV4::new(to, SERVER_PORT))
            .map(drop)
            .map_err(|source| DhcpError::Socket {
                ifname: self.ifname.clone(),
                source,
            })
    }

    /// Where a message about `lease` goes: its server, when the interface
    /// holds the leased address; otherwise broadcast. Without the address
    /// the kernel would still send a unicast, from 0.0.0.0 to a server it
    /// cannot resolve, and the server would never see it; the reference
    /// writes raw frames instead.
    fn server_of(&self, lease: &Lease) -> Ipv4Addr {
        let held = self.netns.run(|nl| {
            let addresses = nl.addresses(Some(self.index))?;
            Ok::<_, NetError>(
                addresses
                    .iter()
                    .any(|a| a.network.addr() == std::net::IpAddr::V4(lease.address)),
            )
        });
        if held.unwrap_or(false) {
            lease.server
        } else {
            Ipv4Addr::BROADCAST
        }
    }

    /// Sends `m` to `to` and waits for a reply with its xid that `wanted`
    /// accepts, sending again after 2 s four times, then after 4 s, 8 s ... (at most
    /// [`Timing::resend_max`], each wait at most [`Timing::timeout`])
    /// until `deadline`.
    fn exchange(
        &self,
        m: &Message,
        to: Ipv4Addr,
        deadline: Instant,
        what: &'static str,
        wanted: impl Fn(&Message) -> bool,
    ) -> Result<Message, DhcpError> {
        let started = Instant::now();
        let mut sends = 0u32;
        let mut delay = FAST_RESEND.min(self.timing.resend_max);
        let mut buf = vec![0u8; MAX_MESSAGE];
        loop {
            self.send(m, to)?;
            let wait_end = (Instant::now() + delay.min(self.timing.timeout)).min(deadline);
            loop {
                if self.stopped.load(Ordering::SeqCst) {
                    return Err(DhcpError::Stopped {
                        ifname: self.ifname.clone(),
                    });
                }
                let now = Instant::now();
                if now >= wait_end {
                    break;
                }
                let io = |source| DhcpError::Socket {
                    ifname: self.ifname.clone(),
                    source,
                };
                self.socket
                    .set_read_timeout(Some(wait_end - now))
                    .map_err(io)?;
                match self.socket.recv(&mut buf) {
                    Ok(n) => {
                        let Ok(reply) = Message::decode(&buf[..n]) else {
                            continue;
                        };
                        if reply.op == 2 && reply.xid == m.xid && wanted(&reply) {
                            return Ok(reply);
                        }
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock
                                | std::io::ErrorKind::TimedOut
                                | std::io::ErrorKind::Interrupted
                        ) => {}
                    Err(e) => return Err(io(e)),
                }
            }
            if Instant::now() >= deadline {
                return Err(DhcpError::NoAnswer {
                    what,
                    ifname: self.ifname.clone(),
                    after: started.elapsed(),
                });
            }
            sends += 1;
            delay = match sends {
                s if s < FAST_RESENDS => delay,
                s if s == FAST_RESENDS => FIRST_RESEND,
                _ => delay * 2,
            }
            .min(self.timing.resend_max);
        }
    }
}

/// A UDP socket on port 68 of `ifname`, in the calling thread's namespace.
fn bound_socket(ifname: &str) -> std::io::Result<UdpSocket> {
    let fd = socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    setsockopt(&fd, sockopt::ReuseAddr, &true)?;
    setsockopt(&fd, sockopt::Broadcast, &true)?;
    setsockopt(&fd, sockopt::BindToDevice, &OsString::from(ifname))?;
    bind(
        std::os::fd::AsRawFd::as_raw_fd(&fd),
        &SockaddrIn::new(0, 0, 0, 0, CLIENT_PORT),
    )?;
    Ok(UdpSocket::from(fd))
}

impl From<NetError> for DhcpError {
    fn from(e: NetError) -> DhcpError {
        DhcpError::Net(e)
    }
}
