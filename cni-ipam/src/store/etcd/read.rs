//! The store's reading: the node's index, its blocks and what it borrowed, in
//! few requests ([`Store::read`](crate::store::Store::read)), and the reads
//! the claims and reclaiming share.

use std::net::IpAddr;

use cni_types::{Code, Error};

use super::answer::{Range, Response};
use super::blocks::Block;
use super::client::not_etcd;
use super::keys::Index;
use super::txn::{Op, Read, Txn};
use super::upgrade::LISTED_BY_ADD;
use super::{EtcdStore, Place, MAX_TXN_KEYS};
use crate::store::{Access, Skipped, State};

/// What a read of [`Store::read`](crate::store::Store::read)'s second request asks for.
#[derive(Debug, Clone, Copy)]
enum Ask {
    /// The owner of the node's block.
    Owner(Block),
    /// The keys under the node's block.
    Keys(Block),
    /// The reservation of an address the node borrowed, in its block.
    Borrowed(IpAddr, Block),
}

impl EtcdStore {
    /// [`Store::read`](crate::store::Store::read): the node's reservations and pools.
    pub(super) fn read_state(&mut self, sets: usize) -> Result<State, Error> {
        let mut state = State {
            last_reserved: vec![None; sets],
            ..State::default()
        };
        self.places.clear();
        self.counts.clear();
        self.old_unlisted = false;
        let serializable = !self.linearizable;
        // 1. The node's index, whether the old layout holds anything
        // (until the network is marked upgraded), and the blocks the
        // node's hint names (their owner and every key);
        // for an ADD of a node that borrows, its lender's keys and the
        // count of claimed blocks (what a claim would count first).
        let old = self.old_prefix();
        let hint = self.hint.read(self.sizes);
        let hinted = hint.blocks;
        self.lender = hint.lender;
        let lender = (hint.lender).filter(|b| self.access == Access::Create && !hinted.contains(b));
        let mut first = vec![Read::prefix(&self.node_prefix()).serializable(serializable)];
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
        let (mut ranges, counted) = self.read_counting_old(first, serializable)?;
        let lender_ranges = ranges.split_off(ranges.len().min(1 + 2 * hinted.len()));
        let mut ranges = ranges.into_iter();
        let Some(index) = ranges.next() else {
            return Err(Error::new(Code::INTERNAL, "fewer answers than etcd reads"));
        };
        let index = Index::parse(self, index.kvs, &mut state);
        let old_count = counted.unwrap_or(0);
        if counted == Some(0) && self.access != Access::Read {
            self.mark_upgraded();
        }
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
        // 3. The layout before blocks, while it holds anything: listed
        // whole; when too large, near the blocks an ADD allocates from, or
        // at the addresses a DEL's or CHECK's prevResult names.
        if old_count > 0 {
            let large = old_count > LISTED_BY_ADD;
            let listed = match self.access {
                Access::Create if large && self.blocks_read_by_address() => {
                    self.read_old_near(&mut state)?
                }
                Access::Change | Access::Read if large && !self.expected.is_empty() => {
                    self.read_old_expected(&mut state)?
                }
                Access::Read => self.client.range_prefix_paged(&old, self.linearizable)?,
                _ => {
                    let listed = self.client.range_prefix_paged(&old, self.linearizable)?;
                    self.migrate_old(listed, &mut state)?
                }
            };
            self.hold_old(listed, &mut state);
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

    /// Read-only transactions of `reads` (in chunks etcd accepts): every
    /// read's answer, in order, one each.
    pub(super) fn read_txn(&self, reads: Vec<Read>) -> Result<Vec<Range>, Error> {
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
    pub(super) fn relist(&mut self, b: Block, claimed: bool) {
        self.listed.retain(|l| *l != b);
        if claimed {
            self.listed.push(b);
            self.listed.sort();
        }
        self.hint.remember(&self.listed, self.lender);
    }

    /// Keeps the hint's lender to `lender` (the block a borrowing ADD
    /// took from; none once the node's own blocks serve again).
    pub(super) fn remember_lender(&mut self, lender: Option<Block>) {
        if self.lender != lender {
            self.lender = lender;
            self.hint.remember(&self.listed, lender);
        }
    }

    /// The reservations of block `b`, which another node owns, read whole
    /// (`kvs`): into `state`, each placed as borrowed (those of this node
    /// are: its index lists them so).
    pub(super) fn lent_reservations(
        &mut self,
        b: Block,
        kvs: &[(String, Vec<u8>)],
        state: &mut State,
    ) {
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
    pub(super) fn read_each<T>(&self, asks: Vec<(T, Read)>) -> Result<Vec<(T, Range)>, Error> {
        let (tags, reads): (Vec<T>, Vec<Read>) = asks.into_iter().unzip();
        Ok(tags.into_iter().zip(self.read_txn(reads)?).collect())
    }

    /// [`EtcdStore::read_txn`] of a fixed list of reads, one answer each.
    pub(super) fn read_all<const N: usize>(&self, reads: [Read; N]) -> Result<[Range; N], Error> {
        self.read_txn(reads.into()).and_then(|ranges| {
            ranges.try_into().map_err(|ranges: Vec<Range>| {
                let got = ranges.len();
                Error::new(Code::INTERNAL, format!("{got} answers to {N} etcd reads"))
            })
        })
    }

    /// The reservations under block `b` (keys read), into `state`; how many
    /// keys there were.
    pub(super) fn block_reservations(
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
                // Held once: a claim read the block before it claimed it.
                Some(ip) => {
                    if self.places.insert(ip, Place::Block(b)).is_none() {
                        let r = self.reservation(ip, &value, &key, &mut state.skipped);
                        state.held.push(r);
                    }
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
    /// network, for
    /// [`Store::held_addresses`](crate::store::Store::held_addresses)
    /// only (STATUS and borrowing count instead, [`scan`](super::scan)).
    pub(super) fn every_address(&self) -> Result<Vec<IpAddr>, Error> {
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
