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

/// A rule as a backend lists it: where it is, its comment, what deletes
/// exactly it, and what it does, so CHECK can compare it with the rule it
/// should be ([`ListedRule::is`]) rather than only find it by comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedRule {
    /// Its chain.
    pub chain: String,
    /// Its comment, if it has one.
    pub comment: Option<String>,
    /// What identifies it to its backend.
    pub handle: RuleHandle,
    /// What it matches and does, as its backend lists it.
    pub content: RuleContent,
}

/// What a listed rule matches and does, in its backend's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleContent {
    /// nftables: the rule's expressions (`NFTA_RULE_EXPRESSIONS`) as the
    /// kernel lists them, netlink attributes.
    Nft(Vec<u8>),
    /// iptables: the rule as `iptables-save` prints it after `-A CHAIN `
    /// (the same text as its [`RuleHandle::Iptables`]).
    Iptables(String),
}

impl ListedRule {
    /// Whether this listed rule is `rule` as this crate writes it in a
    /// table of `family`: same chain, same comment, and the same matches
    /// and action (nftables: the expressions we would send, compared as
    /// the kernel lists them back; iptables: the words `iptables-save`
    /// prints for the rule we would restore). For a CHECK that compares
    /// rule by rule, where a lookup by comment only says a rule is there.
    ///
    /// ```
    /// use cni_netfilter::{Action, Family, ListedRule, Rule, RuleContent, RuleHandle};
    ///
    /// let listed = ListedRule {
    ///     chain: "CNI-DN-1".into(),
    ///     comment: Some("ctr1".into()),
    ///     handle: RuleHandle::Iptables("-m comment --comment ctr1 -j ACCEPT".into()),
    ///     content: RuleContent::Iptables("-m comment --comment ctr1 -j ACCEPT".into()),
    /// };
    /// let rule = Rule::new("CNI-DN-1").then(Action::Accept).comment("ctr1");
    /// assert!(listed.is(&rule, Family::Ip)?);
    /// assert!(!listed.is(&rule.clone().then(Action::Drop), Family::Ip)?);
    /// # Ok::<(), cni_netfilter::FilterError>(())
    /// ```
    ///
    /// A rule the nftables backend writes with an anonymous set (a port
    /// list) cannot be compared this way: [`FilterError::Unsupported`].
    ///
    /// Go: none; the reference's CHECKs look rules up by comment or by
    /// their full text (`iptables -C`), which this is for both backends.
    pub fn is(&self, rule: &crate::Rule, family: crate::Family) -> Result<bool, FilterError> {
        if self.chain != rule.chain || self.comment != rule.comment {
            return Ok(false);
        }
        match &self.content {
            RuleContent::Iptables(spec) => Ok(crate::iptables::save::words(spec)
                == crate::iptables::render::render(rule, family)?),
            RuleContent::Nft(exprs) => crate::nft::compiled_is(rule, family, exprs),
        }
    }

    /// Whether this rule jumps or goes to `chain` (`-j CHAIN`, `-g CHAIN`;
    /// nftables `jump`, `goto`): what a teardown removes before it
    /// removes the chain, which the kernel refuses while a rule refers to
    /// it.
    ///
    /// ```
    /// use cni_netfilter::{ListedRule, RuleContent, RuleHandle};
    ///
    /// let spec = r#"-p tcp -m comment --comment "-j CNI-DN-2" -j CNI-DN-1"#;
    /// let listed = ListedRule {
    ///     chain: "CNI-HOSTPORT-DNAT".into(),
    ///     comment: Some("-j CNI-DN-2".into()),
    ///     handle: RuleHandle::Iptables(spec.into()),
    ///     content: RuleContent::Iptables(spec.into()),
    /// };
    /// assert!(listed.jumps_to("CNI-DN-1"));
    /// assert!(!listed.jumps_to("CNI-DN-2"));
    /// ```
    ///
    /// Go: the reference's `chain.teardown` finds them as the rules of
    /// `iptables -S ENTRY` ending in `-j CHAIN`.
    pub fn jumps_to(&self, chain: &str) -> bool {
        match &self.content {
            RuleContent::Iptables(spec) => {
                let words = crate::iptables::save::words(spec);
                matches!(words.as_slice(), [.., flag, target]
                    if (flag == "-j" || flag == "-g") && target == chain)
            }
            RuleContent::Nft(exprs) => crate::nft::jumps_to(exprs, chain).unwrap_or(false),
        }
    }
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
