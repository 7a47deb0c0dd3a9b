//! The upgrade from the layout before blocks (`ips/<address>`, written by
//! the previous release): its reservations are moved into the blocks'
//! key space, a bounded number per request, each atomically and only while
//! it holds what was read, so the old layout drains whoever's they are.

use std::net::IpAddr;

use cni_types::{Code, Error};

use super::answer::{Range, Response};
use super::blocks::Block;
use super::claims::random_in;
use super::keys::node_prefix;
use super::records::{OldSize, Record};
use super::scan::random;
use super::txn::{Compare, Op, Read, Txn};
use super::{EtcdStore, Place};
use crate::range::{bits, from_bits};
use crate::store::{Access, Skipped, State};

/// Most old reservations one DEL or GC moves (40 per transaction): what
/// is left is honoured where it is, and moved by the next.
const MAX_MOVED: usize = 2000;

/// Most keys the old layout may hold for an ADD to list it whole (and
/// move them all). Past it, an ADD reads only the old keys of the blocks
/// it allocates from and moves a window of [`MOVED_BY_ADD`]: a listing
/// costs etcd about 11 µs a key (100,000 in 1.1 s), and nodes upgrading
/// at once each listing 100,000 ran past an ADD's deadline.
pub(super) const LISTED_BY_ADD: u64 = MAX_MOVED as u64;

/// Old reservations an ADD moves: a window of the listing from a random
/// key when the old layout is too large to list ([`LISTED_BY_ADD`]), else
/// from a random place of the listing; and a DEL or CHECK that reads only
/// the keys its `prevResult` names.
const MOVED_BY_ADD: u64 = 200;

/// Most addresses of a block whose old keys are read one by one (for
/// the blocks an ADD allocates from, and a block before it is claimed);
/// larger blocks (a `blockSize` under 22) make the ADD list the old
/// layout whole instead. A power of two.
const POINT_READS_MOST: u32 = 1024;

/// What a read while the network is not marked upgraded knows of the
/// layout before blocks ([`EtcdStore::read_old_layout`]).
#[derive(Debug)]
pub(super) struct OldLayout {
    /// How many keys `ips/` holds, when counted.
    pub(super) counted: Option<u64>,
    /// The [`OldSize`] record's count, when it is fresh.
    pub(super) recorded: Option<u64>,
    /// Whether a record is there at all, fresh or not.
    pub(super) written: bool,
    /// The previous release's `last_reserved/` keys and values.
    pub(super) last: Vec<(String, Vec<u8>)>,
}

/// Reservations moved in one transaction: 2 comparisons and 3 operations
/// each (etcd's `--max-txn-ops` is 128 per list).
const MOVED_PER_TXN: usize = 40;

impl EtcdStore {
    /// The answers to `reads` and, in the same request, how many keys the
    /// layout before blocks holds: counted (`Some`) only while the
    /// network has no [`EtcdStore::upgraded_key`], `None` once it has.
    /// etcd counts a prefix by walking every key it held since the last
    /// compaction, the moved reservations' tombstones too: 5 ms a count
    /// at 100,000 moved here, on every ADD and STATUS of an upgraded
    /// network whose etcd is never compacted. One transaction whose
    /// comparison is the marker's absence; at most `2 * MAX_TXN_KEYS - 3`
    /// reads. An operation that finds no fresh [`OldSize`] record writes
    /// one ([`EtcdStore::record_old_size`]).
    pub(super) fn read_counting_old(
        &self,
        reads: Vec<Read>,
        serializable: bool,
    ) -> Result<(Vec<Range>, Option<u64>), Error> {
        let (ranges, old) = self.read_old_layout(reads, serializable, true)?;
        let Some(old) = old else {
            return Ok((ranges, None));
        };
        let counted = old.counted.unwrap_or(0);
        // None fresh, or one the count shows short (keys written under
        // `ips/` by hand): recorded anew. Best effort: without it STATUS
        // counts, as before.
        if old.recorded.is_none_or(|n| counted > n) {
            let _ = self.record_old_size(counted, &old.last);
        }
        Ok((ranges, Some(counted)))
    }

    /// The answers to `reads` and, in the same request while the network
    /// is not marked upgraded (`None` once it is), what is known of the
    /// layout before blocks: the [`OldSize`] record when it is fresh, the
    /// previous release's `last_reserved/` keys, and (when `count`) how
    /// many keys `ips/` holds. Point reads but for the count.
    pub(super) fn read_old_layout(
        &self,
        reads: Vec<Read>,
        serializable: bool,
        count: bool,
    ) -> Result<(Vec<Range>, Option<OldLayout>), Error> {
        let mut asked = reads.clone();
        asked.push(Read::key(&self.old_size_key()).serializable(serializable));
        asked.push(Read::prefix(&self.old_last_prefix()).serializable(serializable));
        if count {
            asked.push(
                Read::prefix(&self.old_prefix())
                    .count()
                    .serializable(serializable),
            );
        }
        let txn = Txn {
            compare: vec![Compare::Absent(self.upgraded_key())],
            success: asked.into_iter().map(Op::Range).collect(),
            failure: reads.into_iter().map(Op::Range).collect(),
        };
        let outcome = self.client.txn(&txn)?;
        // One response per read of the branch that ran, each a range
        // ([`Client::txn`](super::client::Client::txn) checks).
        let mut ranges: Vec<Range> = (outcome.responses.into_iter())
            .filter_map(Response::into_range)
            .collect();
        if !outcome.succeeded {
            return Ok((ranges, None));
        }
        let counted = match count {
            true => ranges.pop().map(|r| r.count),
            false => None,
        };
        let (Some(last), Some(size)) = (ranges.pop(), ranges.pop()) else {
            return Err(Error::new(Code::INTERNAL, "fewer answers than etcd reads"));
        };
        // Fresh: written after the last reservation of a node of the
        // previous release (its reservations rewrite `last_reserved/`).
        let recorded = (size.kvs.first())
            .filter(|_| size.newest > last.newest)
            .and_then(|(_, v)| serde_json::from_slice::<OldSize>(v).ok())
            .map(|r| r.count);
        Ok((
            ranges,
            Some(OldLayout {
                counted,
                recorded,
                written: !size.kvs.is_empty(),
                last: last.kvs,
            }),
        ))
    }

    /// Writes the [`OldSize`] record: `counted` keys under `ips/` plus
    /// every key under `nodes/` (each moved reservation left one there,
    /// `borrowed/<address>`), counted now, so that what the old layout
    /// held and what was moved out of it since are both within it; only
    /// while `last_reserved/` still holds `last` (no node of the previous
    /// release reserved since `counted` was read: if one did, nothing is
    /// written) and the network is not marked upgraded. Moves keep the
    /// sum, releases lower it: the record stays an upper bound until a
    /// node of the previous release reserves again, which STATUS sees.
    pub(super) fn record_old_size(
        &self,
        counted: u64,
        last: &[(String, Vec<u8>)],
    ) -> Result<(), Error> {
        let nodes = Read::prefix(&format!("{}nodes/", self.root)).count();
        let [moved] = self.read_all([nodes])?;
        let size = OldSize {
            count: counted.saturating_add(moved.count),
            node: self.node.clone(),
        };
        let value = serde_json::to_string(&size)
            .map_err(|e| Error::new(Code::INTERNAL, format!("old size record: {e}")))?;
        let mut compare = vec![Compare::Absent(self.upgraded_key())];
        if last.is_empty() {
            compare.push(Compare::NoneUnder(self.old_last_prefix()));
        }
        for (key, v) in last {
            compare.push(Compare::holds(key, &String::from_utf8_lossy(v)));
        }
        let txn = Txn::new(compare, vec![Op::put(&self.old_size_key(), &value)]);
        self.client.txn(&txn).map(|_| ())
    }

    /// Marks the network upgraded ([`EtcdStore::upgraded_key`], naming
    /// this node) if no key lies under `ips/` and it is not marked yet:
    /// once per network, after a read counted none. Best effort: a
    /// failure leaves the network unmarked, and reads keep counting.
    pub(super) fn mark_upgraded(&self) {
        let txn = Txn::new(
            vec![
                Compare::Absent(self.upgraded_key()),
                Compare::NoneUnder(self.old_prefix()),
            ],
            vec![
                Op::put(&self.upgraded_key(), &self.owner_value()),
                Op::delete(&self.old_size_key()),
            ],
        );
        let _ = self.client.txn(&txn);
    }

    /// Moves up to [`MAX_MOVED`] (an ADD: [`MOVED_BY_ADD`]) of the old
    /// layout's reservations `listed`
    /// (key, value) into blocks: `blocks/<block>/<address>` with the same
    /// value and `nodes/<node>/borrowed/<address>` in the index of the
    /// node it names, the old key deleted, in one transaction comparing
    /// the old key's value and the new key's absence. The address is held
    /// all along, under one key or the other. This node's own become
    /// its borrowed reservations (released by their DEL as before). What
    /// was not moved (not a reservation, naming no node, past the bound,
    /// changed meanwhile) is returned, to be honoured where it is.
    pub(super) fn migrate_old(
        &mut self,
        listed: Vec<(String, Vec<u8>)>,
        state: &mut State,
    ) -> Result<Vec<(String, Vec<u8>)>, Error> {
        let old = self.old_prefix();
        let mut movable = Vec::new();
        let mut left = Vec::new();
        for (key, value) in listed {
            let ip = key
                .strip_prefix(&old)
                .and_then(|ip| ip.parse::<IpAddr>().ok());
            let record = serde_json::from_slice::<Record>(&value).ok();
            match (ip, record) {
                (Some(ip), Some(r)) if !r.node.is_empty() => movable.push((key, value, ip, r.node)),
                _ => left.push((key, value)),
            }
        }
        // From a random place: nodes upgrading at once move different
        // reservations rather than race for the same first ones. An ADD
        // moves a window's worth: 2,000 moves (50 transactions) an ADD
        // of 16 nodes at once put its p99 past a second at 10,000 keys.
        let most = match self.access {
            Access::Create => MOVED_BY_ADD as usize,
            _ => MAX_MOVED,
        };
        if movable.len() > most {
            let start = (random() % movable.len() as u64) as usize;
            movable.rotate_left(start);
            let rest = movable.split_off(most);
            left.extend(rest.into_iter().map(|(k, v, _, _)| (k, v)));
        }
        for chunk in movable.chunks(MOVED_PER_TXN) {
            let mut txn = Txn::new(Vec::new(), Vec::new());
            for (key, value, ip, node) in chunk {
                let b = Block::of(*ip, self.sizes);
                let text = String::from_utf8_lossy(value);
                txn.compare.push(Compare::holds(key, &text));
                txn.compare.push(Compare::Absent(self.ip_key(b, *ip)));
                txn.success.push(Op::put(&self.ip_key(b, *ip), &text));
                txn.success.push(Op::put(
                    &format!("{}borrowed/{ip}", node_prefix(&self.root, node)),
                    &b.name(),
                ));
                txn.success.push(Op::delete(key));
            }
            if self.client.txn(&txn)?.succeeded {
                for (key, value, ip, node) in chunk {
                    let b = Block::of(*ip, self.sizes);
                    if *node == self.node {
                        self.places.insert(*ip, Place::Borrowed(b));
                    }
                    let r = self.reservation(*ip, value, key, &mut state.skipped);
                    state.held.push(r);
                }
            } else {
                // One of them changed meanwhile: all stay where they are
                // this time (the next request moves the others).
                left.extend(chunk.iter().map(|(k, v, _, _)| (k.clone(), v.clone())));
            }
        }
        Ok(left)
    }

    /// An ADD's reading of the old layout when it is too large to list
    /// ([`LISTED_BY_ADD`]): first a window of [`MOVED_BY_ADD`] keys from a
    /// random one is moved (once per ADD), then the old keys of the
    /// blocks the ADD allocates from (the node's own and the lender read)
    /// are read address by address, so that what they hold is known
    /// where it is now. What to honour where it is is returned. Only for
    /// blocks [`EtcdStore::blocks_read_by_address`] allows.
    pub(super) fn read_old_near(
        &mut self,
        state: &mut State,
    ) -> Result<Vec<(String, Vec<u8>)>, Error> {
        let mut left = self.move_window(state)?;
        self.old_unlisted = true;
        let mut blocks = self.owned.clone();
        blocks.extend(self.lender_read);
        left.extend(self.old_keys_of(&blocks)?);
        Ok(left)
    }

    /// A DEL's or CHECK's reading of the old layout when it is too large
    /// to list ([`LISTED_BY_ADD`]) and the request's `prevResult` named
    /// the attachment's addresses ([`Store::expect`](crate::store::Store::expect)):
    /// a window of [`MOVED_BY_ADD`] keys is moved (not by CHECK, which
    /// only reads), then the old key of each address named is read (one
    /// request). A reservation of the attachment's under the old layout
    /// is at its address, which the ADD's result names: nothing else of
    /// the layout can be its. What to honour where it is is returned.
    pub(super) fn read_old_expected(
        &mut self,
        state: &mut State,
    ) -> Result<Vec<(String, Vec<u8>)>, Error> {
        let mut left = match self.access {
            Access::Read => Vec::new(),
            _ => self.move_window(state)?,
        };
        let reads = self.expected.iter().map(|ip| self.old_key_read(*ip));
        left.extend(self.read_old_keys(reads.collect())?);
        Ok(left)
    }

    /// Moves a window of [`MOVED_BY_ADD`] old keys from a random one into
    /// blocks, once per operation; what to honour where it is is
    /// returned. Nodes upgrading at once move different keys, and every
    /// operation drains the layout a little without listing it.
    fn move_window(&mut self, state: &mut State) -> Result<Vec<(String, Vec<u8>)>, Error> {
        if self.window_moved {
            return Ok(Vec::new());
        }
        self.window_moved = true;
        let old = self.old_prefix();
        let ranges: Vec<_> = self.sets.iter().flat_map(|s| s.ranges.clone()).collect();
        let from = random_in(&ranges).map_or(old.clone(), |ip| self.old_key(ip));
        let window = (self.client).range_window(&old, &from, MOVED_BY_ADD, self.linearizable)?;
        self.migrate_old(window, state)
    }

    /// Whether a block of every range set holds at most
    /// [`POINT_READS_MOST`] addresses, so that its old keys are read
    /// address by address.
    pub(super) fn blocks_read_by_address(&self) -> bool {
        self.sets.iter().all(|set| {
            let (len, bits) = match set.is_ipv4() {
                true => (self.sizes.v4, 32),
                false => (self.sizes.v6, 128),
            };
            u32::from(bits - len.min(bits)) <= POINT_READS_MOST.ilog2()
        })
    }

    /// The old layout's keys of every address of `blocks` in the range
    /// sets, with their values, read address by address (in as few
    /// transactions as etcd takes). Only for blocks
    /// [`EtcdStore::blocks_read_by_address`] allows.
    pub(super) fn old_keys_of(&self, blocks: &[Block]) -> Result<Vec<(String, Vec<u8>)>, Error> {
        self.read_old_keys(self.old_key_reads(blocks))
    }

    /// What `reads`, point reads of old keys ([`EtcdStore::old_key_read`]),
    /// find: each key held and its value, in as few transactions as etcd
    /// takes.
    fn read_old_keys(&self, reads: Vec<Read>) -> Result<Vec<(String, Vec<u8>)>, Error> {
        let ranges = self.read_txn(reads)?;
        Ok(ranges.into_iter().flat_map(|r| r.kvs).collect())
    }

    /// What block `b`, not claimed yet, holds, read before a claim (one
    /// request), into `state`: the keys under it (moved there from the
    /// old layout, whoever's they are) and, while the old layout is not
    /// listed ([`EtcdStore::read_old_near`]), its old keys.
    pub(super) fn read_unclaimed(&mut self, b: Block, state: &mut State) -> Result<(), Error> {
        let mut reads = match self.old_unlisted {
            true => self.old_key_reads(&[b]),
            false => Vec::new(),
        };
        reads.push(Read::prefix(&self.block_prefix(b)).serializable(!self.linearizable));
        let mut ranges = self.read_txn(reads)?;
        let under = ranges.pop().map(|r| r.kvs).unwrap_or_default();
        self.hold_old(ranges.into_iter().flat_map(|r| r.kvs).collect(), state);
        self.lent_reservations(b, &under, state);
        Ok(())
    }

    /// A read of the old key of every address of `blocks` in the range
    /// sets.
    fn old_key_reads(&self, blocks: &[Block]) -> Vec<Read> {
        let mut reads = Vec::new();
        for b in blocks {
            for set in &self.sets {
                for r in b.pool(set) {
                    for n in bits(r.start)..=bits(r.end) {
                        reads.push(self.old_key_read(from_bits(n, r.start.is_ipv4())));
                    }
                }
            }
        }
        reads
    }

    /// A read of `ip`'s old key, as consistent as this store's reads.
    fn old_key_read(&self, ip: IpAddr) -> Read {
        Read::key(&self.old_key(ip)).serializable(!self.linearizable)
    }

    /// Holds the old layout's reservations `kvs` where they are (placed
    /// as old), but those placed already; the keys that are not named
    /// by an address are skipped and named.
    pub(super) fn hold_old(&mut self, kvs: Vec<(String, Vec<u8>)>, state: &mut State) {
        let old = self.old_prefix();
        for (key, value) in kvs {
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
}
