//! A [`Transaction`] as one nf_tables batch: checked whole first, then
//! each operation as its messages, listing what deletions need.

use std::collections::HashMap;

use super::compile::{compile, ANONYMOUS_SET};
use super::expr::Expr;
use super::message::{self, Batch};
use super::nla;
use super::NftBackend;
use crate::table::validate_name;
use crate::{Backend, Chain, FilterError, ListedRule, Op, RuleHandle, Table, Transaction};

/// Checks every name, comment and rule of `tx` before anything is sent.
pub(super) fn validate(tx: &Transaction) -> Result<(), FilterError> {
    let table = tx.table();
    validate_name("table name", &table.name)?;
    let check_chain = |chain: &Chain| -> Result<(), FilterError> {
        validate_name("chain name", &chain.name)?;
        message::new_chain(table, chain).map(drop)
    };
    message::new_table(table)?;
    for op in tx.ops() {
        match op {
            Op::EnsureChain(chain) => check_chain(chain)?,
            Op::FlushChain(name) | Op::DeleteChain(name) => validate_name("chain name", name)?,
            Op::DeleteRulesByComment { chain, .. } => validate_name("chain name", chain)?,
            Op::AddRule(rule) => {
                validate_name("chain name", &rule.chain)?;
                if let Some(target) = rule.action.as_ref().and_then(|a| a.target_chain()) {
                    validate_name("chain name", target)?;
                }
                message::new_rule(
                    table,
                    &rule.chain,
                    &compile(rule, table.family)?.exprs,
                    rule.comment.as_deref(),
                )?;
            }
            Op::AddNftRule {
                chain,
                exprs,
                comment,
            } => {
                validate_name("chain name", chain)?;
                message::new_rule(table, chain, exprs, comment.as_deref())?;
            }
            Op::DeleteRule(rule) => drop(delete(table, rule)?),
            Op::AddSet(set) => validate_name("set name", &set.name)?,
            Op::AddElements { set, elements } | Op::DeleteElements { set, elements } => {
                validate_name("set name", &set.name)?;
                for element in elements {
                    element.key_bytes(set)?;
                }
            }
            Op::EnsureRule { .. } => {
                return Err(FilterError::Unsupported {
                    backend: crate::BackendKind::Nftables,
                    what: "adding a rule unless it is there (nft rules are found by comment)"
                        .into(),
                })
            }
            Op::EnsureTable | Op::DeleteTable => {}
        }
    }
    Ok(())
}

fn delete(table: &Table, rule: &ListedRule) -> Result<message::Request, FilterError> {
    match &rule.handle {
        RuleHandle::Nft(handle) => Ok(message::del_rule(table, &rule.chain, *handle)),
        RuleHandle::Iptables(spec) => Err(FilterError::invalid(
            "rule handle",
            spec.clone(),
            "was listed by the iptables backend",
        )),
    }
}

fn describe(table: &Table, rule: &ListedRule) -> String {
    let handle = match &rule.handle {
        RuleHandle::Nft(h) => h.to_string(),
        RuleHandle::Iptables(spec) => spec.clone(),
    };
    format!("chain {table} {} (handle {handle})", rule.chain)
}

/// The batch for `tx`, with the listings it needs done now.
pub(super) fn build(
    nft: &mut NftBackend,
    tx: &Transaction,
    mut batch: Batch,
) -> Result<Batch, FilterError> {
    let table = tx.table();
    let mut set_ids = HashMap::new();
    let mut anonymous = 0;
    let chain_of = |name: &str| format!("chain {table} {name}");
    let mut existing: Option<Vec<Vec<u8>>> = None;
    for op in tx.ops() {
        match op {
            Op::EnsureTable => {
                batch.push(message::new_table(table)?, "add", format!("table {table}"))?
            }
            Op::DeleteTable => {
                if nft.list_tables(table.family)?.contains(&table.name) {
                    batch.push(
                        message::del_table(table),
                        "delete",
                        format!("table {table}"),
                    )?;
                }
            }
            Op::EnsureChain(chain) => {
                let req = message::new_chain(table, chain)?;
                // `add chain` on a chain that is there is an update the
                // kernel retires after an RCU grace period, which the
                // process then waits for when it closes its socket (8 to
                // 20 ms, measured with `nft add chain`): left out when the
                // chain is there as we would declare it.
                let listed = match &existing {
                    Some(listed) => listed,
                    None => existing.insert(nft.chain_declarations(table)?),
                };
                if !listed.iter().any(|theirs| declares_same(&req, theirs)) {
                    batch.push(req, "add", chain_of(&chain.name))?;
                }
            }
            Op::FlushChain(name) => {
                batch.push(message::flush_chain(table, name), "flush", chain_of(name))?
            }
            Op::DeleteChain(name) => {
                if nft.list_chains(table)?.contains(name) {
                    batch.push(message::flush_chain(table, name), "flush", chain_of(name))?;
                    batch.push(message::del_chain(table, name), "delete", chain_of(name))?;
                }
            }
            Op::AddRule(rule) => {
                let compiled = compile(rule, table.family)?;
                let mut exprs = compiled.exprs;
                for set in compiled.sets {
                    // Ids after the named sets' and the earlier rules' sets.
                    let id = set_ids.len() as u32 + anonymous + 1;
                    anonymous += 1;
                    let size = set.elements.len() as u32;
                    let object = format!("an anonymous set in table {table}");
                    let req = message::new_anonymous_set(table, set.key, id, size);
                    batch.push(req, "add", object.clone())?;
                    let req =
                        message::set_elements(table, ANONYMOUS_SET, Some(id), &set.elements, true);
                    batch.push(req, "add elements to", object)?;
                    if let Some(Expr::Lookup { set_id, .. }) = exprs.get_mut(set.lookup) {
                        *set_id = Some(id);
                    }
                }
                let comment = rule.comment.as_deref();
                let req = add_rule(table, &rule.chain, exprs, comment, &set_ids)?;
                batch.push(req, "add rule to", rule_object(table, &rule.chain, comment))?;
            }
            Op::AddNftRule {
                chain,
                exprs,
                comment,
            } => {
                let comment = comment.as_deref();
                let req = add_rule(table, chain, exprs.clone(), comment, &set_ids)?;
                batch.push(req, "add rule to", rule_object(table, chain, comment))?;
            }
            // Refused by `validate` before any batch is built.
            Op::EnsureRule { .. } => {}
            Op::DeleteRule(rule) => batch.push(
                delete(table, rule)?,
                "delete rule of",
                describe(table, rule),
            )?,
            Op::DeleteRulesByComment { chain, comment } => {
                for rule in nft.find_rules(table, chain, comment)? {
                    batch.push(
                        delete(table, &rule)?,
                        "delete rule of",
                        describe(table, &rule),
                    )?;
                }
            }
            Op::AddSet(set) => {
                let id = set_ids.len() as u32 + 1;
                set_ids.insert(set.name.as_str(), id);
                batch.push(
                    message::new_set(table, set, id),
                    "add",
                    format!("set {table} {}", set.name),
                )?;
            }
            Op::AddElements { set, elements } | Op::DeleteElements { set, elements } => {
                let add = matches!(op, Op::AddElements { .. });
                let keys = elements
                    .iter()
                    .map(|e| e.key_bytes(set))
                    .collect::<Result<Vec<_>, _>>()?;
                let verb = if add {
                    "add elements to"
                } else {
                    "delete elements of"
                };
                batch.push(
                    message::set_elements(table, &set.name, None, &keys, add),
                    verb,
                    format!("set {table} {}", set.name),
                )?;
            }
        }
    }
    Ok(batch)
}

/// Whether the chain the kernel listed as `theirs` (its attributes) is the
/// one `ours` (an `add chain`) declares: the same name, and each of hook,
/// policy and type we give, the same there.
fn declares_same(ours: &message::Request, theirs: &[u8]) -> bool {
    const KINDS: [u16; 4] = [3, 4, 5, 7];
    let (Ok(ours), Ok(theirs)) = (nla::find(&ours.attrs.buf, KINDS), nla::find(theirs, KINDS))
    else {
        return false;
    };
    ours.iter()
        .zip(theirs)
        .enumerate()
        .all(|(at, (ours, theirs))| match (ours, theirs) {
            (None, _) => true,
            (Some(_), None) => false,
            // The hook, nested.
            (Some(o), Some(t)) if at == 1 => nla::same_attrs(o, t),
            (Some(o), Some(t)) => nla::text(o) == nla::text(t),
        })
}

/// A rule's message, its lookups naming the sets created earlier in the
/// batch by their id too.
fn add_rule(
    table: &Table,
    chain: &str,
    mut exprs: Vec<Expr>,
    comment: Option<&str>,
    set_ids: &HashMap<&str, u32>,
) -> Result<message::Request, FilterError> {
    for expr in &mut exprs {
        if let Expr::Lookup { set, set_id, .. } = expr {
            if let Some(id) = set_ids.get(set.as_str()) {
                *set_id = Some(*id);
            }
        }
    }
    message::new_rule(table, chain, &exprs, comment)
}

/// `chain FAMILY TABLE CHAIN (comment "...")`, for errors.
fn rule_object(table: &Table, chain: &str, comment: Option<&str>) -> String {
    match comment {
        Some(c) => format!("chain {table} {chain} (comment {c:?})"),
        None => format!("chain {table} {chain}"),
    }
}
