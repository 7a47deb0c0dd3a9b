//! Reservations in etcd, shared by every node of a cluster (feature
//! `etcd`), in blocks of addresses owned by nodes.
//!
//! Selected by `"store": {"type": "etcd", "endpoints": ["http://127.0.0.1:2379"],
//! "prefix": "/cni-ipam", "node": "node-1"}` in the `ipam` section, with
//! `blockSize` (IPv4 prefix length, default 26 or the smallest subnet),
//! `blockSizeV6` (default 122) and `strictBlocks` ([`EtcdConfig`]).
//!
//! **Blocks.** The network's ranges are cut into aligned blocks of the
//! configured size. A node claims a free block and hands out addresses
//! from its own blocks only, so an ADD reads its node's keys, never the
//! network's: one request of a bounded size (`read.rs`: the node's index,
//! and the keys of the blocks the node's hint names, `hint.rs`; a second
//! when the index lists other blocks than the hint) and the reservation
//! (`reserve.rs`), whatever
//! the number of nodes and reservations. When its blocks are full it
//! claims another (passing over blocks known full); when no block is
//! free it borrows an address of another node's block, unless
//! `strictBlocks`, when the ADD fails with [`crate::RANGE_EXHAUSTED`].
//! Before a claim the owners' keys are counted; when there are as many as
//! the ranges have blocks, no claim is tried (a claim lists the owners'
//! keys, one per block, otherwise). An ADD served by the node's own
//! blocks counts nothing that grows with the cluster. Borrowing counts
//! the keys of the blocks (`count_only`, 60 per request, from a random
//! block, at most 4,096) and reads the keys of the first with room: never
//! every reservation. That block becomes the node's *lender* in its hint:
//! the next ADD's first request also reads the lender's keys and counts
//! the owners, so that while the lender has room a borrowing ADD is that
//! request and the reservation, as any other (six requests before); the
//! lender is forgotten once the node's own blocks serve again.
//!
//! **STATUS** reads the node's index and the count of claimed blocks
//! (`owners/`), in one request: a range set with a block nobody claimed
//! has room. Only when every block is claimed (or old keys remain) are
//! the reservations counted, and only a set they nearly fill is counted
//! block by block, as borrowing does. Until the network is marked
//! upgraded, the same request reads the old layout's recorded size
//! (`old_size`, see Upgrade), never a count of `ips/`.
//!
//! **Keys**, under `<prefix>/<network>/` (a block is named
//! `<first address>-<prefix length>`, `10.1.2.64-26`; a node's name has
//! `%` and `/` escaped):
//!
//! - `owners/<block>`: `{"node": ..}`, the block's owner;
//! - `blocks/<block>/<address>`: a reservation, `{"containerID", "ifname",
//!   "node"}`, in the key space of the block holding the address, whoever
//!   wrote it (its owner, or a node that borrowed it), so the owner sees
//!   every address of its block;
//! - `nodes/<node>/blocks/<block>`: the node's index of its blocks (empty
//!   value);
//! - `nodes/<node>/borrowed/<address>`: a reservation the node wrote
//!   outside its blocks (borrowed, or requested), naming the block;
//! - `nodes/<node>/last_reserved/<range set index>`: where the node's next
//!   search starts;
//! - `ips/<address>` and `last_reserved/<index>`: the layout before
//!   blocks. Never written; an address held there is honoured (see
//!   Upgrade);
//! - `upgraded`: `{"node": ..}`, written once by the first node to find
//!   no key under `ips/` (see Upgrade);
//! - `old_size`: `{"count": .., "node": ..}`, until the network is marked
//!   upgraded: at most how many reservations the old layout holds and
//!   has had moved into blocks (see Upgrade).
//!
//! **Transactions, and the invariants they keep.**
//!
//! - *Claim*: if `owners/<b>` does not exist, put it and the node's index
//!   key, and read `blocks/<b>/` in the same transaction. A block has one
//!   owner; a claim whose answer was lost is found again in the node's
//!   index.
//! - *Reserve*: if, for every address, its key and its old-layout key do
//!   not exist (and, in an owned block, `owners/<b>` is still this node's),
//!   put the reservations, the `borrowed` index keys of the addresses
//!   outside the node's blocks, and the last reserved addresses. An address
//!   is never held twice: both keys an address can have are compared. What
//!   a reservation writes names its attachment and is found from its node's
//!   index, so DEL or GC releases it after a kill at any point.
//! - *Release*: delete a reservation (and its `borrowed` key) only while it
//!   holds what was read.
//! - *Give back a block*: if `owners/<b>` is this node's and no key lies
//!   under `blocks/<b>/`, delete both the owner and the index key. A DEL or
//!   GC gives back the node's blocks left empty, but one (so that a node
//!   whose last container goes does not claim anew at the next ADD). An
//!   address another node borrowed keeps the block owned.
//! - *Reclaim a dead node* ([`EtcdStore::reclaim_node`], `ipam-etcd
//!   reclaim-node NODE`): explicit, never guessed from a silence: releases
//!   every reservation the node wrote, gives back its blocks and removes
//!   its index.
//!
//! **Upgrade** from the layout before blocks (`ips/<address>`, written by
//! the previous release; `upgrade.rs`). Each read of an ADD, DEL, GC or
//! CHECK counts the old layout's keys (one count, in the same request as
//! the node's index) until the network is marked `upgraded`: the first
//! DEL, GC or ADD to count none writes the mark (if `ips/` is still empty
//! and the mark absent, in one transaction), and reads then ask for the
//! mark instead, in the same transaction (its comparison). The count is
//! not free once the keys are moved: etcd counts a prefix by walking
//! every key it held since its last compaction, and an etcd nobody
//! compacts keeps the moved keys' tombstones (100,000 of them cost every
//! ADD about 5 ms here). A wiped network loses its mark with the rest, and is counted
//! again. While there are any, a DEL or GC lists them (in pages of 5,000,
//! each request with its own deadline) and moves up to 2,000 into the
//! blocks' key space, from a random place of the listing (nodes upgrading
//! at once move different ones); an ADD lists them while they are at
//! most 2,000 and moves 200 (2,000 moves an ADD, 16 nodes at once, put
//! the ADDs' p99 at 1.5 s with 10,000 old keys; 0.5 s with 200). A move
//! is `blocks/<b>/<address>` with the same value and
//! `nodes/<node>/borrowed/<address>` in the index of the node the value
//! names, the old key deleted, in one transaction comparing the old key's
//! value and the new key's absence (40 per transaction). The address is
//! held throughout, under one key or the other; its container's own DEL
//! and GC release it as any borrowed reservation. What is not moved yet
//! (past the bound, a value naming no node, a key changed meanwhile) is
//! honoured where it is: never handed out again (every reservation also
//! compares the address's old key), matched and released by its own DEL
//! or GC.
//!
//! An old layout of more than 2,000 keys is not listed by an ADD: a
//! listing costs etcd about 11 µs a key (100,000 in 1.1 s here, whatever
//! the page size), and 16 nodes upgrading at once, each listing 100,000
//! on every ADD, ran past the ADD's 15 s (24 of 160 failed with code 11).
//! Such an ADD moves a window of 200 keys from a random one, and reads
//! the old keys of the blocks it allocates from (the node's own, the
//! lender it read) address by address, one request for a few blocks of
//! the default 64 addresses; with blocks of more than 1,024 addresses it
//! lists the old layout whole as before. It does not see an old
//! reservation of its own container outside those blocks (a repeated ADD
//! across the upgrade gets a second address, released with the first by
//! its DEL). Measured (`bench/ipam/upgrade.py`, 100,000 old keys from the
//! range's first address on, one member): one node's ADDs 56-62 ms while
//! the old layout drains; 16 nodes x 10 ADDs at once in 4.6 s, none
//! failed, nothing handed out twice.
//!
//! A DEL whose request carries a `prevResult` (libcni sends the ADD's
//! result from its cache) does not list an old layout of more than 2,000
//! keys either: a container's old reservation is at its address, which
//! the result names, so the DEL reads the old key of each address of
//! the `prevResult` in the network's ranges and moves a window of 200.
//! Without a `prevResult` (or one naming no address of the network) it
//! lists as before. CHECK (whose request always has one) reads the same
//! keys and moves nothing. GC lists: it must find every stale
//! reservation. Measured (16 nodes DELing 10 containers each at once,
//! 100,000 old keys): 160 DELs in 4.3 s, p99 554 ms (30.9 s and 13.3 s
//! listing).
//!
//! STATUS does not count the old layout on every poll (9-28 ms at
//! 100,000 here, on every node every 5 seconds): it reads `old_size`, at
//! most how many reservations the old layout holds *and* has had moved
//! into blocks, written by the first operation to count (STATUS, ADD,
//! DEL or GC): the count of `ips/` plus every key under `nodes/` (each
//! moved reservation leaves its `borrowed/` index key there). Moves
//! keep that sum and releases lower it, so it stays an upper bound; a
//! set whose addresses outnumber what the claimed blocks and that bound
//! can hold has a free address in a block nobody claimed, and nothing
//! more is read. Otherwise (a set nearly full) STATUS counts as before.
//! The record is trusted only while the previous release's
//! `last_reserved/` keys (rewritten with each of its reservations) are
//! older than it, and written only while they still hold what was read
//! with the count; a count that finds more than it says (keys written by
//! hand) records anew. A stale record is recorded anew by the next ADD,
//! DEL or GC, not by STATUS (nodes of the previous release reserving
//! during a rolling upgrade would have every poll of every node write). A key written under `ips/` by hand, without
//! `last_reserved/`, is not seen by STATUS until the next ADD, DEL or
//! GC. The mark deletes the record.
//!
//! Before a block is claimed, what it holds is read (one request): the
//! keys moved into it from the old layout, whoever's they are, and, while
//! the old layout is not listed, its old keys. A full block is passed
//! over rather than claimed, and the next is looked for elsewhere (full
//! blocks come in runs); past 32 full blocks the ADD fails with code 11.
//! A block partly held offers the rest, and a block found full once
//! claimed (a race) makes the ADD claim another (at most 8). STATUS
//! lists the old keys (keys only) only when a range set looks full.
//! Every node must run a plugin with blocks before any ADD uses them:
//! an older plugin reads only `ips/`, and does not see what
//! was moved; an old key it writes after the mark is not listed by
//! anyone, but its address is still never handed out twice (every
//! reservation compares it).
//!
//! **Endpoints and faults.** `endpoints` lists the cluster's members (one
//! is a cluster of one, as before; [`EtcdConfig::endpoints`]). Each
//! request to etcd has one deadline, [`REQUEST_TIMEOUT`], across the
//! members: it starts with the member that answered this process last and
//! goes round the list, each member given an equal share of the time left
//! (one that refuses at once leaves its share to the next). A member that
//! is dead, hung (stopped) or without a leader costs one share of one
//! request; the process then keeps to the member that answered. A member
//! answering a passing state (5xx: no leader, leader changed, request
//! timed out; 412 "not capable" while a restarted member catches up; 408,
//! 409, 429) is passed over like one that does not answer; only a refusal
//! of the request itself is code 999. All members failing is code 11 (try
//! again later) within the deadline, naming them, with nothing written.
//! An answer that is not etcd's (no `header`, a key that is not base64, a
//! count that is not a number, not one response per operation of its
//! kind, a failed transaction naming no taken address) is code 11 quoting
//! it, never read as a lost race.
//! What etcd answers is quoted in errors up to [`MAX_QUOTED`] bytes, with
//! the size of the rest.
//!
//! **During an election** (a leader killed or stopped; etcd's default
//! election timeout is 1 s) requests fail over as above, so an ADD may be
//! answered code 11 after one request's deadline. What holds whatever the
//! members do: every decision to hand out an address is the reservation
//! transaction's comparison (the address's keys absent, the block still
//! this node's), applied once by the cluster, so a lagging member's stale
//! read (an ADD's first read is serializable) can cost a lost race, never
//! a duplicate; claims compare the owner's key the same way. A
//! reservation whose answer was lost (the member died or hung after
//! sending it on) is sent again while two requests' deadlines are left
//! of the ADD's: if it had been applied, the comparison now fails on the
//! attachment's own value, and the ADD reports that address without
//! another read; if not, it applies now. When no answer comes in that
//! window, one last request withdraws it: each key deleted only while it
//! holds this attachment's value (a no-op when it was never applied; a
//! proposal already in the cluster's log is committed, if ever, before
//! the withdrawal). So an ADD either reports its address or fails with
//! code 11 holding nothing, except when etcd stays unreachable for the
//! whole ADD after a transaction it may have applied (an election takes
//! a few seconds; a loaded three-member cluster was seen taking over 5):
//! that reservation names the attachment, so the DEL the runtime "must
//! still" execute after a failed ADD (SPEC-1.0.0, lifecycle) releases
//! it, as does a GC, and a repeated ADD returns that same address. An
//! ADD makes a bounded number of requests (its reads, at most 8 claims,
//! at most 32 lost races within 10 s), each within its deadline, and
//! none past [`OPERATION_DEADLINE`] (15 s) from its start but that
//! withdrawal: the whole ADD answers within it (and one request's
//! deadline) or fails with code 11. `tests/tests/ipam_etcd_cluster.rs`
//! checks this on three members with the leader killed and with a member
//! stopped for 10 s; `tests/tests/ipam_etcd_lost_answers.rs` with the
//! answers to reservations lost on the way back.
//!
//! **Bad keys.** A key that is not what its name says (a block name that
//! is not an aligned block of the configured size, a value that is not a
//! reservation or an owner) is skipped and named on stderr; a reservation
//! key's address stays taken.
//!
//! The client is etcd's own v3 JSON gateway (`POST /v3/kv/range`,
//! `/v3/kv/txn`; keys and values in base64) over plain HTTP with a small
//! blocking client: the plugin stays synchronous, and needs no gRPC
//! stack. TLS is not supported. Requests are typed (`txn.rs`: `Compare`,
//! `Op`, `Txn`) and answers decoded once (`answer.rs`: `Range`,
//! `Response`), each written or read in one place.

mod answer;
mod blocks;
mod claims;
mod client;
mod config;
#[cfg(feature = "fuzzing")]
pub(crate) mod fuzzing;
mod hint;
mod keys;
mod read;
mod reclaim;
mod records;
mod reserve;
mod scan;
mod txn;
mod upgrade;

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use cni_types::{Attachment, Code, Error, Extra};

pub use self::blocks::NotABlock;
use self::blocks::{Block, Sizes};
use self::client::Client;
pub use self::config::{EtcdConfig, DEFAULT_BLOCK_SIZE_V4, DEFAULT_BLOCK_SIZE_V6, DEFAULT_PREFIX};
use self::hint::Hint;
pub use self::hint::HINT_DIR;
pub use self::reclaim::{reclaim_node_of, Reclaimed};
use self::txn::{Compare, Op, Txn};
use crate::range::RangeSet;
use crate::store::{Access, Assigned, Owner, Reservation, Reserved, State, Store};

/// The longest one request to etcd takes, connecting and answering,
/// across all the endpoints it tries.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// The longest an ADD spends on etcd in all, whatever it meets (lost
/// races, claims, members failing over, an election): past it, no
/// request is sent and the ADD fails with code 11.
pub const OPERATION_DEADLINE: Duration = Duration::from_secs(15);

/// The pause between two sendings of a reservation whose answer was lost.
const OUTCOME_PAUSE: Duration = Duration::from_millis(200);

/// Most bytes of an answer quoted in an error; the rest is counted.
pub const MAX_QUOTED: usize = 4096;

/// Most keys released in one transaction (etcd's `--max-txn-ops`, 128 by
/// default, bounds each list of a transaction).
const MAX_TXN_KEYS: usize = 60;

/// Largest answer read from etcd (a /16 fully reserved is ~10 MB).
pub(crate) const MAX_ANSWER: u64 = 256 << 20;

/// One network's reservations in etcd.
#[derive(Debug)]
pub struct EtcdStore {
    client: Client,
    /// `<prefix>/<network>/`.
    root: String,
    node: String,
    /// Whether reads must reflect every write committed before them. An
    /// ADD's first read need not: a stale read can only make its
    /// transaction fail (the address has a key now), never succeed twice.
    /// After a lost race, and for DEL, GC and STATUS, reads are
    /// linearizable.
    linearizable: bool,
    access: Access,
    /// The block sizes in use: given, else the defaults fitted to the
    /// ranges.
    sizes: Sizes,
    /// `blockSize` and `blockSizeV6` as given.
    given: (Option<u8>, Option<u8>),
    strict: bool,
    /// The range sets ([`Store::use_ranges`]); none: no pools, no claims.
    sets: Vec<RangeSet>,
    /// The blocks this node owns, as last read.
    owned: Vec<Block>,
    /// Where each reservation last read lives.
    places: HashMap<IpAddr, Place>,
    /// Reservations keys under each owned block, as last read.
    counts: HashMap<Block, usize>,
    /// Reservations outside the node's keys learned from a lost race, so
    /// that the next plan does not choose them again.
    seen: Vec<Reservation>,
    /// How many blocks are owned, as counted before a claim since the
    /// last read: when every block is, an ADD borrows without listing the
    /// owners.
    owner_count: Option<u64>,
    /// The node's blocks remembered on the node ([`hint`]).
    hint: Hint,
    /// The blocks the node's index lists, as last read or changed by this
    /// store (sorted): what the hint is kept to.
    listed: Vec<Block>,
    /// The block the node last borrowed from, as the hint says or this
    /// store changed it: what the hint keeps beside `listed`.
    lender: Option<Block>,
    /// The lender, when the last read read its keys (into the state, its
    /// reservations placed as borrowed): a borrowing ADD takes from it
    /// without looking further while it has room.
    lender_read: Option<Block>,
    /// Whether this ADD moved its window of the old layout already
    /// ([`EtcdStore::read_old_near`]): once per ADD, however often it reads.
    window_moved: bool,
    /// Whether the last read left the old layout unlisted (too large for
    /// an ADD to list): a claim then reads a block's old keys before
    /// claiming it.
    old_unlisted: bool,
    /// Where a DEL's or CHECK's attachment holds its addresses, as its
    /// `prevResult` says ([`Store::expect`]): their old keys are read
    /// instead of listing an old layout too large to list.
    expected: Vec<IpAddr>,
}

/// Where a reservation's key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// `ips/<address>`, the layout before blocks.
    Old,
    /// `blocks/<block>/<address>`, listed by the node's block index.
    Block(Block),
    /// `blocks/<block>/<address>`, listed as borrowed by the node.
    Borrowed(Block),
}

impl Store for EtcdStore {
    type Config = EtcdConfig;

    fn config(ipam: &Extra) -> Result<EtcdConfig, Error> {
        EtcdConfig::from_section(ipam)
    }

    fn open(network: &str, cfg: &EtcdConfig, access: Access) -> Result<Option<EtcdStore>, Error> {
        let root = format!("{}/{network}/", cfg.prefix);
        let node = node_name(cfg)?;
        Ok(Some(EtcdStore {
            hint: Hint::new(&root, &node, &cfg.endpoints),
            listed: Vec::new(),
            lender: None,
            lender_read: None,
            window_moved: false,
            old_unlisted: false,
            expected: Vec::new(),
            // An ADD has one deadline in all; DEL, GC and STATUS one per
            // request (a DEL must finish its work, and is retried anyway).
            client: Client::new(
                cfg,
                (access == Access::Create).then(|| Instant::now() + OPERATION_DEADLINE),
            ),
            root,
            node,
            linearizable: access != Access::Create,
            access,
            sizes: Sizes {
                v4: cfg.block_size_v4.unwrap_or(DEFAULT_BLOCK_SIZE_V4),
                v6: cfg.block_size_v6.unwrap_or(DEFAULT_BLOCK_SIZE_V6),
            },
            given: (cfg.block_size_v4, cfg.block_size_v6),
            strict: cfg.strict_blocks,
            sets: Vec::new(),
            owned: Vec::new(),
            places: HashMap::new(),
            counts: HashMap::new(),
            seen: Vec::new(),
            owner_count: None,
        }))
    }

    fn describe(&self) -> String {
        format!(
            "etcd {} under {}",
            self.client.endpoints.join(","),
            self.root
        )
    }

    fn use_ranges(&mut self, sets: &[RangeSet]) -> Result<(), Error> {
        let defaults = Sizes {
            v4: DEFAULT_BLOCK_SIZE_V4,
            v6: DEFAULT_BLOCK_SIZE_V6,
        };
        self.sizes = Sizes::for_ranges(self.given, defaults, sets)?;
        self.sets = sets.to_vec();
        Ok(())
    }

    fn expect(&mut self, ips: &[IpAddr]) {
        self.expected = ips.to_vec();
    }

    fn read(&mut self, sets: usize) -> Result<State, Error> {
        self.read_state(sets)
    }

    fn held_addresses(&mut self) -> Result<Vec<IpAddr>, Error> {
        let mut held = self.every_address()?;
        held.sort();
        held.dedup();
        Ok(held)
    }

    /// From the node's index and counted reads, for the range sets given
    /// to [`Store::use_ranges`] (`sets` are the same).
    fn exhausted_sets(&mut self, _sets: &[RangeSet]) -> Result<Vec<usize>, Error> {
        self.count_fullness()
    }

    fn reserve(&mut self, new: &[Assigned], attachment: &Attachment) -> Result<Reserved, Error> {
        self.reserve_new(new, attachment)
    }

    fn release(&mut self, gone: &[&Reservation]) -> Result<(), Error> {
        // (key, value as read, the borrowed index key) of each reservation
        // this node may release.
        let owned: Vec<(String, String, Option<String>)> = gone
            .iter()
            .filter(|r| r.local)
            .filter_map(|r| {
                let value = match &r.owner {
                    Owner::Attachment(a) => self.value(&a.container_id, Some(&a.ifname)),
                    Owner::Container(container_id) => self.value(container_id, None),
                    Owner::Unknown(_) => return None,
                };
                let (key, borrowed) = match self.place(r.ip) {
                    Place::Old => (self.old_key(r.ip), None),
                    Place::Block(b) => (self.ip_key(b, r.ip), None),
                    Place::Borrowed(b) => (self.ip_key(b, r.ip), Some(self.borrowed_key(r.ip))),
                };
                Some((key, value, borrowed))
            })
            .collect();
        // Each key is deleted only while it holds what was read; otherwise
        // someone else holds it now, and it is not ours to release. One
        // transaction for all (a dual-stack DEL, a GC) unless one of them
        // changed meanwhile; then one per key.
        let still = |(key, value, _): &(String, String, Option<String>)| Compare::holds(key, value);
        let delete = |(key, _, borrowed): &(String, String, Option<String>)| {
            std::iter::once(Op::delete(key)).chain(borrowed.as_deref().map(Op::delete))
        };
        for batch in owned.chunks(MAX_TXN_KEYS / 2) {
            let all_at_once = batch.len() > 1
                && self
                    .client
                    .txn(&Txn::new(
                        batch.iter().map(still).collect(),
                        batch.iter().flat_map(delete).collect(),
                    ))?
                    .succeeded;
            if !all_at_once {
                for one in batch {
                    (self.client).txn(&Txn::new(vec![still(one)], delete(one).collect()))?;
                }
            }
        }
        for r in gone.iter().filter(|r| r.local) {
            if let Place::Block(b) = self.place(r.ip) {
                if let Some(n) = self.counts.get_mut(&b) {
                    *n = n.saturating_sub(1);
                }
            }
        }
        self.give_back_empty_blocks()
    }
}

impl EtcdStore {
    /// Bytes etcd has answered this store so far (every request), for
    /// measurements.
    pub fn bytes_received(&self) -> u64 {
        self.client.received.get()
    }

    /// Requests this store has made to etcd so far, for measurements.
    pub fn requests_sent(&self) -> u64 {
        self.client.sent.get()
    }

    /// Where the reservation of `ip` is: as read, else where this node
    /// would have written it.
    fn place(&self, ip: IpAddr) -> Place {
        if let Some(p) = self.places.get(&ip) {
            return *p;
        }
        let b = Block::of(ip, self.sizes);
        if self.owned.contains(&b) {
            Place::Block(b)
        } else {
            Place::Borrowed(b)
        }
    }
}

/// `node`, else the host name.
fn node_name(cfg: &EtcdConfig) -> Result<String, Error> {
    if let Some(node) = &cfg.node {
        return Ok(node.clone());
    }
    nix::unistd::gethostname()
        .map_err(|e| {
            Error::new(
                Code::IO_FAILURE,
                "cannot read the host name for ipam.store.node",
            )
            .with_details(e.to_string())
        })?
        .into_string()
        .map_err(|h| {
            Error::invalid_config(
                "ipam.store.node",
                format!("the host name {h:?} is not UTF-8; give ipam.store.node"),
            )
        })
}
