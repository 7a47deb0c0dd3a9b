//! The `dhcp` IPAM plugin's machinery: a DHCPv4 client that runs in the
//! container's network namespace, a daemon that holds, renews and releases
//! its leases, and the plugin half that asks the daemon.
//!
//! A DHCP lease outlives the plugin process that asked for it (it must be
//! renewed at T1 and released on DEL), so, as in the reference, the work
//! is split in two: `dhcp daemon` runs for as long as containers do, and
//! the plugin ([`DhcpPlugin`]) forwards each command to it over a Unix
//! socket.
//!
//! - [`message`]: DHCPv4 messages and options, encoded by hand.
//! - [`client`]: DISCOVER/OFFER/REQUEST/ACK with retries, RENEW, REBIND,
//!   RELEASE, on a socket bound to the container's interface.
//! - [`lease`]: a granted lease, its timers and its CNI result.
//! - [`config`]: the `ipam` section (`daemonSocketPath`, `request`,
//!   `provide`, `priority`).
//! - [`daemon`]: the daemon and its flags.
//! - [`rpc`]: what the plugin and the daemon say to each other: the
//!   reference's protocol, Go's `net/rpc` over HTTP, carrying [`gob`].
//! - [`gob`]: Go's `encoding/gob`, for the types those calls carry.
//! - [`sanity`]: which offers make no sense (refused, declined).
//!
//! ```no_run
//! // The binary's main: `dhcp daemon [flags]` runs the daemon, anything
//! // else is the plugin.
//! let args: Vec<String> = std::env::args().collect();
//! if args.get(1).map(String::as_str) == Some("daemon") {
//!     let options = cni_dhcp::daemon::DaemonOptions::from_args(args[2..].iter().cloned());
//!     # let _ = options;
//! } else {
//!     cni_skel::run(&cni_dhcp::DhcpPlugin, &cni_version::PluginInfo::all(), "CNI dhcp plugin");
//! }
//! ```
//!
//! # Where we deliberately differ
//! - None in the protocol: the two halves speak the reference's, Go's
//!   `net/rpc` over HTTP with [`gob`] ([`rpc`]), byte for byte, so our
//!   plugin works with the reference's daemon and the reference's plugin
//!   with ours. Our daemon also serves `DHCP.Check`, `DHCP.GC` and
//!   `DHCP.Status`; against the reference's daemon, which does not, our
//!   plugin's CHECK asks `DHCP.Allocate` as the reference's does, GC
//!   releases nothing and STATUS only checks that the daemon answers.
//! - The messages are the reference's ("error dialing DHCP daemon: ...",
//!   "error calling DHCP.Allocate: no more tries"), the codes ours: a
//!   daemon that is not running, or that found no server in time, is code
//!   11 (try again later), and for STATUS code 50 (not available); the
//!   reference's plugin answers 999. Nothing is changed on the host either
//!   way.
//! - CHECK succeeds when the daemon holds the attachment's lease and fails
//!   otherwise; the reference's CHECK asks for a lease, acquiring one when
//!   none is held. STATUS exists, and GC releases the network's leases of
//!   attachments not in `cni.dev/valid-attachments` (none without a list);
//!   the reference has neither.
//! - An offer that makes no sense is refused, and such an ACK declined
//!   (DHCPDECLINE), and the client keeps trying ([`sanity`]): an address
//!   that is unspecified, broadcast, loopback, multicast or class E, a
//!   zero or non-contiguous mask, the subnet's network or broadcast
//!   address, a router outside the subnet. When time runs out the ADD
//!   fails with code 11, "no more tries: the DHCP server S offered X ...,
//!   refused". The reference accepts whatever the server sends (a mask of
//!   0.0.0.0 makes every IPv4 destination on-link).
//! - The client receives on a UDP socket bound to the interface, not on a
//!   raw socket, so DISCOVER and the first REQUEST always set the
//!   broadcast flag (`-broadcast` also sets it when renewing).
//! - Without `-resendtimeout`, an acquisition gives up after 29 s, when
//!   the reference's daemon v1.9.1 does on a silent network, rather than
//!   after the 208 s its flag's default reads. A DEL or GC of the
//!   attachment, or its plugin going away, stops an acquisition at once
//!   (the reference finishes it and keeps the lease); connections are
//!   served by at most [`daemon::MAX_CONNECTIONS`] threads, each read
//!   with a deadline ([`rpc::READ_DEADLINE`]).
//! - Systemd socket activation (`LISTEN_FDS`) is not supported.
//! - A stale socket file left by a daemon that died is replaced; a live
//!   daemon's is refused ([`DhcpError::AlreadyRunning`]).
//! - Keeping a lease (Go: `maintain`): at T2 the daemon rebinds with a
//!   broadcast REQUEST for the same address (RFC 2131 section 4.4.5), where
//!   the reference starts over with DISCOVER; a DHCPNAK of a renewal starts
//!   over at once, where the reference retries the renewal until T2. As
//!   in the reference, a lease stops being kept when its interface is gone
//!   and brings the interface down when it expires.

pub mod client;
pub mod config;
pub mod daemon;
pub mod gob;
pub mod lease;
pub mod message;
mod plugin;
pub mod rpc;
pub mod sanity;

use std::path::PathBuf;
use std::time::Duration;

use cni_types::{Code, Error};

pub use plugin::DhcpPlugin;

/// What went wrong inside the client or the daemon.
#[derive(Debug, thiserror::Error)]
pub enum DhcpError {
    /// The network configuration is not valid JSON of the expected shape.
    #[error("invalid network configuration: {0}")]
    Config(#[source] serde_json::Error),
    /// An option in `request` or `provide` cannot be sent.
    #[error("{field}: cannot use option {option:?}: {why}")]
    BadOption {
        /// The configuration field (`ipam.request[0].option`).
        field: String,
        /// The option as written.
        option: String,
        /// Why not.
        why: String,
    },
    /// A daemon flag is unknown or has a bad value.
    #[error("flag -{flag}: {why}")]
    Flag {
        /// The flag's name.
        flag: String,
        /// What is wrong.
        why: String,
    },
    /// The namespace or the interface.
    #[error(transparent)]
    Net(cni_net::NetError),
    /// The client's socket failed.
    #[error("DHCP socket on {ifname}: {source}")]
    Socket {
        /// The container's interface.
        ifname: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// No server answered in time.
    #[error("no {what} on {ifname} after {after:?}")]
    NoAnswer {
        /// The reply waited for.
        what: &'static str,
        /// The container's interface.
        ifname: String,
        /// How long the client tried.
        after: Duration,
    },
    /// The daemon stopped keeping the lease (DEL, GC) while an exchange
    /// was under way.
    #[error("stopped waiting for the DHCP server on {ifname}")]
    Stopped {
        /// The container's interface.
        ifname: String,
    },
    /// Every lease offered until the client gave up made no sense
    /// ([`sanity::refusal`]).
    #[error("the DHCP server {server} offered {why} on {ifname}, refused")]
    Refused {
        /// The container's interface.
        ifname: String,
        /// The last server that offered one (option 54).
        server: std::net::Ipv4Addr,
        /// What was wrong with its last offer.
        why: String,
    },
    /// The server refused the request (DHCPNAK).
    #[error("the DHCP server refused the lease on {ifname} (DHCPNAK)")]
    Nak {
        /// The container's interface.
        ifname: String,
    },
    /// A server's message is not DHCP.
    #[error("malformed DHCP message: {0}")]
    Malformed(String),
    /// The server's ACK lacks an option the result needs.
    #[error("DHCP option {0} not found in the server's reply")]
    MissingOption(&'static str),
    /// A file of the daemon (socket, pid file).
    #[error("failed to {op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// Another daemon answers on the socket.
    #[error("a DHCP daemon already listens on {0}")]
    AlreadyRunning(PathBuf),
    /// Signals could not be blocked or waited for.
    #[error("signal handling failed: {0}")]
    Signal(#[source] std::io::Error),
}

impl From<DhcpError> for Error {
    /// A configuration error is code 7 (6 when it is not JSON), a bad
    /// namespace code 8 (as `cni_net` decides), a server that does not
    /// answer code 11 (try again later); the rest 999, as the reference.
    fn from(e: DhcpError) -> Error {
        match e {
            DhcpError::Net(net) => net.into(),
            DhcpError::Config(ref source) => Error::decoding("the network configuration", source),
            DhcpError::BadOption { ref field, .. } => Error::invalid_config(field, &e),
            DhcpError::NoAnswer { .. } => Error::try_again_later(
                e.to_string(),
                "is a DHCP server reachable on the interface?",
            ),
            other => Error::new(Code::INTERNAL, other.to_string()),
        }
    }
}
