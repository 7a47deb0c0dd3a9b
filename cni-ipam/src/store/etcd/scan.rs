//! Finding room outside the node's own blocks without listing the
//! network: borrowing and STATUS count keys (`count_only`), a bounded
//! number of blocks per request, and read the one block they choose.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use cni_types::{Code, Error};

use super::blocks::{block_count, candidates, capacity, Block};
use super::claims::free_in;
use super::keys::Index;
use super::txn::Read;
use super::upgrade::OldLayout;
use super::{EtcdStore, Place};
use crate::range::{Range, RangeSet};
use crate::store::{State, Store};

/// Blocks counted in one request (etcd's `--max-txn-ops` is 128).
const COUNTS_PER_TXN: usize = 60;

/// Most blocks a borrowing ADD or a STATUS counts before it stops
/// looking: 70 requests, a /14 of /26 blocks.
const MAX_COUNTED: usize = 4096;

/// Most blocks an ADD reads to borrow from, each found full when read
/// (taken meanwhile by nodes racing for the last addresses).
const MAX_BORROW_TRIES: usize = 16;

/// Which blocks a scan may choose.
#[derive(Clone, Copy)]
struct Wanted<'a> {
    /// Only blocks nobody owns, or those of `mine`.
    unowned: bool,
    /// This node's blocks: skipped when borrowing (they are full), taken
    /// as its own when `unowned`.
    mine: &'a [Block],
    /// Whether this node's blocks are passed over.
    skip_mine: bool,
}

/// What a read of [`EtcdStore::find_room`] asks for.
#[derive(Clone, Copy)]
enum Counted {
    /// How many keys the block holds.
    Keys(Block),
    /// Whether the block has an owner.
    Owner(Block),
}

impl EtcdStore {
    /// Where an ADD may borrow an address when every block is owned: the
    /// first block of another node, from a random place, in which fewer
    /// keys are held than it offers `set`. Its reservations go into
    /// `state` and its part of the set is the pool. Reads the counts of
    /// at most [`MAX_COUNTED`] blocks, then one block's keys; the
    /// reservation's comparisons decide, so a stale count costs a lost
    /// race, never a duplicate. Empty: nothing to borrow. Code 11 when
    /// each block counted with room was full when read, [`MAX_BORROW_TRIES`]
    /// times (the last addresses are being taken: try again).
    pub(super) fn borrow(
        &mut self,
        set: &RangeSet,
        state: &mut State,
    ) -> Result<Vec<Range>, Error> {
        let old = self.old_per_block();
        let owned = self.owned.clone();
        let wanted = Wanted {
            unowned: false,
            mine: &owned,
            skip_mine: true,
        };
        // The lender, read with the node's index, while it has room.
        if let Some(b) = self.lender_read {
            let pool = b.pool(set);
            if free_in(&pool, &state.held) > 0 {
                return Ok(pool);
            }
        }
        let serializable = !self.linearizable;
        // A block counted with room may fill before its keys are read:
        // then another, from another place.
        for _ in 0..MAX_BORROW_TRIES {
            let Some(b) = self.find_room(set, random(), wanted, &old, serializable)? else {
                return Ok(Vec::new());
            };
            let prefix = self.block_prefix(b);
            let [keys] = self.read_all([Read::prefix(&prefix).serializable(serializable)])?;
            let mut found = Vec::new();
            for (key, value) in keys.kvs {
                let Some(ip) = key
                    .strip_prefix(&prefix)
                    .and_then(|ip| ip.parse::<IpAddr>().ok())
                else {
                    continue;
                };
                if !self.places.contains_key(&ip) {
                    found.push(self.reservation(ip, &value, &key, &mut state.skipped));
                }
            }
            state.held.extend(found);
            let pool = b.pool(set);
            if free_in(&pool, &state.held) > 0 {
                self.remember_lender(Some(b));
                return Ok(pool);
            }
        }
        // Each block counted with room was full when read: other nodes
        // are taking the last addresses. Not an exhausted range (code
        // 102) but a race to try again.
        Err(Error::try_again_later(
            format!(
                "{MAX_BORROW_TRIES} blocks of other nodes counted with room were full when read"
            ),
            format!("borrowing an address in {}", self.describe()),
        ))
    }

    /// STATUS: from the node's index and counted reads. A set is free
    /// while fewer keys are held in the whole network than it offers; else
    /// while one of its blocks holds fewer (one nobody owns or this node's,
    /// with `strictBlocks`). Past [`MAX_COUNTED`] blocks counted without
    /// finding room, it is taken as free: ADD will tell.
    pub(super) fn count_fullness(&mut self) -> Result<Vec<usize>, Error> {
        // Counts of what grows with the network's blocks, never with its
        // reservations: the node's index, the claimed blocks (`owners/`);
        // until the network is marked upgraded, the old layout's size as
        // recorded (point reads), else counted (a second request).
        let reads = vec![
            Read::prefix(&self.node_prefix()).keys_only(),
            Read::prefix(&self.owners_prefix()).count(),
        ];
        let (ranges, old) = self.read_old_layout(reads, false, false)?;
        let Ok([index, claimed]) = <[_; 2]>::try_from(ranges) else {
            return Err(Error::new(Code::INTERNAL, "fewer answers than etcd reads"));
        };
        let mut ignored = State::default();
        let index = Index::parse(self, index.kvs, &mut ignored);
        let claimed = claimed.count;
        let (old_count, recorded) = match old {
            None => (0, false),
            Some(OldLayout {
                recorded: Some(bound),
                ..
            }) => (bound, true),
            Some(OldLayout { last, written, .. }) => {
                let [counted] = self.read_all([Read::prefix(&self.old_prefix()).count()])?;
                // Once, for the polls to come; best effort. A stale record
                // is left to the next ADD, DEL or GC: while nodes of the
                // previous release keep reserving, every poll of every
                // node would write.
                if !written {
                    let _ = self.record_old_size(counted.count, &last);
                }
                (counted.count, false)
            }
        };
        let mut exhausted = Vec::new();
        // A set with a block nobody claimed serves an ADD (it claims the
        // block). Only when every block of a set is claimed (or old-layout
        // keys remain) are the reservations counted, and only a set they
        // nearly fill is counted block by block. With old keys, a set
        // whose addresses outnumber what the claimed blocks and the
        // recorded old layout can hold has a free address in a block
        // nobody claimed: no more is read.
        let claimed_all: Vec<&RangeSet> = (self.sets.iter())
            .filter(|set| {
                let held_at_most = (u128::from(claimed))
                    .saturating_mul(self.sizes.addresses(set))
                    .saturating_add(u128::from(old_count));
                let room_unclaimed = recorded && capacity(&set.ranges) > held_at_most;
                (old_count > 0 && !room_unclaimed)
                    || u128::from(claimed) >= block_count(set, self.sizes)
            })
            .collect();
        if claimed_all.is_empty() {
            return Ok(exhausted);
        }
        let [counted] = self.read_all([Read::prefix(&format!("{}blocks/", self.root)).count()])?;
        let held = counted.count + old_count;
        let near: Vec<(usize, RangeSet)> = (self.sets.iter().enumerate())
            .filter(|(_, set)| claimed_all.contains(set))
            .filter(|(_, set)| u128::from(held) >= capacity(&set.ranges))
            .map(|(i, set)| (i, set.clone()))
            .collect();
        if near.is_empty() {
            return Ok(exhausted);
        }
        let old = if old_count > 0 {
            self.read_old_per_block()?
        } else {
            HashMap::new()
        };
        let wanted = Wanted {
            unowned: self.strict,
            mine: &index.blocks,
            skip_mine: false,
        };
        for (i, set) in near {
            if self.find_room(&set, 0, wanted, &old, false)?.is_none() {
                exhausted.push(i);
            }
        }
        Ok(exhausted)
    }

    /// The first block of `set` from `start` with room, of those
    /// `wanted`; `None` past [`MAX_COUNTED`] or the last block.
    fn find_room(
        &self,
        set: &RangeSet,
        start: u64,
        wanted: Wanted<'_>,
        old: &HashMap<Block, u128>,
        serializable: bool,
    ) -> Result<Option<Block>, Error> {
        let mut blocks = candidates(set, self.sizes, start)
            .filter(|b| !(wanted.skip_mine && wanted.mine.contains(b)))
            .take(MAX_COUNTED);
        loop {
            let batch: Vec<Block> = blocks.by_ref().take(COUNTS_PER_TXN).collect();
            if batch.is_empty() {
                return Ok(None);
            }
            let mut asks = Vec::with_capacity(2 * batch.len());
            for b in &batch {
                let keys = Read::prefix(&self.block_prefix(*b)).count();
                asks.push((Counted::Keys(*b), keys.serializable(serializable)));
                if wanted.unowned {
                    let owner = Read::key(&self.owner_key(*b)).keys_only();
                    asks.push((Counted::Owner(*b), owner.serializable(serializable)));
                }
            }
            let mut held = HashMap::new();
            let mut owned = HashSet::new();
            for (ask, range) in self.read_each(asks)? {
                match ask {
                    Counted::Keys(b) => {
                        held.insert(b, range.count);
                    }
                    Counted::Owner(b) if !range.kvs.is_empty() => {
                        owned.insert(b);
                    }
                    Counted::Owner(_) => {}
                }
            }
            for b in &batch {
                let used = u128::from(held.get(b).copied().unwrap_or(0))
                    + old.get(b).copied().unwrap_or(0);
                let taken = wanted.unowned && !wanted.mine.contains(b) && owned.contains(b);
                if !taken && used < capacity(&b.pool(set)) {
                    return Ok(Some(*b));
                }
            }
        }
    }

    /// How many addresses of each block are held in the layout before
    /// blocks, as last read.
    fn old_per_block(&self) -> HashMap<Block, u128> {
        let mut per = HashMap::new();
        for (ip, place) in &self.places {
            if *place == Place::Old {
                *per.entry(Block::of(*ip, self.sizes)).or_default() += 1;
            }
        }
        per
    }

    /// [`EtcdStore::old_per_block`], read now (keys only).
    fn read_old_per_block(&self) -> Result<HashMap<Block, u128>, Error> {
        let old = self.old_prefix();
        let mut per = HashMap::new();
        for key in self.client.keys_under(&old)? {
            if let Some(ip) = key
                .strip_prefix(&old)
                .and_then(|ip| ip.parse::<IpAddr>().ok())
            {
                *per.entry(Block::of(ip, self.sizes)).or_default() += 1;
            }
        }
        Ok(per)
    }
}

/// A number drawn anew in each process and call: where a borrowing node
/// starts looking, so that borrowers spread over the blocks.
pub(super) fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(u64::from(std::process::id()));
    h.finish()
}
