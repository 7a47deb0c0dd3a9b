//! [`RuleRecord`]: the handles of the rules an owner (a container) added,
//! kept in a small log so its DEL deletes them without dumping chains
//! that hold every other pod's rules too.
//!
//! One log per network namespace and group (a network):
//! `/run/cni/nft-rules/<namespace inode>/<group>/.log`, in which an
//! owner's record is a list of lines: a line per rule
//! (`ip cni_hostport hostports 131`), and a line `adding <pid>` while an
//! ADD is between its mark and its record (`record_log.rs` has the log's
//! format and why it is one file per group). Why the mark: an ADD killed
//! after its batch committed and before it recorded the handles leaves
//! rules no record names; the mark it left makes the DEL delete by
//! comment, as without a record. An owner's first ADD needs none
//! ([`OwnedRules::begin`](super::OwnedRules::begin)): killed, it leaves
//! no record, and the DEL goes by comment the same. `/run` is where the
//! rules' lifetime ends too: a reboot clears both.
//!
//! Before the log, each record was a file of those lines,
//! `<group>/<owner>`: one left by that version (a node upgraded with pods
//! running) is still read, and the owner's next change moves it into the
//! log. That version ignores the log (a node taken back to it): its DEL
//! finds the rules by comment, and the lines it leaves in the log are
//! dropped by our GC or by the owner's next DEL.
//!
//! A handle names a rule only while its table lives; a record read after
//! the table was made again may name another rule, so a deletion from a
//! record checks each rule's comment first
//! ([`NftBackend::delete_recorded`](super::NftBackend::delete_recorded)).

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use super::record_log::{self, Log, Word};
use super::AddedRule;
use crate::netns_id::NetnsId;
use crate::{Family, Table};

/// Where records are kept, a directory per network namespace inode.
pub const RECORD_DIR: &str = "/run/cni/nft-rules";
/// The most a record file (the layout before the log) may hold: far above
/// [`super::MAX_RECORDED_RULES`] lines, a bound on what a corrupt file
/// makes us read.
const MAX_RECORD_BYTES: u64 = 64 << 10;
/// How long a writer waits for the group's lock, whose holders only read
/// the log and append to it or rewrite it: past it, one is stuck.
const LOCK_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// One owner's record in one group of one network namespace.
#[derive(Debug, Clone)]
pub struct RuleRecord {
    dir: PathBuf,
    owner: String,
}

/// What a record holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recorded {
    /// An ADD marked the record and has not recorded what it added: it
    /// may have added rules the record does not name.
    pub pending: bool,
    /// The rules recorded: family, table name and the rule (no comment).
    pub rules: Vec<(Family, String, AddedRule)>,
}

impl Recorded {
    /// The recorded rules of `table`.
    pub fn of_table(&self, table: &Table) -> Vec<AddedRule> {
        (self.rules.iter())
            .filter(|(family, name, _)| *family == table.family && *name == table.name)
            .map(|(_, _, rule)| rule.clone())
            .collect()
    }
}

impl RuleRecord {
    /// The record of `owner` in `group`, in the calling thread's network
    /// namespace; `None` when either name cannot be a file name or the
    /// namespace cannot be read.
    pub fn here(group: &str, owner: &str) -> Option<RuleRecord> {
        let netns = NetnsId::of_thread()?;
        let dir = PathBuf::from(RECORD_DIR).join(netns.ino().to_string());
        RuleRecord::in_dir(dir, group, owner)
    }

    /// The records of `group` in the calling thread's network namespace
    /// (GC's view: every owner's); `None` as for [`RuleRecord::here`].
    pub fn group_here(group: &str) -> Option<RecordGroup> {
        RuleRecord::here(group, "any").map(|r| r.group())
    }

    /// The record of `owner` in `group` under `dir` (tests use their own).
    pub fn in_dir(dir: impl Into<PathBuf>, group: &str, owner: &str) -> Option<RuleRecord> {
        let fit = |name: &str| {
            !name.is_empty()
                && name.len() <= 200
                && name != "."
                && name != ".."
                && !name.starts_with('.')
                && !name.contains(['/', '\0', '\n', '\t'])
        };
        (fit(group) && fit(owner)).then(|| RuleRecord {
            dir: dir.into().join(group),
            owner: owner.to_string(),
        })
    }

    /// This record's group.
    pub fn group(&self) -> RecordGroup {
        RecordGroup {
            dir: self.dir.clone(),
        }
    }

    /// Marks the record before an ADD's batch: until
    /// [`RuleRecord::finish`] the record is pending.
    pub fn begin(&self) -> io::Result<()> {
        let _turn = self.lock_made()?;
        if let Some((mut lines, true)) = self.lines()? {
            // A record file of the layout before: the log takes it over
            // with the mark.
            lines.push(mark());
            Log::append(&self.dir, &record_log::state_line(&self.owner, &lines))?;
            return remove_if_there(&self.path());
        }
        Log::append(&self.dir, &record_log::mark_line(&self.owner, pid()))
    }

    /// Records what the ADD's batch added to `table` and drops its mark.
    /// `afresh`: the rules of `table` recorded before, and the marks of
    /// earlier ADDs, go too (the ADD deleted those rules: see
    /// [`OwnedRules::apply`](super::OwnedRules::apply)).
    pub fn finish(&self, table: &Table, added: &[AddedRule], afresh: bool) -> io::Result<()> {
        let mark = mark();
        let _turn = self.lock_made()?;
        let (mut lines, file) = match self.lines()? {
            Some((lines, file)) => (lines, file),
            None => (Vec::new(), false),
        };
        if afresh {
            lines.retain(|l| {
                parse(l)
                    .is_some_and(|(family, name, _)| family != table.family || name != table.name)
            });
        } else if let Some(at) = lines.iter().position(|l| *l == mark) {
            lines.remove(at);
        }
        for rule in added {
            let (family, name) = (table.family, &table.name);
            lines.push(format!("{family} {name} {} {}", rule.chain, rule.handle));
        }
        Log::append(&self.dir, &record_log::state_line(&self.owner, &lines))?;
        if file {
            // The log speaks for the owner now.
            remove_if_there(&self.path())?;
        }
        Ok(())
    }

    /// What the record holds; `None` when there is none. A line it cannot
    /// read makes it pending: whatever wrote it, the rules are then found
    /// by comment.
    pub fn read(&self) -> io::Result<Option<Recorded>> {
        let Some((lines, _)) = self.lines()? else {
            return Ok(None);
        };
        let mut recorded = Recorded::default();
        for line in &lines {
            match parse(line) {
                Some(rule) => recorded.rules.push(rule),
                None => recorded.pending = true,
            }
        }
        Ok(Some(recorded))
    }

    /// Removes the record; the group's log and directory go with the
    /// last one, and a log mostly of what no longer counts is rewritten.
    pub fn remove(&self) -> io::Result<()> {
        {
            let _turn = match self.lock() {
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                turn => turn?,
            };
            // Appended whether or not the log names the owner: reading it
            // first would cost more than the line.
            Log::append(&self.dir, &record_log::removal_line(&self.owner))?;
            remove_if_there(&self.path())?;
        }
        // A writer of a record file (the layout before the log) killed
        // between its new file and the rename left it.
        let unfinished = format!(".{}.", self.owner);
        // (The directory may be gone already: another DEL took the last.)
        for entry in fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let pid = (name.to_str()).and_then(|n| n.strip_prefix(unfinished.as_str()));
            if pid.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) {
                let _ = fs::remove_file(entry.path());
            }
        }
        // Read after this removal: of DELs that remove the last records
        // at once, the last to read sees none left, and no one else holds
        // the lock when it tidies.
        let log = Log::read(&self.dir)?;
        let live = log.live();
        if live.is_empty() || log.wants_rewrite(&live) {
            self.tidy();
        }
        Ok(())
    }

    /// Rewrites the group's log with only its records, or removes it and
    /// the group's directory (and the namespace's) when none is left:
    /// only when no one else holds the lock (an ADD appending; the next
    /// DEL tidies then).
    fn tidy(&self) {
        let Ok(_turn) = self.try_lock_exclusive() else {
            return;
        };
        let Ok(log) = Log::read(&self.dir) else {
            return;
        };
        if log.rewrite(&self.dir, pid()).is_err() {
            return;
        }
        for entry in fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            if record_log::is_temporary(&entry.file_name().to_string_lossy()) {
                let _ = fs::remove_file(entry.path());
            }
        }
        // A record file of the layout before keeps the directory
        // (ENOTEMPTY), and another group the namespace's.
        if fs::remove_dir(&self.dir).is_ok() {
            if let Some(netns) = self.dir.parent() {
                let _ = fs::remove_dir(netns);
            }
        }
    }

    /// The record file of the layout before the log (read while a node
    /// upgraded with pods running still has them).
    fn path(&self) -> PathBuf {
        self.dir.join(&self.owner)
    }

    /// The record's lines, from the log or else from a record file of the
    /// layout before, and whether they came from such a file.
    fn lines(&self) -> io::Result<Option<(Vec<String>, bool)>> {
        let log = Log::read(&self.dir)?;
        if log.overlong() {
            return Err(io::Error::other(format!(
                "the record log in {} is too long to trust",
                self.dir.display()
            )));
        }
        match log.word(&self.owner) {
            Some(Word::Lines(lines)) => return Ok(Some((lines, false))),
            Some(Word::Removed) => return Ok(None),
            None => {}
        }
        let file = match fs::File::open(self.path()) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut text = String::with_capacity(4096);
        file.take(MAX_RECORD_BYTES).read_to_string(&mut text)?;
        Ok(Some((text.lines().map(str::to_string).collect(), true)))
    }

    /// [`RuleRecord::lock`] of the group's directory, made if missing:
    /// a directory the last owner's [`RuleRecord::remove`] took away
    /// between the making and the lock is made again.
    fn lock_made(&self) -> io::Result<Flock<fs::File>> {
        use std::os::unix::fs::MetadataExt;
        let mut tries = 0;
        loop {
            fs::create_dir_all(&self.dir)?;
            let locked = match self.lock() {
                Err(e) if e.kind() == io::ErrorKind::NotFound && tries < 3 => None,
                locked => Some(locked?),
            };
            if let Some(locked) = locked {
                let here = fs::metadata(&self.dir).map(|m| (m.dev(), m.ino()));
                let held = locked.metadata().map(|m| (m.dev(), m.ino()))?;
                match here {
                    Ok(here) if here == held => return Ok(locked),
                    Err(e) if tries >= 3 => return Err(e),
                    _ if tries >= 3 => {
                        return Err(io::Error::other("the record's directory keeps going"))
                    }
                    _ => {}
                }
            }
            tries += 1;
        }
    }

    /// The group directory's advisory lock, shared, held while the
    /// returned handle lives: appends to the log share it; its rewrite
    /// ([`RuleRecord::tidy`]) holds it alone. Only reads of small files
    /// and one write happen under it.
    fn lock(&self) -> io::Result<Flock<fs::File>> {
        let started = std::time::Instant::now();
        let mut dir = fs::File::open(&self.dir)?;
        loop {
            match Flock::lock(dir, FlockArg::LockSharedNonblock) {
                Ok(locked) => return Ok(locked),
                Err((back, nix::errno::Errno::EWOULDBLOCK))
                    if started.elapsed() < LOCK_DEADLINE =>
                {
                    dir = back;
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err((_, e)) => return Err(io::Error::from(e)),
            }
        }
    }

    /// The group directory's lock, exclusively, if no one holds it now.
    fn try_lock_exclusive(&self) -> io::Result<Flock<fs::File>> {
        let dir = fs::File::open(&self.dir)?;
        Flock::lock(dir, FlockArg::LockExclusiveNonblock).map_err(|(_, e)| io::Error::from(e))
    }
}

/// Removes `path`, which may not be there.
fn remove_if_there(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The records of one group in one network namespace: GC's view.
#[derive(Debug, Clone)]
pub struct RecordGroup {
    dir: PathBuf,
}

impl RecordGroup {
    /// The owners that have a record in this group.
    pub fn owners(&self) -> io::Result<Vec<String>> {
        let log = Log::read(&self.dir)?;
        let mut owners: Vec<String> = match log.overlong() {
            true => Vec::new(),
            false => log.records().into_iter().map(|(owner, _)| owner).collect(),
        };
        // Record files of the layout before the log.
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(owners),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let name = entry?.file_name();
            if let Some(name) = name.to_str().filter(|n| !n.starts_with('.')) {
                if !owners.iter().any(|o| o == name) {
                    owners.push(name.to_string());
                }
            }
        }
        Ok(owners)
    }

    /// This group's record of `owner`.
    pub fn of(&self, owner: &str) -> RuleRecord {
        RuleRecord {
            dir: self.dir.clone(),
            owner: owner.to_string(),
        }
    }
}

/// This process's mark: `adding <pid>`.
fn mark() -> String {
    format!("adding {}", pid())
}

/// The process id, asked of the kernel once (each `getpid` is a system
/// call, and an ADD names it three times).
fn pid() -> u32 {
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *PID.get_or_init(std::process::id)
}

/// One rule's line: family, table, chain, handle.
fn parse(line: &str) -> Option<(Family, String, AddedRule)> {
    let mut words = line.split(' ');
    let family = match words.next()? {
        "ip" => Family::Ip,
        "ip6" => Family::Ip6,
        "inet" => Family::Inet,
        "bridge" => Family::Bridge,
        _ => return None,
    };
    let (table, chain) = (words.next()?, words.next()?);
    let handle = words.next()?.parse().ok()?;
    if words.next().is_some() || table.is_empty() || chain.is_empty() {
        return None;
    }
    let rule = AddedRule {
        chain: chain.to_string(),
        handle,
        comment: None,
    };
    Some((family, table.to_string(), rule))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(chain: &str, handle: u64) -> AddedRule {
        AddedRule {
            chain: chain.into(),
            handle,
            comment: None,
        }
    }

    #[test]
    fn a_record_is_pending_from_its_mark_until_its_rules_are_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let record = RuleRecord::in_dir(dir.path(), "net", "ctr-1").unwrap();
        assert_eq!(record.read().unwrap(), None);
        record.begin().unwrap();
        let pending = record.read().unwrap().unwrap();
        assert!(pending.pending && pending.rules.is_empty());
        let table = Table::new(Family::Ip, "cni_hostport");
        record
            .finish(
                &table,
                &[rule("hostports", 7), rule("masquerading", 9)],
                false,
            )
            .unwrap();
        let v6 = Table::new(Family::Ip6, "cni_hostport");
        record.begin().unwrap();
        record.finish(&v6, &[rule("hostports", 3)], false).unwrap();
        let done = record.read().unwrap().unwrap();
        assert!(!done.pending, "{done:?}");
        assert_eq!(
            done.of_table(&table),
            [rule("hostports", 7), rule("masquerading", 9)]
        );
        assert_eq!(done.of_table(&v6), [rule("hostports", 3)]);
        assert_eq!(record.group().owners().unwrap(), ["ctr-1"]);
        // A writer killed between its new file and the rename.
        fs::write(dir.path().join("net/.ctr-1.4242"), "ip t c 1\n").unwrap();
        record.remove().unwrap();
        assert_eq!(record.read().unwrap(), None);
        assert!(!dir.path().join("net").exists(), "the empty group is gone");
    }

    #[test]
    fn a_record_made_afresh_holds_only_the_new_rules_of_its_table_and_no_earlier_mark() {
        let dir = tempfile::tempdir().unwrap();
        let record = RuleRecord::in_dir(dir.path(), "fw", "owner").unwrap();
        let table = Table::new(Family::Inet, "cni_plugins_firewall");
        let other = Table::new(Family::Ip, "elsewhere");
        record.begin().unwrap();
        record
            .finish(&table, &[rule("cni_forward", 4)], false)
            .unwrap();
        record.begin().unwrap();
        record.finish(&other, &[rule("c", 2)], false).unwrap();
        // An earlier ADD killed after its mark, then this one.
        fs::write(
            dir.path().join("fw/owner"),
            "inet cni_plugins_firewall cni_forward 4\nip elsewhere c 2\nadding 1\n",
        )
        .unwrap();
        record.begin().unwrap();
        record
            .finish(&table, &[rule("cni_forward", 9)], true)
            .unwrap();
        let done = record.read().unwrap().unwrap();
        assert!(!done.pending, "{done:?}");
        assert_eq!(done.of_table(&table), [rule("cni_forward", 9)]);
        assert_eq!(done.of_table(&other), [rule("c", 2)]);
    }

    #[test]
    fn a_record_file_of_the_version_before_the_log_is_read_and_moved_into_the_log_by_its_next_change(
    ) {
        let dir = tempfile::tempdir().unwrap();
        let record = RuleRecord::in_dir(dir.path(), "net", "ctr-1").unwrap();
        let table = Table::new(Family::Ip, "cni_hostport");
        fs::create_dir_all(dir.path().join("net")).unwrap();
        fs::write(
            dir.path().join("net/ctr-1"),
            "ip cni_hostport hostports 7\n",
        )
        .unwrap();
        fs::write(
            dir.path().join("net/ctr-2"),
            "ip cni_hostport hostports 8\n",
        )
        .unwrap();
        assert_eq!(
            record.read().unwrap().unwrap().of_table(&table),
            [rule("hostports", 7)]
        );
        let mut owners = record.group().owners().unwrap();
        owners.sort();
        assert_eq!(owners, ["ctr-1", "ctr-2"]);

        record.begin().unwrap();
        record
            .finish(&table, &[rule("masquerading", 9)], false)
            .unwrap();
        assert!(!dir.path().join("net/ctr-1").exists(), "moved into the log");
        let moved = record.read().unwrap().unwrap();
        assert!(!moved.pending, "{moved:?}");
        assert_eq!(
            moved.of_table(&table),
            [rule("hostports", 7), rule("masquerading", 9)]
        );
        let mut owners = record.group().owners().unwrap();
        owners.sort();
        assert_eq!(owners, ["ctr-1", "ctr-2"]);

        // The other owner's file goes with its DEL, and the group with it.
        record.remove().unwrap();
        let other = record.group().of("ctr-2");
        assert!(other.read().unwrap().is_some());
        other.remove().unwrap();
        assert_eq!(other.read().unwrap(), None);
        assert!(!dir.path().join("net").exists(), "the empty group is gone");
    }

    #[test]
    fn records_made_and_removed_by_many_writers_at_once_are_all_kept_and_then_all_gone() {
        let dir = tempfile::tempdir().unwrap();
        let table = Table::new(Family::Inet, "cni_plugins_firewall");
        let record = |i: usize| RuleRecord::in_dir(dir.path(), "fw", &format!("ctr-{i}")).unwrap();
        // `each` of owners 0..200, by 8 threads at once (25 owners each).
        let at_once = |each: &(dyn Fn(usize) + Sync)| {
            std::thread::scope(|s| {
                for t in 0..8 {
                    s.spawn(move || (t * 25..t * 25 + 25).for_each(each));
                }
            })
        };
        at_once(&|i| {
            let added = [rule("cni_forward", i as u64)];
            record(i).finish(&table, &added, true).unwrap();
        });
        for i in 0..200 {
            let read = record(i).read().unwrap().unwrap();
            assert_eq!(
                read.of_table(&table),
                [rule("cni_forward", i as u64)],
                "ctr-{i}"
            );
        }
        assert_eq!(record(0).group().owners().unwrap().len(), 200);
        at_once(&|i| record(i).remove().unwrap());
        assert_eq!(record(7).read().unwrap(), None);
        assert!(
            !dir.path().join("fw").exists(),
            "the last removal takes the log and the group: {:?}",
            fs::read_dir(dir.path().join("fw")).map(|d| d.count())
        );
    }

    #[test]
    fn the_dels_of_a_churning_node_keep_its_log_near_the_size_of_its_records() {
        let dir = tempfile::tempdir().unwrap();
        let table = Table::new(Family::Ip, "cni_hostport");
        let record = |i: usize| {
            let owner = format!("a-container-id-of-sixty-four-characters-or-so-{i:08}");
            RuleRecord::in_dir(dir.path(), "net", &owner).unwrap()
        };
        let rules = [
            rule("hostports", 1),
            rule("masquerading", 2),
            rule("masquerading", 3),
        ];
        // Ten pods stay; 5,000 come and go.
        for i in 0..10 {
            record(i).finish(&table, &rules, true).unwrap();
        }
        let mut largest = 0;
        for i in 10..5010 {
            record(i).finish(&table, &rules, true).unwrap();
            record(i).remove().unwrap();
            largest = largest.max(fs::metadata(dir.path().join("net/.log")).unwrap().len());
        }
        assert!(largest < 100 << 10, "the log reached {largest} bytes");
        for i in 0..10 {
            let kept = record(i).read().unwrap().unwrap();
            assert_eq!(kept.of_table(&table), rules, "pod {i}");
        }
        assert_eq!(record(0).group().owners().unwrap().len(), 10);
    }

    /// `ctr-1`'s finished record of one `hostports` rule in group `net`
    /// under `dir`.
    fn recorded_with_one_rule(dir: &Path) -> RuleRecord {
        let record = RuleRecord::in_dir(dir, "net", "ctr-1").unwrap();
        let table = Table::new(Family::Ip, "cni_hostport");
        record
            .finish(&table, &[rule("hostports", 7)], true)
            .unwrap();
        record
    }

    #[test]
    fn a_group_left_while_another_holds_its_lock_goes_with_the_next_del() {
        let dir = tempfile::tempdir().unwrap();
        let record = recorded_with_one_rule(dir.path());
        // An ADD between its lock and its append, as the last record goes.
        let group = fs::File::open(dir.path().join("net")).unwrap();
        let held = Flock::lock(group, FlockArg::LockSharedNonblock).unwrap();
        record.remove().unwrap();
        assert_eq!(record.read().unwrap(), None);
        assert!(
            dir.path().join("net").exists(),
            "not tidied under another's lock"
        );
        drop(held);
        // The next DEL in the group, of an owner never recorded, tidies.
        record.group().of("ctr-2").remove().unwrap();
        assert!(!dir.path().join("net").exists(), "the empty group is gone");
    }

    #[test]
    fn a_log_too_long_to_trust_is_no_record_and_the_next_del_takes_it_away() {
        let dir = tempfile::tempdir().unwrap();
        let record = recorded_with_one_rule(dir.path());
        let line = "\nS\tfiller\tip cni_hostport hostports 1\n";
        let filler = line.repeat((4 << 20) / line.len() + 1);
        fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join("net/.log"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, filler.as_bytes()))
            .unwrap();
        let err = record.read().unwrap_err();
        assert!(err.to_string().contains("too long to trust"), "{err}");
        assert!(
            record
                .finish(&Table::new(Family::Ip, "cni_hostport"), &[], true)
                .is_err(),
            "nothing recorded"
        );
        assert!(record.group().owners().unwrap().is_empty());
        // Its DEL (by comment then, see OwnedRules) takes the log away.
        record.remove().unwrap();
        assert!(
            !dir.path().join("net").exists(),
            "the untrusted log is gone"
        );
    }

    #[test]
    fn a_line_that_is_not_a_rule_makes_the_record_pending() {
        let dir = tempfile::tempdir().unwrap();
        let record = RuleRecord::in_dir(dir.path(), "net", "ctr-1").unwrap();
        fs::create_dir_all(dir.path().join("net")).unwrap();
        for odd in [
            "ip cni_hostport hostports",
            "ip t c 12 extra",
            "ipx t c 1",
            "ip t c -1",
        ] {
            fs::write(dir.path().join("net/ctr-1"), format!("ip t c 1\n{odd}\n")).unwrap();
            let read = record.read().unwrap().unwrap();
            assert!(read.pending, "{odd:?}");
            assert_eq!(read.rules.len(), 1, "{odd:?}");
        }
    }

    #[test]
    fn names_that_cannot_be_one_file_have_no_record() {
        for (group, owner) in [
            ("", "c"),
            ("n", ""),
            ("a/b", "c"),
            ("n", ".."),
            ("n", ".c"),
            ("n", "a\tb"),
        ] {
            assert!(
                RuleRecord::in_dir("/tmp", group, owner).is_none(),
                "{group:?} {owner:?}"
            );
        }
    }
}
