//! The group's log behind [`RuleRecord`](super::RuleRecord): one file per
//! group, `.log`, in which each change of an owner's record is a line
//! appended, so that recording an ADD's handles creates no file.
//!
//! Why not a file per owner (the layout before; still read, see
//! [`RuleRecord`](super::RuleRecord)): every new file costs an inode, and
//! a filesystem may make that costly exactly when pods churn. ext4
//! without a journal passes over every inode freed in the last minutes
//! when it looks for a free one (`find_inode_bit`, `recently_deleted`),
//! so each record's creation walked past the records recent DELs had
//! removed: with `/run` on such a filesystem, a burst of 100 pods on
//! Podman's list (three records each) took 473 ms against 417 ms with
//! `/run/cni` on a tmpfs (6 interleaved rounds each). An append to a
//! file that exists allocates no inode.
//!
//! Lines, fields separated by tabs (a name with a tab has no record):
//! - `S <owner> <line>...`: the owner's record is now these lines (rule
//!   lines and marks, as a record file holds them);
//! - `A <owner> <pid>`: an ADD's mark, `adding <pid>`, added to it;
//! - `D <owner>`: the record removed.
//!
//! The last line naming an owner decides. Each line is one `write` to
//! the log opened for appending, as `\n<line>\n`: a line a writer left
//! unfinished (a full disk) is cut off by the next one and, unreadable,
//! is passed over. Appends hold the group directory's lock shared, so
//! they never wait for one another; the rewrite that drops what no
//! longer counts ([`Log::wants_rewrite`]) and the removal of an empty
//! group hold it exclusively, and readers need none (a rewrite is
//! renamed over the log: a reader sees the old whole or the new).

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::str::Split;

/// The log's name in its group's directory: no owner's (an owner's name
/// never starts with a dot).
pub(super) const LOG: &str = ".log";
/// The most of a log read: thousands of pods' records. A longer log is
/// not trusted (each owner's rules are then found by comment) and is
/// removed by the next DEL that can take the lock.
const MAX_LOG_BYTES: u64 = 4 << 20;
/// The garbage a log may hold beyond what counts before it is rewritten.
const SLACK_BYTES: usize = 64 << 10;

/// What the log last said of an owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Word {
    /// The record's lines.
    Lines(Vec<String>),
    /// Removed.
    Removed,
}

/// A group's log as read: its text, and whether it was whole.
#[derive(Debug, Default)]
pub(super) struct Log {
    text: String,
    /// Longer than [`MAX_LOG_BYTES`]: nothing in it is trusted.
    overlong: bool,
}

impl Log {
    /// The log of the group directory `dir`; an empty one when there is
    /// none.
    pub(super) fn read(dir: &Path) -> io::Result<Log> {
        let file = match fs::File::open(dir.join(LOG)) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Log::default()),
            Err(e) => return Err(e),
        };
        let mut bytes = Vec::with_capacity(16 << 10);
        file.take(MAX_LOG_BYTES + 1).read_to_end(&mut bytes)?;
        let overlong = bytes.len() as u64 > MAX_LOG_BYTES;
        // A log is ASCII as written: bytes that are not UTF-8 are damage,
        // kept as replacement characters (lines no one can read).
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        Ok(Log { text, overlong })
    }

    /// Whether the log is too long to trust.
    pub(super) fn overlong(&self) -> bool {
        self.overlong
    }

    /// The log's complete lines (a last one without its end may still be
    /// being written, or never will be).
    fn lines(&self) -> impl Iterator<Item = &str> {
        let whole = match self.text.rfind('\n') {
            Some(end) => &self.text[..end],
            None => "",
        };
        whole.split('\n').filter(|l| !l.is_empty())
    }

    /// Each complete line as its kind, the owner it names, its other
    /// fields and its length; a line naming no owner is passed over.
    fn entries(&self) -> impl Iterator<Item = (&str, &str, Split<'_, char>, usize)> {
        self.lines().filter_map(|line| {
            let mut fields = line.split('\t');
            let (kind, named) = (fields.next()?, fields.next()?);
            Some((kind, named, fields, line.len()))
        })
    }

    /// What the log last said of `owner`; `None` when it never named it.
    pub(super) fn word(&self, owner: &str) -> Option<Word> {
        let mut word = None;
        for (kind, named, fields, _) in self.entries() {
            if named == owner {
                apply(&mut word, kind, fields);
            }
        }
        word
    }

    /// Every owner the log holds a record of, with its lines, in the
    /// order the log first named them.
    pub(super) fn records(&self) -> Vec<(String, Vec<String>)> {
        let mut words: Vec<(&str, Option<Word>)> = Vec::new();
        let mut at = std::collections::HashMap::new();
        for (kind, named, fields, _) in self.entries() {
            let index = *at.entry(named).or_insert_with(|| {
                words.push((named, None));
                words.len() - 1
            });
            apply(&mut words[index].1, kind, fields);
        }
        (words.into_iter())
            .filter_map(|(owner, word)| match word {
                Some(Word::Lines(lines)) => Some((owner.to_string(), lines)),
                _ => None,
            })
            .collect()
    }

    /// The owners the log holds a record of, each with the bytes its
    /// record takes in the log: one pass, no copy of any line (a DEL
    /// asks it of a log of every pod's record).
    pub(super) fn live(&self) -> std::collections::HashMap<&str, usize> {
        let mut live = std::collections::HashMap::new();
        for (kind, named, _, len) in self.entries() {
            match kind {
                "S" => {
                    live.insert(named, len);
                }
                "D" => {
                    live.remove(named);
                }
                // A mark, or a line no one writes: added to the record.
                _ => *live.entry(named).or_insert(0) += len,
            }
        }
        live
    }

    /// Whether the log should be rewritten: more than twice what its
    /// records take (`live`, [`Log::live`]'s), and [`SLACK_BYTES`] more,
    /// or too long to trust.
    pub(super) fn wants_rewrite(&self, live: &std::collections::HashMap<&str, usize>) -> bool {
        let kept: usize = live.values().sum();
        self.overlong || self.text.len() > 2 * kept + SLACK_BYTES
    }

    /// Appends `line` to the log of `dir` (made if missing), in one
    /// write. The caller holds the directory's lock, shared.
    pub(super) fn append(dir: &Path, line: &str) -> io::Result<()> {
        let mut file = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(dir.join(LOG))?;
        file.write_all(format!("\n{line}\n").as_bytes())
    }

    /// Writes the log of `dir` anew with only its records (none: the log
    /// goes), renamed over the old. The caller holds the directory's
    /// lock, exclusively, and read `self` under it.
    pub(super) fn rewrite(&self, dir: &Path, pid: u32) -> io::Result<()> {
        let records = match self.overlong {
            true => Vec::new(),
            false => self.records(),
        };
        if records.is_empty() {
            return match fs::remove_file(dir.join(LOG)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            };
        }
        let mut text = String::new();
        for (owner, lines) in &records {
            text.push('\n');
            text.push_str(&state_line(owner, lines));
            text.push('\n');
        }
        let temporary = temporary(dir, pid);
        fs::write(&temporary, text)?;
        fs::rename(&temporary, dir.join(LOG))
    }
}

/// The line that makes `owner`'s record `lines`.
pub(super) fn state_line(owner: &str, lines: &[String]) -> String {
    let mut line = format!("S\t{owner}");
    for l in lines {
        line.push('\t');
        line.push_str(l);
    }
    line
}

/// The line that adds `mark` (`adding <pid>`) to `owner`'s record.
pub(super) fn mark_line(owner: &str, pid: u32) -> String {
    format!("A\t{owner}\t{pid}")
}

/// The line that removes `owner`'s record.
pub(super) fn removal_line(owner: &str) -> String {
    format!("D\t{owner}")
}

/// Whether `name` is a rewrite's unfinished file: `.log-<pid>`.
pub(super) fn is_temporary(name: &str) -> bool {
    name.strip_prefix(".log-")
        .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn temporary(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!(".log-{pid}"))
}

/// One line's change to what was said of its owner. A line of a kind no
/// one writes is kept as a line the record cannot read: the owner's
/// record is then pending, and its rules are found by comment.
fn apply<'a>(word: &mut Option<Word>, kind: &str, mut fields: impl Iterator<Item = &'a str>) {
    match kind {
        "S" => *word = Some(Word::Lines(fields.map(str::to_string).collect())),
        "D" => *word = Some(Word::Removed),
        _ => {
            let added = match (kind, fields.next()) {
                ("A", Some(pid)) => format!("adding {pid}"),
                _ => format!("unreadable {kind}"),
            };
            match word {
                Some(Word::Lines(lines)) => lines.push(added),
                _ => *word = Some(Word::Lines(vec![added])),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(text: &str) -> Log {
        Log {
            text: text.to_string(),
            overlong: false,
        }
    }

    #[test]
    fn the_last_line_naming_an_owner_decides_and_other_owners_lines_do_not_count() {
        let l = log(concat!(
            "\nS\ta\tip t c 1\n",
            "\nS\tb\tip t c 2\n",
            "\nA\ta\t77\n",
            "\nS\tab\tip t c 3\n",
            "\nD\tb\n",
        ));
        let lines = |v: &[&str]| Some(Word::Lines(v.iter().map(|s| s.to_string()).collect()));
        assert_eq!(l.word("a"), lines(&["ip t c 1", "adding 77"]));
        assert_eq!(l.word("b"), Some(Word::Removed));
        assert_eq!(l.word("ab"), lines(&["ip t c 3"]));
        assert_eq!(l.word("c"), None);
        let records = l.records();
        assert_eq!(records.len(), 2, "{records:?}");
        let live = l.live();
        assert_eq!(live.len(), 2, "{live:?}");
        assert!(
            live.contains_key("a") && live.contains_key("ab"),
            "{live:?}"
        );
        assert_eq!(records[0].0, "a");
        assert_eq!(records[1].0, "ab");
    }

    #[test]
    fn a_line_left_unfinished_is_passed_over_and_the_next_append_stands() {
        // A writer stopped mid-line, then another appended.
        let l = log("\nS\ta\tip t c 1\n\nS\tb\tip t\n\nS\tc\tip t c 3\n\nS\td\tip");
        assert_eq!(
            l.word("b"),
            Some(Word::Lines(vec!["ip t".into()])),
            "an unfinished line makes no rule"
        );
        assert_eq!(l.word("c"), Some(Word::Lines(vec!["ip t c 3".into()])));
        assert_eq!(l.word("d"), None, "a last line without its end is not read");
    }

    #[test]
    fn bytes_that_are_not_text_spoil_only_their_own_line() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(LOG),
            b"\nS\ta\tip t c 1\n\nS\tb\t\xff\xfe\n\nS\tc\tip t c 3\n",
        )
        .unwrap();
        let read = Log::read(dir.path()).unwrap();
        assert_eq!(read.word("a"), Some(Word::Lines(vec!["ip t c 1".into()])));
        assert_eq!(read.word("c"), Some(Word::Lines(vec!["ip t c 3".into()])));
        assert!(
            matches!(read.word("b"), Some(Word::Lines(l)) if l.len() == 1 && l[0] != "ip t c 2"),
            "b's line is unreadable, so its record is pending"
        );
    }

    #[test]
    fn a_log_is_rewritten_once_it_holds_twice_its_records_and_64_kib_more() {
        let mut text = String::new();
        for i in 0..2000 {
            text.push_str(&format!(
                "\nS\townr-{i:05}\tip cni_hostport hostports {i}\n"
            ));
        }
        let wants = |text: &str| log(text).wants_rewrite(&log(text).live());
        assert!(!wants(&text), "all of it counts");
        for i in 0..1000 {
            text.push_str(&format!("\nD\townr-{i:05}\n"));
        }
        assert!(!wants(&text), "half of it still counts");
        for i in 1000..1990 {
            text.push_str(&format!("\nD\townr-{i:05}\n"));
        }
        assert!(wants(&text), "ten records in {} bytes", text.len());
        assert_eq!(log(&text).live().len(), 10);
        let dir = tempfile::tempdir().unwrap();
        log(&text).rewrite(dir.path(), 1).unwrap();
        let again = Log::read(dir.path()).unwrap();
        assert_eq!(again.records(), log(&text).records());
        assert_eq!(again.records().len(), 10);
        assert!(!dir.path().join(".log-1").exists());
    }

    #[test]
    fn a_log_without_records_goes_when_rewritten_and_one_too_long_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        Log::append(dir.path(), &state_line("a", &["ip t c 1".into()])).unwrap();
        Log::append(dir.path(), &removal_line("a")).unwrap();
        Log::read(dir.path())
            .unwrap()
            .rewrite(dir.path(), 1)
            .unwrap();
        assert!(!dir.path().join(LOG).exists());

        let mut long = String::new();
        while long.len() as u64 <= MAX_LOG_BYTES {
            long.push_str("\nS\ta\tip t c 1\n");
        }
        fs::write(dir.path().join(LOG), long).unwrap();
        let read = Log::read(dir.path()).unwrap();
        assert!(read.overlong() && read.wants_rewrite(&read.live()));
        read.rewrite(dir.path(), 1).unwrap();
        assert!(!dir.path().join(LOG).exists(), "an overlong log goes");
    }
}
