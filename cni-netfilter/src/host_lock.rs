//! One writer at a time among our own processes on a host, for the
//! transactions that list rules and then change them.

use std::fs::{File, OpenOptions};

use nix::fcntl::{Flock, FlockArg};

/// The lock file of our iptables list-then-restore transactions. Not
/// `/run/xtables.lock`: `iptables-legacy-restore -w` takes that one itself.
/// It serializes the IPv4 tables' transactions; the IPv6 tables have
/// [`IP6TABLES_LOCK`], so the two families of one plugin run side by side.
pub const IPTABLES_LOCK: &str = "/run/cni-netfilter-iptables.lock";

/// The lock file of our ip6tables list-then-restore transactions: the
/// IPv6 twin of [`IPTABLES_LOCK`]. A family's listing says nothing of the
/// other family's tables, so one lock each is enough.
pub const IP6TABLES_LOCK: &str = "/run/cni-netfilter-ip6tables.lock";

/// The lock file of our nftables batches that were built from a listing.
/// The kernel refuses such a batch when another writer committed since the
/// listing (`ERESTART`); among our own processes (32 pods of one node
/// deleting at once) taking turns is what keeps every one from starving.
pub const NFTABLES_LOCK: &str = "/run/cni-netfilter-nftables.lock";

/// `path` locked exclusively, waited for as `iptables -w` waits for its
/// own; none where it cannot be opened (a read-only `/run`), which leaves
/// only the caller's retry.
pub(crate) fn host_lock(path: &str) -> Option<Flock<File>> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok()?;
    Flock::lock(file, FlockArg::LockExclusive).ok()
}
