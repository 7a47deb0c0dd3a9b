//! The node's blocks as last read, remembered on the node: an ADD's first
//! request then reads the node's index and those blocks' keys together,
//! one round trip instead of two (the blocks' keys live outside the
//! index's key range, so etcd cannot return both from one range).
//!
//! A hint, never a source of truth: what the index lists in the same
//! transaction decides. When the two differ (a claim, a block given back
//! or reclaimed, a wiped cluster), the hinted reads are set aside, the
//! listed blocks are read in a second request as without a hint, and the
//! hint is written anew. A hint that cannot be read or written (no
//! `/run`, a read-only file system, not root) is no hint.
//!
//! A node that borrows (its blocks full, no block free) also remembers
//! the block it last borrowed from, the *lender*: its first request then
//! reads that block's keys and the count of claimed blocks too, so that
//! a borrowing ADD is that request and its reservation, as any other.
//!
//! One file per network and node under [`HINT_DIR`] (a tmpfs: gone at a
//! reboot, as the node's containers are), named by a hash of the store's
//! key prefix and node, holding the endpoints it was read from on its
//! first line, a block name per line after it, and `lender <block>` on
//! the last line when there is one (a version without lenders reads such
//! a hint as no hint). It is replaced whole
//! (a temporary file renamed over it), so concurrent plugins of one node
//! read one writer's hint or another's, never a mix; it is removed when
//! the node's index lists no block. A plugin killed between writing and
//! renaming leaves `<name>.<pid>`, removed by the next plugin that writes
//! that hint.

use std::fs;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use super::blocks::{Block, Sizes};
use super::claims::stable_hash;

/// Where hints are kept.
pub const HINT_DIR: &str = "/run/cni/ipam-etcd";

/// Most blocks a hint names (a node holding more reads them in a second
/// request), and so the most bytes read from a hint file.
const MAX_HINTED: usize = 16;
const MAX_HINT_BYTES: u64 = 4096;

/// Most entries of [`HINT_DIR`] looked at when sweeping partial hints.
const MAX_SWEPT: usize = 4096;

/// What a hint says: the node's blocks and the block it last borrowed
/// from.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Hinted {
    pub(super) blocks: Vec<Block>,
    pub(super) lender: Option<Block>,
}

/// The hint of one network's node.
#[derive(Debug)]
pub(super) struct Hint {
    path: PathBuf,
    /// The endpoints, comma-separated: a hint read from other members
    /// (another cluster under the same names) is not used.
    endpoints: String,
}

impl Hint {
    /// The hint of the node `node` of the store rooted at `root`
    /// (`<prefix>/<network>/`), reached at `endpoints`.
    pub(super) fn new(root: &str, node: &str, endpoints: &[String]) -> Hint {
        let name = format!("{:016x}", stable_hash(&format!("{root}\0{node}")));
        Hint {
            path: PathBuf::from(HINT_DIR).join(name),
            endpoints: endpoints.join(","),
        }
    }

    /// What the hint says; nothing when there is no usable hint.
    pub(super) fn read(&self, sizes: Sizes) -> Hinted {
        let Ok(file) = fs::File::open(&self.path) else {
            return Hinted::default();
        };
        let mut text = String::new();
        if file.take(MAX_HINT_BYTES).read_to_string(&mut text).is_err() {
            return Hinted::default();
        }
        let mut lines = text.lines();
        if lines.next() != Some(self.endpoints.as_str()) {
            return Hinted::default();
        }
        // The lender, if any, is the last line.
        let mut lines: Vec<&str> = lines.collect();
        let lender = lines.last().and_then(|l| l.strip_prefix("lender "));
        if lender.is_some() {
            lines.pop();
        }
        let blocks: Result<Vec<Block>, _> = lines.iter().map(|n| Block::parse(n, sizes)).collect();
        let lender = lender.map(|n| Block::parse(n, sizes)).transpose();
        match (blocks, lender) {
            (Ok(blocks), Ok(lender)) if (1..=MAX_HINTED).contains(&blocks.len()) => {
                Hinted { blocks, lender }
            }
            _ => Hinted::default(),
        }
    }

    /// Remembers `blocks` (sorted) as the node's and `lender` as the block
    /// it last borrowed from; forgets the hint when there are no blocks or
    /// too many. Failures are ignored: a hint saves a round trip, its
    /// absence costs one.
    pub(super) fn remember(&self, blocks: &[Block], lender: Option<Block>) {
        if blocks.is_empty() || blocks.len() > MAX_HINTED {
            let _ = fs::remove_file(&self.path);
            return;
        }
        let mut text = self.endpoints.clone();
        for b in blocks {
            text.push('\n');
            text.push_str(&b.name());
        }
        if let Some(b) = lender {
            text.push_str("\nlender ");
            text.push_str(&b.name());
        }
        self.sweep_partial();
        let partial = self.path.with_extension(format!("{}", std::process::id()));
        let written = fs::create_dir_all(HINT_DIR)
            .and_then(|()| fs::File::create(&partial))
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .and_then(|()| fs::rename(&partial, &self.path));
        if written.is_err() {
            let _ = fs::remove_file(&partial);
        }
    }

    /// Removes what a plugin killed between writing this hint and
    /// renaming it left: `<name>.<pid>` of a process that is gone.
    fn sweep_partial(&self) {
        let (Some(dir), Some(name)) = (self.path.parent(), self.path.file_name()) else {
            return;
        };
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        let prefix = format!("{}.", name.to_string_lossy());
        for entry in entries.flatten().take(MAX_SWEPT) {
            let file = entry.file_name();
            let pid = file.to_str().and_then(|f| f.strip_prefix(&prefix));
            if pid.is_some_and(|pid| {
                pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists()
            }) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZES: Sizes = Sizes { v4: 26, v6: 122 };

    fn block(ip: &str) -> Block {
        Block::of(ip.parse().unwrap(), SIZES)
    }

    /// A process id no process has (the kernel's largest is 4,194,304).
    fn dead_pid() -> u32 {
        (4_000_000..4_194_304)
            .find(|pid| !Path::new("/proc").join(pid.to_string()).exists())
            .unwrap()
    }

    fn unique_root() -> String {
        format!("/cni-rs-hint-test/{}/", std::process::id())
    }

    #[test]
    #[ignore = "needs root: writes /run/cni/ipam-etcd"]
    fn a_hint_is_read_back_only_from_the_same_endpoints_and_forgotten_with_its_last_block() {
        let endpoints = ["http://127.0.0.1:2379".to_string()];
        let hint = Hint::new(&unique_root(), "node-a", &endpoints);
        let blocks = vec![block("10.96.0.0"), block("10.96.0.64")];
        hint.remember(&blocks, None);
        let only_blocks = Hinted {
            blocks: blocks.clone(),
            lender: None,
        };
        assert_eq!(hint.read(SIZES), only_blocks);
        hint.remember(&blocks, Some(block("10.96.1.0")));
        let lender = Some(block("10.96.1.0"));
        assert_eq!(hint.read(SIZES), Hinted { blocks, lender });
        let elsewhere = Hint::new(&unique_root(), "node-a", &["http://10.0.0.1:2379".into()]);
        assert_eq!(
            elsewhere.read(SIZES),
            Hinted::default(),
            "another cluster's"
        );
        let other_sizes = Sizes { v4: 24, v6: 120 };
        assert_eq!(
            hint.read(other_sizes),
            Hinted::default(),
            "blocks of another size"
        );
        hint.remember(&[], lender);
        assert!(!hint.path.exists());
        assert_eq!(hint.read(SIZES), Hinted::default());
    }

    #[test]
    #[ignore = "needs root: writes /run/cni/ipam-etcd"]
    fn a_killed_writers_partial_hint_is_swept_by_the_next_writer_and_a_live_ones_kept() {
        let hint = Hint::new(&unique_root(), "node-b", &["http://127.0.0.1:2379".into()]);
        let other = Hint::new(&unique_root(), "node-c", &["http://127.0.0.1:2379".into()]);
        fs::create_dir_all(HINT_DIR).unwrap();
        let dead = hint.path.with_extension(dead_pid().to_string());
        let live = hint.path.with_extension("1");
        let others = other.path.with_extension(dead_pid().to_string());
        for partial in [&dead, &live, &others] {
            fs::write(partial, "half a hint").unwrap();
        }
        hint.remember(&[block("10.97.0.0")], None);
        assert!(!dead.exists(), "a gone writer's partial file is swept");
        assert!(live.exists(), "a running writer's is not");
        assert!(others.exists(), "nor another hint's");
        assert_eq!(hint.read(SIZES).blocks, [block("10.97.0.0")]);
        for path in [&live, &others, &hint.path] {
            let _ = fs::remove_file(path);
        }
    }
}
