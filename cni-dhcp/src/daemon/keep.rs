//! The thread that keeps one lease: renewal at T1, rebinding at T2, a
//! new lease after a DHCPNAK, the interface down when the lease expires,
//! the end when the interface is gone, release when told to stop.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::client::{Client, Stopper};
use crate::lease::Lease;
use crate::DhcpError;

/// A lease the daemon holds, and the thread that keeps it.
pub(super) struct Held {
    /// The network's name, for GC.
    pub(super) network: String,
    /// The attachment, for GC.
    pub(super) container_id: String,
    pub(super) ifname: String,
    /// The lease as last granted: the keeper replaces it on each renewal,
    /// rebinding or new lease, and ADD answers from it.
    pub(super) lease: Shared,
    pub(super) stop: Sender<()>,
    /// Ends an exchange under way, so stopping does not wait for it.
    pub(super) stopper: Stopper,
    pub(super) keeper: JoinHandle<()>,
}

/// The lease a keeper holds, shared with the daemon.
pub(super) type Shared = Arc<Mutex<Lease>>;

/// The lease held now.
pub(super) fn current(shared: &Shared) -> Lease {
    shared
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// Stops the thread keeping a lease, which releases it, and waits for it;
/// a renewal under way is cut short (Go: `DHCPLease.Stop` cancels the
/// lease's context).
pub(super) fn stop_keeping(held: Held) {
    let _ = held.stop.send(());
    held.stopper.stop();
    let _ = held.keeper.join();
}

/// How long to wait after a failed renewal before the next try.
const RETRY_PAUSE: Duration = Duration::from_secs(5);

/// Keeps `lease` until told to stop, then releases it: renews at T1
/// (unicast to its server), rebinds at T2 (broadcast), and, as the
/// reference does, stops early in three cases:
///
/// - the interface no longer exists (looked up by name at the start of
///   every round): maintenance ends, nothing is released;
/// - the lease expires without being renewed or rebound: the interface
///   is brought down and maintenance ends;
/// - the server answers a renewal or rebinding with a DHCPNAK: the lease
///   is gone, so the daemon acquires a new one (DISCOVER) and keeps that.
///   RFC 2131 section 4.4.5 returns to INIT at once; the reference keeps
///   retrying the renewal and starts over (`acquire`) at T2, so here a
///   NAK gets the new lease sooner, never later.
///
/// Go: `DHCPLease.maintain`.
pub(super) fn keep(id: &str, client: Client, shared: &Shared, stop: &mpsc::Receiver<()>) {
    let mut lease = current(shared);
    let mut next = lease.renew_at();
    loop {
        let wait = next
            .min(lease.expires_at())
            .saturating_duration_since(Instant::now());
        match stop.recv_timeout(wait) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                eprintln!("dhcp daemon: {id}: releasing lease {}", lease.address);
                if let Err(e) = client.release(&lease) {
                    eprintln!("dhcp daemon: {id}: failed to release: {e}");
                }
                return;
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        // Go: checkLinkExistsWithBackoff. A lookup that fails (rather
        // than finding nothing) is tried again next round.
        match client.link_exists() {
            Ok(true) => {}
            Ok(false) => {
                eprintln!(
                    "dhcp daemon: {id}: interface {} no longer exists, terminating lease maintenance",
                    client.ifname()
                );
                return;
            }
            Err(e) => eprintln!("dhcp daemon: {id}: cannot look up the interface: {e}"),
        }
        let now = Instant::now();
        if now >= lease.expires_at() {
            eprintln!(
                "dhcp daemon: {id}: lease {} expired, bringing interface {} down",
                lease.address,
                client.ifname()
            );
            if let Err(e) = client.set_down() {
                eprintln!("dhcp daemon: {id}: {e}");
            }
            return;
        }
        let rebinding = now >= lease.rebind_at();
        let until = if rebinding {
            lease.expires_at()
        } else {
            lease.rebind_at()
        };
        let verb = if rebinding { "rebinding" } else { "renewing" };
        eprintln!("dhcp daemon: {id}: {verb} lease {}", lease.address);
        let extended = match client.extend(&lease, rebinding, until) {
            Err(DhcpError::Nak { .. }) => {
                eprintln!(
                    "dhcp daemon: {id}: the server refused lease {} (DHCPNAK), acquiring a new one",
                    lease.address
                );
                client.acquire().map(|new| (new, "new lease acquired"))
            }
            Ok(extended) if rebinding => Ok((extended, "lease rebound")),
            Ok(extended) => Ok((extended, "lease renewed")),
            Err(e) => Err(e),
        };
        match extended {
            Ok((kept, how)) => {
                lease = kept;
                *shared.lock().unwrap_or_else(PoisonError::into_inner) = lease.clone();
                next = lease.renew_at();
                eprintln!(
                    "dhcp daemon: {id}: {how}, expires in {:?}: {}",
                    lease.lease_time, lease.address
                );
            }
            Err(e) => {
                eprintln!("dhcp daemon: {id}: {e}");
                next = Instant::now() + RETRY_PAUSE;
            }
        }
    }
}
