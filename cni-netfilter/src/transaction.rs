//! A transaction: every change one plugin call makes to one table,
//! applied all or nothing.

use crate::{Chain, ListedRule, Rule, Set, SetElement, Table};

/// The changes to one table that a backend applies at once: nftables in
/// one netlink batch, iptables in one `iptables-restore` run. Either all
/// happen or none does.
///
/// Operations apply in the order they were added, as in a knftables
/// transaction; ensure a chain before the rules that jump to it.
///
/// ```
/// use cni_netfilter::{Chain, CommentMatch, Family, Rule, Action, Table, Transaction};
///
/// let mut tx = Transaction::new(Table::new(Family::Ip, "cni_hostport"));
/// tx.ensure_table()
///     .ensure_chain(Chain::new("hostports"))
///     .delete_rules_by_comment("hostports", CommentMatch::Exact("ctr1".into()))
///     .add_rule(Rule::new("hostports").then(Action::Accept).comment("ctr1"));
/// assert_eq!(tx.ops().len(), 4);
/// ```
///
/// Go: `knftables.Transaction`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    table: Table,
    ops: Vec<Op>,
}

/// One change of a [`Transaction`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// Creates the table unless it exists (nft `add table`); iptables'
    /// tables always exist.
    EnsureTable,
    /// Deletes the table and everything in it, if it exists (nft `delete
    /// table`, skipped when the table is not there, so DEL can repeat it).
    ///
    /// nftables only: the iptables backend refuses it with
    /// [`FilterError::Unsupported`](crate::FilterError::Unsupported) and
    /// changes nothing. iptables' tables (`filter`, `nat`...) are the
    /// kernel's, always there, and shared with the host and every other
    /// program; deleting one is not possible, and flushing it would
    /// destroy rules that are not ours. A plugin owns chains there, not
    /// tables: it deletes them by name with [`Op::FlushChain`] and
    /// [`Op::DeleteChain`] after removing the jumps to them.
    DeleteTable,
    /// Creates the chain unless it exists (nft `add chain`, iptables
    /// `-N` when `iptables-save` does not list it). A base chain that
    /// exists with another hook or priority is an error.
    EnsureChain(Chain),
    /// Deletes every rule of the chain (nft `flush chain`, iptables `-F`).
    FlushChain(String),
    /// Deletes the chain and its rules, if it exists. Another chain's jump
    /// to it makes this fail.
    DeleteChain(String),
    /// Appends a rule to its chain.
    AddRule(Rule),
    /// Adds a rule unless its chain already holds the same rule
    /// (iptables only): appended, or inserted first when `first`. The
    /// reference's `utils.InsertUnique` (plugins `pkg/utils`), which
    /// shared iptables chains (portmap's `CNI-HOSTPORT-*`) are built
    /// with, so each ADD leaves one copy.
    EnsureRule {
        /// The rule.
        rule: Rule,
        /// Insert it at the top of its chain rather than append it.
        first: bool,
    },
    /// Appends a rule given as nf_tables expressions (nftables only): the
    /// escape hatch for what [`Match`](crate::Match) and
    /// [`Action`](crate::Action) do not say.
    AddNftRule {
        /// The chain it goes into.
        chain: String,
        /// Its expressions, in order.
        exprs: Vec<crate::nft::Expr>,
        /// The comment it is found again by.
        comment: Option<String>,
    },
    /// Deletes a rule found by [`Backend::list_rules`](crate::Backend::list_rules).
    DeleteRule(ListedRule),
    /// Deletes the rules of a chain whose comment matches, found when the
    /// transaction is applied; nothing when the chain does not exist.
    DeleteRulesByComment {
        /// The chain looked in.
        chain: String,
        /// Which comments.
        comment: CommentMatch,
    },
    /// Creates a named set unless it exists (nftables only).
    AddSet(Set),
    /// Adds elements to a set (nftables only).
    AddElements {
        /// The set, as it was created.
        set: Set,
        /// What to add; adding one that is there is no error.
        elements: Vec<SetElement>,
    },
    /// Deletes elements of a set (nftables only); one that is absent is an
    /// error.
    DeleteElements {
        /// The set, as it was created.
        set: Set,
        /// What to delete.
        elements: Vec<SetElement>,
    },
}

/// Which comments a lookup or deletion wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommentMatch {
    /// Exactly this comment (portmap: the container ID).
    Exact(String),
    /// Comments that start with this (ipmasq: a hash of network and
    /// attachment, then a readable tail).
    Prefix(String),
}

impl CommentMatch {
    /// Whether a rule with this comment is wanted; a rule without one never is.
    pub fn matches(&self, comment: Option<&str>) -> bool {
        match (self, comment) {
            (CommentMatch::Exact(want), Some(have)) => want == have,
            (CommentMatch::Prefix(want), Some(have)) => have.starts_with(want.as_str()),
            (_, None) => false,
        }
    }
}

impl Transaction {
    /// An empty transaction on `table`.
    pub fn new(table: Table) -> Transaction {
        Transaction {
            table,
            ops: Vec::new(),
        }
    }

    /// The table it changes.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// Its operations, in order.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Adds any operation.
    pub fn push(&mut self, op: Op) -> &mut Transaction {
        self.ops.push(op);
        self
    }

    /// [`Op::EnsureTable`].
    pub fn ensure_table(&mut self) -> &mut Transaction {
        self.push(Op::EnsureTable)
    }

    /// [`Op::DeleteTable`]: the table and everything in it, if it exists
    /// (nftables; the iptables backend refuses it, see there).
    ///
    /// ```
    /// use cni_netfilter::{Family, Op, Table, Transaction};
    ///
    /// let mut tx = Transaction::new(Table::new(Family::Inet, "cni_example"));
    /// tx.delete_table();
    /// assert_eq!(tx.ops(), [Op::DeleteTable]);
    /// ```
    ///
    /// Go: `knftables.Transaction.Delete(&knftables.Table{})`.
    pub fn delete_table(&mut self) -> &mut Transaction {
        self.push(Op::DeleteTable)
    }

    /// [`Op::EnsureChain`].
    pub fn ensure_chain(&mut self, chain: Chain) -> &mut Transaction {
        self.push(Op::EnsureChain(chain))
    }

    /// [`Op::FlushChain`].
    pub fn flush_chain(&mut self, chain: impl Into<String>) -> &mut Transaction {
        self.push(Op::FlushChain(chain.into()))
    }

    /// [`Op::DeleteChain`].
    pub fn delete_chain(&mut self, chain: impl Into<String>) -> &mut Transaction {
        self.push(Op::DeleteChain(chain.into()))
    }

    /// [`Op::AddRule`].
    pub fn add_rule(&mut self, rule: Rule) -> &mut Transaction {
        self.push(Op::AddRule(rule))
    }

    /// [`Op::EnsureRule`], appended when missing.
    pub fn ensure_rule(&mut self, rule: Rule) -> &mut Transaction {
        self.push(Op::EnsureRule { rule, first: false })
    }

    /// [`Op::DeleteRule`].
    pub fn delete_rule(&mut self, rule: ListedRule) -> &mut Transaction {
        self.push(Op::DeleteRule(rule))
    }

    /// [`Op::DeleteRulesByComment`].
    pub fn delete_rules_by_comment(
        &mut self,
        chain: impl Into<String>,
        comment: CommentMatch,
    ) -> &mut Transaction {
        self.push(Op::DeleteRulesByComment {
            chain: chain.into(),
            comment,
        })
    }
}
