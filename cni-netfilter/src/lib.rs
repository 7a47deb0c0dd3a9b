//! Packet filtering for CNI plugins: a plugin describes its tables, chains
//! and rules as data, and a backend renders them, to nftables over netlink
//! or to iptables. Portmap, masquerading (bridge and ptp `ipMasq`) and
//! firewall plugins build on it.
//!
//! - [`Table`], [`Chain`], [`BaseChain`] (`table.rs`) and [`Rule`],
//!   [`Match`], [`Action`] (`rule.rs`), [`Set`] (`set.rs`): the
//!   description, in nft's vocabulary; each variant names its nft and
//!   iptables spelling.
//! - [`Transaction`] (`transaction.rs`): the changes one plugin call makes
//!   to one table, applied all or nothing; rules are deleted by comment
//!   ([`CommentMatch`]), as the reference finds its rules again.
//! - [`Backend`] (`backend.rs`): apply, list rules and chains, find rules
//!   by comment; [`open`] gives one of [`BackendKind`].
//! - [`nft`]: the nftables backend, speaking nf_tables' netlink protocol
//!   itself (no `nft` binary at run time): one batch per transaction,
//!   comments stored as nft stores them, so `nft list ruleset` shows
//!   `comment "..."` and knftables-based tools see our rules; one netlink
//!   socket per process in its own namespace, whatever opens it
//!   ([`nft::NftBackend::open`] says why).
//! - [`iptables`]: the iptables backend, through `iptables-save` and
//!   `iptables-restore --noflush -w` (legacy or nft variant).
//! - [`choose`] (`choose.rs`): the reference's choice between them.
//! - [`masquerade`]: `ipMasq` of the reference's `bridge` and `ptp`, in
//!   its iptables and nftables layouts (setup, teardown, check, GC).
//! - [`firewalld`]: firewalld over D-Bus (a small client of our own):
//!   container addresses as sources of a zone, the firewall plugin's
//!   `firewalld` backend.
//! - [`macspoof`]: `macspoofchk` of the reference's `bridge`, in its
//!   `bridge nat` table layout (setup, teardown, check).
//! - [`firewall`]: the `firewall` plugin's forwarding rules and bridge
//!   isolation, in the reference's iptables layout or a table of our own
//!   under nftables.
//! - [`chain_name`] (`chain_name.rs`): the reference's hashed names of
//!   per-attachment iptables chains (`CNI-DN-<hash>`, `CNI-<hash>`).
//! - [`conntrack`]: connection tracking entries deleted over netlink
//!   (stale UDP flows to a port that is now mapped).
//! - [`FilterError`] (`error.rs`): names the table, chain or comment, keeps
//!   the errno or the command's stderr; becomes a CNI error (code 7 for a
//!   description that cannot be applied, else 999).
//!
//! # Example: portmap's layout for one container
//! As `plugins/meta/portmap/portmap_nftables.go` (containernetworking/plugins
//! v1.9) lays it out, in a namespace of the example's own (this needs
//! root: compiled here, and `tests/nft_kernel.rs` does the same as root):
//! add the rules, find them by comment, delete them.
//! ```no_run
//! use cni_netfilter::nft::NftBackend;
//! use cni_netfilter::{
//!     priority, Action, Backend, BaseChain, Chain, ChainType, CommentMatch, Family, FilterError,
//!     Hook, Match, Protocol, Rule, Table, Transaction,
//! };
//!
//! let table = Table::new(Family::Ip, "cni_hostport").with_comment("CNI portmap plugin");
//! let dnat = |chain: &str| Chain::base(chain, BaseChain::new(ChainType::Nat, Hook::Prerouting, priority::DSTNAT));
//! let mut add = Transaction::new(table.clone());
//! add.ensure_table()
//!     .ensure_chain(Chain::new("hostports"))
//!     .ensure_chain(dnat("prerouting"))
//!     .flush_chain("prerouting")
//!     .add_rule(Rule::new("prerouting").matching(Match::LocalDestination).then(Action::Jump("hostports".into())))
//!     .add_rule(
//!         Rule::new("hostports")
//!             .matching(Match::Protocol(Protocol::Tcp))
//!             .matching(Match::DestinationPort(8080))
//!             .then(Action::Dnat { addr: "10.88.0.5".parse().unwrap(), port: Some(80) })
//!             .comment("container-1"),
//!     );
//!
//! let netns = cni_net::testing::TempNetns::new("doc")?;
//! netns.run(|_| {
//!     let mut nft = NftBackend::open()?;
//!     nft.apply(&add)?;
//!     let mine = CommentMatch::Exact("container-1".into());
//!     assert_eq!(nft.find_rules(&table, "hostports", &mine)?.len(), 1);
//!
//!     let mut del = Transaction::new(table.clone());
//!     del.delete_rules_by_comment("hostports", mine.clone());
//!     nft.apply(&del)?;
//!     assert!(nft.find_rules(&table, "hostports", &mine)?.is_empty());
//!     Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
//! ```
//!
//! # Where we deliberately differ from the reference
//! - The nftables backend talks netlink instead of running `nft -f -`
//!   (knftables): static plugins then work on hosts without nft. What the
//!   kernel holds is the same: `tests/fixtures/rule_bytes.txt` has nft's
//!   own bytes for each kind of rule, and ours equal them.
//! - A transaction that deletes rules it listed is tied to the ruleset
//!   generation of the listing (`NFNL_BATCH_GENID`) and built again when
//!   another writer changed the ruleset in between; knftables lists and
//!   deletes by handle without that check. Deletions by a recorded handle
//!   (each handle's comment looked at first) and the iptables layout's
//!   chain removals through nf_tables are not tied: in a burst a tied
//!   batch queues for the commit mutex only to be refused, and these
//!   fail by themselves when what they delete is gone or still in use
//!   ([`nft::NftBackend::delete_recorded`],
//!   [`iptables::IptablesBackend::remove_chains_directly`]).
//! - No lock around nftables batches (the reference relies on nft's own
//!   transaction too; older versions of ours took
//!   `/run/cni-netfilter-nftables.lock`): a batch is one message of any
//!   size, tied to its listing's generation, retried for up to 10 s
//!   ([`nft::NftBackend`]), then code 11. The iptables
//!   list-then-restore lock is per network namespace and waited for
//!   until one holder has kept it [`iptables::LOCK_DEADLINE`] (while the
//!   turns move, as in a burst of pods, up to
//!   [`iptables::MOST_DEADLINES`] times that), then code 11 naming the
//!   lock file and its holder; `iptables-restore -w` waits as long for the xtables
//!   lock, where go-iptables waits without end.
//! - Listing a chain or table that does not exist gives no rules rather
//!   than a "not found" error: every reference caller treats that error as
//!   "no rules".
//! - A comment nft could not print back (with `"` or control characters)
//!   is refused before anything changes; iptables comments may hold `"`
//!   (portmap's do), escaped as iptables-save does.
//! - iptables chains are created with `-N` only when `iptables-save` did
//!   not list them, so ensuring a chain never flushes it (a `:CHAIN` line
//!   in `iptables-restore --noflush` would).
//! - A teardown of chains in an iptables-nft table (portmap's DEL) is one
//!   nf_tables batch of our own, without an `iptables-save` and an
//!   `iptables-restore` ([`iptables::IptablesBackend::remove_chains_directly`]):
//!   the kernel holds the same rules after it as after the commands, and
//!   iptables-nft reads the kernel afresh on every run. `nft list` (1.1)
//!   warns that such a table "is managed by iptables-nft, do not touch!",
//!   which is for hand edits that add what iptables-nft cannot print; a
//!   deletion leaves nothing it cannot. Only where no legacy table of the
//!   name exists in the namespace; legacy tables keep the commands.
//! - An ADD's chains and rules in an iptables-nft table (portmap, the
//!   firewall, masquerading) are one nf_tables batch too, in
//!   iptables-nft's own encoding of each rule (the same expressions byte
//!   for byte as its `iptables-restore` writes, compat `match`/`target`
//!   expressions and all: `iptables-save`, `iptables -C` and `-D`, ours
//!   and the reference's, see the same rules), when nothing is in doubt
//!   ([`iptables::IptablesBackend::ensure_directly`]); anything in doubt
//!   (a rule written by another iptables version, a table not made yet,
//!   an extension without a form here) runs the commands as before.
//!   [`iptables::IptablesBackend::with_direct_writes`] turns it off.
//!
//! # Why not netlink-packet-netfilter
//! Its 0.4 release has the nf_tables messages and six expressions, but not
//! nat, masq, fib, ct or counter, which portmap and masquerading need and
//! would pass as untyped attributes anyway; its dependencies (derive_more,
//! zerocopy, bitflags) would land in every static plugin. The encoding
//! here is a few hundred lines, checked byte for byte against nft.

mod backend;
mod chain_name;
mod choose;
pub mod conntrack;
mod error;
pub mod firewall;
pub mod firewalld;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod host_lock;
pub mod iptables;
pub mod macspoof;
pub mod masquerade;
mod netns_id;
pub mod nft;
mod rule;
mod set;
mod table;
mod transaction;

pub use backend::{open, Backend, BackendKind, ListedRule, RuleContent, RuleHandle};
pub use chain_name::{chain_name, hashed, CHAIN_NAME_LEN};
pub use choose::{
    cannot_list, choose, iptables_first, iptables_usable, nftables_usable, ListingFailure,
};
pub use error::FilterError;
pub use host_lock::{IP6TABLES_LOCK, IPTABLES_LOCK};
pub use rule::{Action, CtState, Match, Protocol, Rule};
pub use set::{Set, SetElement, SetKey};
pub use table::{priority, BaseChain, Chain, ChainType, Family, Hook, Policy, Table};
pub use transaction::{CommentMatch, Op, Transaction};
