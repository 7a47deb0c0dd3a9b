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
//! network's: one request of a bounded size (the node's index, and the
//! keys of the blocks the node's hint names, `hint.rs`; a second when the
//! index lists other blocks than the hint) and the reservation, whatever
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
//! **STATUS** reads the node's index and two counts (`blocks/`, `ips/`):
//! a range set offering more addresses than the network holds keys has
//! room. Only when it does not (nearly full, or another set's keys) are
//! its blocks counted as borrowing does.
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
//!   Upgrade).
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
//! the previous release; `upgrade.rs`). Each read counts the old layout's
//! keys (one count, in the same request as the node's index). While there
//! are any, a DEL, GC or ADD lists them (in pages of 5,000, each request
//! with its own deadline) and moves up to 2,000 into the blocks' key
//! space: `blocks/<b>/<address>` with the same value and
//! `nodes/<node>/borrowed/<address>` in the index of the node the value
//! names, the old key deleted, in one transaction comparing the old key's
//! value and the new key's absence (40 per transaction). The address is
//! held throughout, under one key or the other; its container's own DEL
//! and GC release it as any borrowed reservation. What is not moved yet
//! (past the bound, a value naming no node, a key changed meanwhile) is
//! honoured where it is: never handed out again (every reservation also
//! compares the address's old key), matched and released by its own DEL
//! or GC. A block is claimed only while it offers addresses not known
//! held, a block partly held in the old layout offers the rest, and a
//! block found full once claimed makes the ADD claim another (at most 8).
//! STATUS counts the old keys, and lists them (keys only) only when a
//! range set looks full. Every node must run a plugin with
//! blocks before any ADD uses them: an older plugin reads only `ips/`,
//! and does not see what was moved.
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
mod reclaim;
mod records;
mod scan;
mod txn;
mod upgrade;

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use cni_types::{Attachment, Code, Error, Extra};

use self::answer::{Outcome, Range, Response};
pub use self::blocks::NotABlock;
use self::blocks::{Block, Sizes};
use self::client::{not_etcd, Client};
pub use self::config::{EtcdConfig, DEFAULT_BLOCK_SIZE_V4, DEFAULT_BLOCK_SIZE_V6, DEFAULT_PREFIX};
use self::hint::Hint;
pub use self::hint::HINT_DIR;
use self::keys::Index;
pub use self::reclaim::{reclaim_node_of, Reclaimed};
use self::txn::{Compare, Op, Read, Txn};
use crate::range::RangeSet;
use crate::store::{Access, Assigned, Owner, Reservation, Reserved, Skipped, State, Store};

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
}

/// What a read of [`Store::read`]'s second request asks for.
#[derive(Debug, Clone, Copy)]
enum Ask {
    /// The owner of the node's block.
    Owner(Block),
    /// The keys under the node's block.
    Keys(Block),
    /// The reservation of an address the node borrowed, in its block.
    Borrowed(IpAddr, Block),
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

    fn read(&mut self, sets: usize) -> Result<State, Error> {
        let mut state = State {
            last_reserved: vec![None; sets],
            ..State::default()
        };
        self.places.clear();
        self.counts.clear();
        let serializable = !self.linearizable;
        // 1. The node's index, whether the old layout holds anything, and
        // the blocks the node's hint names (their owner and every key);
        // for an ADD of a node that borrows, its lender's keys and the
        // count of claimed blocks (what a claim would count first).
        let old = self.old_prefix();
        let hint = self.hint.read(self.sizes);
        let hinted = hint.blocks;
        self.lender = hint.lender;
        let lender = (hint.lender).filter(|b| self.access == Access::Create && !hinted.contains(b));
        let mut first = vec![
            Read::prefix(&self.node_prefix()).serializable(serializable),
            Read::prefix(&old).count().serializable(serializable),
        ];
        first.extend(
            self.block_reads(&hinted, serializable)
                .into_iter()
                .map(|(_, r)| r),
        );
        if let Some(b) = lender {
            first.push(Read::prefix(&self.block_prefix(b)).serializable(serializable));
            first.push(
                Read::prefix(&self.owners_prefix())
                    .count()
                    .serializable(serializable),
            );
        }
        let mut ranges = self.read_txn(first)?;
        let lender_ranges = ranges.split_off(ranges.len().min(2 + 2 * hinted.len()));
        let mut ranges = ranges.into_iter();
        let (Some(index), Some(old_count)) = (ranges.next(), ranges.next()) else {
            return Err(Error::new(Code::INTERNAL, "fewer answers than etcd reads"));
        };
        let index = Index::parse(self, index.kvs, &mut state);
        let old_count = old_count.count;
        self.owner_count = None;
        self.lender_read = None;
        // 2. The node's blocks, unless the hint named them all, and its
        // borrowed addresses (but those in the lender, read already), in
        // that order.
        let mut listed = index.blocks.clone();
        listed.sort();
        if let (Some(b), [keys, owners]) = (lender, lender_ranges.as_slice()) {
            if !listed.contains(&b) {
                self.owner_count = Some(owners.count);
                self.lender_read = Some(b);
                self.lent_reservations(b, &keys.kvs, &mut state);
            }
        }
        let mut answers = Vec::new();
        let mut asks = Vec::new();
        if listed == hinted {
            let tags = self
                .block_reads(&hinted, serializable)
                .into_iter()
                .map(|(t, _)| t);
            answers.extend(tags.zip(ranges));
        } else {
            self.hint.remember(&listed, self.lender);
            asks = self.block_reads(&listed, serializable);
        }
        self.listed = listed;
        for (ip, b) in &index.borrowed {
            if self.lender_read == Some(*b) {
                continue;
            }
            let key = Read::key(&self.ip_key(*b, *ip)).serializable(serializable);
            asks.push((Ask::Borrowed(*ip, *b), key));
        }
        if !asks.is_empty() {
            answers.extend(self.read_each(asks)?);
        }
        self.owned.clear();
        for (ask, range) in answers {
            match ask {
                Ask::Owner(b) => match range.kvs.first() {
                    Some((_, v)) if self.is_mine(v) => self.owned.push(b),
                    other => state.skipped.push(Skipped {
                        entry: format!("etcd key {}", self.owner_key(b)),
                        why: format!(
                            "listed as this node's block, but owned by {}; its reservations \
                             are taken",
                            other.map_or("nobody".to_owned(), |(_, v)| {
                                String::from_utf8_lossy(v).into_owned()
                            })
                        ),
                    }),
                },
                Ask::Keys(b) => {
                    let found = self.block_reservations(b, range.kvs, &mut state);
                    self.counts.insert(b, found);
                }
                Ask::Borrowed(ip, b) => {
                    if let Some((key, value)) = range.kvs.first() {
                        // Also in one of the node's blocks when it was
                        // moved there from the layout before blocks: held
                        // once, released with its index key.
                        let first = !self.places.contains_key(&ip);
                        self.places.insert(ip, Place::Borrowed(b));
                        if first {
                            let r = self.reservation(ip, value, key, &mut state.skipped);
                            state.held.push(r);
                        }
                    }
                }
            }
        }
        // 3. The layout before blocks, while it holds anything.
        if old_count > 0 {
            let listed = self.client.range_prefix_paged(&old, self.linearizable)?;
            let listed = match self.access {
                Access::Read => listed,
                _ => self.migrate_old(listed, &mut state)?,
            };
            for (key, value) in listed {
                let Some(ip) = key.strip_prefix(&old) else {
                    continue;
                };
                let Ok(ip) = ip.parse::<IpAddr>() else {
                    state.skipped.push(Skipped {
                        entry: format!("etcd key {key}"),
                        why: "not named by an address".to_owned(),
                    });
                    continue;
                };
                if self.places.contains_key(&ip) {
                    continue;
                }
                let r = self.reservation(ip, &value, &key, &mut state.skipped);
                self.places.insert(ip, Place::Old);
                state.held.push(r);
            }
        }
        for r in &self.seen {
            if !self.places.contains_key(&r.ip) {
                state.held.push(r.clone());
            }
        }
        for (set, ip) in index.last {
            if let Some(slot) = state.last_reserved.get_mut(set) {
                *slot = Some(ip);
            }
        }
        // 4. Where new addresses may come from; a block claimed when the
        // node's are full.
        if self.sets.len() == sets {
            state.pools = vec![None; sets];
            for i in 0..sets {
                state.pools[i] = Some(self.pool(i, &mut state)?);
            }
        }
        Ok(state)
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
        let Some(first) = new.first() else {
            return Ok(Reserved::Done);
        };
        let value = self.value(&attachment.container_id, Some(&attachment.ifname));
        let mut txn = Txn::new(Vec::new(), Vec::new());
        // What the reservation writes that names it: each address's key,
        // and its `borrowed` index key outside the node's blocks.
        let mut written = Vec::with_capacity(new.len());
        for a in new {
            let b = Block::of(a.ip, self.sizes);
            let key = self.ip_key(b, a.ip);
            txn.compare.push(Compare::Absent(key.clone()));
            txn.compare.push(Compare::Absent(self.old_key(a.ip)));
            txn.success.push(Op::put(&key, &value));
            let owned = self.owned.contains(&b);
            let borrowed = (!owned).then(|| self.borrowed_key(a.ip));
            if owned {
                (txn.compare).push(Compare::holds(&self.owner_key(b), &self.owner_value()));
            }
            if let Some(borrowed) = &borrowed {
                txn.success.push(Op::put(borrowed, &b.name()));
            }
            written.push((key.clone(), borrowed));
            txn.success
                .push(Op::put(&self.last_key(a.set), &a.ip.to_string()));
            // On failure, the same transaction reads what stood in the
            // way, to name it without another round trip: three reads per
            // address, in this order.
            txn.failure.extend(
                [key, self.old_key(a.ip), self.owner_key(b)].map(|k| Op::Range(Read::key(&k))),
            );
        }
        let outcome = match self.reserve_txn(&txn) {
            Ok(outcome) => outcome,
            Err(e) => return Err(self.withdraw(&written, &value, e)),
        };
        // One response per read, each a range ([`Client::txn`] checks).
        let ranges: Vec<Range> = (outcome.responses.into_iter())
            .filter_map(Response::into_range)
            .collect();
        // Failed because every address already holds this attachment's
        // value: a sending whose answer was lost was applied (or a
        // repeated ADD met its own reservation). The addresses are its.
        let applied_before = || {
            !ranges.is_empty()
                && (ranges.chunks_exact(3)).all(|reads| {
                    reads[0]
                        .kvs
                        .first()
                        .is_some_and(|(_, v)| *v == value.as_bytes())
                })
        };
        if outcome.succeeded || applied_before() {
            for a in new {
                let b = Block::of(a.ip, self.sizes);
                if let Some(n) = self.counts.get_mut(&b) {
                    *n += 1;
                }
            }
            return Ok(Reserved::Done);
        }
        self.linearizable = true;
        for (a, reads) in new.iter().zip(ranges.chunks_exact(3)) {
            let [held, old, owner] = reads else {
                continue;
            };
            let b = Block::of(a.ip, self.sizes);
            if let Some((key, value)) = held.kvs.iter().chain(&old.kvs).next() {
                let r = self.reservation(a.ip, value, key, &mut Vec::new());
                self.seen.push(r);
                return Ok(Reserved::Taken(a.ip));
            }
            if self.owned.contains(&b) && !owner.kvs.first().is_some_and(|(_, v)| self.is_mine(v)) {
                // The block was given back or reclaimed meanwhile: read
                // again.
                self.owned.retain(|o| *o != b);
                return Ok(Reserved::Taken(a.ip));
            }
        }
        // A comparison failed, yet nothing stood in the way: not what
        // etcd answers. Re-planning would only repeat it.
        Err(not_etcd(
            &outcome.endpoint,
            "/v3/kv/txn",
            &format!(
                "a failed reservation of {} that names no taken address",
                first.ip
            ),
            &outcome.text,
        ))
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

    /// The reservation's transaction. When its answer is lost (a member
    /// died or hung, an election), it may or may not have been applied:
    /// it is sent again while two requests' deadlines are left of the
    /// ADD's (the last is [`EtcdStore::withdraw`]'s). Applied,
    /// the comparisons then fail on this attachment's own value, which
    /// [`Store::reserve`] takes as done; not applied, it applies now.
    fn reserve_txn(&mut self, txn: &Txn) -> Result<Outcome, Error> {
        // The last sending starts early enough to end one request's
        // deadline before the ADD's.
        let left = (self.client.time_left()).unwrap_or(OPERATION_DEADLINE);
        let last_start = Instant::now() + left.saturating_sub(2 * REQUEST_TIMEOUT);
        loop {
            match self.client.txn(txn) {
                Err(e)
                    if e.code == Code::TRY_AGAIN_LATER
                        && Instant::now() + OUTCOME_PAUSE < last_start =>
                {
                    self.linearizable = true;
                    std::thread::sleep(OUTCOME_PAUSE);
                }
                other => return other,
            }
        }
    }

    /// Undoes a reservation whose outcome stayed unknown (`failed`, the
    /// ADD's error): `written` (each address's key and its `borrowed`
    /// key) is deleted while every key holds `value`, this attachment's;
    /// otherwise it was never applied and nothing changes. The error to
    /// answer, saying which.
    fn withdraw(&self, written: &[(String, Option<String>)], value: &str, failed: Error) -> Error {
        if failed.code != Code::TRY_AGAIN_LATER {
            // Refused (code 999): etcd did not take the request.
            return failed;
        }
        let mut txn = Txn::new(Vec::new(), Vec::new());
        for (key, borrowed) in written {
            txn.compare.push(Compare::holds(key, value));
            txn.success.push(Op::delete(key));
            txn.success.extend(borrowed.as_deref().map(Op::delete));
        }
        let what = match self.client.txn_past_deadline(&txn) {
            Ok(o) if o.succeeded => "applied by etcd after all, then withdrawn",
            Ok(_) => "not applied by etcd",
            Err(e) => {
                let details = format!(
                    "{}; the reservation may have been applied and could not be withdrawn \
                     ({}): it names this attachment, and its DEL or a GC releases it",
                    failed.details, e.msg
                );
                return Error::try_again_later(failed.msg, details);
            }
        };
        let details = format!("{}; the reservation was {what}", failed.details);
        Error::try_again_later(failed.msg, details)
    }

    /// Read-only transactions of `reads` (in chunks etcd accepts): every
    /// read's answer, in order, one each.
    fn read_txn(&self, reads: Vec<Read>) -> Result<Vec<Range>, Error> {
        let mut out = Vec::with_capacity(reads.len());
        for chunk in reads.chunks(2 * MAX_TXN_KEYS) {
            let ops = chunk.iter().cloned().map(Op::Range).collect();
            let outcome = self.client.txn(&Txn::new(Vec::new(), ops))?;
            if !outcome.succeeded {
                return Err(not_etcd(
                    &outcome.endpoint,
                    "/v3/kv/txn",
                    "a failed transaction without comparisons",
                    &outcome.text,
                ));
            }
            // One response per read, each a range ([`Client::txn`] checks).
            out.extend(
                outcome
                    .responses
                    .into_iter()
                    .filter_map(Response::into_range),
            );
        }
        Ok(out)
    }

    /// Keeps the hint to the node's index after this store claimed
    /// (`claimed`) or gave back block `b`.
    fn relist(&mut self, b: Block, claimed: bool) {
        self.listed.retain(|l| *l != b);
        if claimed {
            self.listed.push(b);
            self.listed.sort();
        }
        self.hint.remember(&self.listed, self.lender);
    }

    /// Keeps the hint's lender to `lender` (the block a borrowing ADD
    /// took from; none once the node's own blocks serve again).
    fn remember_lender(&mut self, lender: Option<Block>) {
        if self.lender != lender {
            self.lender = lender;
            self.hint.remember(&self.listed, lender);
        }
    }

    /// The reservations of block `b`, which another node owns, read whole
    /// (`kvs`): into `state`, each placed as borrowed (those of this node
    /// are: its index lists them so).
    fn lent_reservations(&mut self, b: Block, kvs: &[(String, Vec<u8>)], state: &mut State) {
        let prefix = self.block_prefix(b);
        for (key, value) in kvs {
            let ip = key
                .strip_prefix(&prefix)
                .and_then(|ip| ip.parse::<IpAddr>().ok())
                .filter(|ip| b.contains(*ip));
            if let Some(ip) = ip.filter(|ip| !self.places.contains_key(ip)) {
                let r = self.reservation(ip, value, key, &mut state.skipped);
                self.places.insert(ip, Place::Borrowed(b));
                state.held.push(r);
            }
        }
    }

    /// The reads of blocks `blocks` (sorted): each one's owner, then its
    /// keys.
    fn block_reads(&self, blocks: &[Block], serializable: bool) -> Vec<(Ask, Read)> {
        let mut reads = Vec::with_capacity(2 * blocks.len());
        for b in blocks {
            let owner = Read::key(&self.owner_key(*b)).serializable(serializable);
            reads.push((Ask::Owner(*b), owner));
            let keys = Read::prefix(&self.block_prefix(*b)).serializable(serializable);
            reads.push((Ask::Keys(*b), keys));
        }
        reads
    }

    /// [`EtcdStore::read_txn`] of each read of `asks`, paired with what
    /// asked for it.
    fn read_each<T>(&self, asks: Vec<(T, Read)>) -> Result<Vec<(T, Range)>, Error> {
        let (tags, reads): (Vec<T>, Vec<Read>) = asks.into_iter().unzip();
        Ok(tags.into_iter().zip(self.read_txn(reads)?).collect())
    }

    /// [`EtcdStore::read_txn`] of a fixed list of reads, one answer each.
    fn read_all<const N: usize>(&self, reads: [Read; N]) -> Result<[Range; N], Error> {
        self.read_txn(reads.into()).and_then(|ranges| {
            ranges.try_into().map_err(|ranges: Vec<Range>| {
                let got = ranges.len();
                Error::new(Code::INTERNAL, format!("{got} answers to {N} etcd reads"))
            })
        })
    }

    /// The reservations under block `b` (keys read), into `state`; how many
    /// keys there were.
    fn block_reservations(
        &mut self,
        b: Block,
        keys: Vec<(String, Vec<u8>)>,
        state: &mut State,
    ) -> usize {
        let prefix = self.block_prefix(b);
        let found = keys.len();
        for (key, value) in keys {
            let ip = key
                .strip_prefix(&prefix)
                .and_then(|ip| ip.parse::<IpAddr>().ok());
            match ip.filter(|ip| b.contains(*ip)) {
                Some(ip) => {
                    let r = self.reservation(ip, &value, &key, &mut state.skipped);
                    self.places.insert(ip, Place::Block(b));
                    state.held.push(r);
                }
                None => state.skipped.push(Skipped {
                    entry: format!("etcd key {key}"),
                    why: format!("not named by an address of block {}", b.name()),
                }),
            }
        }
        found
    }

    /// Every reserved address of the network, of every node, in blocks
    /// and in the layout before them (keys only): a listing of the whole
    /// network, for [`Store::held_addresses`] only (STATUS and borrowing
    /// count instead, [`scan`]).
    fn every_address(&self) -> Result<Vec<IpAddr>, Error> {
        let blocks = format!("{}blocks/", self.root);
        let old = format!("{}ips/", self.root);
        let mut held: Vec<IpAddr> = self
            .client
            .keys_under(&blocks)?
            .into_iter()
            .filter_map(|key| key.rsplit('/').next()?.parse().ok())
            .collect();
        held.extend(
            self.client
                .keys_under(&old)?
                .into_iter()
                .filter_map(|key| key.strip_prefix(&old)?.parse::<IpAddr>().ok()),
        );
        Ok(held)
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
