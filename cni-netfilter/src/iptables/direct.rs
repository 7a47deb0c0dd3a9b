//! Changes of iptables-nft tables through nf_tables itself, without an
//! `iptables-save` and an `iptables-restore` process: a new attachment's
//! chains and rules, and a container's chains torn down.

use std::collections::HashMap;

use super::nft_form::{host_address, xt_rule, XtRule};
use super::peek::legacy_may_hold;
use super::{is_builtin, IptablesBackend, Variant};
use crate::nft::message::{del_chain, del_rule, new_chain_exclusive, new_xt_rule, Request};
use crate::nft::nla::{self, Attrs};
use crate::nft::{Expr, NftBackend};
use crate::{Backend, Family, FilterError, Op, Rule, RuleContent, RuleHandle, Table, Transaction};

/// `NFTA_LIST_ELEM`, `NFTA_EXPR_NAME`.
const LIST_ELEM: u16 = 1;
const EXPR_NAME: u16 = 1;

impl IptablesBackend {
    /// Removes each chain of `chains` (its name, and the chain whose
    /// rules enter it) that nf_tables holds in `table`, with the rules of
    /// its entry chain that jump or go to it, in one nf_tables batch:
    /// what `iptables-restore` would do with `-D ENTRY ...`, `-F CHAIN`,
    /// `-X CHAIN`, done by the kernel atomically, without our host lock.
    ///
    /// `Ok(true)` when it was done so. `Ok(false)`, having changed
    /// nothing, when this is not certainly iptables-nft's table (the
    /// backend runs iptables-legacy, or legacy iptables holds a table of
    /// that name in this namespace) or nf_tables holds none of the
    /// chains: the caller then lists the table with `iptables-save`,
    /// which also says whether iptables is usable at all. An error
    /// changed nothing either; the caller falls back the same way.
    ///
    /// Each chain is asked for by name ([`NftBackend::has_chain`], no
    /// dump of every pod's chains); only the entry chain is listed, first
    /// as one dump read it even if another pod's commit interrupted it
    /// (in a burst, a chain of a hundred pods' jumps is read in parts and
    /// nearly always is): a jump it missed keeps the chain in use, the
    /// kernel refuses the batch, and it is planned once more from whole
    /// listings. The
    /// batch is tied to no ruleset generation, so a commit of another
    /// pod between the looks and the batch does not refuse it: what the
    /// looks found stays true or the kernel refuses the batch by itself
    /// (the chain is deleted by name and must still be there; the jumps
    /// go by handle; a jump made meanwhile leaves the chain in use,
    /// `EBUSY`). Only this container's DEL or ADD makes or deletes its
    /// chains, and the spec runs no two operations of one container at
    /// once.
    ///
    /// Why untied (traced with `strace` in a burst of Podman's default
    /// list): the kernel compares a tied batch's generation only once it
    /// holds the namespace's commit mutex, so in a burst each attempt
    /// queued behind the other pods' commits (7-46 ms) to be refused
    /// because they had committed; one portmap DEL of ten at once waited
    /// so five times before its sixth batch went through. Measured
    /// against the tied batch (`burst`'s Podman list, default backends,
    /// interleaved rounds): the DEL burst's makespan 11-12 % shorter at
    /// 30 and 100 pods and p99 / p50 1.07 (was 1.28), but p50 6-12 %
    /// longer: the random pauses of refused writers let some pods run
    /// ahead of the others, where untied writers take turns and finish
    /// together. A pod's DEL no longer waits on luck, and no writer is
    /// refused until its deadline under a long burst.
    ///
    /// Measured (bench/process/kind.sh, portmap's DEL): the save and the
    /// restore cost two process starts and a listing decoded by
    /// iptables; the batch is a look per chain, one dump per entry chain
    /// and one commit. Either way the kernel retires the deleted rules
    /// after an RCU grace period, which the process waits for when it
    /// closes its socket.
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
        // First from what the entry chains' dumps read even if another
        // pod's commit interrupted them; a jump they missed keeps the
        // chain in use and the kernel refuses the batch (`EBUSY`), which
        // is then planned once more from whole listings.
        let (requests, interrupted) = removal(&mut nft, table, chains, true)?;
        if requests.is_empty() {
            return Ok(false);
        }
        let mut refused = nft.send_requests(requests)?;
        if refused.is_some() && interrupted {
            let (requests, _) = removal(&mut nft, table, chains, false)?;
            if requests.is_empty() {
                return Ok(false);
            }
            refused = nft.send_requests(requests)?;
        }
        match refused {
            None => Ok(true),
            Some((_, errno)) => Err(FilterError::kernel(
                "delete",
                format!("chains {chains:?} of table {table}"),
                errno,
            )),
        }
    }
}

/// One request of a batch: the message, and what it does to which
/// object, for an error to name.
type Described = (Request, &'static str, String);

/// The requests that remove `chains` (each with its entry chain) of
/// `table`, for those nf_tables holds: each jump to one from its entry
/// chain, then the chain. The entry chains are listed whole, or with
/// `as_seen` as one dump read them ([`NftBackend::rules_as_seen`]),
/// which the `bool` says was interrupted.
fn removal(
    nft: &mut NftBackend,
    table: &Table,
    chains: &[(&str, &str)],
    as_seen: bool,
) -> Result<(Vec<Described>, bool), FilterError> {
    let mut requests = Vec::new();
    let mut interrupted = false;
    for (chain, entry) in chains {
        if !nft.has_chain(table, chain)? {
            continue;
        }
        if nft.has_chain(table, entry)? {
            let listed = if as_seen {
                let (rules, cut) = nft.rules_as_seen(table, entry)?;
                interrupted |= cut;
                rules
            } else {
                nft.list_rules(table, entry)?
            };
            // An interrupted dump may list a rule twice.
            let mut handles: Vec<u64> = Vec::new();
            for rule in listed {
                if let (true, RuleHandle::Nft(handle)) = (rule.jumps_to(chain), &rule.handle) {
                    if !handles.contains(handle) {
                        handles.push(*handle);
                    }
                }
            }
            for handle in handles {
                requests.push((
                    del_rule(table, entry, handle),
                    "delete",
                    format!("rule {handle} of chain {table} {entry}"),
                ));
            }
        }
        requests.push((
            del_chain(table, chain),
            "delete",
            format!("chain {table} {chain}"),
        ));
    }
    Ok((requests, interrupted))
}

/// What [`IptablesBackend::write_directly`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Directly {
    /// The transaction is applied.
    Done,
    /// Nothing changed: the table, or a base chain a rule goes into,
    /// does not exist yet, which only a restore makes (as iptables-nft
    /// makes them).
    Unmade,
    /// Nothing changed: the restore must apply it.
    Restore,
}

/// How many batches [`IptablesBackend::ensure_directly`] plans and sends
/// while other writers' changes refuse them, before it leaves the
/// transaction to the restore.
const DIRECT_ATTEMPTS: usize = 3;

/// What a transaction asks for, compiled before anything is looked at.
#[derive(Clone)]
enum Wanted<'t> {
    Chain(&'t str),
    Rule {
        rule: &'t Rule,
        xt: XtRule,
        first: bool,
        ensure: bool,
    },
}

impl IptablesBackend {
    /// Applies `tx` (chains and rules ensured or added: an ADD's
    /// transaction) as one nf_tables batch in iptables-nft's own encoding
    /// (the expressions iptables-nft 1.8 writes for the same
    /// `iptables-restore` line), when that is certain to do what
    /// `iptables-restore` would: `true` when done so, `false`, having
    /// changed nothing, when the caller must run the restore.
    ///
    /// Certain means: the host's iptables is iptables-nft (its
    /// `iptables-restore` resolves to `xtables-nft-multi`) and legacy iptables
    /// holds no table of that name here; the table and every chain a
    /// rule goes into exist or are made in this batch; every rule has a
    /// form here; and each ensured rule is either listed exactly as we
    /// would write it (then left alone) or certainly absent: in a chain
    /// made in this batch, jumping to one, or naming a single address
    /// that no rule of its chain holds. Anything else (a rule written by
    /// another iptables version, a table not yet made) is left to the
    /// restore, which lists with `iptables-save`.
    ///
    /// No lock is taken and the batch is tied to no ruleset generation:
    /// the chains made are made exclusively (`NLM_F_EXCL`), so a writer
    /// that made one meanwhile makes the whole batch fail; what else was
    /// listed (a shared chain's rules) only ever grows. A batch refused
    /// that way (or because a chain it writes into was removed) changed
    /// nothing and is planned again from a new listing, up to three
    /// batches; any other refusal answers `false`.
    ///
    /// Measured (bench/process/podman.sh, portmap's and the firewall's
    /// ADD): the `iptables-save` and `iptables-restore` each ADD ran cost
    /// two process starts and two parses of the table; this is one dump
    /// per shared chain and one commit.
    ///
    /// Go: none; go-iptables runs `iptables` for each rule.
    pub fn ensure_directly(&mut self, tx: &Transaction) -> bool {
        self.write_directly(tx) == Directly::Done
    }

    /// [`IptablesBackend::ensure_directly`], saying why not.
    pub(super) fn write_directly(&mut self, tx: &Transaction) -> Directly {
        let table = tx.table();
        if !self.writes_through_nf_tables(table) {
            return Directly::Restore;
        }
        let mut wanted = Vec::with_capacity(tx.ops().len());
        for op in tx.ops() {
            let (rule, first, ensure) = match op {
                Op::EnsureTable => continue,
                Op::EnsureChain(chain) if chain.base.is_none() => {
                    wanted.push(Wanted::Chain(&chain.name));
                    continue;
                }
                Op::EnsureRule { rule, first } => (rule, *first, true),
                Op::AddRule(rule) => (rule, false, false),
                _ => return Directly::Restore,
            };
            let Some(xt) = xt_rule(rule, table.family) else {
                return Directly::Restore;
            };
            wanted.push(Wanted::Rule {
                rule,
                xt,
                first,
                ensure,
            });
        }
        let Ok(mut nft) = NftBackend::open() else {
            return Directly::Restore;
        };
        // A batch refused because another writer made one of its chains
        // (`EEXIST`) or removed one (`ENOENT`) since the listing changed
        // nothing: planned again from a new listing. In a burst the first
        // wave of ADDs all find the shared chains absent; one makes them,
        // the others add their rules on the next try rather than falling
        // back to a save and a restore in turns.
        for _ in 0..DIRECT_ATTEMPTS {
            let Ok(chains) = nft.list_chains(table) else {
                return Directly::Restore;
            };
            // iptables makes a table, and each of its base chains, where
            // a rule first needs them.
            let unmade = |w: &Wanted<'_>| match w {
                Wanted::Rule { rule, .. } => {
                    is_builtin(&rule.chain) && !chains.contains(&rule.chain)
                }
                Wanted::Chain(_) => false,
            };
            if chains.is_empty() || wanted.iter().any(unmade) {
                return Directly::Unmade;
            }
            let Some(requests) = self.plan_directly(&mut nft, table, &chains, wanted.clone())
            else {
                return Directly::Restore;
            };
            if requests.is_empty() {
                return Directly::Done;
            }
            match nft.send_requests(requests) {
                Ok(None) => return Directly::Done,
                Ok(Some((_, errno)))
                    if errno == nix::libc::EEXIST || errno == nix::libc::ENOENT => {}
                _ => return Directly::Restore,
            }
        }
        Directly::Restore
    }

    /// The batch's requests for `wanted` into `table`, whose chains are
    /// `chains`, or `None` when the restore must do it.
    fn plan_directly(
        &self,
        nft: &mut NftBackend,
        table: &Table,
        chains: &[String],
        wanted: Vec<Wanted<'_>>,
    ) -> Option<Vec<(crate::nft::message::Request, &'static str, String)>> {
        let mut made: Vec<&str> = Vec::new();
        let mut listed: HashMap<&str, Vec<(u64, Vec<u8>)>> = HashMap::new();
        let mut added: Vec<(&str, Vec<u8>)> = Vec::new();
        let mut requests = Vec::new();
        for want in wanted {
            let (rule, xt, first, ensure) = match want {
                Wanted::Chain(name) => {
                    if !chains.iter().any(|c| c == name) && !made.contains(&name) {
                        made.push(name);
                        requests.push((
                            new_chain_exclusive(table, name),
                            "add",
                            format!("chain {table} {name}"),
                        ));
                    }
                    continue;
                }
                Wanted::Rule {
                    rule,
                    xt,
                    first,
                    ensure,
                } => (rule, xt, first, ensure),
            };
            let chain = rule.chain.as_str();
            let new_chain = made.contains(&chain);
            if !new_chain && !chains.iter().any(|c| c == chain) {
                return None;
            }
            let ours = encoded(&xt.exprs);
            if ensure {
                if added.iter().any(|(c, e)| *c == chain && *e == ours) {
                    continue;
                }
                let enters_new = xt.exprs.iter().any(|e| {
                    matches!(e, Expr::Verdict(crate::nft::Verdict::Jump(to) | crate::nft::Verdict::Goto(to))
                        if made.contains(&to.as_str()))
                });
                if !new_chain && !enters_new {
                    if !listed.contains_key(chain) {
                        listed.insert(chain, listed_rules(nft, table, chain)?);
                    }
                    let there = listed.get(chain)?;
                    if there.iter().any(|(_, theirs)| same_rule(&ours, theirs)) {
                        continue;
                    }
                    let needle = host_address(rule)?;
                    if there
                        .iter()
                        .any(|(_, theirs)| memchr::memmem::find(theirs, &needle).is_some())
                    {
                        return None;
                    }
                }
            }
            requests.push((
                new_xt_rule(table, chain, &xt.exprs, xt.protocol, first),
                "add",
                format!("a rule to chain {table} {chain}"),
            ));
            added.push((chain, ours));
        }
        Some(requests)
    }
}

impl IptablesBackend {
    /// Whether a change of `table` may go through nf_tables: an IPv4 or
    /// IPv6 table of a host whose iptables is iptables-nft (its restore
    /// takes no xtables lock) and where legacy iptables holds no table of
    /// that name.
    fn writes_through_nf_tables(&self, table: &Table) -> bool {
        matches!(table.family, Family::Ip | Family::Ip6)
            && self.restore_takes_no_lock(table.family)
            && !legacy_may_hold(table.family, &table.name)
    }
}

/// A listed rule's handle and expressions.
type NftForm = (u64, Vec<u8>);

/// The rules of `chain` as nf_tables lists them: each one's handle and
/// expressions. `None` when the listing failed.
fn listed_rules(nft: &mut NftBackend, table: &Table, chain: &str) -> Option<Vec<NftForm>> {
    Some(nft_forms(nft.list_rules(table, chain).ok()?))
}

/// As [`listed_rules`], as one dump read them even if a concurrent
/// change interrupted it, which the `bool` says
/// ([`NftBackend::rules_as_seen`]).
fn listed_rules_as_seen(
    nft: &mut NftBackend,
    table: &Table,
    chain: &str,
) -> Option<(Vec<NftForm>, bool)> {
    let (rules, interrupted) = nft.rules_as_seen(table, chain).ok()?;
    Some((nft_forms(rules), interrupted))
}

/// Each listed rule's handle and expressions, for those nf_tables gave.
fn nft_forms(rules: Vec<crate::ListedRule>) -> Vec<NftForm> {
    rules
        .into_iter()
        .filter_map(|r| match (r.handle, r.content) {
            (RuleHandle::Nft(handle), RuleContent::Nft(exprs)) => Some((handle, exprs)),
            _ => None,
        })
        .collect()
}

/// Expressions as `NFTA_RULE_EXPRESSIONS` carries them, the counter left
/// out: what a listed rule is compared with.
fn encoded(exprs: &[Expr]) -> Vec<u8> {
    let mut list = Attrs::default();
    exprs
        .iter()
        .filter(|e| **e != Expr::Counter)
        .for_each(|e| e.encode(&mut list));
    list.buf
}

/// Whether `theirs`, a rule's expressions as the kernel lists them, are
/// `ours` ([`encoded`]) with a counter, whatever it counted.
fn same_rule(ours: &[u8], theirs: &[u8]) -> bool {
    let Ok(elements) = nla::parse(theirs) else {
        return false;
    };
    let mut kept = Attrs::default();
    for (kind, element) in elements {
        if kind != LIST_ELEM {
            return false;
        }
        let counter = matches!(nla::find(element, [EXPR_NAME]),
            Ok([Some(name)]) if nla::text(name) == b"counter");
        if !counter {
            kept.bytes(LIST_ELEM, element);
        }
    }
    nla::same_attrs(ours, &kept.buf)
}

impl IptablesBackend {
    /// Deletes each of `rules` (the first rule of its chain listed
    /// exactly as we write it, as `iptables -D CHAIN SPEC` deletes the
    /// first rule it matches) in one nf_tables batch: `true` when done
    /// so; `false`, having changed nothing, when the host's iptables is
    /// not iptables-nft, a rule has no form here or is not listed so (not
    /// there, or written in another encoding), or the kernel refused the
    /// batch (another writer deleted one meanwhile). The caller then runs
    /// `iptables-restore`.
    ///
    /// Each chain is read first as one dump read it, even if another
    /// pod's commit interrupted it: a rule found there is deleted (of
    /// identical rules, possibly not the first, which changes nothing);
    /// one not found is looked for again in a whole listing.
    ///
    /// Measured (bench/process/podman.sh, the firewall's DEL): the
    /// `iptables-restore` of the `-D` lines was a process start and a
    /// parse of the table; the kernel's grace period after the deletion
    /// is paid either way, when the socket closes.
    ///
    /// Go: none; go-iptables runs `iptables -D` for each rule.
    pub fn delete_directly(&mut self, table: &Table, rules: &[Rule]) -> bool {
        if !self.writes_through_nf_tables(table) {
            return false;
        }
        let Ok(mut nft) = NftBackend::open() else {
            return false;
        };
        // Each chain as one dump read it, even if another pod's commit
        // interrupted it (then marked so): a rule found there is one to
        // delete; one not found is looked for again in a whole listing.
        let mut listed: HashMap<&str, (Vec<NftForm>, bool)> = HashMap::new();
        let mut chosen: Vec<(&str, u64)> = Vec::new();
        for rule in rules {
            let Some(xt) = xt_rule(rule, table.family) else {
                return false;
            };
            let chain = rule.chain.as_str();
            if !listed.contains_key(chain) {
                let Some(seen) = listed_rules_as_seen(&mut nft, table, chain) else {
                    return false;
                };
                listed.insert(chain, seen);
            }
            let ours = encoded(&xt.exprs);
            let find = |there: &[NftForm]| {
                there
                    .iter()
                    .find(|(handle, theirs)| {
                        !chosen.contains(&(chain, *handle)) && same_rule(&ours, theirs)
                    })
                    .map(|(handle, _)| *handle)
            };
            let mut found = listed.get(chain).and_then(|(there, _)| find(there));
            if found.is_none() && listed.get(chain).is_some_and(|(_, cut)| *cut) {
                let Some(whole) = listed_rules(&mut nft, table, chain) else {
                    return false;
                };
                found = find(&whole);
                listed.insert(chain, (whole, false));
            }
            match found {
                Some(handle) => chosen.push((chain, handle)),
                None => return false,
            }
        }
        if chosen.is_empty() {
            return true;
        }
        let requests = chosen
            .iter()
            .map(|(chain, handle)| {
                (
                    del_rule(table, chain, *handle),
                    "delete",
                    format!("rule {handle} of chain {table} {chain}"),
                )
            })
            .collect();
        matches!(nft.send_requests(requests), Ok(None))
    }
}

/// The DEL-side looks' fallbacks, when the one dump they act on missed
/// what they look for (as a rule moved across a part's edge by another
/// pod's commit is missed): `MISSED_IN_NEXT_AS_SEEN` makes the next
/// as-seen dump leave out one reply and report itself interrupted.
#[cfg(test)]
mod interrupted_dumps {
    use super::*;
    use crate::nft::socket::MISSED_IN_NEXT_AS_SEEN;
    use crate::{Action, Match};
    use cni_net::testing::TempNetns;

    /// Runs `program args` inside `netns` with `stdin`: its output.
    fn run_in(netns: &TempNetns, program: &str, args: &[&str], stdin: &str) -> String {
        let out = netns.exec(program, args, stdin).unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{program} {args:?}: {err}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// A namespace whose iptables-nft `table` holds `script`'s lines.
    fn node(tag: &str, table: &str, script: &str) -> TempNetns {
        let ns = TempNetns::new(tag).expect("a namespace of the test's own (run as root)");
        run_in(
            &ns,
            "iptables-restore",
            &["--noflush"],
            &format!("*{table}\n{script}COMMIT\n"),
        );
        ns
    }

    /// `iptables -S` of `table`: each chain and rule as a line.
    fn listed(ns: &TempNetns, table: &str) -> String {
        run_in(ns, "iptables", &["-t", table, "-S"], "")
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn a_chain_whose_jump_the_dump_missed_is_removed_after_the_kernel_refuses_the_first_plan() {
        let ns = node(
            "missed-jump",
            "nat",
            ":CNI-HOSTPORT-DNAT - [0:0]\n:CNI-DN-a - [0:0]\n:CNI-DN-b - [0:0]\n\
             -A CNI-HOSTPORT-DNAT -p tcp --dport 8080 -j CNI-DN-a\n\
             -A CNI-HOSTPORT-DNAT -p tcp --dport 8081 -j CNI-DN-b\n\
             -A CNI-DN-b -p tcp --dport 8081 -j DNAT --to-destination 10.217.0.3:80\n",
        );
        let nat = Table::new(Family::Ip, "nat");
        let (removed, seam_used) = ns
            .run(|_| {
                // The entry chain's second rule, the jump to CNI-DN-b.
                MISSED_IN_NEXT_AS_SEEN.set(Some(1));
                let removed = IptablesBackend::new()
                    .remove_chains_directly(&nat, &[("CNI-DN-b", "CNI-HOSTPORT-DNAT")]);
                Ok::<_, cni_net::NetError>((removed, MISSED_IN_NEXT_AS_SEEN.get().is_none()))
            })
            .unwrap();
        assert!(seam_used, "the removal looked through an as-seen dump");
        assert_eq!(removed.map_err(|e| e.to_string()), Ok(true));
        let after = listed(&ns, "nat");
        assert!(!after.contains("CNI-DN-b"), "chain and jump gone:\n{after}");
        assert!(
            after.contains("-A CNI-HOSTPORT-DNAT -p tcp -m tcp --dport 8080 -j CNI-DN-a"),
            "the other pod's jump stays:\n{after}"
        );
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn a_rule_the_dump_missed_is_found_in_a_whole_listing_and_deleted() {
        let ns = node(
            "missed-rule",
            "filter",
            ":CNI-FORWARD - [0:0]\n\
             -A CNI-FORWARD -s 10.217.0.2/32 -j ACCEPT\n\
             -A CNI-FORWARD -s 10.217.0.3/32 -j ACCEPT\n\
             -A CNI-FORWARD -s 10.217.0.4/32 -j ACCEPT\n",
        );
        let filter = Table::new(Family::Ip, "filter");
        let rule = Rule::new("CNI-FORWARD")
            .matching(Match::source("10.217.0.3/32".parse().unwrap()))
            .then(Action::Accept);
        let (deleted, seam_used) = ns
            .run(|_| {
                MISSED_IN_NEXT_AS_SEEN.set(Some(1));
                let deleted = IptablesBackend::new().delete_directly(&filter, &[rule]);
                Ok::<_, cni_net::NetError>((deleted, MISSED_IN_NEXT_AS_SEEN.get().is_none()))
            })
            .unwrap();
        assert!(seam_used, "the deletion looked through an as-seen dump");
        assert!(
            deleted,
            "deleted through nf_tables, not left to the restore"
        );
        let after = listed(&ns, "filter");
        assert!(!after.contains("10.217.0.3/32"), "{after}");
        for kept in ["10.217.0.2/32", "10.217.0.4/32"] {
            assert!(after.contains(kept), "{kept} stays:\n{after}");
        }
    }
}
