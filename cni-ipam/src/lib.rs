//! The IPAM engine of CNI plugins: configuration, ranges, a pure planner,
//! and stores, so an IPAM plugin with another store or another policy is a
//! page of code.
//!
//! What host-local's `backend/allocator` and `backend/store.go` are to Go
//! plugins (containernetworking/plugins), this crate is to Rust ones.
//!
//! - [`config`]: the `ipam` section, host-local's keys, read as written
//!   then validated in full before anything is touched; errors
//!   ([`ConfigError`](config::ConfigError)) name the field
//!   (`ipam.ranges[0][1].rangeStart`).
//! - [`range`]: ranges, range sets, and host-local's order of walking them.
//! - [`plan`]: pure: configuration + what is held + the attachment + what
//!   was requested -> one address per range set. No I/O.
//! - [`store`]: the [`Store`](store::Store) trait and the values the
//!   planner and the stores exchange, below both; each store reads its own
//!   keys. [`store::file`] keeps host-local's on-disk format and lock;
//!   `store::etcd` (feature `etcd`) shares one range among every node of a
//!   cluster, in blocks each node owns, so that an ADD reads its node's
//!   keys only.
//! - [`gc`]: which reservations a GC releases: none without a list.
//! - [`Ipam`]: the plugin (ADD, DEL, CHECK, GC, STATUS) over any store;
//!   [`host_local`]: the plugin under host-local's name, as its binary and
//!   the plugins that carry it built in run it.
//!
//! ```
//! use cni_ipam::{store::file::FileStore, Ipam};
//! use cni_skel::TestRequest;
//!
//! let data = tempfile::tempdir().unwrap();
//! let conf = serde_json::json!({
//!     "cniVersion": "1.1.0", "name": "net", "type": "bridge",
//!     "ipam": {"type": "ipam-file", "dataDir": data.path(),
//!              "ranges": [[{"subnet": "10.1.2.0/24"}]]}
//! });
//! let out = TestRequest::new("ADD")
//!     .env("CNI_CONTAINERID", "c1")
//!     .env("CNI_IFNAME", "eth0")
//!     .env("CNI_NETNS", "/var/run/netns/c1")
//!     .env("CNI_PATH", "/opt/cni/bin")
//!     .stdin(conf.to_string().as_str())
//!     .run(&Ipam::<FileStore>::new("ipam-file"), &cni_version::PluginInfo::all());
//! assert_eq!(out.json()["ips"][0]["address"], "10.1.2.2/24");
//! ```
//!
//! # Where we deliberately differ from host-local
//! - GC and STATUS exist. GC without `cni.dev/valid-attachments` releases
//!   nothing: the runtime did not say what is in use.
//! - An entry of the store named like an address that no plugin wrote
//!   (a directory, a symlink, binary content) is taken and named on stderr,
//!   never followed or removed.
//! - The etcd store cuts the ranges into blocks owned by nodes: a node
//!   walks host-local's order within its own blocks, so two nodes' first
//!   addresses are in different blocks, not next to each other, and
//!   `last_reserved` is kept per node. A dead node's blocks come back by
//!   an explicit reclaim (`ipam-etcd reclaim-node NODE`), never by a
//!   timeout.
//! - An ADD that loses a race for an address to another node (etcd store)
//!   retries with the free address a random short distance further, not
//!   the next one, so that the losers do not race again for one address.
//! - `runtimeConfig.ipRanges` replaces the configured ranges; host-local
//!   allocates from both.
//! - `args.cni.ips` and `runtimeConfig.ips` override `CNI_ARGS` `IP`
//!   (CONVENTIONS.md); host-local uses all three. Unknown `CNI_ARGS` keys
//!   are ignored; host-local rejects them without `IgnoreUnknown=1`.
//! - A gateway outside its subnet and `rangeStart` after `rangeEnd` are
//!   configuration errors; host-local accepts them.
//! - A failed ADD leaves `last_reserved_ip` untouched; host-local may have
//!   advanced it for addresses it then released.
//! - Errors carry CNI codes (7 for configuration, 5 for I/O, 100.. below)
//!   where host-local answers 999 for all; a repeated ADD, which both
//!   refuse, is [`DUPLICATE_ALLOCATION`].
//! - A relative `dataDir` is refused (code 7): host-local takes it from its
//!   working directory, the runtime's, so two runtimes would keep two
//!   stores and hand one address out twice.
//! - A `rangeStart` on the network address (`::` in `::/0`) or a
//!   `rangeEnd` on the IPv4 broadcast address is refused (code 7 naming
//!   it); host-local's defaults leave both out, but it hands them out when
//!   named.
//! - The file store's lock is waited for at most
//!   [`LOCK_TIMEOUT`](store::file::LOCK_TIMEOUT), then code 11; host-local
//!   waits forever. CHECK and STATUS take no lock (nor does host-local's
//!   CHECK), so they read a store they cannot write and never wait behind
//!   an ADD; STATUS looks up the few addresses an ADD would try next
//!   rather than listing every reservation.
//! - DEL fails (code 5 naming it) when an entry of the store cannot be
//!   read: it may be the attachment's; host-local skips it and succeeds.

pub mod config;
pub mod dns;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod gc;
pub mod host_local;
pub mod plan;
mod plugin;
pub mod range;
pub mod store;
#[cfg(test)]
mod test_values;

pub use plugin::Ipam;

use cni_types::Code;

/// A requested address is already reserved.
pub const ADDRESS_UNAVAILABLE: Code = Code(100);
/// A requested address is in no range, is a gateway, or shares a range set
/// with another requested address.
pub const ADDRESS_NOT_ALLOCATABLE: Code = Code(101);
/// ADD found no free address in a range set.
pub const RANGE_EXHAUSTED: Code = Code(102);
/// CHECK found no reservation for the attachment.
pub const NOT_RESERVED: Code = Code(103);
/// ADD for an attachment that already holds an address in a range set:
/// refused, and nothing changed. SPEC-1.0.0: "A runtime should not call
/// `ADD` twice (without an intervening DEL) for the same
/// `(CNI_CONTAINERID, CNI_IFNAME)` tuple." Refusing it (as host-local does,
/// "duplicate allocation is not allowed", with code 999) keeps a caller
/// that cleans up after a failed ADD (`cni_invoke::add_with_cleanup`) from
/// releasing the address of the live attachment: the repeated ADD fails
/// here, before anything could be cleaned up.
pub const DUPLICATE_ALLOCATION: Code = Code(104);
