//! [`NftBackend`]: transactions as one nf_tables batch each.

use super::message::{Batch, Kind};
use super::nla::{self, Attrs};
use super::plan;
use super::socket::NftSocket;
use super::udata::comment_of;
use crate::host_lock::{host_lock, NFTABLES_LOCK};
use crate::{Backend, BackendKind, FilterError, ListedRule, Op, RuleHandle, Table, Transaction};

/// How often a transaction that depends on a listing is tried when the
/// ruleset changed between the listing and the batch.
const ATTEMPTS: usize = 16;
/// `ERESTART`: the kernel's answer to a batch tied to a past generation.
const ERESTART: i32 = 85;

/// The nftables backend: a netlink socket speaking nf_tables itself, so
/// no `nft` binary is needed at run time.
///
/// Every [`Transaction`] is one batch, applied whole or not at all. When
/// it deletes by comment (or deletes a chain or table if present), the
/// rules are listed first and the batch is tied to that ruleset
/// generation: if anything changed in between, the kernel refuses the
/// batch and it is built again from a new listing.
///
/// Go: `knftables.New` with `Run` (which runs `nft -f -`).
pub struct NftBackend {
    socket: NftSocket,
}

impl std::fmt::Debug for NftBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NftBackend").finish_non_exhaustive()
    }
}

impl NftBackend {
    /// A backend in the calling thread's network namespace.
    pub fn open() -> Result<NftBackend, FilterError> {
        let socket = NftSocket::open().map_err(|source| FilterError::Kernel {
            op: "open",
            object: "a netfilter netlink socket".into(),
            source,
        })?;
        Ok(NftBackend { socket })
    }

    /// Checks `tx` with the kernel without applying it (nft `--check`):
    /// the batch is sent without its end, so the kernel validates each
    /// request and then discards them all.
    pub fn check(&mut self, tx: &Transaction) -> Result<(), FilterError> {
        self.run(tx, false)
    }

    /// The names of the tables of `family`.
    pub fn list_tables(&mut self, family: crate::Family) -> Result<Vec<String>, FilterError> {
        let payloads = self
            .socket
            .dump(Kind::GetTable, family, &Attrs::default())
            .map_err(|source| FilterError::Kernel {
                op: "list",
                object: format!("{family} tables"),
                source,
            })?;
        payloads
            .iter()
            .filter_map(|p| attr(p, 1).transpose())
            .map(|name| name.and_then(nla::string))
            .collect()
    }

    /// Whether chain `chain` of `table` holds exactly `rules`, in order:
    /// each listed rule's expressions byte for byte as we would send them,
    /// and its comment. `false` when the chain is missing, when a rule
    /// needs an anonymous set, or when the kernel lists a rule in another
    /// encoding than ours, so a caller that skips work on `true` falls
    /// back to doing it.
    ///
    /// What it is for: re-adding rules that are already there (a flush
    /// and the same rules) makes the kernel retire the old ones after an
    /// RCU grace period, which the process then waits for when it closes
    /// its socket, on exit at the latest: milliseconds per ADD.
    pub fn chain_holds(
        &mut self,
        table: &Table,
        chain: &str,
        rules: &[crate::Rule],
    ) -> Result<bool, FilterError> {
        let mut wanted = Vec::with_capacity(rules.len());
        for rule in rules {
            let compiled = super::compile::compile(rule, table.family)?;
            if !compiled.sets.is_empty() || rule.chain != chain {
                return Ok(false);
            }
            let mut list = Attrs::default();
            compiled.exprs.iter().for_each(|e| e.encode(&mut list));
            wanted.push((list.buf, rule.comment.clone()));
        }
        let mut filter = Attrs::default();
        filter.str(1, &table.name);
        filter.str(2, chain);
        let Ok(payloads) = self.socket.dump(Kind::GetRule, table.family, &filter) else {
            return Ok(false);
        };
        let mut listed = Vec::new();
        for payload in &payloads {
            let attrs = nla::parse(payload)?;
            let get = |kind| attrs.iter().find(|(k, _)| *k == kind).map(|(_, v)| *v);
            let here = get(1).map(nla::string).transpose()?.as_deref() == Some(table.name.as_str())
                && get(2).map(nla::string).transpose()?.as_deref() == Some(chain);
            if here {
                let exprs = get(4).unwrap_or_default().to_vec();
                listed.push((exprs, get(7).and_then(comment_of)));
            }
        }
        Ok(listed.len() == wanted.len()
            && listed
                .iter()
                .zip(&wanted)
                .all(|((exprs, comment), (ours, our_comment))| {
                    comment == our_comment && nla::same_attrs(ours, exprs)
                }))
    }

    fn run(&mut self, tx: &Transaction, commit: bool) -> Result<(), FilterError> {
        plan::validate(tx)?;
        let lists = tx.ops().iter().any(|op| {
            matches!(
                op,
                Op::DeleteRulesByComment { .. } | Op::DeleteChain(_) | Op::DeleteTable
            )
        });
        // Our own writers take turns; a foreign one (nft, firewalld) that
        // commits between our listing and our batch makes us list again.
        let _turn = if lists && commit {
            host_lock(NFTABLES_LOCK)
        } else {
            None
        };
        let mut attempt = 1;
        loop {
            let genid = if lists {
                Some(
                    self.socket
                        .generation()
                        .map_err(|source| FilterError::Kernel {
                            op: "read",
                            object: "the ruleset generation".into(),
                            source,
                        })?,
                )
            } else {
                None
            };
            let begin = self.socket.reserve(0);
            let batch = plan::build(self, tx, Batch::new(begin, genid))?.finish(commit);
            self.socket.reserve(batch.described.len() + 1);
            if batch.described.is_empty() {
                return Ok(());
            }
            let Some(refusal) = self.socket.send_batch(&batch)? else {
                return Ok(());
            };
            if refusal.index == 0 && refusal.errno == ERESTART && attempt < ATTEMPTS {
                // Another writer committed since the listing: list again,
                // after a pause that grows, so a busy writer gets done.
                std::thread::sleep(std::time::Duration::from_millis(attempt as u64 * 2));
                attempt += 1;
                continue;
            }
            // Index 0 is the batch itself (a past generation, no permission).
            let (op, object) = refusal
                .index
                .checked_sub(1)
                .and_then(|i| batch.described.get(i).cloned())
                .unwrap_or(("apply", format!("a batch on table {}", tx.table())));
            return Err(FilterError::kernel(op, object, refusal.errno));
        }
    }
}

impl Backend for NftBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Nftables
    }

    fn apply(&mut self, tx: &Transaction) -> Result<(), FilterError> {
        self.run(tx, true)
    }

    /// `NFT_MSG_GETRULE` dumped for this table and chain.
    fn list_rules(&mut self, table: &Table, chain: &str) -> Result<Vec<ListedRule>, FilterError> {
        let mut filter = Attrs::default();
        filter.str(1, &table.name);
        filter.str(2, chain);
        let payloads = self
            .socket
            .dump(Kind::GetRule, table.family, &filter)
            .map_err(|source| FilterError::Kernel {
                op: "list rules of",
                object: format!("chain {table} {chain}"),
                source,
            })?;
        let mut rules = Vec::new();
        for payload in payloads {
            let attrs = nla::parse(&payload)?;
            let get = |kind| attrs.iter().find(|(k, _)| *k == kind).map(|(_, v)| *v);
            if get(1).map(nla::string).transpose()?.as_deref() != Some(table.name.as_str()) {
                continue;
            }
            let rule_chain = get(2).map(nla::string).transpose()?.unwrap_or_default();
            let handle = get(3).ok_or_else(|| nla::malformed("a rule without a handle"))?;
            rules.push(ListedRule {
                chain: rule_chain,
                comment: get(7).and_then(comment_of),
                handle: RuleHandle::Nft(nla::number(handle)?),
            });
        }
        rules.retain(|rule| rule.chain == chain);
        Ok(rules)
    }

    /// `NFT_MSG_GETCHAIN` dumped for the family, kept for this table.
    fn list_chains(&mut self, table: &Table) -> Result<Vec<String>, FilterError> {
        let payloads = self
            .socket
            .dump(Kind::GetChain, table.family, &Attrs::default())
            .map_err(|source| FilterError::Kernel {
                op: "list chains of",
                object: format!("table {table}"),
                source,
            })?;
        let mut chains = Vec::new();
        for payload in payloads {
            if attr(&payload, 1)?.map(nla::string).transpose()?.as_deref() == Some(&table.name) {
                if let Some(name) = attr(&payload, 3)? {
                    chains.push(nla::string(name)?);
                }
            }
        }
        Ok(chains)
    }
}

/// The first attribute `kind` of an nf_tables payload.
fn attr(payload: &[u8], kind: u16) -> Result<Option<&[u8]>, FilterError> {
    Ok(nla::parse(payload)?
        .into_iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, v)| v))
}
