//! Teardowns of iptables-nft tables through nf_tables itself, without an
//! `iptables-save` and an `iptables-restore` process.

use super::peek::legacy_may_hold;
use super::{IptablesBackend, Variant};
use crate::nft::NftBackend;
use crate::{Backend, FilterError, Table, Transaction};

impl IptablesBackend {
    /// Removes each chain of `chains` (its name, and the chain whose
    /// rules enter it) that nf_tables lists in `table`, with the rules of
    /// its entry chain that jump or go to it, in one nf_tables batch
    /// tied to the ruleset generation the chains were listed at: what
    /// `iptables-restore` would do with `-D ENTRY ...`, `-F CHAIN`, `-X
    /// CHAIN`, done by the kernel atomically, without our host lock.
    ///
    /// `Ok(true)` when it was done so. `Ok(false)`, having changed
    /// nothing, when this is not certainly iptables-nft's table (the
    /// backend runs iptables-legacy, or legacy iptables holds a table of
    /// that name in this namespace) or nf_tables lists none of the
    /// chains: the caller then lists the table with `iptables-save`,
    /// which also says whether iptables is usable at all. An error
    /// (another writer made a new jump to a chain meanwhile, or
    /// nf_tables refused) changed nothing either; the caller falls back
    /// the same way.
    ///
    /// Measured (bench/process/kind.sh, portmap's DEL): the save and the
    /// restore cost two process starts and a listing decoded by
    /// iptables; the batch is one dump per entry chain and one commit.
    /// Either way the kernel retires the deleted rules after an RCU grace
    /// period, which the process waits for when it closes its socket.
    ///
    /// Go: none; go-iptables runs `iptables` for each rule and chain.
    pub fn remove_chains_directly(
        &mut self,
        table: &Table,
        chains: &[(&str, &str)],
    ) -> Result<bool, FilterError> {
        if self.variant == Variant::Legacy || legacy_may_hold(table.family, &table.name) {
            return Ok(false);
        }
        let mut nft = NftBackend::open()?;
        let listed = nft.list_chains(table)?;
        let mut tx = Transaction::new(table.clone());
        for (chain, entry) in chains {
            if !listed.iter().any(|c| c == chain) {
                continue;
            }
            if listed.iter().any(|c| c == entry) {
                for rule in nft.list_rules(table, entry)? {
                    if rule.jumps_to(chain) {
                        tx.delete_rule(rule);
                    }
                }
            }
            tx.delete_chain(*chain);
        }
        if tx.ops().is_empty() {
            return Ok(false);
        }
        nft.apply(&tx)?;
        Ok(true)
    }
}
