//! [`NftBackend`]: transactions as one nf_tables batch each.

use memchr::memmem::Finder;

use super::message::{Batch, Kind};
use super::nla::{self, Attrs};
use super::plan;
use super::retry::{Retry, RETRY_DEADLINE};
use super::socket::{DumpError, NftSocket};
use super::udata::{comment_bytes, comment_of};
use crate::{
    Backend, BackendKind, CommentMatch, FilterError, ListedRule, Op, RuleContent, RuleHandle,
    Table, Transaction,
};

/// `ERESTART`: the kernel's answer to a batch tied to a past generation.
const ERESTART: i32 = 85;

/// The nftables backend: a netlink socket speaking nf_tables itself, so
/// no `nft` binary is needed at run time.
///
/// Every [`Transaction`] is one batch, sent in one message and applied
/// whole or not at all, however many rules it holds: the socket's send
/// buffer is raised to the batch's size (forced as root, else up to
/// `net.core.wmem_max`, past which the batch is refused unsent), and
/// only its last request is acknowledged, so the kernel's answers never
/// overflow the receive buffer unless it refused the batch. Every wait
/// for an answer has a deadline.
///
/// When a transaction deletes by comment (or deletes a chain or table if
/// present, or ensures chains), what is there is listed first and the
/// batch is tied to that ruleset generation (`NFNL_BATCH_GENID`): if
/// anything changed in between, the kernel refuses the batch whole
/// (`ERESTART`) and it is built again from a new listing, after a short
/// random pause, for up to 10 s; past it the error is
/// [`FilterError::Busy`] (CNI code 11). No lock is taken: the kernel
/// serialises batches per network namespace, so writers in different
/// namespaces never wait for each other, and one in the same namespace
/// only repeats its own listing. Older versions of ours took
/// `/run/cni-netfilter-nftables.lock` around the same work; alongside
/// them, their batches are tied to the generation as ours are, so either
/// side's stale batch is refused and listed again (an older version gives
/// up after 16 attempts, with code 999, where it used to wait its turn).
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
    ///
    /// In the process's own namespace every backend opened in turn (and
    /// [`crate::conntrack`], and the iptables backend's looks through
    /// nf_tables) uses the same netlink socket, kept open between uses
    /// until the process exits: the kernel makes each release of a
    /// netfilter socket wait for the namespace's pending rule deletions
    /// (an RCU grace period, under the lock every writer there needs), so
    /// in a burst of pods one socket per process pays that once where a
    /// socket per look paid it at each close. A thread in another
    /// namespace gets a socket of its own, closed when dropped, so a
    /// container's namespace is never kept alive.
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
        self.socket
            .dump(
                Kind::GetTable,
                family,
                &Attrs::default(),
                |names: &mut Vec<String>, payload| {
                    if let [Some(name)] = nla::find(payload, [1])? {
                        names.push(nla::string(name)?);
                    }
                    Ok(())
                },
            )
            .map_err(|e| e.into_filter("list", || format!("{family} tables")))
    }

    /// The attributes of each chain of `table` as the kernel lists them
    /// (name, hook, policy, type...), for a batch that leaves out the
    /// chains that are there already.
    pub(crate) fn chain_declarations(
        &mut self,
        table: &Table,
    ) -> Result<Vec<Vec<u8>>, FilterError> {
        let wanted = table.name.as_bytes();
        self.socket
            .dump(
                Kind::GetChain,
                table.family,
                &Attrs::default(),
                |chains: &mut Vec<Vec<u8>>, payload| {
                    if let [Some(name)] = nla::find(payload, [1])? {
                        if nla::text(name) == wanted {
                            chains.push(payload.to_vec());
                        }
                    }
                    Ok(())
                },
            )
            .map_err(|e| e.into_filter("list chains of", || format!("table {table}")))
    }

    /// Whether `table` has a chain named `chain`: one `NFT_MSG_GETCHAIN`
    /// of that name, no dump (`false` when the table or the chain is
    /// absent).
    ///
    /// What it is for: a DEL that looks for one container's chain among
    /// every pod's asks for it by name, whatever the number of pods.
    pub fn has_chain(&mut self, table: &Table, chain: &str) -> Result<bool, FilterError> {
        let mut attrs = Attrs::default();
        attrs.str(1, &table.name);
        attrs.str(3, chain);
        let asked = self.socket.answer(
            Kind::GetChain.message_type(),
            super::message::NLM_F_REQUEST,
            super::message::nfproto(table.family),
            &attrs.buf,
        );
        match asked {
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ENOENT as i32) => Ok(false),
            Err(source) => Err(FilterError::Kernel {
                op: "list",
                object: format!("chain {table} {chain}"),
                source,
            }),
        }
    }

    /// Whether `table` has a chain named one of `needles`, or a rule whose
    /// netlink attributes (expressions, comment) contain one of them byte
    /// for byte: a conservative look, for a caller that skips work when
    /// nothing can be there. A table that does not exist mentions nothing.
    ///
    /// What it is for: iptables-nft keeps iptables' tables as nf_tables
    /// tables (`ip filter`, `ip6 nat`...), and an interface name, an
    /// address or a chain name a rule names is in its attributes as is, so
    /// one dump answers "is there anything of this bridge?" without an
    /// `iptables-save` process ([`crate::iptables::may_mention`]).
    pub fn table_mentions(
        &mut self,
        table: &Table,
        needles: &[&[u8]],
    ) -> Result<bool, FilterError> {
        Ok(self.table_mentions_each(table, needles)?.contains(&true))
    }

    /// [`NftBackend::table_mentions`] for each of `needles`: whether the
    /// table mentions that one, in their order, from the same two dumps.
    pub fn table_mentions_each(
        &mut self,
        table: &Table,
        needles: &[&[u8]],
    ) -> Result<Vec<bool>, FilterError> {
        let mut hits = vec![false; needles.len()];
        let finders: Vec<Finder<'_>> = needles.iter().map(Finder::new).collect();
        let mark = |hits: &mut Vec<bool>, hay: &[u8]| {
            hits.resize(needles.len(), false);
            for (hit, n) in hits.iter_mut().zip(&finders) {
                *hit |= !*hit && !n.needle().is_empty() && n.find(hay).is_some();
            }
        };
        let wanted = table.name.as_bytes();
        for declared in self.chain_declarations(table)? {
            if let [Some(name)] = nla::find(&declared, [3])? {
                let name = nla::text(name);
                for (hit, n) in hits.iter_mut().zip(needles) {
                    *hit |= name == *n;
                }
            }
        }
        let mut filter = Attrs::default();
        filter.str(1, &table.name);
        let visit = |in_rules: &mut Vec<bool>, payload: &[u8]| {
            if let [Some(name)] = nla::find(payload, [1])? {
                if nla::text(name) == wanted {
                    mark(in_rules, payload);
                }
            }
            Ok(())
        };
        // What a dump read even if another writer's commit interrupted it
        // (as a burst's do, a table of a hundred pods' rules taking more
        // than one part): a needle found there is named. Only an absence
        // needs a whole listing.
        let rules = self
            .socket
            .dump_as_seen(Kind::GetRule, table.family, &filter, visit)
            .and_then(|(seen, interrupted)| {
                let all = (0..needles.len()).all(|i| hits[i] || seen.get(i) == Some(&true));
                if interrupted && !all {
                    self.socket
                        .dump(Kind::GetRule, table.family, &filter, visit)
                } else {
                    Ok(seen)
                }
            });
        match rules {
            Ok(in_rules) => {
                for (hit, in_rule) in hits.iter_mut().zip(in_rules) {
                    *hit |= in_rule;
                }
                Ok(hits)
            }
            // The kernel answers a dump of a table that is not there with
            // ENOENT.
            Err(DumpError::Io(e)) if e.raw_os_error() == Some(nix::errno::Errno::ENOENT as i32) => {
                Ok(hits)
            }
            Err(e) => Err(e.into_filter("list rules of", || format!("table {table}"))),
        }
    }

    /// Whether a rule of one of `chains` of `table` has `needle` in its
    /// netlink attributes (expressions, comment), byte for byte: the
    /// conservative look of [`NftBackend::table_mentions`], narrowed to
    /// those chains (a dump of each), so its cost does not grow with the
    /// rest of the table. A chain or table that does not exist mentions
    /// nothing.
    pub fn chains_mention(
        &mut self,
        table: &Table,
        chains: &[&str],
        needle: &[u8],
    ) -> Result<bool, FilterError> {
        for chain in chains {
            let filter = one_chain(table, chain);
            let (table_name, chain_name) = (table.name.as_bytes(), chain.as_bytes());
            let found = self.socket.dump(
                Kind::GetRule,
                table.family,
                &filter,
                |found: &mut bool, payload| {
                    let [name, rule_chain] = nla::find(payload, [1, 2])?;
                    *found |= name.map(nla::text) == Some(table_name)
                        && rule_chain.map(nla::text) == Some(chain_name)
                        && !needle.is_empty()
                        && memchr::memmem::find(payload, needle).is_some();
                    Ok(())
                },
            );
            match found {
                Ok(true) => return Ok(true),
                Ok(false) => {}
                Err(DumpError::Io(e))
                    if e.raw_os_error() == Some(nix::errno::Errno::ENOENT as i32) => {}
                Err(e) => {
                    return Err(e.into_filter("list rules of", || format!("chain {table} {chain}")))
                }
            }
        }
        Ok(false)
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
        let filter = one_chain(table, chain);
        let (table_name, chain_name) = (table.name.as_bytes(), chain.as_bytes());
        let listing = self.socket.dump(
            Kind::GetRule,
            table.family,
            &filter,
            |listed: &mut Vec<(Vec<u8>, Option<String>)>, payload| {
                let [name, rule_chain, exprs, udata] = nla::find(payload, [1, 2, 4, 7])?;
                if name.map(nla::text) == Some(table_name)
                    && rule_chain.map(nla::text) == Some(chain_name)
                {
                    let exprs = exprs.unwrap_or_default().to_vec();
                    listed.push((exprs, udata.and_then(comment_of)));
                }
                Ok(())
            },
        );
        let listed = match listing {
            Ok(listed) => listed,
            Err(DumpError::Io(_)) => return Ok(false),
            Err(DumpError::Visit(e)) => return Err(e),
        };
        Ok(listed.len() == wanted.len()
            && listed
                .iter()
                .zip(&wanted)
                .all(|((exprs, comment), (ours, our_comment))| {
                    comment == our_comment && nla::same_attrs(ours, exprs)
                }))
    }

    fn run(&mut self, tx: &Transaction, commit: bool) -> Result<(), FilterError> {
        self.run_echoed(tx, commit, None)
    }

    /// [`NftBackend::run`], each rule added echoed into `echoed` when
    /// given (the payloads of the kernel's `NEWRULE` notifications).
    fn run_echoed(
        &mut self,
        tx: &Transaction,
        commit: bool,
        mut echoed: Option<&mut Vec<Vec<u8>>>,
    ) -> Result<(), FilterError> {
        plan::validate(tx)?;
        let lists = tx.ops().iter().any(|op| {
            matches!(
                op,
                Op::DeleteRulesByComment { .. }
                    | Op::DeleteChain(_)
                    | Op::DeleteTable
                    | Op::EnsureChain(_)
            )
        });
        let mut retry = Retry::new();
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
            let echo = echoed.is_some();
            let batch = self.new_batch(genid, commit, |nft, batch| match echo {
                true => plan::build(nft, tx, batch.echoing_rules()),
                false => plan::build(nft, tx, batch),
            })?;
            if batch.described.is_empty() {
                return Ok(());
            }
            let sent = match echoed.as_deref_mut() {
                Some(echoed) => self.socket.send_batch_echoed(&batch, echoed)?,
                None => self.socket.send_batch(&batch)?,
            };
            let Some(refusal) = sent else {
                return Ok(());
            };
            if refusal.index == 0 && refusal.errno == ERESTART {
                // Another writer committed since the listing: list again
                // after a random pause, so writers that collided spread.
                if retry.pause() {
                    continue;
                }
                return Err(FilterError::Busy {
                    what: format!(
                        "the nftables ruleset changed under each of {} attempts to change \
                         table {} in {} s",
                        retry.attempts(),
                        tx.table(),
                        RETRY_DEADLINE.as_secs()
                    ),
                });
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
        self.rules_where(table, chain, |_| true)
    }

    /// As [`NftBackend::list_rules`], but a rule whose comment does not
    /// match is skipped as it is read, before anything is allocated for
    /// it: DEL looks for one container's rules among every pod's.
    fn find_rules(
        &mut self,
        table: &Table,
        chain: &str,
        comment: &CommentMatch,
    ) -> Result<Vec<ListedRule>, FilterError> {
        self.rules_where(table, chain, |have| comment.matches(have))
    }

    /// `NFT_MSG_GETCHAIN` dumped for the family, kept for this table.
    fn list_chains(&mut self, table: &Table) -> Result<Vec<String>, FilterError> {
        self.chain_declarations(table)?
            .iter()
            .filter_map(|declared| match nla::find(declared, [3]) {
                Ok([Some(name)]) => Some(nla::string(name)),
                _ => None,
            })
            .collect()
    }
}

/// A rule a batch added, as the kernel echoed it back: its chain, its
/// handle (which names it in its table until it is deleted) and its
/// comment. What [`NftBackend::apply_recording`] answers, and what
/// [`NftBackend::delete_recorded`] deletes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedRule {
    /// The chain it was added to.
    pub chain: String,
    /// The kernel's handle of the rule.
    pub handle: u64,
    /// Its comment, if it has one.
    pub comment: Option<String>,
}

/// The most rules [`NftBackend::apply_recording`] has echoed back: each
/// echo is about 500 bytes queued on the socket at once, and echoes past
/// its receive buffer would be lost (and could hide the batch's answer).
pub const MAX_RECORDED_RULES: usize = 64;

impl NftBackend {
    /// Applies `tx` as [`Backend::apply`] does, and answers the rules it
    /// added as the kernel echoed them back (`NLM_F_ECHO`), in order, with
    /// their handles; `None` when `tx` adds more than
    /// [`MAX_RECORDED_RULES`] (then applied without echoes) or when an
    /// echo did not come back.
    ///
    /// What it is for: a chain of a thousand pods' rules is found rule
    /// by rule only by dumping it whole (the kernel dumps each rule's
    /// expressions); a plugin that keeps the handles of what its ADD
    /// added deletes exactly those at DEL ([`NftBackend::delete_recorded`])
    /// without the dump.
    ///
    /// Go: none; knftables' `Run` does not ask for echoes.
    pub fn apply_recording(
        &mut self,
        tx: &Transaction,
    ) -> Result<Option<Vec<AddedRule>>, FilterError> {
        let adds = tx
            .ops()
            .iter()
            .filter(|op| matches!(op, Op::AddRule(_) | Op::AddNftRule { .. }))
            .count();
        if adds > MAX_RECORDED_RULES {
            self.run(tx, true)?;
            return Ok(None);
        }
        let mut echoed = Vec::new();
        self.run_echoed(tx, true, Some(&mut echoed))?;
        let wanted = tx.table().name.as_bytes();
        let mut added = Vec::with_capacity(echoed.len());
        for payload in &echoed {
            let [table, chain, handle, udata] = nla::find(payload, [1, 2, 3, 7])?;
            if table.map(nla::text) != Some(wanted) {
                continue;
            }
            let (Some(chain), Some(handle)) = (chain, handle) else {
                return Err(nla::malformed("an echoed rule without its chain or handle"));
            };
            added.push(AddedRule {
                chain: nla::string(chain)?,
                handle: nla::number(handle)?,
                comment: udata.and_then(comment_of),
            });
        }
        Ok((added.len() == adds).then_some(added))
    }

    /// Deletes `rules` of `table` in one batch when each is still there
    /// with comment `comment`: `Ok(true)` once deleted; `Ok(false)`,
    /// having changed nothing, when one is gone or carries another comment
    /// (a handle recorded before the table was made again names another
    /// rule).
    /// The caller then deletes by comment ([`Op::DeleteRulesByComment`]).
    ///
    /// Each rule is looked at alone (`NFT_MSG_GETRULE` of its handle, no
    /// dump), then all are deleted by handle in one batch tied to no
    /// generation: a rule deleted meanwhile fails it whole (`ENOENT`), and
    /// another pod's commit between the looks and the batch does not. A
    /// handle names one rule for its table's life; only a table deleted
    /// and made again (`nft flush ruleset`, then another pod's ADD) within
    /// the moment between the last look and the commit could give it to
    /// another rule, the window the reference's own DEL has between its
    /// listing and its deletion by handle.
    ///
    /// Why untied: the kernel compares a tied batch's generation only once
    /// it holds the namespace's commit mutex, so in a burst every attempt
    /// queued behind the other pods' commits to be refused because they
    /// had committed. Measured against the tied batch (`burst`'s
    /// all-nftables Podman list, interleaved rounds): the DEL burst's
    /// makespan 11 % shorter at 100 pods and 16 % at 30, p99 / p50 1.04-1.07
    /// (was 1.40-1.51), p50 17-22 % longer (untied writers take turns and
    /// finish together, where refused ones' pauses let some run ahead).
    pub fn delete_recorded(
        &mut self,
        table: &Table,
        rules: &[AddedRule],
        comment: &str,
    ) -> Result<bool, FilterError> {
        if rules.is_empty() {
            return Ok(true);
        }
        if !self.all_commented(table, rules, comment)? {
            return Ok(false);
        }
        let requests = rules
            .iter()
            .map(|rule| {
                (
                    super::message::del_rule(table, &rule.chain, rule.handle),
                    "delete rule of",
                    format!("chain {table} {} (handle {})", rule.chain, rule.handle),
                )
            })
            .collect();
        Ok(self.send_requests(requests)?.is_none())
    }

    /// Whether each of `rules` is in `table` with comment `comment`, each
    /// looked at by its handle (`NFT_MSG_GETRULE`, no dump).
    fn all_commented(
        &mut self,
        table: &Table,
        rules: &[AddedRule],
        comment: &str,
    ) -> Result<bool, FilterError> {
        for rule in rules {
            let mut attrs = Attrs::default();
            attrs.str(1, &table.name);
            attrs.str(2, &rule.chain);
            attrs.u64(3, rule.handle);
            let listed = self.socket.answer(
                Kind::GetRule.message_type(),
                super::message::NLM_F_REQUEST,
                super::message::nfproto(table.family),
                &attrs.buf,
            );
            let payload = match listed {
                Ok(Some(payload)) => payload,
                Ok(None) => return Ok(false),
                // Gone, or its chain or table is.
                Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ENOENT as i32) => {
                    return Ok(false)
                }
                Err(source) => {
                    return Err(FilterError::Kernel {
                        op: "list",
                        object: format!("rule {} of chain {table} {}", rule.handle, rule.chain),
                        source,
                    })
                }
            };
            let [udata] = nla::find(&payload, [7])?;
            if udata.and_then(comment_bytes) != Some(comment.as_bytes()) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Sends `requests` (each with what it does and to what, for errors)
    /// as one batch, tied to no generation: `Ok(None)` when the kernel
    /// applied it, else the refused request's place (1 for the first, 0
    /// for the batch) and errno, the batch having changed nothing.
    pub(crate) fn send_requests(
        &mut self,
        requests: Vec<(super::message::Request, &'static str, String)>,
    ) -> Result<Option<(usize, i32)>, FilterError> {
        let batch = self.new_batch(None, true, |_, mut batch| {
            for (req, op, object) in requests {
                batch.push(req, op, object)?;
            }
            Ok(batch)
        })?;
        Ok(self.socket.send_batch(&batch)?.map(|r| (r.index, r.errno)))
    }

    /// A batch from the socket's next sequence number on (valid only in
    /// generation `genid` when given), filled by `fill` and finished
    /// (committed or only checked), its sequence numbers reserved.
    fn new_batch(
        &mut self,
        genid: Option<u32>,
        commit: bool,
        fill: impl FnOnce(&mut Self, Batch) -> Result<Batch, FilterError>,
    ) -> Result<Batch, FilterError> {
        let begin = self.socket.reserve(0);
        let batch = fill(self, Batch::new(begin, genid))?.finish(commit);
        self.socket.reserve(batch.described.len() + 1);
        Ok(batch)
    }

    /// The rules of `chain` in `table`, in order, whose comment `keep`
    /// accepts (`None` for a rule without one). The kernel filters the
    /// dump by table and chain; each rule is read in place and only a kept
    /// one costs an allocation.
    fn rules_where(
        &mut self,
        table: &Table,
        chain: &str,
        keep: impl Fn(Option<&str>) -> bool,
    ) -> Result<Vec<ListedRule>, FilterError> {
        let filter = one_chain(table, chain);
        self.socket
            .dump(
                Kind::GetRule,
                table.family,
                &filter,
                rule_reader(table, chain, keep),
            )
            .map_err(|e| e.into_filter("list rules of", || format!("chain {table} {chain}")))
    }

    /// Every rule of `chain` in `table` as one dump read them, and
    /// whether a concurrent change interrupted it: then a rule may be
    /// missing or listed twice, and one listed may be gone, but each
    /// handle listed was a rule of the chain with what it lists
    /// ([`NftSocket::dump_as_seen`](super::socket::NftSocket::dump_as_seen)).
    /// For a deletion that acts on what it finds and is refused by the
    /// kernel, or looks again, where what it found falls short.
    pub(crate) fn rules_as_seen(
        &mut self,
        table: &Table,
        chain: &str,
    ) -> Result<(Vec<ListedRule>, bool), FilterError> {
        let filter = one_chain(table, chain);
        let reader = rule_reader(table, chain, |_| true);
        self.socket
            .dump_as_seen(Kind::GetRule, table.family, &filter, reader)
            .map_err(|e| e.into_filter("list rules of", || format!("chain {table} {chain}")))
    }
}

/// What reads a rule dump of `chain` in `table` into a list: each rule
/// whose comment `keep` accepts, read in place, only a kept one
/// allocated.
fn rule_reader<'a>(
    table: &'a Table,
    chain: &'a str,
    keep: impl Fn(Option<&str>) -> bool + 'a,
) -> impl FnMut(&mut Vec<ListedRule>, &[u8]) -> Result<(), FilterError> + 'a {
    let (table_name, chain_name) = (table.name.as_bytes(), chain.as_bytes());
    move |rules: &mut Vec<ListedRule>, payload: &[u8]| {
        let [name, rule_chain, handle, exprs, udata] = nla::find(payload, [1, 2, 3, 4, 7])?;
        if name.map(nla::text) != Some(table_name)
            || rule_chain.map(nla::text).unwrap_or_default() != chain_name
        {
            return Ok(());
        }
        // As `comment_of` reads it: lossily, borrowed when valid.
        let comment = udata.and_then(comment_bytes).map(String::from_utf8_lossy);
        if !keep(comment.as_deref()) {
            return Ok(());
        }
        let handle = handle.ok_or_else(|| nla::malformed("a rule without a handle"))?;
        rules.push(ListedRule {
            chain: chain.to_string(),
            comment: comment.map(|c| c.into_owned()),
            handle: RuleHandle::Nft(nla::number(handle)?),
            content: RuleContent::Nft(exprs.unwrap_or_default().to_vec()),
        });
        Ok(())
    }
}

/// The attributes of a rule dump narrowed to `chain` of `table` (the
/// kernel filters by them; the readers check them too, for kernels that
/// do not).
fn one_chain(table: &Table, chain: &str) -> Attrs {
    let mut filter = Attrs::default();
    filter.str(1, &table.name);
    filter.str(2, chain);
    filter
}
