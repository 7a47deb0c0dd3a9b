//! A node's blocks: where an ADD's addresses may come from, claiming a
//! free block when the node's are full, and giving back the empty ones.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use cni_types::Error;

use super::answer::Response;
use super::blocks::{block_count, candidates, capacity, Block};
use super::txn::{Compare, Op, Read, Txn};
use super::EtcdStore;
use crate::range::{bits, from_bits, Range, RangeIter, RangeSet};
use crate::store::{Access, Reservation, Skipped, State, Store};

/// Most blocks an ADD claims (each found full of addresses held outside
/// the node's knowledge before it claimed it) before it borrows.
const MAX_CLAIMS_PER_ADD: usize = 8;

/// Most claims of a block an ADD may lose to other nodes before code 11.
const MAX_LOST_CLAIMS: usize = 32;

/// Most blocks a claim reads, each found full, before the ADD gives up
/// with code 11: full of reservations moved or left in the old layout
/// wherever the claim looked, the range not known full.
const MAX_CHECKED_CLAIMS: usize = 32;

impl EtcdStore {
    /// Where set `i`'s new addresses may come from: the node's blocks;
    /// when those are full (and this is an ADD), a block claimed now, or
    /// the part of another node's block to borrow an address from.
    pub(super) fn pool(&mut self, i: usize, state: &mut State) -> Result<Vec<Range>, Error> {
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
                // The node's own blocks serve again: no lender of this set
                // to read ahead.
                if self.lender.is_some_and(|b| !b.pool(&set).is_empty()) {
                    self.remember_lender(None);
                }
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
        let borrowed = self.borrow(&set, state)?;
        // The search starts just before a free address of the block
        // borrowed from, drawn at random: its owner hands out its
        // addresses in order, and other borrowers may have chosen the
        // same block, so that its first free address is the one most
        // likely lost to a race.
        let start = start_before_random_free(&borrowed, &state.held);
        if let (Some(slot), Some(start)) = (state.last_reserved.get_mut(i), start) {
            *slot = Some(start);
        }
        Ok(borrowed)
    }

    /// Claims a free block of `set` for this node, reading its keys into
    /// `state`; `None` when every block is owned.
    pub(super) fn claim(
        &mut self,
        set: &RangeSet,
        state: &mut State,
    ) -> Result<Option<Block>, Error> {
        let owners = self.owners_prefix();
        // Every block owned (as many owners as the sets have blocks,
        // counted once per read, when a claim is first needed): no claim,
        // and no listing of the owners.
        let blocks = self
            .sets
            .iter()
            .map(|s| block_count(s, self.sizes))
            .fold(0u128, u128::saturating_add);
        let owner_count = match self.owner_count {
            Some(n) => n,
            None => {
                let read = Read::prefix(&owners).count();
                let [counted] = self.read_all([read.serializable(!self.linearizable)])?;
                self.owner_count = Some(counted.count);
                counted.count
            }
        };
        if u128::from(owner_count) >= blocks {
            return Ok(None);
        }
        for attempt in 0..MAX_LOST_CLAIMS {
            // The first free block in host-local's order first (one node
            // alone allocates as host-local does); after a lost claim, from
            // a place of this node's, so that claimants spread out.
            let mut hint = match attempt {
                // The old layout not listed: from anywhere, as its keys
                // may fill the range's first blocks.
                0 if self.old_unlisted => super::scan::random(),
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
            for key in self.client.keys_under(&owners)? {
                let name = key.strip_prefix(&owners).unwrap_or(&key);
                match Block::parse(name, self.sizes) {
                    Ok(_) => {
                        owned.insert(name.to_owned());
                    }
                    Err(why) if attempt == 0 => state.skipped.push(Skipped {
                        entry: format!("etcd key {key}"),
                        why: why.to_string(),
                    }),
                    Err(_) => {}
                }
            }
            let mut checked = 0;
            let b = loop {
                // Past the owned blocks and the few that offer nothing (a
                // block holding only a gateway), a free one comes, or none
                // is.
                let bound = owned.len() + known.len() + 2 * set.ranges.len() + 1;
                let Some(b) = candidates(set, self.sizes, hint).take(bound).find(|b| {
                    !owned.contains(&b.name())
                        && capacity(&b.pool(set)) > known.get(b).copied().unwrap_or(0)
                }) else {
                    return Ok(None);
                };
                // What the block holds is read before it is claimed: keys
                // moved there from the old layout by an upgrade, whoever's
                // they are, and while the old layout is not listed, its
                // keys of the block. A full block is passed over, not
                // claimed.
                self.read_unclaimed(b, state)?;
                let pool = b.pool(set);
                if free_in(&pool, &state.held) > 0 {
                    break b;
                }
                known.insert(b, capacity(&pool));
                checked += 1;
                // Full blocks come in runs (a previous release handed out
                // addresses in order): look elsewhere, not next door.
                hint = super::scan::random();
                if checked > MAX_CHECKED_CLAIMS {
                    return Err(Error::try_again_later(
                        format!("the {checked} free blocks looked at were full"),
                        format!(
                            "in {}: of reservations moved from the layout before blocks, or \
                             still in it",
                            self.describe()
                        ),
                    ));
                }
            };
            let claimed = self.client.txn(&Txn::new(
                vec![Compare::Absent(self.owner_key(b))],
                vec![
                    Op::put(&self.owner_key(b), &self.owner_value()),
                    Op::put(&self.index_key(b), ""),
                    Op::Range(Read::prefix(&self.block_prefix(b))),
                ],
            ))?;
            if claimed.succeeded {
                // The claim's one read: the block's keys.
                let keys = (claimed.responses.into_iter())
                    .find_map(Response::into_range)
                    .unwrap_or_default()
                    .kvs;
                let found = self.block_reservations(b, keys, state);
                self.counts.insert(b, found);
                self.owned.push(b);
                self.owner_count = self.owner_count.map(|n| n + 1);
                self.relist(b, true);
                return Ok(Some(b));
            }
        }
        Err(Error::try_again_later(
            format!("lost {MAX_LOST_CLAIMS} claims of a block to other nodes"),
            format!("in {}", self.describe()),
        ))
    }

    /// Gives back the node's blocks left empty, but one.
    pub(super) fn give_back_empty_blocks(&mut self) -> Result<(), Error> {
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
            let given_back = self.client.txn(&Txn::new(
                vec![
                    Compare::holds(&self.owner_key(b), &self.owner_value()),
                    Compare::NoneUnder(self.block_prefix(b)),
                ],
                vec![
                    Op::delete(&self.owner_key(b)),
                    Op::delete(&self.index_key(b)),
                ],
            ))?;
            if given_back.succeeded {
                self.owned.retain(|o| *o != b);
                self.counts.remove(&b);
                self.relist(b, false);
            }
        }
        Ok(())
    }
}

/// How many addresses of `pool` are neither held nor a gateway.
pub(super) fn free_in(pool: &[Range], held: &[Reservation]) -> u128 {
    // Distinct addresses: a reservation learned from a lost race is also
    // among the keys of its block when that block is read afterwards.
    let used = held
        .iter()
        .filter(|r| pool.iter().any(|p| p.contains(r.ip) && r.ip != p.gateway))
        .map(|r| r.ip)
        .collect::<HashSet<IpAddr>>()
        .len() as u128;
    capacity(pool).saturating_sub(used)
}

/// The address before one of `pool`'s free addresses (not `held`, not a
/// gateway) drawn at random, in the order a search goes
/// ([`crate::range::RangeIter`], wrapping), so that a search starting
/// after it finds that address first. Drawn among the free addresses,
/// not among all: in a nearly full block, a random start followed by
/// the next free address sends every start within a run of held ones to
/// the same address, and borrowers racing for the block lose to each
/// other. A pool too large to list draws any address ([`random_in`]).
fn start_before_random_free(pool: &[Range], held: &[Reservation]) -> Option<IpAddr> {
    const MOST_LISTED: usize = 4096;
    let set = RangeSet {
        ranges: pool.to_vec(),
        field: String::new(),
    };
    let order: Vec<IpAddr> = RangeIter::new(&set, None).take(MOST_LISTED + 1).collect();
    if order.len() > MOST_LISTED {
        return random_in(pool);
    }
    let held: HashSet<IpAddr> = held.iter().map(|r| r.ip).collect();
    let gateways: HashSet<IpAddr> = pool.iter().map(|r| r.gateway).collect();
    let free: Vec<usize> = (order.iter().enumerate())
        .filter(|(_, ip)| !held.contains(ip) && !gateways.contains(ip))
        .map(|(at, _)| at)
        .collect();
    let pick = *free.get(super::scan::random() as usize % free.len().max(1))?;
    Some(order[(pick + order.len() - 1) % order.len()])
}

/// An address of `pool` drawn at random (see [`super::scan::random`]).
pub(super) fn random_in(pool: &[Range]) -> Option<IpAddr> {
    let sizes: Vec<u128> = (pool.iter())
        .map(|r| (bits(r.end) - bits(r.start)).saturating_add(1))
        .collect();
    let total = sizes.iter().copied().fold(0u128, u128::saturating_add);
    let mut at = u128::from(super::scan::random()) % total.max(1);
    for (r, size) in pool.iter().zip(sizes) {
        if at < size {
            return Some(from_bits(bits(r.start) + at, r.start.is_ipv4()));
        }
        at -= size;
    }
    None
}

/// FNV-1a of `text`: where a node starts looking for a free block, the
/// same on every run, different between nodes.
pub(super) fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Owner;

    fn held(last_octets: impl IntoIterator<Item = u8>) -> Vec<Reservation> {
        (last_octets.into_iter())
            .map(|o| Reservation {
                ip: IpAddr::from([10, 0, 0, o]),
                owner: Owner::Container(format!("c{o}")),
                local: false,
            })
            .collect()
    }

    #[test]
    fn a_borrowing_search_starts_just_before_a_free_address_drawn_at_random() {
        let pool = [Range {
            subnet: "10.0.0.0/24".parse().unwrap(),
            start: IpAddr::from([10, 0, 0, 0]),
            end: IpAddr::from([10, 0, 0, 15]),
            gateway: IpAddr::from([10, 0, 0, 1]),
        }];
        // Free: .7 and .12 (.1 is the gateway).
        let taken = held((0..16).filter(|o| ![1, 7, 12].contains(o)));
        let mut starts = HashSet::new();
        for _ in 0..64 {
            starts.insert(start_before_random_free(&pool, &taken).unwrap());
        }
        let want = HashSet::from([IpAddr::from([10, 0, 0, 6]), IpAddr::from([10, 0, 0, 11])]);
        assert_eq!(starts, want, "each free address drawn, nothing else");
        // The first address free: the search wraps from the last.
        let taken = held((1..16).filter(|o| *o != 1));
        assert_eq!(
            start_before_random_free(&pool, &taken),
            Some(IpAddr::from([10, 0, 0, 15]))
        );
        // Nothing free: no start.
        let taken = held((0..16).filter(|o| *o != 1));
        assert_eq!(start_before_random_free(&pool, &taken), None);
    }
}
