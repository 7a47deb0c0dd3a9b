//! The upgrade from the layout before blocks (`ips/<address>`, written by
//! the previous release): its reservations are moved into the blocks'
//! key space, a bounded number per request, each atomically and only while
//! it holds what was read, so the old layout drains whoever's they are.

use std::net::IpAddr;

use cni_types::Error;

use super::answer::{Range, Response};
use super::blocks::Block;
use super::keys::node_prefix;
use super::records::Record;
use super::scan::random;
use super::txn::{Compare, Op, Read, Txn};
use super::{EtcdStore, Place};
use crate::store::State;

/// Most old reservations one DEL, GC or ADD moves (40 per transaction):
/// what is left is honoured where it is, and moved by the next.
const MAX_MOVED: usize = 2000;

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
    /// comparison is the marker's absence; at most `2 * MAX_TXN_KEYS`
    /// reads.
    pub(super) fn read_counting_old(
        &self,
        reads: Vec<Read>,
        serializable: bool,
    ) -> Result<(Vec<Range>, Option<u64>), Error> {
        let count = Read::prefix(&self.old_prefix())
            .count()
            .serializable(serializable);
        let mut counting = reads.clone();
        counting.push(count);
        let txn = Txn {
            compare: vec![Compare::Absent(self.upgraded_key())],
            success: counting.into_iter().map(Op::Range).collect(),
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
        let counted = ranges.pop().map(|r| r.count);
        Ok((ranges, counted))
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
            vec![Op::put(&self.upgraded_key(), &self.owner_value())],
        );
        let _ = self.client.txn(&txn);
    }

    /// Moves up to [`MAX_MOVED`] of the old layout's reservations `listed`
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
        // reservations rather than race for the same first ones.
        if movable.len() > MAX_MOVED {
            let start = (random() % movable.len() as u64) as usize;
            movable.rotate_left(start);
            let rest = movable.split_off(MAX_MOVED);
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
}
