//! [`OwnedRules`]: the rules one owner (a container, an attachment) adds
//! to nftables, applied with a [`RuleRecord`] of their handles and found
//! again by it, so that neither its DEL nor a repeated ADD dumps a chain
//! holding every other pod's rules too (a dump costs the kernel each
//! rule's expressions: O(pods) per call, O(pods²) per burst).
//!
//! Whatever the record cannot vouch for is found by comment, as the
//! reference finds it: no record (rules of the reference, or of a version
//! before records), a pending one (an ADD killed between its mark and its
//! record), or a handle whose rule is gone or carries another comment.
//! One reading is ours: an owner without a record has no rules of ours,
//! so a repeated ADD deletes no earlier rules then; rules another version
//! added for the same owner stay until its GC (a duplicate of the same
//! accept or masquerade rule meanwhile).

use super::{NftBackend, Recorded, RuleRecord};
use crate::{Backend, CommentMatch, FilterError, Table, Transaction};

/// One owner's rules, their record and how they are found without it.
///
/// ```no_run
/// # fn main() -> Result<(), cni_netfilter::FilterError> {
/// use cni_netfilter::nft::{NftBackend, OwnedRules};
/// use cni_netfilter::{Chain, CommentMatch, Family, Rule, Action, Table, Transaction};
///
/// let table = Table::new(Family::Inet, "my_plugin");
/// let comment = "net1 ctr-1 eth0";
/// let found_by = CommentMatch::Exact(comment.into());
/// let mut owned = OwnedRules::here("net1", "ctr-1", comment, found_by);
/// let mut nft = NftBackend::open()?;
/// // ADD: mark the record, replace what an earlier ADD left, record.
/// owned.begin()?;
/// let mut tx = Transaction::new(table.clone());
/// tx.ensure_table().ensure_chain(Chain::new("accepts"));
/// owned.delete_earlier(&mut nft, &mut tx, &["accepts"])?;
/// tx.add_rule(Rule::new("accepts").then(Action::Accept).comment(comment));
/// owned.apply(&mut nft, &tx, true)?;
/// // DEL: by the record's handles, or by comment.
/// owned.delete(&mut nft, &table, &["accepts"])?;
/// owned.forget();
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct OwnedRules {
    record: Option<RuleRecord>,
    /// What the record said before this ADD touched it: `None` until
    /// [`OwnedRules::begin`].
    before: Option<Before>,
    comment: String,
    found_by: CommentMatch,
}

/// The record as an ADD found it.
#[derive(Debug, Clone)]
enum Before {
    /// No record: the owner has no rules of ours.
    Nothing,
    /// Every rule the owner has, by handle.
    Complete(Recorded),
    /// Pending (an ADD killed after its mark) or unreadable: found by
    /// comment.
    Unknown,
}

impl Before {
    /// What `record` says now.
    fn of(record: &RuleRecord) -> Before {
        match record.read() {
            Ok(None) => Before::Nothing,
            Ok(Some(recorded)) if !recorded.pending => Before::Complete(recorded),
            _ => Before::Unknown,
        }
    }
}

impl OwnedRules {
    /// The rules `owner` keeps in `group` of the calling thread's network
    /// namespace ([`RuleRecord::here`]; without a record when either name
    /// cannot be a file's), each carrying `comment` exactly, and found by
    /// `found_by` when the record cannot say.
    pub fn here(
        group: &str,
        owner: &str,
        comment: impl Into<String>,
        found_by: CommentMatch,
    ) -> OwnedRules {
        OwnedRules {
            record: RuleRecord::here(group, owner),
            before: None,
            comment: comment.into(),
            found_by,
        }
    }

    /// Reads the record before an ADD's first batch and, when there is
    /// one, marks it ([`RuleRecord::begin`]): the rules this ADD is about
    /// to add are then not all recorded until [`OwnedRules::apply`] has
    /// recorded them, so a SIGKILL in between leaves the record pending.
    /// Without a record nothing is written: an ADD killed before it
    /// records leaves none, and its DEL goes by comment all the same.
    /// When the mark cannot be written, the record would miss what this
    /// ADD adds: code 11 ([`FilterError::Busy`]), nothing changed.
    pub fn begin(&mut self) -> Result<(), FilterError> {
        let Some(record) = &self.record else {
            self.before = Some(Before::Nothing);
            return Ok(());
        };
        let before = Before::of(record);
        if matches!(before, Before::Nothing) {
            self.before = Some(before);
            return Ok(());
        }
        record.begin().map_err(|e| FilterError::Busy {
            what: format!("the record of {:?}'s rules: {e}", self.comment),
        })?;
        self.before = Some(before);
        Ok(())
    }

    /// For an ADD that replaces the owner's earlier rules of `tx`'s
    /// table: deletes the recorded ones now (their own batch, by handle,
    /// each checked to carry the comment), or adds to `tx` the deletion
    /// by comment of the owner's rules in `chains` when the record cannot
    /// say which they are. Nothing without a record (see the module
    /// docs).
    pub fn delete_earlier(
        &self,
        nft: &mut NftBackend,
        tx: &mut Transaction,
        chains: &[&str],
    ) -> Result<(), FilterError> {
        let before = match (&self.before, &self.record) {
            (Some(before), _) => before.clone(),
            (None, Some(record)) => Before::of(record),
            (None, None) => Before::Nothing,
        };
        let by_record = match before {
            Before::Nothing => return Ok(()),
            Before::Complete(recorded) => {
                let rules = recorded.of_table(tx.table());
                rules.is_empty() || nft.delete_recorded(tx.table(), &rules, &self.comment)?
            }
            Before::Unknown => false,
        };
        if !by_record {
            for chain in chains {
                tx.delete_rules_by_comment(*chain, self.found_by.clone());
            }
        }
        Ok(())
    }

    /// Applies the ADD's `tx`, and once [`OwnedRules::begin`] looked at the
    /// record, records the handles of the rules it added with the owner's
    /// comment (all of them, or the mark stays: the DEL then goes by
    /// comment). `afresh`: the record becomes just these rules, for an
    /// owner whose rules all live in `tx`'s table and whose earlier ones
    /// [`OwnedRules::delete_earlier`] put in `tx`; otherwise they are
    /// added to what the record holds (an ADD that adds beside earlier
    /// rules, as portmap's does).
    pub fn apply(
        &self,
        nft: &mut NftBackend,
        tx: &Transaction,
        afresh: bool,
    ) -> Result<(), FilterError> {
        let Some(record) = self.record.as_ref().filter(|_| self.before.is_some()) else {
            return nft.apply(tx);
        };
        if let Some(added) = nft.apply_recording(tx)? {
            let mine: Vec<_> = (added.into_iter())
                .filter(|r| r.comment.as_deref() == Some(self.comment.as_str()))
                .collect();
            // A record that cannot be written stays pending: DEL then
            // finds the rules by comment.
            let _ = record.finish(tx.table(), &mine, afresh);
        }
        Ok(())
    }

    /// DEL in one table: the recorded rules by handle when the record
    /// names them all as they are, or the owner's rules in `chains` by
    /// comment. A complete record naming nothing of `table` leaves it
    /// alone (the owner added nothing there).
    pub fn delete(
        &self,
        nft: &mut NftBackend,
        table: &Table,
        chains: &[&str],
    ) -> Result<(), FilterError> {
        let recorded = (self.record.as_ref())
            .and_then(|r| r.read().ok().flatten())
            .filter(|r| !r.pending);
        if let Some(recorded) = recorded {
            let rules = recorded.of_table(table);
            if rules.is_empty() || nft.delete_recorded(table, &rules, &self.comment)? {
                return Ok(());
            }
        }
        let mut tx = Transaction::new(table.clone());
        for chain in chains {
            tx.delete_rules_by_comment(*chain, self.found_by.clone());
        }
        nft.apply(&tx)
    }

    /// Removes the record, once the DEL deleted its rules in every table.
    /// One left behind is harmless (each handle is checked before use)
    /// and GC takes it ([`OwnedRules::forget_unkept`]).
    pub fn forget(&self) {
        if let Some(record) = &self.record {
            let _ = record.remove();
        }
    }

    /// GC: removes the records of `group`'s owners that `keeps` refuses.
    /// Their rules are the caller's to delete (or, like portmap's
    /// nftables layout, to leave).
    pub fn forget_unkept(group: &str, keeps: impl Fn(&str) -> bool) {
        let Some(group) = RuleRecord::group_here(group) else {
            return;
        };
        for owner in group.owners().unwrap_or_default() {
            if !keeps(&owner) {
                let _ = group.of(&owner).remove();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use nix::fcntl::{Flock, FlockArg};

    use super::*;
    use crate::nft::AddedRule;
    use crate::Family;

    #[test]
    fn an_add_that_cannot_mark_its_record_is_told_to_try_again_and_the_record_stays_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let record = RuleRecord::in_dir(dir.path(), "net", "ctr-1").unwrap();
        let table = Table::new(Family::Ip, "cni_hostport");
        let added = [AddedRule {
            chain: "hostports".into(),
            handle: 7,
            comment: None,
        }];
        record.begin().unwrap();
        record.finish(&table, &added, false).unwrap();
        let mut owned = OwnedRules {
            record: Some(record.clone()),
            before: None,
            comment: "ctr-1".into(),
            found_by: CommentMatch::Exact("ctr-1".into()),
        };
        // Another writer holds the group's lock past the mark's deadline.
        let group = std::fs::File::open(dir.path().join("net")).unwrap();
        let held = Flock::lock(group, FlockArg::LockExclusive).unwrap();
        let err = owned.begin().unwrap_err();
        drop(held);
        assert!(matches!(err, FilterError::Busy { .. }), "{err:?}");
        let cni = cni_types::Error::from(err);
        assert_eq!(cni.code, cni_types::Code::TRY_AGAIN_LATER, "{cni:?}");
        assert!(cni.msg.contains("ctr-1"), "names whose rules: {cni:?}");
        let after = record.read().unwrap().unwrap();
        assert!(!after.pending, "no mark was written: {after:?}");
        assert_eq!(after.of_table(&table), added);
    }
}
