//! The iptables backend: the host's `iptables-save` to list and
//! `iptables-restore --noflush -w` to change, one run per transaction, for
//! hosts whose other components use iptables. Works with iptables-nft and
//! iptables-legacy alike ([`Variant`]).
//!
//! - `command.rs`: running a command with bounded output;
//! - `render.rs`: a [`Rule`](crate::Rule) as iptables arguments;
//! - `save.rs`: reading `iptables-save` output;
//! - `peek.rs`: whether a table may hold something, without a process;
//! - `direct.rs`: an ADD's chains and rules, and teardowns, of
//!   iptables-nft tables through nf_tables;
//! - `nft_form.rs`: a rule as the expressions iptables-nft writes.

mod command;
mod direct;
mod nft_form;
mod peek;
pub(crate) mod render;
pub(crate) mod save;

pub use command::STDERR_LIMIT;
pub(crate) use peek::legacy_may_hold;
pub use peek::{may_mention, may_mention_each};
pub use render::{literal_ifname, MAX_COMMENT_LEN};
pub use save::Saved;

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use self::direct::Directly;
use crate::host_lock::lock;
use crate::table::validate_name;
use crate::{
    Backend, BackendKind, Chain, Family, FilterError, ListedRule, Op, RuleHandle, Table,
    Transaction,
};

/// The most `iptables-save` may print for one table: far above a large
/// Kubernetes node's tables, and a bound on what we hold.
const SAVE_LIMIT: usize = 64 << 20;
/// The longest chain name iptables takes (`XT_EXTENSION_MAXNAMELEN` less
/// its NUL).
pub(crate) const MAX_CHAIN_LEN: usize = 28;
/// How often a transaction built from a listing is tried when the
/// restore fails, in case another writer changed the table in between.
const ATTEMPTS: usize = 3;
/// The file whose `flock` serializes our list-then-restore transactions
/// of the IPv4 tables in the host's namespace ([`host_lock_of`] gives
/// each family's, in any namespace).
pub use crate::host_lock::IPTABLES_LOCK as HOST_LOCK;
pub use crate::host_lock::{LOCK_DEADLINE, MOST_DEADLINES};

/// `rule` as the iptables arguments after `-A CHAIN`, in the order
/// `iptables-save` prints them back (for `iptables -C`, `-D` by hand).
///
/// ```
/// use cni_netfilter::{Action, Family, Match, Rule};
///
/// let rule = Rule::new("CNI-FORWARD")
///     .matching(Match::destination("10.88.0.2/32".parse()?))
///     .then(Action::Accept);
/// let words = cni_netfilter::iptables::rule_words(&rule, Family::Ip)?;
/// assert_eq!(words.join(" "), "-d 10.88.0.2/32 -j ACCEPT");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn rule_words(rule: &crate::Rule, family: Family) -> Result<Vec<String>, FilterError> {
    render::render(rule, family)
}

/// The lock file serializing our list-then-restore transactions of
/// `family`'s tables in the calling thread's network namespace: IPv4 and
/// IPv6 have one each, so a plugin may change both families at once, and
/// each namespace its own, so writers in different namespaces never wait
/// for each other. The host's are [`HOST_LOCK`] and
/// [`IP6TABLES_LOCK`](crate::IP6TABLES_LOCK). The xtables lock `-w`
/// waits for is the commands' own: none with iptables-nft (its restore
/// is one nftables transaction), one for the whole host with legacy,
/// waited for at most [`LOCK_DEADLINE`] too.
pub fn host_lock_of(family: Family) -> String {
    crate::host_lock::lock_path(family)
}

/// Which iptables commands to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `iptables-save`, `iptables-restore`: whichever the host selected.
    Default,
    /// `iptables-legacy-save`, `iptables-legacy-restore`.
    Legacy,
    /// `iptables-nft-save`, `iptables-nft-restore`.
    Nft,
}

impl Variant {
    /// The command for `family` and `tool` (`save`, `restore` or empty for
    /// `iptables` itself).
    pub fn program(self, family: Family, tool: &str) -> String {
        let base = if family == Family::Ip6 {
            "ip6tables"
        } else {
            "iptables"
        };
        let variant = match self {
            Variant::Default => "",
            Variant::Legacy => "-legacy",
            Variant::Nft => "-nft",
        };
        let tool = if tool.is_empty() {
            String::new()
        } else {
            format!("-{tool}")
        };
        format!("{base}{variant}{tool}")
    }
}

/// The iptables backend: `ip` tables through `iptables-*`, `ip6` ones
/// through `ip6tables-*`.
///
/// A transaction is one `iptables-restore --noflush -w` run, which
/// applies its table's changes at once (`-w` waits for the xtables lock,
/// as go-iptables does). Chains are created with `-N` when
/// `iptables-save` did not list them, flushed with `-F`, deleted with
/// `-X`; a rule is deleted by its spec as listed (`-D CHAIN SPEC`).
///
/// Go: go-iptables' `IPTables`, as the reference plugins use it.
#[derive(Debug, Clone)]
pub struct IptablesBackend {
    variant: Variant,
    deadline: std::time::Duration,
    direct: bool,
    /// [`IptablesBackend::restore_takes_no_lock`] per family (IPv4,
    /// IPv6), found once: a walk of `PATH` and a link followed.
    lockless: [std::sync::OnceLock<bool>; 2],
    /// How many commands it started.
    started: StartCount,
}

/// A count of the commands a backend started; a clone starts from the
/// same count.
#[derive(Debug, Default)]
struct StartCount(std::sync::atomic::AtomicUsize);

impl Clone for StartCount {
    fn clone(&self) -> StartCount {
        StartCount(self.0.load(Ordering::Relaxed).into())
    }
}

impl IptablesBackend {
    /// The host's default iptables commands.
    pub fn new() -> IptablesBackend {
        IptablesBackend::with_variant(Variant::Default)
    }

    /// The commands of one variant.
    pub fn with_variant(variant: Variant) -> IptablesBackend {
        IptablesBackend {
            variant,
            deadline: LOCK_DEADLINE,
            direct: true,
            lockless: Default::default(),
            started: StartCount::default(),
        }
    }

    /// The same backend, adding through nf_tables directly
    /// ([`IptablesBackend::ensure_directly`], the default) or always
    /// through `iptables-restore` (`false`: to compare the two, or to
    /// rule the direct path out).
    pub fn with_direct_writes(mut self, direct: bool) -> IptablesBackend {
        self.direct = direct;
        self
    }

    /// The same backend waiting at most `deadline` (rather than
    /// [`LOCK_DEADLINE`]) for our lock of the namespace and for the
    /// xtables lock, before it fails with
    /// [`FilterError::Busy`] having changed nothing.
    pub fn with_lock_deadline(mut self, deadline: std::time::Duration) -> IptablesBackend {
        self.deadline = deadline;
        self
    }

    /// How many `iptables-save` and `iptables-restore` processes it has
    /// started: in a burst of ADDs, what its writes cost beyond the
    /// kernel's own work (each a process start and a parse of the
    /// table), where the direct path could not be taken.
    pub fn commands_started(&self) -> usize {
        self.started.0.load(Ordering::Relaxed)
    }

    fn spawn(
        &self,
        program: &str,
        args: &[&str],
        stdin: bool,
    ) -> Result<command::Started, FilterError> {
        self.started.0.fetch_add(1, Ordering::Relaxed);
        command::Started::spawn(program, args, stdin)
    }

    fn run_command(
        &self,
        program: &str,
        args: &[&str],
        stdin: Option<&[u8]>,
        stdout_limit: usize,
    ) -> Result<Vec<u8>, FilterError> {
        self.started.0.fetch_add(1, Ordering::Relaxed);
        command::run(program, args, stdin, stdout_limit)
    }

    /// `--noflush` and `-w` with the deadline in whole seconds (at least
    /// one): iptables-legacy waits that long for the xtables lock.
    fn restore_args(&self) -> [String; 3] {
        let seconds = self.deadline.as_secs().max(1);
        ["--noflush".into(), "-w".into(), seconds.to_string()]
    }

    fn save(&self, table: &Table) -> Result<save::Saved, FilterError> {
        check_table(table)?;
        let program = self.variant.program(table.family, "save");
        let out = self
            .run_command(&program, &["-t", &table.name], None, SAVE_LIMIT)
            .map_err(unlisted)?;
        Ok(save::parse(&String::from_utf8_lossy(&out), &table.name))
    }

    /// The `iptables-restore` input for `tx`, given the table as saved.
    fn script(&self, tx: &Transaction, saved: Option<&save::Saved>) -> Result<String, FilterError> {
        let table = tx.table();
        let exists = |chain: &str| saved.is_some_and(|s| s.chains.iter().any(|c| c == chain));
        let mut lines = vec![format!("*{}", table.name)];
        let word = |w: &str| w.to_string();
        // The rules listed and those this script adds, each as its chain
        // and words, so an ensured rule is added once: looked up, not
        // compared with each (portmap ensures 12,000 rules for 4,096
        // mappings).
        let mut present: HashSet<(String, Vec<String>)> = HashSet::new();
        if tx
            .ops()
            .iter()
            .any(|op| matches!(op, Op::EnsureRule { .. }))
        {
            present.extend(saved.iter().flat_map(|s| &s.rules).map(keyed));
        }
        for op in tx.ops() {
            match op {
                Op::EnsureTable => {}
                Op::EnsureChain(chain) if chain.base.is_some() || exists(&chain.name) => {}
                Op::EnsureChain(chain) => {
                    lines.push(render::line(&[word("-N"), chain.name.clone()]))
                }
                Op::FlushChain(chain) => lines.push(render::line(&[word("-F"), chain.clone()])),
                Op::DeleteChain(chain) if exists(chain) => {
                    lines.push(render::line(&[word("-F"), chain.clone()]));
                    lines.push(render::line(&[word("-X"), chain.clone()]));
                }
                Op::DeleteChain(_) => {}
                Op::AddRule(rule) => {
                    let spec = render::render(rule, table.family)?;
                    let mut words = vec!["-A".into(), rule.chain.clone()];
                    words.extend(spec.iter().cloned());
                    lines.push(render::line(&words));
                    present.insert((rule.chain.clone(), spec));
                }
                Op::EnsureRule { rule, first } => {
                    let spec = render::render(rule, table.family)?;
                    let key = (rule.chain.clone(), spec);
                    if !present.contains(&key) {
                        let verb = if *first { "-I" } else { "-A" };
                        let mut words = vec![word(verb), rule.chain.clone()];
                        words.extend(key.1.iter().cloned());
                        lines.push(render::line(&words));
                        present.insert(key);
                    }
                }
                Op::DeleteRule(rule) => lines.push(delete_line(rule)?),
                Op::DeleteRulesByComment { chain, comment } => {
                    let listed = saved.map(|s| s.rules.as_slice()).unwrap_or_default();
                    for rule in listed.iter().filter(|r| &r.chain == chain) {
                        if comment.matches(rule.comment.as_deref()) {
                            lines.push(delete_line(rule)?);
                        }
                    }
                }
                Op::DeleteTable
                | Op::AddNftRule { .. }
                | Op::AddSet(_)
                | Op::AddElements { .. }
                | Op::DeleteElements { .. } => return Err(unsupported(format!("{op:?}"))),
            }
        }
        lines.push("COMMIT".into());
        lines.push(String::new());
        Ok(lines.join("\n"))
    }
}

impl IptablesBackend {
    /// Lists `table` once and applies the transaction `build` makes from
    /// that listing, in one `iptables-restore`, our processes taking turns
    /// on the host lock as in [`Backend::apply`]. When the restore fails,
    /// in case another writer changed the table in between, the table is
    /// listed again and `build` called again (three tries in all).
    ///
    /// For changes that depend on what is there (DEL: the rules that jump
    /// to a chain, the chain if it exists): one `iptables-save` instead of
    /// one per question and another for the transaction. An error before
    /// `build` was called is the listing's: iptables is not usable for
    /// this table.
    ///
    /// Go: what go-iptables' `ListChains`, `List` and `Delete` calls do
    /// one command each.
    pub fn apply_listed(
        &mut self,
        table: &Table,
        build: impl FnMut(&Saved) -> Transaction,
    ) -> Result<(), FilterError> {
        self.apply_listed_unless_direct(table, build, None)
    }

    /// [`IptablesBackend::write_directly`] where direct writes are on.
    fn try_directly(&mut self, tx: &Transaction) -> Directly {
        match self.direct {
            true => self.write_directly(tx),
            false => Directly::Restore,
        }
    }

    /// [`IptablesBackend::apply_listed`], or with `direct` (found without
    /// its table or a base chain) first that transaction tried again as
    /// one nf_tables batch when our turn comes, no restore started
    /// before: a node's first ADDs all find the table absent, and the one
    /// whose restore makes it leaves it for the others to write directly,
    /// so their turns are a listing and a commit, not a save and a
    /// restore (nor a restore process started for nothing). The writer
    /// that makes the table starts its save and restore in its turn: once
    /// per table and namespace, where starting one early for every
    /// writer cost 70 unused restores in a burst of 100 ADDs.
    fn apply_listed_unless_direct(
        &mut self,
        table: &Table,
        mut build: impl FnMut(&Saved) -> Transaction,
        direct: Option<&Transaction>,
    ) -> Result<(), FilterError> {
        let program = self.variant.program(table.family, "restore");
        let args = self.restore_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // Started before our turn where it takes no lock of its own, so
        // a process start is not part of the turn others wait for.
        let mut early = match direct.is_none() && self.restore_takes_no_lock(table.family) {
            true => Some(self.spawn(&program, &args, true)?),
            false => None,
        };
        let _turn = lock(table.family, self.deadline)?;
        if direct.is_some_and(|tx| self.ensure_directly(tx)) {
            return Ok(());
        }
        let mut attempt = 1;
        loop {
            // Otherwise started before the listing, so its start overlaps
            // it.
            let restore = match early.take() {
                Some(started) => started,
                None => self.spawn(&program, &args, true)?,
            };
            let saved = self.save(table)?;
            let tx = build(&saved);
            if tx.table().family != table.family || tx.table().name != table.name {
                return Err(FilterError::invalid(
                    "iptables table",
                    tx.table().name.clone(),
                    format!(
                        "the transaction is not for the table listed, {}",
                        table.name
                    ),
                ));
            }
            validate(&tx)?;
            let script = self.script(&tx, Some(&saved))?;
            if script.lines().count() == 2 {
                // Only `*table` and `COMMIT`: nothing to change.
                return Ok(());
            }
            match restore.finish(Some(script.as_bytes()), 1 << 16) {
                Err(FilterError::Command { .. }) if attempt < ATTEMPTS => attempt += 1,
                result => return result.map(drop),
            }
        }
    }

    /// Applies `tx` without listing its table first, as if none of the
    /// chains it ensures existed and none of the rules it ensures were
    /// there: for a caller that knows so ([`may_mention`] found nothing of
    /// them), one `iptables-restore` instead of a save and a restore.
    /// When the restore fails (another writer made the chain meanwhile,
    /// or iptables cannot be used), the transaction is applied as
    /// [`Backend::apply`] does it, from a listing, so its error is the one
    /// a listed transaction gives.
    pub fn apply_to_absent(&mut self, tx: &Transaction) -> Result<(), FilterError> {
        validate(tx)?;
        let script = self.script(tx, None)?;
        if script.lines().count() == 2 {
            return Ok(());
        }
        let direct = self.try_directly(tx);
        if direct == Directly::Done {
            return Ok(());
        }
        let program = self.variant.program(tx.table().family, "restore");
        let args = self.restore_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let applied = if direct == Directly::Unmade {
            // As in `apply_listed_unless_direct`: made meanwhile, most
            // likely, by the writer before us.
            let _turn = lock(tx.table().family, self.deadline)?;
            if self.ensure_directly(tx) {
                return Ok(());
            }
            self.run_command(&program, &args, Some(script.as_bytes()), 1 << 16)
        } else if self.restore_takes_no_lock(tx.table().family) {
            let restore = self.spawn(&program, &args, true)?;
            let _turn = lock(tx.table().family, self.deadline)?;
            restore.finish(Some(script.as_bytes()), 1 << 16)
        } else {
            let _turn = lock(tx.table().family, self.deadline)?;
            self.run_command(&program, &args, Some(script.as_bytes()), 1 << 16)
        };
        match applied {
            Ok(_) => Ok(()),
            Err(_) => self.apply(tx),
        }
    }

    /// Deletes each of `rules` once (`-D CHAIN SPEC`: iptables finds a
    /// rule by what it matches and does, as `iptables -D` does) in one
    /// `iptables-restore`, or on iptables-nft in one nf_tables batch
    /// ([`IptablesBackend::delete_directly`]), without listing the table
    /// with `iptables-save` first: for a caller
    /// that expects them there ([`may_mention`] found what they name).
    /// `Ok(false)` when the restore failed, which changed nothing (one of
    /// them is not there, or iptables cannot be used here): the caller
    /// then lists the table and deletes what it finds.
    ///
    /// Measured (bench/process/podman.sh, the firewall's DEL): the
    /// `iptables-save` a listed deletion runs first is one process start
    /// and a listing decoded by iptables.
    ///
    /// Go: go-iptables' `Delete`, one `iptables -D` per rule.
    pub fn delete_expected(
        &mut self,
        table: &Table,
        rules: &[crate::Rule],
    ) -> Result<bool, FilterError> {
        check_table(table)?;
        if rules.is_empty() {
            return Ok(true);
        }
        let mut lines = vec![format!("*{}", table.name)];
        for rule in rules {
            validate_name("chain name", &rule.chain)?;
            let mut words = vec!["-D".to_string(), rule.chain.clone()];
            words.extend(render::render(rule, table.family)?);
            lines.push(render::line(&words));
        }
        lines.push("COMMIT".into());
        lines.push(String::new());
        if self.direct && self.delete_directly(table, rules) {
            return Ok(true);
        }
        let program = self.variant.program(table.family, "restore");
        let args = self.restore_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let script = lines.join("\n");
        let ran = if self.restore_takes_no_lock(table.family) {
            let restore = self.spawn(&program, &args, true)?;
            let _turn = lock(table.family, self.deadline)?;
            restore.finish(Some(script.as_bytes()), 1 << 16)
        } else {
            let _turn = lock(table.family, self.deadline)?;
            self.run_command(&program, &args, Some(script.as_bytes()), 1 << 16)
        };
        Ok(ran.is_ok())
    }

    /// Whether this backend's `iptables-restore` for `family` is
    /// iptables-nft's, which takes no lock (its commit is one nf_tables
    /// transaction), so it may be started before our turn and wait for
    /// its input there. iptables-legacy's `-w` takes the host's xtables
    /// lock, which a restore waiting outside our turn could hold while
    /// the process whose turn it is waits for it: those start in the
    /// turn. The default commands are looked up on `PATH` and their link
    /// followed (Debian's alternatives: `xtables-nft-multi` or
    /// `xtables-legacy-multi`); anything unclear counts as legacy.
    fn restore_takes_no_lock(&self, family: Family) -> bool {
        match self.variant {
            Variant::Nft => true,
            Variant::Legacy => false,
            Variant::Default => {
                let found = &self.lockless[usize::from(family == Family::Ip6)];
                *found.get_or_init(|| {
                    let program = self.variant.program(family, "restore");
                    let Some(paths) = std::env::var_os("PATH") else {
                        return false;
                    };
                    std::env::split_paths(&paths)
                        .map(|dir| dir.join(&program))
                        .find(|path| path.is_file())
                        .and_then(|path| std::fs::canonicalize(path).ok())
                        .and_then(|real| Some(real.file_name()?.to_str()?.contains("nft")))
                        .unwrap_or(false)
                })
            }
        }
    }

    /// The rules of `rules` that `table` lacks, compared as
    /// `iptables-save` prints them, from one listing (the reference checks
    /// each with `iptables -C`).
    ///
    /// Go: go-iptables' `IPTables.Exists`, once per rule.
    pub fn missing_rules<'r>(
        &mut self,
        table: &Table,
        rules: &'r [crate::Rule],
    ) -> Result<Vec<&'r crate::Rule>, FilterError> {
        let saved = self.save(table)?;
        let listed: HashSet<_> = saved.rules.iter().map(keyed).collect();
        let mut missing = Vec::new();
        for rule in rules {
            let spec = render::render(rule, table.family)?;
            if !listed.contains(&(rule.chain.clone(), spec)) {
                missing.push(rule);
            }
        }
        Ok(missing)
    }
}

/// A listed rule as its chain and its words once `iptables-save`'s
/// quoting is undone: what a rendered rule is compared with.
fn keyed(listed: &ListedRule) -> (String, Vec<String>) {
    (listed.chain.clone(), listed_words(listed))
}

impl Default for IptablesBackend {
    fn default() -> IptablesBackend {
        IptablesBackend::new()
    }
}

impl Backend for IptablesBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Iptables
    }

    fn apply(&mut self, tx: &Transaction) -> Result<(), FilterError> {
        validate(tx)?;
        // Checks every rule before anything runs.
        let script = self.script(tx, None)?;
        let lists = tx.ops().iter().any(|op| {
            matches!(
                op,
                Op::EnsureChain(_)
                    | Op::DeleteChain(_)
                    | Op::DeleteRulesByComment { .. }
                    | Op::EnsureRule { .. }
            )
        });
        // A listing is stale once another restore commits, and
        // iptables-nft's restore then retries against the new ruleset
        // itself: a rule ensured by two concurrent ADDs can land twice.
        // Our own processes take turns (in `apply_listed`); other writers
        // are caught by its retry only when their change makes ours fail.
        if lists {
            return match self.try_directly(tx) {
                Directly::Done => Ok(()),
                Directly::Unmade => {
                    self.apply_listed_unless_direct(tx.table(), |_| tx.clone(), Some(tx))
                }
                Directly::Restore => self.apply_listed(tx.table(), |_| tx.clone()),
            };
        }
        if script.lines().count() == 2 {
            // Only `*table` and `COMMIT`: nothing to change.
            return Ok(());
        }
        let program = self.variant.program(tx.table().family, "restore");
        let args = self.restore_args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run_command(&program, &args, Some(script.as_bytes()), 1 << 16)
            .map(drop)
    }

    fn list_rules(&mut self, table: &Table, chain: &str) -> Result<Vec<ListedRule>, FilterError> {
        let mut rules = self.save(table)?.rules;
        rules.retain(|rule| rule.chain == chain);
        Ok(rules)
    }

    fn list_chains(&mut self, table: &Table) -> Result<Vec<String>, FilterError> {
        Ok(self.save(table)?.chains)
    }
}

/// Whether `listed` (from [`Backend::list_rules`]) is `rule` as
/// `iptables-save` prints it back: the same chain and the same words.
/// What the reference's `iptables -C` (go-iptables `Exists`) answers.
pub(crate) fn is_listed_as(
    rule: &crate::Rule,
    family: Family,
    listed: &ListedRule,
) -> Result<bool, FilterError> {
    let RuleHandle::Iptables(spec) = &listed.handle else {
        return Ok(false);
    };
    Ok(listed.chain == rule.chain && save::words(spec) == render::render(rule, family)?)
}

/// The words of a listed rule after `-A CHAIN`, as iptables would read
/// them (`iptables-save`'s quoting undone); none for an nftables rule.
pub(crate) fn listed_words(listed: &ListedRule) -> Vec<String> {
    match &listed.handle {
        RuleHandle::Iptables(spec) => save::words(spec),
        RuleHandle::Nft(_) => Vec::new(),
    }
}

/// The tables iptables has.
const TABLES: [&str; 5] = ["filter", "nat", "mangle", "raw", "security"];

fn check_table(table: &Table) -> Result<(), FilterError> {
    if matches!(table.family, Family::Inet | Family::Bridge) {
        return Err(unsupported(format!(
            "the {} table {}",
            table.family, table.name
        )));
    }
    if !TABLES.contains(&table.name.as_str()) {
        return Err(FilterError::invalid(
            "iptables table",
            table.name.clone(),
            format!("must be one of {}", TABLES.join(", ")),
        ));
    }
    Ok(())
}

/// Checks names before anything runs; rules are checked by rendering.
fn validate(tx: &Transaction) -> Result<(), FilterError> {
    check_table(tx.table())?;
    let chain_name = |name: &str| -> Result<(), FilterError> {
        validate_name("chain name", name)?;
        if name.len() > MAX_CHAIN_LEN {
            return Err(FilterError::invalid(
                "chain name",
                name,
                format!("is longer than {MAX_CHAIN_LEN} bytes, iptables' limit"),
            ));
        }
        Ok(())
    };
    for op in tx.ops() {
        match op {
            Op::EnsureChain(Chain {
                name,
                base: Some(_),
                ..
            }) if !is_builtin(name) => {
                return Err(unsupported(format!(
                    "the base chain {name}: iptables has only its built-in chains"
                )))
            }
            Op::EnsureChain(chain) => chain_name(&chain.name)?,
            Op::FlushChain(name) | Op::DeleteChain(name) => chain_name(name)?,
            Op::DeleteRulesByComment { chain, .. } => chain_name(chain)?,
            Op::AddRule(rule) | Op::EnsureRule { rule, .. } => {
                chain_name(&rule.chain)?;
                if let Some(target) = rule.action.as_ref().and_then(|a| a.target_chain()) {
                    chain_name(target)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn is_builtin(chain: &str) -> bool {
    ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"].contains(&chain)
}

fn delete_line(rule: &ListedRule) -> Result<String, FilterError> {
    match &rule.handle {
        RuleHandle::Iptables(spec) => Ok(format!("-D {} {spec}", rule.chain)),
        RuleHandle::Nft(handle) => Err(FilterError::invalid(
            "rule handle",
            handle.to_string(),
            "was listed by the nftables backend",
        )),
    }
}

fn unsupported(what: String) -> FilterError {
    FilterError::Unsupported {
        backend: BackendKind::Iptables,
        what,
    }
}

/// A `-save` that could not start or failed: iptables may be unusable
/// here ([`FilterError::Unlisted`]). An answer too large to read is not
/// that: iptables works, the table is what is wrong.
fn unlisted(e: FilterError) -> FilterError {
    match e {
        FilterError::Spawn { .. } | FilterError::Command { .. } => {
            FilterError::Unlisted(Box::new(e))
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Action, CommentMatch, Rule};

    #[test]
    fn a_transaction_becomes_one_restore_script_in_order() {
        let saved = save::parse(
            "*nat\n:POSTROUTING ACCEPT [0:0]\n:CNI-old - [0:0]\n\
             -A POSTROUTING -s 10.0.0.5/32 -m comment --comment \"id: c1\" -j CNI-old\nCOMMIT\n",
            "nat",
        );
        let mut tx = Transaction::new(Table::new(Family::Ip, "nat"));
        tx.ensure_chain(Chain::new("CNI-new"))
            .ensure_chain(Chain::new("CNI-old"))
            .delete_rules_by_comment("POSTROUTING", CommentMatch::Prefix("id: c1".into()))
            .delete_chain("CNI-old")
            .delete_chain("CNI-absent")
            .add_rule(
                Rule::new("CNI-new")
                    .then(Action::Masquerade)
                    .comment("id: c2"),
            );
        let script = IptablesBackend::new().script(&tx, Some(&saved)).unwrap();
        assert_eq!(
            script,
            "*nat\n-N CNI-new\n-D POSTROUTING -s 10.0.0.5/32 -m comment --comment \"id: c1\" -j CNI-old\n\
             -F CNI-old\n-X CNI-old\n-A CNI-new -m comment --comment \"id: c2\" -j MASQUERADE\nCOMMIT\n"
        );
    }

    #[test]
    fn an_ensured_rule_is_added_once_and_only_when_missing() {
        let saved = save::parse(
            "*nat\n:POSTROUTING ACCEPT [0:0]\n:CNI-HOSTPORT-MASQ - [0:0]\n\
             -A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE\nCOMMIT\n",
            "nat",
        );
        let masq = Rule::new("CNI-HOSTPORT-MASQ")
            .matching(crate::Match::Mark {
                value: 0x2000,
                mask: 0x2000,
            })
            .then(Action::Masquerade);
        let entry = Rule::new("POSTROUTING")
            .comment("CNI portfwd requiring masquerade")
            .then(Action::Jump("CNI-HOSTPORT-MASQ".into()));
        let mut tx = Transaction::new(Table::new(Family::Ip, "nat"));
        tx.ensure_rule(masq)
            .push(Op::EnsureRule {
                rule: entry.clone(),
                first: true,
            })
            .ensure_rule(entry);
        let script = IptablesBackend::new().script(&tx, Some(&saved)).unwrap();
        assert_eq!(
            script,
            "*nat\n-I POSTROUTING -m comment --comment \"CNI portfwd requiring masquerade\" \
             -j CNI-HOSTPORT-MASQ\nCOMMIT\n"
        );
    }

    #[test]
    fn what_iptables_has_no_place_for_is_refused_before_running_anything() {
        let mut backend = IptablesBackend::with_variant(Variant::Legacy);
        let inet = Transaction::new(Table::new(Family::Inet, "cni_plugins_masquerade"));
        assert!(matches!(
            backend.apply(&inet),
            Err(FilterError::Unsupported { .. })
        ));
        let mut long = Transaction::new(Table::new(Family::Ip, "nat"));
        long.ensure_chain(Chain::new("x".repeat(29)));
        assert!(backend
            .apply(&long)
            .unwrap_err()
            .to_string()
            .contains("longer than 28"));
        let mut base = Transaction::new(Table::new(Family::Ip, "nat"));
        base.ensure_chain(Chain::base(
            "prerouting",
            crate::BaseChain::new(crate::ChainType::Nat, crate::Hook::Prerouting, -100),
        ));
        assert!(matches!(
            backend.apply(&base),
            Err(FilterError::Unsupported { .. })
        ));
        let other = Transaction::new(Table::new(Family::Ip, "cni_hostport"));
        assert!(backend
            .apply(&other)
            .unwrap_err()
            .to_string()
            .contains("must be one of"));
    }

    #[test]
    fn each_variant_runs_its_own_commands() {
        assert_eq!(
            Variant::Default.program(Family::Ip, "save"),
            "iptables-save"
        );
        assert_eq!(
            Variant::Legacy.program(Family::Ip6, "restore"),
            "ip6tables-legacy-restore"
        );
        assert_eq!(Variant::Nft.program(Family::Ip, ""), "iptables-nft");
    }

    #[test]
    fn a_save_that_cannot_run_or_fails_is_an_unlisted_table_one_too_long_is_not() {
        let missing = command::run("/nonexistent/iptables-save", &["-t", "nat"], None, 10);
        assert!(crate::cannot_list(&unlisted(missing.unwrap_err())));
        let failed = command::run("sh", &["-c", "exit 1"], None, 10);
        assert!(crate::cannot_list(&unlisted(failed.unwrap_err())));
        let too_long = command::run("sh", &["-c", "echo 0123456789"], None, 4);
        assert!(!crate::cannot_list(&unlisted(too_long.unwrap_err())));
    }
}

#[cfg(test)]
mod family_locks {
    use super::*;

    /// A plugin changes both families at once (portmap's DEL): the IPv6
    /// tables' transactions must not wait for the IPv4 tables' lock.
    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn an_ipv6_transaction_does_not_wait_for_the_ipv4_lock() {
        assert_ne!(host_lock_of(Family::Ip), host_lock_of(Family::Ip6));
        let _ipv4 = lock(Family::Ip, LOCK_DEADLINE).expect("the IPv4 lock");
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Lists ip6tables' nat table and, nothing to change, restores
            // nothing: the host stays as it was.
            let table = Table::new(Family::Ip6, "nat");
            let r =
                IptablesBackend::new().apply_listed(&table, |_| Transaction::new(table.clone()));
            let _ = done.send(r);
        });
        // Blocked on the IPv4 lock, it would never finish while we hold it.
        let applied = finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the IPv6 transaction finished while the IPv4 lock was held");
        applied.expect("ip6tables-save -t nat");
    }
}
