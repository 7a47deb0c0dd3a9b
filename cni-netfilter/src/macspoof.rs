//! MAC spoof checking on a bridge port (the bridge plugin's
//! `macspoofchk`): frames entering the bridge from the port must carry
//! the container's MAC as their source, or they are dropped. Laid out in
//! nftables exactly as the reference lays it out:
//!
//! ```text
//! table bridge nat {
//!     chain PREROUTING {
//!         type filter hook prerouting priority -300; policy accept;
//!         iifname "PORT" jump cni-br-iface-ID comment "macspoofchk-ID"
//!     }
//!     chain cni-br-iface-ID {
//!         jump cni-br-iface-ID-mac comment "macspoofchk-ID"
//!     }
//!     chain cni-br-iface-ID-mac {
//!         ether saddr MAC return comment "macspoofchk-ID"
//!         drop comment "macspoofchk-ID"
//!     }
//! }
//! ```
//!
//! where `ID` is the container ID and interface name joined by `-`
//! ([`ref_id`]). `table bridge nat` and its `PREROUTING` chain are shared
//! by all attachments and outlive them.
//!
//! Where we deliberately differ: setup is one batch (the reference applies
//! two: chains, then rules), and removes the attachment's `PREROUTING`
//! rule before adding it, so a repeated ADD leaves one, not two.
//!
//! Go: plugins `pkg/link/spoofcheck.go` (`SpoofChecker`).

use cni_types::Mac;

use crate::nft::{CmpOp, Expr, NftBackend, PayloadBase, Register, Verdict};
use crate::{
    Action, Backend, BaseChain, Chain, ChainType, CommentMatch, Family, FilterError, Hook, Match,
    Op, Policy, Rule, Table, Transaction,
};

/// The shared table's name (in the `bridge` family).
pub const TABLE: &str = "nat";
/// The shared base chain every attachment's jump is in.
pub const PREROUTING: &str = "PREROUTING";
/// The base chain's priority: before anything else at the bridge's
/// prerouting hook (`NF_BR_PRI_FIRST` is `INT_MIN`; the reference picks
/// -300).
pub const PRIORITY: i32 = -300;

/// The table `bridge nat`.
pub fn table() -> Table {
    Table::new(Family::Bridge, TABLE)
}

/// The attachment's reference ID: `CONTAINERID-IFNAME`.
///
/// Go: bridge `uniqueID`.
pub fn ref_id(container_id: &str, ifname: &str) -> String {
    format!("{container_id}-{ifname}")
}

/// The comment on each of the attachment's rules.
pub fn comment(ref_id: &str) -> String {
    format!("macspoofchk-{ref_id}")
}

/// The attachment's chain, which `PREROUTING` jumps to for its port.
pub fn iface_chain(ref_id: &str) -> String {
    format!("cni-br-iface-{ref_id}")
}

/// The attachment's chain that lets its MAC through and drops the rest.
pub fn mac_chain(ref_id: &str) -> String {
    format!("{}-mac", iface_chain(ref_id))
}

/// The batch that makes frames from bridge port `port` pass only with
/// source MAC `mac`: the table and chains ensured, the attachment's
/// chains flushed and its `PREROUTING` rule replaced, then its rules.
pub fn setup_transaction(port: &str, mac: Mac, ref_id: &str) -> Transaction {
    let (iface, mac_chain, comment) = (iface_chain(ref_id), mac_chain(ref_id), comment(ref_id));
    let mut base = BaseChain::new(ChainType::Filter, Hook::Prerouting, PRIORITY);
    base.policy = Some(Policy::Accept);
    let mut tx = Transaction::new(table());
    tx.ensure_table()
        .ensure_chain(Chain::base(PREROUTING, base))
        .ensure_chain(Chain::new(iface.clone()))
        .ensure_chain(Chain::new(mac_chain.clone()))
        .flush_chain(iface.clone())
        .flush_chain(mac_chain.clone())
        .delete_rules_by_comment(PREROUTING, CommentMatch::Exact(comment.clone()))
        .add_rule(
            Rule::new(PREROUTING)
                .matching(Match::InInterface {
                    name: port.to_owned(),
                    negate: false,
                })
                .then(Action::Jump(iface.clone()))
                .comment(comment.clone()),
        )
        .add_rule(
            Rule::new(iface)
                .then(Action::Jump(mac_chain.clone()))
                .comment(comment.clone()),
        )
        // `ether saddr MAC return`: no Match says it, so its expressions,
        // as nft 1.0 linearizes them.
        .push(Op::AddNftRule {
            chain: mac_chain.clone(),
            exprs: vec![
                Expr::Payload {
                    base: PayloadBase::Link,
                    offset: 6,
                    len: 6,
                    dreg: Register::R1,
                },
                Expr::Cmp {
                    op: CmpOp::Eq,
                    sreg: Register::R1,
                    data: mac.0.to_vec(),
                },
                Expr::Verdict(Verdict::Return),
            ],
            comment: Some(comment.clone()),
        })
        .add_rule(Rule::new(mac_chain).then(Action::Drop).comment(comment));
    tx
}

/// The batch that removes the attachment's `PREROUTING` rule (found by
/// its comment) and its two chains; what is already gone is skipped.
pub fn teardown_transaction(ref_id: &str) -> Transaction {
    let mut tx = Transaction::new(table());
    tx.delete_rules_by_comment(PREROUTING, CommentMatch::Exact(comment(ref_id)))
        .delete_chain(iface_chain(ref_id))
        .delete_chain(mac_chain(ref_id));
    tx
}

/// Lets frames from bridge port `port` into the bridge only with source
/// MAC `mac`, in one batch.
///
/// Go: `SpoofChecker.Setup`.
pub fn setup(port: &str, mac: Mac, ref_id: &str) -> Result<(), FilterError> {
    NftBackend::open()?.apply(&setup_transaction(port, mac, ref_id))
}

/// Removes what [`setup`] added for `ref_id`; nothing there is success.
///
/// Go: `SpoofChecker.Teardown`.
pub fn teardown(ref_id: &str) -> Result<(), FilterError> {
    NftBackend::open()?.apply(&teardown_transaction(ref_id))
}

/// Whether [`setup`]'s rules for `ref_id` are all there: one in
/// `PREROUTING`, one in the attachment's chain, two in its MAC chain.
/// The first one missing is [`FilterError::Missing`].
///
/// Go: none; the reference's CHECK does not look at spoof checking.
pub fn check(ref_id: &str) -> Result<(), FilterError> {
    let mut nft = NftBackend::open()?;
    let mine = CommentMatch::Exact(comment(ref_id));
    for (chain, count) in [
        (PREROUTING.to_owned(), 1),
        (iface_chain(ref_id), 1),
        (mac_chain(ref_id), 2),
    ] {
        let found = match nft.list_chains(&table())?.contains(&chain) {
            true => nft.find_rules(&table(), &chain, &mine)?.len(),
            false => 0,
        };
        if found != count {
            return Err(FilterError::Missing {
                what: format!(
                    "{count} macspoofchk rule(s) of {ref_id} in chain {chain} of table bridge {TABLE} \
                     ({found} found)"
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_the_references() {
        let id = ref_id("ctr1", "eth0");
        assert_eq!(id, "ctr1-eth0");
        assert_eq!(comment(&id), "macspoofchk-ctr1-eth0");
        assert_eq!(iface_chain(&id), "cni-br-iface-ctr1-eth0");
        assert_eq!(mac_chain(&id), "cni-br-iface-ctr1-eth0-mac");
    }

    #[test]
    fn setup_is_one_batch_that_replaces_the_attachments_rules() {
        let tx = setup_transaction("veth1", Mac([2, 0, 0, 0, 0, 1]), "c-eth0");
        let ops = tx.ops();
        assert_eq!(tx.table().family, Family::Bridge);
        assert!(matches!(ops[0], Op::EnsureTable));
        let deletes_first = ops
            .iter()
            .position(|o| matches!(o, Op::DeleteRulesByComment { .. }));
        let adds_first = ops.iter().position(|o| matches!(o, Op::AddRule(_)));
        assert!(deletes_first < adds_first, "{ops:?}");
        let rules = ops
            .iter()
            .filter(|o| matches!(o, Op::AddRule(_) | Op::AddNftRule { .. }))
            .count();
        assert_eq!(rules, 4);
    }
}
