//! The store's reservation of an ADD's addresses: one transaction, sent
//! again while its answer is lost, withdrawn when none ever comes
//! ([`Store::reserve`](crate::store::Store::reserve)).

use std::time::Instant;

use cni_types::{Attachment, Code, Error};

use super::answer::{Outcome, Range, Response};
use super::blocks::Block;
use super::client::not_etcd;
use super::txn::{Compare, Op, Read, Txn};
use super::{EtcdStore, OPERATION_DEADLINE, OUTCOME_PAUSE, REQUEST_TIMEOUT};
use crate::store::{Assigned, Reserved};

impl EtcdStore {
    /// [`Store::reserve`](crate::store::Store::reserve): the addresses of `new` for `attachment`.
    pub(super) fn reserve_new(
        &mut self,
        new: &[Assigned],
        attachment: &Attachment,
    ) -> Result<Reserved, Error> {
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

    /// The reservation's transaction. When its answer is lost (a member
    /// died or hung, an election), it may or may not have been applied:
    /// it is sent again while two requests' deadlines are left of the
    /// ADD's (the last is [`EtcdStore::withdraw`]'s). Applied,
    /// the comparisons then fail on this attachment's own value, which
    /// [`Store::reserve`](crate::store::Store::reserve) takes as done; not applied, it applies now.
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
}
