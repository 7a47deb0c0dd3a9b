//! The nftables backend, speaking nf_tables' netlink protocol itself
//! (`NETLINK_NETFILTER`, subsystem `NFNL_SUBSYS_NFTABLES`): no `nft`
//! binary at run time, so a static plugin works on a minimal host.
//!
//! - [`NftBackend`] (`backend.rs`): the [`Backend`](crate::Backend); one
//!   batch per transaction, deletions by comment tied to the ruleset
//!   generation they were listed in.
//! - `compile.rs`: a [`Rule`](crate::Rule) as the expressions nft itself
//!   would make of the same rule text (and the anonymous sets of its
//!   port lists).
//! - [`Expr`] (`expr.rs`): the expressions (payload, meta, cmp, bitwise,
//!   immediate and verdicts, lookup, nat, masq, fib, ct, counter) and
//!   their encoding, in libnftnl's attribute order; their operands
//!   ([`Register`], [`MetaKey`], [`Verdict`] ..) in `keys.rs`. A rule
//!   can also be given as expressions
//!   ([`Op::AddNftRule`](crate::Op::AddNftRule)).
//! - `plan.rs`: a transaction checked whole, then turned into one batch;
//!   `message.rs`: tables, chains, rules, sets and the batch around them;
//!   `socket.rs`: acknowledgements, bounded dumps, interrupted dumps read
//!   again; `udata.rs`: comments as libnftnl stores them; `nla.rs`:
//!   attributes.

mod backend;
mod compile;
mod expr;
mod keys;
pub(crate) mod message;
pub(crate) mod nla;
mod owned;
mod plan;
mod record;
mod record_log;
mod retry;
pub(crate) mod socket;
mod spare;
pub(crate) mod udata;

#[cfg(test)]
mod tests;

pub use backend::{AddedRule, NftBackend, MAX_RECORDED_RULES};
pub use owned::OwnedRules;
pub use record::{RecordGroup, Recorded, RuleRecord, RECORD_DIR};

/// Whether `listed`, a rule's expressions as the kernel lists them, are
/// `rule` as this backend writes it in `family`
/// ([`ListedRule::is`](crate::ListedRule::is)).
pub(crate) fn compiled_is(
    rule: &crate::Rule,
    family: crate::Family,
    listed: &[u8],
) -> Result<bool, crate::FilterError> {
    let compiled = compile::compile(rule, family)?;
    if !compiled.sets.is_empty() {
        return Err(crate::FilterError::Unsupported {
            backend: crate::BackendKind::Nftables,
            what: "comparing a listed rule with one that needs an anonymous set".into(),
        });
    }
    let mut ours = nla::Attrs::default();
    compiled.exprs.iter().for_each(|e| e.encode(&mut ours));
    Ok(nla::same_attrs(&ours.buf, listed))
}
pub(crate) use expr::jumps_to;
pub use expr::Expr;
pub use keys::{
    fib, CmpOp, CtKey, FibResult, MetaKey, NatKind, PayloadBase, Register, Verdict, PACKET_HOST,
    RTN_LOCAL,
};
pub use udata::MAX_COMMENT_LEN;
