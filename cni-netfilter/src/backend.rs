//! The one trait both backends implement.

use std::fmt;
use std::str::FromStr;

use crate::{CommentMatch, FilterError, Table, Transaction};

/// Something that programs the packet filter: applies transactions and
/// lists what is there.
///
/// [`NftBackend`](crate::nft::NftBackend) speaks nftables' netlink
/// protocol itself; [`IptablesBackend`](crate::iptables::IptablesBackend)
/// runs the host's `iptables-save` and `iptables-restore`. [`open`] gives
/// the one [`choose`](crate::choose) picked.
///
/// Go: `knftables.Interface` and go-iptables' `IPTables`, which the
/// reference plugins use side by side.
pub trait Backend {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;

    /// Applies every operation of `tx`, or none: nothing changes when the
    /// transaction is invalid for this backend or the kernel refuses any
    /// part of it.
    fn apply(&mut self, tx: &Transaction) -> Result<(), FilterError>;

    /// The rules of `chain` in `table`, in order; none when the table or
    /// chain does not exist (the reference treats "not found" as empty
    /// wherever it lists).
    fn list_rules(&mut self, table: &Table, chain: &str) -> Result<Vec<ListedRule>, FilterError>;

    /// The names of the chains of `table`; none when it does not exist.
    fn list_chains(&mut self, table: &Table) -> Result<Vec<String>, FilterError>;

    /// The rules of `chain` whose comment matches (Go: the reference's
    /// `findRules` and `checkPortsAgainstRules`).
    fn find_rules(
        &mut self,
        table: &Table,
        chain: &str,
        comment: &CommentMatch,
    ) -> Result<Vec<ListedRule>, FilterError> {
        let mut rules = self.list_rules(table, chain)?;
        rules.retain(|rule| comment.matches(rule.comment.as_deref()));
        Ok(rules)
    }
}

/// A rule as a backend lists it: where it is, its comment, and what
/// deletes exactly it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedRule {
    /// Its chain.
    pub chain: String,
    /// Its comment, if it has one.
    pub comment: Option<String>,
    /// What identifies it to its backend.
    pub handle: RuleHandle,
}

/// What identifies a listed rule to its backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleHandle {
    /// nftables: the rule's handle, unique in its table.
    Nft(u64),
    /// iptables: the rule as `iptables-save` prints it after `-A CHAIN `;
    /// `-D CHAIN` with it deletes the rule.
    Iptables(String),
}

/// The two backends, by the names the reference's `backend` option uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// `"iptables"`.
    Iptables,
    /// `"nftables"`.
    Nftables,
}

impl BackendKind {
    /// `"iptables"` or `"nftables"`.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Iptables => "iptables",
            BackendKind::Nftables => "nftables",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BackendKind {
    type Err = FilterError;

    /// Parses a configuration's `backend`; anything else is an error
    /// naming the value, as the reference's "unrecognized backend".
    fn from_str(s: &str) -> Result<BackendKind, FilterError> {
        match s {
            "iptables" => Ok(BackendKind::Iptables),
            "nftables" => Ok(BackendKind::Nftables),
            _ => Err(FilterError::invalid(
                "backend",
                s,
                "must be \"iptables\" or \"nftables\"",
            )),
        }
    }
}

/// A backend of that kind, in the calling thread's network namespace:
/// the host's default `iptables` commands, or a netlink socket.
pub fn open(kind: BackendKind) -> Result<Box<dyn Backend>, FilterError> {
    Ok(match kind {
        BackendKind::Iptables => Box::new(crate::iptables::IptablesBackend::new()),
        BackendKind::Nftables => Box::new(crate::nft::NftBackend::open()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_are_the_reference_options_and_nothing_else() {
        assert_eq!(
            "iptables".parse::<BackendKind>().unwrap(),
            BackendKind::Iptables
        );
        assert_eq!(
            "nftables".parse::<BackendKind>().unwrap(),
            BackendKind::Nftables
        );
        let err = "nft".parse::<BackendKind>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid backend \"nft\": must be \"iptables\" or \"nftables\""
        );
    }
}
