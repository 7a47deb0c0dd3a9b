//! Where reservations live: the [`Store`] trait every store implements, and
//! the values it and the planner exchange ([`State`] read, [`Assigned`]
//! written). This module is below both: the planner ([`crate::plan`]) and
//! each store import it, neither imports the other (as host-local's
//! allocator and disk store both import `backend/store.go`).
//!
//! A store only reads and writes; it never decides which address to hand
//! out ([`crate::plan`] does). Its one rule is that a reservation is
//! written only if its address is still free, all of an ADD's addresses or
//! none ([`Store::reserve`]).
//!
//! Every store of this crate passes one suite of behaviours, written once
//! against this trait (`tests/tests/ipam_stores/` in the repository:
//! reserve all or nothing, release by attachment and by an older
//! reservation's container id, last reserved, strays, GC in its three
//! states, concurrent reservers). A new store is tested by giving that suite
//! a backend.
//!
//! Go: `backend.Store` in host-local (`Lock`, `Reserve`, `LastReservedIP`,
//! `ReleaseByID`, `GetByID`).

#[cfg(feature = "etcd")]
pub mod etcd;
pub mod file;

use std::fmt;
use std::net::IpAddr;

use cni_types::{Attachment, Error, Extra};

use crate::range::{Range, RangeSet};

/// A reserved address and who holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    /// The address.
    pub ip: IpAddr,
    /// Who holds it.
    pub owner: Owner,
    /// Whether it was written from this node: only those are matched by
    /// DEL, CHECK, GC and a repeated ADD. Always true in a node-local
    /// store.
    pub local: bool,
}

/// Who holds a reservation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// An attachment: a container id and an interface name.
    Attachment(Attachment),
    /// A container id alone: an older host-local's reservation, which
    /// belongs to the container whatever its interface.
    Container(String),
    /// Something no plugin wrote (a directory, a symbolic link, binary
    /// content): its address is taken, and no DEL or GC ever removes it.
    /// Holds why, for the message naming it.
    Unknown(String),
}

impl Reservation {
    /// A reservation of this node held by `owner`.
    pub fn new(ip: IpAddr, owner: Owner) -> Reservation {
        Reservation {
            ip,
            owner,
            local: true,
        }
    }

    /// Held by `attachment` on this node.
    pub fn held_by(&self, attachment: &Attachment) -> bool {
        self.local
            && matches!(&self.owner, Owner::Attachment(a)
            if a.container_id == attachment.container_id.trim() && a.ifname == attachment.ifname)
    }

    /// Held by container `id` on this node in the older format, without an
    /// interface.
    pub fn held_by_legacy(&self, id: &str) -> bool {
        self.local && matches!(&self.owner, Owner::Container(c) if c == id.trim())
    }

    /// Whether this belongs to `attachment`: written for it, or an older
    /// reservation of its container (no interface recorded), on this node.
    pub fn belongs_to(&self, attachment: &Attachment) -> bool {
        self.held_by(attachment) || self.held_by_legacy(&attachment.container_id)
    }

    /// `container "c1", interface "eth0"`, for messages.
    pub fn describe_owner(&self) -> String {
        match &self.owner {
            Owner::Attachment(a) => {
                format!("container {:?}, interface {:?}", a.container_id, a.ifname)
            }
            Owner::Container(id) => format!("container {id:?}"),
            Owner::Unknown(why) => format!("an entry no plugin wrote ({why})"),
        }
    }
}

/// What a store holds for one network, read at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    /// Every reserved address, of every node.
    pub held: Vec<Reservation>,
    /// Per range set, the address last handed out, where the next search
    /// starts.
    pub last_reserved: Vec<Option<IpAddr>>,
    /// Entries that are not what their names say, skipped (the plugin names
    /// them on stderr). Entries named like an address are also in `held`,
    /// as [`Owner::Unknown`].
    pub skipped: Vec<Skipped>,
    /// Entries named like an address whose content could not be read (also
    /// in `held` as [`Owner::Unknown`] and in `skipped`): any attachment's,
    /// so a DEL fails rather than miss its own.
    pub unreadable: Vec<Skipped>,
    /// Per range set, where a new address may come from when the store
    /// narrows it (the etcd store: the addresses of the node's own blocks,
    /// each a part of one of the set's ranges with that range's subnet and
    /// gateway); `None`, or no entry, for the whole set. An empty list: no
    /// address may be handed out ([`crate::RANGE_EXHAUSTED`]). Requested
    /// addresses are not narrowed.
    pub pools: Vec<Option<Vec<Range>>>,
}

/// An entry of the store that is not what its name says, skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The entry: a path or a key.
    pub entry: String,
    /// What is wrong with it.
    pub why: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "skipping {}: {}", self.entry, self.why)
    }
}

/// An address chosen for one range set ([`crate::plan`]'s answer), which
/// [`Store::reserve`] writes when it is new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assigned {
    /// The range set's index.
    pub set: usize,
    /// The address.
    pub ip: IpAddr,
    /// The range's subnet prefix length.
    pub prefix: u8,
    /// The range's gateway.
    pub gateway: IpAddr,
    /// Whether it must be reserved now (else the attachment holds it).
    pub new: bool,
}

/// What [`Store::reserve`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reserved {
    /// Every address is reserved, visible to every later read.
    Done,
    /// This address was taken meanwhile (another node, or something that
    /// ignores the lock): nothing was written. Read again and re-plan.
    Taken(IpAddr),
}

/// What a store is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// ADD: create the network's storage when missing.
    Create,
    /// DEL and GC: change existing storage.
    Change,
    /// CHECK and STATUS: read only.
    Read,
}

/// A network's reservations.
///
/// A store that locks (the file store) holds its lock from
/// [`Store::open`] until it is dropped; one that does not (etcd) makes
/// [`Store::reserve`] and [`Store::release`] conditional instead.
pub trait Store: Sized {
    /// This store's keys of the `ipam` section, validated.
    type Config;

    /// Reads this store's keys of the `ipam` section (`dataDir`; `store`),
    /// before anything is touched. A `store` this type does not serve is
    /// code 7 naming `ipam.store.type`; any other error, code 7 naming the
    /// field.
    fn config(ipam: &Extra) -> Result<Self::Config, Error>;

    /// Opens the reservations of network `network`. `None` for
    /// [`Access::Change`] and [`Access::Read`] when nothing was ever
    /// reserved (and then nothing is created).
    fn open(network: &str, cfg: &Self::Config, access: Access) -> Result<Option<Self>, Error>;

    /// Where the reservations are, for messages (`/var/lib/cni/networks/net`).
    fn describe(&self) -> String;

    /// Tells the store the network's range sets, right after
    /// [`Store::open`]: a store that cuts them into parts (the etcd store's
    /// blocks) checks its configuration against them (code 7 naming the
    /// field) and narrows [`State::pools`]. Nothing by default.
    fn use_ranges(&mut self, sets: &[RangeSet]) -> Result<(), Error> {
        let _ = sets;
        Ok(())
    }

    /// The addresses the request says the attachment holds, before
    /// [`Store::read`]: a DEL's or CHECK's `prevResult`, which libcni
    /// sends from its cache of the ADD's result. A store that would
    /// otherwise list every reservation to find the attachment's (the
    /// etcd store while a large layout before blocks drains) may look
    /// these up instead; what [`Store::read`] returns must still hold
    /// every reservation of the attachment it can find. Nothing by
    /// default.
    fn expect(&mut self, ips: &[IpAddr]) {
        let _ = ips;
    }

    /// Everything the planner needs, for `sets` range sets.
    fn read(&mut self, sets: usize) -> Result<State, Error>;

    /// Only the reserved addresses, for STATUS (which runtimes poll every
    /// few seconds): no owners, nothing skipped.
    fn held_addresses(&mut self) -> Result<Vec<IpAddr>, Error>;

    /// The indices of `sets` in which no address is left to hand out, for
    /// STATUS (which runtimes poll every few seconds): ADD cannot succeed
    /// while there is one. By default from [`Store::held_addresses`]; a
    /// store that can ask about one address cheaply (the file store)
    /// probes the few addresses an ADD would try first and lists the
    /// reservations only when all of them are taken; the etcd store
    /// answers from the node's index and counted reads.
    fn exhausted_sets(&mut self, sets: &[RangeSet]) -> Result<Vec<usize>, Error> {
        let held = self.held_addresses()?;
        Ok(crate::plan::exhausted_sets(sets, &held))
    }

    /// Reserves every address of `new` for `attachment`, and records each as
    /// its set's last reserved address: all or nothing, visible to every
    /// later read on `Done`.
    fn reserve(&mut self, new: &[Assigned], attachment: &Attachment) -> Result<Reserved, Error>;

    /// Removes these reservations, each only if it still holds what was
    /// read. [`Owner::Unknown`] entries and other nodes' are never removed.
    fn release(&mut self, gone: &[&Reservation]) -> Result<(), Error>;
}
