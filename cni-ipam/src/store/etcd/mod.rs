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
//! network's: two requests of a bounded size (the node's index, then its
//! blocks' keys) and the reservation, whatever the number of nodes and
//! reservations. When its blocks are full it claims another (passing over
//! blocks known full); when no block is free it borrows an address of
//! another node's block, unless `strictBlocks`, when the ADD fails with
//! [`crate::RANGE_EXHAUSTED`]. Borrowing counts the keys of the blocks
//! (`count_only`, 60 per request, from a random block, at most 4,096) and
//! reads the keys of the first with room: never every reservation.
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
//! **Upgrade.** Each read counts the old layout's `ips/` keys (one count,
//! in the same request as the node's index); while there are any, they are
//! read too and honoured: never handed out again (every reservation also
//! compares the address's old key), matched and released by their own DEL
//! or GC (a reservation written by this node is this node's, whichever
//! layout holds it). A block is claimed only while it offers addresses not
//! held in the old layout, and a block partly held there offers the rest;
//! a block found full once claimed makes the ADD claim another (at most
//! 8). Nothing is moved: the old keys drain as their containers go. Until
//! the last is released, every read lists them (the cost of the previous
//! release, once per request), and STATUS counts them. Once the last is
//! released, the count is all that is left of them. Every node must run a
//! plugin with blocks before any ADD uses them: an older plugin reads only
//! `ips/`.
//!
//! **Faults.** Each request to etcd has one deadline, [`REQUEST_TIMEOUT`],
//! across all endpoints: they are tried in order, each given an equal share
//! of the time left (an endpoint that refuses at once leaves its share to
//! the next). An unreachable etcd is code 11 (try again later) within that
//! time, naming the endpoints, with nothing written. An answer that is not
//! etcd's (no `header`, a failed transaction naming no taken address) is
//! code 11 quoting it, never read as a lost race. What etcd answers is
//! quoted in errors up to [`MAX_QUOTED`] bytes, with the size of the rest. Only a transaction whose
//! answer was lost (etcd died between applying it and answering) may have
//! been applied although the ADD answered code 11: it names the
//! attachment, so the DEL the runtime "must still" execute after a failed
//! ADD (SPEC-1.0.0, lifecycle) releases it, as does a GC, and a repeated
//! ADD returns that same address.
//!
//! **Bad keys.** A key that is not what its name says (a block name that
//! is not an aligned block of the configured size, a value that is not a
//! reservation or an owner) is skipped and named on stderr; a reservation
//! key's address stays taken.
//!
//! The client is etcd's own v3 JSON gateway (`POST /v3/kv/range`,
//! `/v3/kv/txn`; keys and values in base64) over plain HTTP with a small
//! blocking client: the plugin stays synchronous, and needs no gRPC
//! stack. TLS is not supported.

mod blocks;
mod client;
mod config;
mod reclaim;
mod scan;
mod upgrade;

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use cni_types::{Attachment, Code, Error, Extra};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use self::blocks::{candidates, capacity, Block, Sizes};
use self::client::{
    absent_compare, count, count_op, delete_op, empty_compare, kvs, not_etcd, put_op, read_op,
    responses, value_compare, Client, Txn,
};
pub use self::config::{EtcdConfig, DEFAULT_BLOCK_SIZE_V4, DEFAULT_BLOCK_SIZE_V6, DEFAULT_PREFIX};
pub use self::reclaim::{reclaim_node_of, Reclaimed};
use crate::range::{Range, RangeSet};
use crate::store::{
    Access, Assigned, Fullness, Owner, Reservation, Reserved, Skipped, State, Store,
};

/// The longest one request to etcd takes, connecting and answering,
/// across all the endpoints it tries.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a reservation whose answer was lost is sent again, to learn
/// whether it was applied: longer than an election with etcd's default
/// timings (1 s election timeout).
const OUTCOME_WINDOW: Duration = Duration::from_secs(5);

/// The pause between two sendings of a reservation whose answer was lost.
const OUTCOME_PAUSE: Duration = Duration::from_millis(200);

/// Most bytes of an answer quoted in an error; the rest is counted.
pub const MAX_QUOTED: usize = 4096;

/// Most keys released in one transaction (etcd's `--max-txn-ops`, 128 by
/// default, bounds each list of a transaction).
const MAX_TXN_KEYS: usize = 60;

/// Most blocks an ADD claims (each found full of addresses held outside
/// the node's knowledge before it claimed it) before it borrows.
const MAX_CLAIMS_PER_ADD: usize = 8;

/// Most claims of a block an ADD may lose to other nodes before code 11.
const MAX_LOST_CLAIMS: usize = 32;

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

/// A reservation's value.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    #[serde(rename = "containerID")]
    container_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ifname: Option<String>,
    node: String,
}

/// A block owner's value.
#[derive(Debug, Serialize, Deserialize)]
struct OwnerRecord {
    node: String,
}

impl Store for EtcdStore {
    type Config = EtcdConfig;

    fn config(ipam: &Extra) -> Result<EtcdConfig, Error> {
        EtcdConfig::from_section(ipam)
    }

    fn open(network: &str, cfg: &EtcdConfig, access: Access) -> Result<Option<EtcdStore>, Error> {
        Ok(Some(EtcdStore {
            client: Client::new(cfg),
            root: format!("{}/{network}/", cfg.prefix),
            node: node_name(cfg)?,
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
        // 1. The node's index, and whether the old layout holds anything.
        let old = self.old_prefix();
        let first = self.read_txn(vec![
            read_op(&self.node_prefix(), true, false, serializable),
            count_op(&old, serializable),
        ])?;
        let index = Index::parse(self, kvs(first.first()), &mut state);
        let old_count = count(first.get(1));
        // 2. The node's blocks (their owner and every key) and borrowed
        // addresses.
        let mut ops = Vec::new();
        for b in &index.blocks {
            ops.push(read_op(&self.owner_key(*b), false, false, serializable));
            ops.push(read_op(&self.block_prefix(*b), true, false, serializable));
        }
        for (ip, b) in &index.borrowed {
            ops.push(read_op(&self.ip_key(*b, *ip), false, false, serializable));
        }
        let answers = self.read_txn(ops)?;
        self.owned.clear();
        for (i, b) in index.blocks.iter().enumerate() {
            match kvs(answers.get(2 * i)).first() {
                Some((_, v)) if self.is_mine(v) => self.owned.push(*b),
                other => state.skipped.push(Skipped {
                    entry: format!("etcd key {}", self.owner_key(*b)),
                    why: format!(
                        "listed as this node's block, but owned by {}; its reservations are \
                         taken",
                        other.map_or("nobody".to_owned(), |(_, v)| {
                            String::from_utf8_lossy(v).into_owned()
                        })
                    ),
                }),
            }
            let found = self.block_reservations(*b, kvs(answers.get(2 * i + 1)), &mut state);
            self.counts.insert(*b, found);
        }
        let base = 2 * index.blocks.len();
        for (j, (ip, b)) in index.borrowed.iter().enumerate() {
            if let Some((key, value)) = kvs(answers.get(base + j)).first() {
                // Also in one of the node's blocks when it was moved there
                // from the layout before blocks: held once, released with
                // its index key.
                let first = !self.places.contains_key(ip);
                self.places.insert(*ip, Place::Borrowed(*b));
                if first {
                    let r = self.reservation(*ip, value, key, &mut state.skipped);
                    state.held.push(r);
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

    fn fullness(&mut self) -> Result<Option<Fullness>, Error> {
        self.count_fullness().map(Some)
    }

    fn reserve(&mut self, new: &[Assigned], attachment: &Attachment) -> Result<Reserved, Error> {
        let Some(first) = new.first() else {
            return Ok(Reserved::Done);
        };
        let value = self.value(&attachment.container_id, Some(&attachment.ifname));
        let (mut compare, mut success, mut failure) = (Vec::new(), Vec::new(), Vec::new());
        for a in new {
            let b = Block::of(a.ip, self.sizes);
            let key = self.ip_key(b, a.ip);
            compare.push(absent_compare(&key));
            compare.push(absent_compare(&self.old_key(a.ip)));
            success.push(put_op(&key, &value));
            let owned = self.owned.contains(&b);
            if owned {
                compare.push(value_compare(&self.owner_key(b), &self.owner_value()));
            } else {
                success.push(put_op(&self.borrowed_key(a.ip), &b.name()));
            }
            success.push(put_op(&self.last_key(a.set), &a.ip.to_string()));
            // On failure, the same transaction reads what stood in the
            // way, to name it without another round trip.
            failure.push(read_op(&key, false, false, false));
            failure.push(read_op(&self.old_key(a.ip), false, false, false));
            failure.push(read_op(&self.owner_key(b), false, false, false));
        }
        let failed = match self.reserve_txn(compare, success, failure)? {
            Txn::Succeeded(_) => {
                for a in new {
                    let b = Block::of(a.ip, self.sizes);
                    if let Some(n) = self.counts.get_mut(&b) {
                        *n += 1;
                    }
                }
                return Ok(Reserved::Done);
            }
            Txn::Failed(failed) => failed,
        };
        self.linearizable = true;
        let answers = responses(&failed.answer);
        for (i, a) in new.iter().enumerate() {
            let b = Block::of(a.ip, self.sizes);
            let found = kvs(answers.get(3 * i))
                .into_iter()
                .chain(kvs(answers.get(3 * i + 1)))
                .next();
            if let Some((key, value)) = found {
                let r = self.reservation(a.ip, &value, &key, &mut Vec::new());
                self.seen.push(r);
                return Ok(Reserved::Taken(a.ip));
            }
            let owner = kvs(answers.get(3 * i + 2));
            if self.owned.contains(&b) && !owner.first().is_some_and(|(_, v)| self.is_mine(v)) {
                // The block was given back or reclaimed meanwhile: read
                // again.
                self.owned.retain(|o| *o != b);
                return Ok(Reserved::Taken(a.ip));
            }
        }
        // A comparison failed, yet nothing stood in the way: not what
        // etcd answers. Re-planning would only repeat it.
        Err(not_etcd(
            &failed.endpoint,
            "/v3/kv/txn",
            &format!(
                "a failed reservation of {} that names no taken address",
                first.ip
            ),
            &failed.text,
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
        let still = |(key, value, _): &(String, String, Option<String>)| value_compare(key, value);
        let delete = |(key, _, borrowed): &(String, String, Option<String>)| {
            std::iter::once(delete_op(key)).chain(borrowed.as_deref().map(delete_op))
        };
        for batch in owned.chunks(MAX_TXN_KEYS / 2) {
            let all_at_once = batch.len() > 1
                && matches!(
                    self.client.txn_else(
                        batch.iter().map(still).collect(),
                        batch.iter().flat_map(delete).collect(),
                        Vec::new(),
                    )?,
                    Txn::Succeeded(_)
                );
            if !all_at_once {
                for one in batch {
                    self.client
                        .txn_else(vec![still(one)], delete(one).collect(), Vec::new())?;
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

/// What a node's index (`nodes/<node>/`) lists.
#[derive(Debug, Default)]
struct Index {
    blocks: Vec<Block>,
    borrowed: Vec<(IpAddr, Block)>,
    last: Vec<(usize, IpAddr)>,
}

impl Index {
    /// The index's keys; those that are not what their names say are
    /// skipped and named.
    fn parse(store: &EtcdStore, keys: Vec<(String, Vec<u8>)>, state: &mut State) -> Index {
        let prefix = store.node_prefix();
        let mut index = Index::default();
        for (key, value) in keys {
            let name = key.strip_prefix(&prefix).unwrap_or(&key);
            let value = String::from_utf8_lossy(&value);
            let parsed: Result<(), String> = if let Some(b) = name.strip_prefix("blocks/") {
                Block::parse(b, store.sizes).map(|b| index.blocks.push(b))
            } else if let Some(ip) = name.strip_prefix("borrowed/") {
                match (ip.parse::<IpAddr>(), Block::parse(&value, store.sizes)) {
                    (Ok(ip), Ok(b)) if b.contains(ip) => {
                        index.borrowed.push((ip, b));
                        Ok(())
                    }
                    _ => Err("not a borrowed address naming its block".to_owned()),
                }
            } else if let Some(set) = name.strip_prefix("last_reserved/") {
                match (set.parse::<usize>(), value.parse::<IpAddr>()) {
                    (Ok(set), Ok(ip)) => {
                        index.last.push((set, ip));
                        Ok(())
                    }
                    _ => Err("not a last reserved address".to_owned()),
                }
            } else {
                Err("not a key of a node's index".to_owned())
            };
            if let Err(why) = parsed {
                state.skipped.push(Skipped {
                    entry: format!("etcd key {key}"),
                    why,
                });
            }
        }
        index
    }
}

impl EtcdStore {
    /// Bytes etcd has answered this store so far (every request), for
    /// measurements.
    pub fn bytes_received(&self) -> u64 {
        self.client.received.get()
    }

    /// `<root>nodes/<node>/`, the node's index (`%` and `/` escaped).
    fn node_prefix(&self) -> String {
        node_prefix(&self.root, &self.node)
    }

    fn owner_key(&self, b: Block) -> String {
        format!("{}owners/{}", self.root, b.name())
    }

    fn block_prefix(&self, b: Block) -> String {
        format!("{}blocks/{}/", self.root, b.name())
    }

    fn ip_key(&self, b: Block, ip: IpAddr) -> String {
        format!("{}{ip}", self.block_prefix(b))
    }

    /// `<root>ips/`, the layout before blocks.
    fn old_prefix(&self) -> String {
        format!("{}ips/", self.root)
    }

    fn old_key(&self, ip: IpAddr) -> String {
        format!("{}ips/{ip}", self.root)
    }

    fn borrowed_key(&self, ip: IpAddr) -> String {
        format!("{}borrowed/{ip}", self.node_prefix())
    }

    fn index_key(&self, b: Block) -> String {
        format!("{}blocks/{}", self.node_prefix(), b.name())
    }

    fn last_key(&self, set: usize) -> String {
        format!("{}last_reserved/{set}", self.node_prefix())
    }

    /// The owner value this node writes, byte for byte (a comparison reads
    /// it).
    fn owner_value(&self) -> String {
        owner_value(&self.node)
    }

    fn is_mine(&self, owner: &[u8]) -> bool {
        serde_json::from_slice::<OwnerRecord>(owner).is_ok_and(|o| o.node == self.node)
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
    /// it is sent again, for at most [`OUTCOME_WINDOW`]. Applied, the
    /// comparisons then fail on this attachment's own value, which the
    /// ADD finds and reports as its address; not applied, it applies now.
    /// Only an etcd unreachable for the whole window leaves an ADD that
    /// failed (code 11) holding an address, which its DEL releases.
    fn reserve_txn(
        &mut self,
        compare: Vec<Value>,
        success: Vec<Value>,
        failure: Vec<Value>,
    ) -> Result<Txn, Error> {
        let started = Instant::now();
        loop {
            match self
                .client
                .txn_else(compare.clone(), success.clone(), failure.clone())
            {
                Err(e) if e.code == Code::TRY_AGAIN_LATER && started.elapsed() < OUTCOME_WINDOW => {
                    self.linearizable = true;
                    std::thread::sleep(OUTCOME_PAUSE);
                }
                other => return other,
            }
        }
    }

    /// A read-only transaction of `ops` (in chunks etcd accepts): every
    /// operation's response, in order.
    fn read_txn(&self, ops: Vec<Value>) -> Result<Vec<Value>, Error> {
        let mut out = Vec::with_capacity(ops.len());
        for chunk in ops.chunks(2 * MAX_TXN_KEYS) {
            match self
                .client
                .txn_else(Vec::new(), chunk.to_vec(), Vec::new())?
            {
                Txn::Succeeded(answer) => out.extend(responses(&answer.answer).iter().cloned()),
                Txn::Failed(failed) => {
                    return Err(not_etcd(
                        &failed.endpoint,
                        "/v3/kv/txn",
                        "a failed transaction without comparisons",
                        &failed.text,
                    ))
                }
            }
        }
        Ok(out)
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

    /// Where set `i`'s new addresses may come from: the node's blocks;
    /// when those are full (and this is an ADD), a block claimed now, or
    /// one borrowed address.
    fn pool(&mut self, i: usize, state: &mut State) -> Result<Vec<Range>, Error> {
        let set = self.sets[i].clone();
        let mut pool: Vec<Range> = self.owned.iter().flat_map(|b| b.pool(&set)).collect();
        pool.sort_by_key(|r| crate::range::bits(r.start));
        if self.access != Access::Create {
            return Ok(pool);
        }
        // A claimed block may turn out full (of addresses held in the
        // layout before blocks, or borrowed before it was given back):
        // then another is claimed, a bounded number of times.
        for _ in 0..MAX_CLAIMS_PER_ADD {
            if free_in(&pool, &state.held) > 0 {
                return Ok(pool);
            }
            match self.claim(&set, state)? {
                Some(b) => pool.extend(b.pool(&set)),
                None => break,
            }
        }
        if free_in(&pool, &state.held) > 0 || self.strict {
            return Ok(pool);
        }
        self.borrow(&set, state)
    }

    /// Claims a free block of `set` for this node, reading its keys into
    /// `state`; `None` when every block is owned.
    fn claim(&mut self, set: &RangeSet, state: &mut State) -> Result<Option<Block>, Error> {
        let owners = format!("{}owners/", self.root);
        for attempt in 0..MAX_LOST_CLAIMS {
            // The first free block in host-local's order first (one node
            // alone allocates as host-local does); after a lost claim, from
            // a place of this node's, so that claimants spread out.
            let hint = match attempt {
                0 => 0,
                n => stable_hash(&self.node).wrapping_add(n as u64),
            };
            let mut owned = HashSet::new();
            // Blocks every address of which is known held (in the layout
            // before blocks, say) offer nothing: passed over.
            let mut known: HashMap<Block, u128> = HashMap::new();
            for r in &state.held {
                *known.entry(Block::of(r.ip, self.sizes)).or_default() += 1;
            }
            for (key, _) in self.client.range_prefix(&owners, true, true)? {
                let name = key.strip_prefix(&owners).unwrap_or(&key);
                match Block::parse(name, self.sizes) {
                    Ok(_) => {
                        owned.insert(name.to_owned());
                    }
                    Err(why) if attempt == 0 => state.skipped.push(Skipped {
                        entry: format!("etcd key {key}"),
                        why,
                    }),
                    Err(_) => {}
                }
            }
            // Past the owned blocks and the few that offer nothing (a
            // block holding only a gateway), a free one comes, or none is.
            let bound = owned.len() + known.len() + 2 * set.ranges.len() + 1;
            let Some(b) = candidates(set, self.sizes, hint).take(bound).find(|b| {
                !owned.contains(&b.name())
                    && capacity(&b.pool(set)) > known.get(b).copied().unwrap_or(0)
            }) else {
                return Ok(None);
            };
            let txn = self.client.txn_else(
                vec![absent_compare(&self.owner_key(b))],
                vec![
                    put_op(&self.owner_key(b), &self.owner_value()),
                    put_op(&self.index_key(b), ""),
                    read_op(&self.block_prefix(b), true, false, false),
                ],
                Vec::new(),
            )?;
            if let Txn::Succeeded(answer) = txn {
                let keys = kvs(responses(&answer.answer).get(2));
                let found = self.block_reservations(b, keys, state);
                self.counts.insert(b, found);
                self.owned.push(b);
                return Ok(Some(b));
            }
        }
        Err(Error::try_again_later(
            format!("lost {MAX_LOST_CLAIMS} claims of a block to other nodes"),
            format!("in {}", self.describe()),
        ))
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
            .range_prefix(&blocks, true, true)?
            .into_iter()
            .filter_map(|(key, _)| key.rsplit('/').next()?.parse().ok())
            .collect();
        held.extend(
            self.client
                .range_prefix(&old, true, true)?
                .into_iter()
                .filter_map(|(key, _)| key.strip_prefix(&old)?.parse::<IpAddr>().ok()),
        );
        Ok(held)
    }

    /// Gives back the node's blocks left empty, but one.
    fn give_back_empty_blocks(&mut self) -> Result<(), Error> {
        if self.access == Access::Read {
            return Ok(());
        }
        let empty: Vec<Block> = self
            .owned
            .iter()
            .filter(|b| self.counts.get(b) == Some(&0))
            .copied()
            .collect();
        let keep = usize::from(empty.len() == self.owned.len());
        for b in empty.into_iter().skip(keep) {
            let txn = self.client.txn_else(
                vec![
                    value_compare(&self.owner_key(b), &self.owner_value()),
                    empty_compare(&self.block_prefix(b)),
                ],
                vec![delete_op(&self.owner_key(b)), delete_op(&self.index_key(b))],
                Vec::new(),
            )?;
            if matches!(txn, Txn::Succeeded(_)) {
                self.owned.retain(|o| *o != b);
                self.counts.remove(&b);
            }
        }
        Ok(())
    }

    /// A reservation's value, byte for byte as this store writes it (a
    /// release compares it).
    fn value(&self, container_id: &str, ifname: Option<&str>) -> String {
        record_value(container_id, ifname, &self.node)
    }

    fn reservation(
        &self,
        ip: IpAddr,
        value: &[u8],
        key: &str,
        skipped: &mut Vec<Skipped>,
    ) -> Reservation {
        match serde_json::from_slice::<Record>(value) {
            Ok(record) => Reservation {
                ip,
                local: record.node == self.node,
                owner: match record.ifname {
                    Some(ifname) => Owner::Attachment(Attachment {
                        container_id: record.container_id,
                        ifname,
                    }),
                    None => Owner::Container(record.container_id),
                },
            },
            Err(e) => {
                let why = format!("value is not a reservation ({e})");
                skipped.push(Skipped {
                    entry: format!("etcd key {key}"),
                    why: format!("{why}; its address is taken as held"),
                });
                Reservation {
                    ip,
                    local: false,
                    owner: Owner::Unknown(why),
                }
            }
        }
    }
}

/// How many addresses of `pool` are neither held nor a gateway.
fn free_in(pool: &[Range], held: &[Reservation]) -> u128 {
    let used = held
        .iter()
        .filter(|r| pool.iter().any(|p| p.contains(r.ip) && r.ip != p.gateway))
        .count() as u128;
    capacity(pool).saturating_sub(used)
}

/// `<root>nodes/<node>/`, `%` and `/` of the name escaped.
fn node_prefix(root: &str, node: &str) -> String {
    let escaped = node.replace('%', "%25").replace('/', "%2F");
    format!("{root}nodes/{escaped}/")
}

/// The value of a block owned by `node`, byte for byte.
fn owner_value(node: &str) -> String {
    serde_json::to_string(&OwnerRecord {
        node: node.to_owned(),
    })
    .unwrap_or_default()
}

/// A reservation's value, byte for byte as this store writes it.
fn record_value(container_id: &str, ifname: Option<&str>, node: &str) -> String {
    serde_json::to_string(&Record {
        container_id: container_id.trim().to_owned(),
        ifname: ifname.map(str::to_owned),
        node: node.to_owned(),
    })
    .unwrap_or_default()
}

/// FNV-1a of `text`: where a node starts looking for a free block, the
/// same on every run, different between nodes.
fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
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
