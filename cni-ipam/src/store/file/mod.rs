//! Reservations on disk, in host-local's format, so the two plugins can
//! share or take over a data directory:
//!
//! - `dataDir/<network>/` (mode 0755) holds the network's files;
//! - one file per reserved address, named by the address (`10.1.2.3`,
//!   `2001:db8::3`), holding `<containerID>\r\n<ifname>` (mode 0644); a file
//!   holding only the container id is an older host-local's reservation and
//!   is honoured as one;
//! - `last_reserved_ip.<range set index>` holds the last address handed out
//!   from that range set, where the next search starts. It is rewritten in
//!   place, as host-local does (though without emptying it first): it is
//!   only a hint, and a replacement by rename would cost a new file (an
//!   inode) per ADD. A plugin killed mid-write can leave it garbled; the
//!   next ADD names it on stderr and searches from the range's start;
//! - `lock` (mode 0750, empty) is `flock`ed exclusively for every change, as
//!   host-local's go-filemutex does, so both plugins exclude each other.
//!   A reader (CHECK, STATUS) takes no lock: each reservation appears whole
//!   or not at all, so a read needs none to be consistent, and STATUS,
//!   which runtimes poll every few seconds, never waits behind a burst of
//!   ADDs or a stuck holder. A writer waits for the lock no longer than
//!   [`LOCK_TIMEOUT`] (host-local waits forever): then code 11 naming the
//!   lock file and the process holding it, having changed nothing.
//!
//! A reservation is written to a hidden temporary file and hard-linked to
//! its final name, which fails if the name exists: a file of that name is
//! never seen half-written and never replaced, and a plugin killed at any
//! point leaves a whole reservation or none.
//!
//! Nothing is flushed to disk (`fsync`), as host-local flushes nothing: a
//! reservation is in the page cache, visible to every later run, the moment
//! its name exists, and survives the plugin's crash. Only a power loss or a
//! kernel crash can lose it, and that ends every container of the node
//! with it, so no address is ever handed out twice because of it (the
//! worst a power loss can leave is an empty file, which is taken and named
//! on stderr). The flushes cost two disk writes per ADD and one per DEL,
//! which made an ADD+DEL 1.13x host-local's on this machine's disk
//! (BENCHMARKS.md).
//!
//! An entry named like an address that is not such a file (a directory, a
//! symbolic link, binary content) is [`Owner::Unknown`]: taken, never
//! followed, never removed. The lock and `last_reserved_ip` files are never
//! removed.
//!
//! Go: host-local's `backend/disk` (`Store`, `FileLock`).

mod config;
mod format;

use std::collections::HashMap;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::net::IpAddr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, DirEntryExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use cni_types::{Attachment, Error, Extra};
use nix::fcntl::Flock;
use nix::libc;

pub use self::config::{FileConfig, DEFAULT_DATA_DIR};
use self::format::{address_of, read_entry, Content};
pub use self::format::{owner_key, parse_owner};
use crate::range::{RangeIter, RangeSet};
use crate::store::{Access, Assigned, Owner, Reservation, Reserved, Skipped, State, Store};

/// The longest a change waits for the lock held by another process
/// (every operation holds it for milliseconds); then code 11 naming the
/// lock file and its holder ([`cni_skel::flock_within`]), so that a stuck
/// holder fails the runtime's call instead of hanging it.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(10);
/// Prefix of the per-range-set round-robin files.
pub const LAST_RESERVED_PREFIX: &str = "last_reserved_ip.";
/// Between the container id and the interface name in a reservation.
pub const LINE_BREAK: &str = "\r\n";
/// The lock file's name.
pub const LOCK_FILE: &str = "lock";
/// Temporary files start with this; they never parse as an address.
const TMP_PREFIX: &str = ".ipam-file-tmp.";
/// How many addresses STATUS looks up one by one in a range set before it
/// lists the directory (`FileStore::exhausted_sets`).
const STATUS_PROBES: usize = 8;
/// Longest reservation file read; longer content is not a reservation.
const MAX_RESERVATION: u64 = 4096;
/// A network's directory, locked (exclusively) for as long as this value
/// lives, except for [`Access::Read`], which takes no lock.
///
/// ```
/// use cni_ipam::store::{file::FileStore, Access, Store};
///
/// let data = tempfile::tempdir().unwrap();
/// let ipam = serde_json::json!({"type": "ipam-file", "dataDir": data.path()});
/// let cfg = FileStore::config(ipam.as_object().unwrap()).unwrap();
/// // Reading creates nothing.
/// assert!(FileStore::open("net", &cfg, Access::Read).unwrap().is_none());
/// let mut store = FileStore::open("net", &cfg, Access::Create).unwrap().unwrap();
/// assert!(store.read(1).unwrap().held.is_empty());
/// ```
#[derive(Debug)]
pub struct FileStore {
    dir: PathBuf,
    lock: Option<Flock<File>>,
    /// ADD's reading of the reservations' owners, made before the lock:
    /// under it, a file with the same inode is not read again.
    owners_before: HashMap<IpAddr, (u64, Owner)>,
}

impl Store for FileStore {
    type Config = FileConfig;

    fn config(ipam: &Extra) -> Result<FileConfig, Error> {
        FileConfig::from_section(ipam).map_err(Error::from)
    }

    fn open(network: &str, cfg: &FileConfig, access: Access) -> Result<Option<FileStore>, Error> {
        let dir = cfg.data_dir.join(network);
        match access {
            Access::Create => {
                DirBuilder::new()
                    .recursive(true)
                    .mode(0o755)
                    .create(&dir)
                    .map_err(|e| Error::io("create", &dir, e))?;
                // Every reservation's content is read before the lock, so
                // the lock is held for a listing, not for a read of every
                // file (in a burst each ADD waits for the ones before it).
                // ADD reads the owners only to find its own attachment's,
                // which nothing else writes while it runs (the spec: no
                // parallel operations for one container), and a file
                // replaced since is read again.
                let owners_before = owners_by_inode(&dir);
                let mut store = FileStore::lock(dir)?;
                store.owners_before = owners_before;
                Ok(Some(store))
            }
            Access::Change | Access::Read => match fs::metadata(&dir) {
                Ok(m) if m.is_dir() && access == Access::Read => Ok(Some(FileStore {
                    dir,
                    lock: None,
                    owners_before: HashMap::new(),
                })),
                Ok(m) if m.is_dir() => FileStore::lock(dir).map(Some),
                Ok(_) => Err(Error::io(
                    "open the directory",
                    &dir,
                    io::Error::from(io::ErrorKind::NotADirectory),
                )),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(Error::io("read", &dir, e)),
            },
        }
    }

    fn describe(&self) -> String {
        self.dir.display().to_string()
    }

    fn read(&mut self, sets: usize) -> Result<State, Error> {
        let (held, unreadable) = self.reservations()?;
        let mut skipped: Vec<Skipped> = held
            .iter()
            .filter_map(|r| match &r.owner {
                Owner::Unknown(why) => Some(Skipped {
                    entry: self.dir.join(r.ip.to_string()).display().to_string(),
                    why: format!("{why}; its address is taken as held"),
                }),
                _ => None,
            })
            .collect();
        let last_reserved = (0..sets)
            .map(|set| {
                self.last_reserved(set).unwrap_or_else(|s| {
                    skipped.push(s);
                    None
                })
            })
            .collect();
        Ok(State {
            held,
            last_reserved,
            skipped,
            unreadable,
            pools: Vec::new(),
        })
    }

    fn held_addresses(&mut self) -> Result<Vec<IpAddr>, Error> {
        let entries = fs::read_dir(&self.dir).map_err(|e| Error::io("read", &self.dir, e))?;
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("read", &self.dir, e))?;
            if let Some(ip) = address_of(&entry) {
                out.push(ip);
            }
        }
        Ok(out)
    }

    /// Probes, in each range set, the first 8 addresses an
    /// ADD would try (after `last_reserved_ip`): one `lstat` each, so a
    /// set with room costs a few system calls however many addresses are
    /// reserved. Only a set whose probes are all taken is decided by
    /// listing the directory.
    fn exhausted_sets(&mut self, sets: &[RangeSet]) -> Result<Vec<usize>, Error> {
        let unsure: Vec<usize> = (0..sets.len())
            .filter(|&i| {
                let last = self.last_reserved(i).ok().flatten();
                !RangeIter::new(&sets[i], last)
                    .take(STATUS_PROBES)
                    .any(|ip| self.is_free(ip))
            })
            .collect();
        if unsure.is_empty() {
            return Ok(unsure);
        }
        let held = self.held_addresses()?;
        let full = crate::plan::exhausted_sets(sets, &held);
        Ok(full.into_iter().filter(|i| unsure.contains(i)).collect())
    }

    fn reserve(&mut self, new: &[Assigned], attachment: &Attachment) -> Result<Reserved, Error> {
        let content = owner_key(&attachment.container_id, &attachment.ifname);
        let mut written: Vec<IpAddr> = Vec::new();
        let mut outcome = Ok(Reserved::Done);
        for a in new {
            match self.create_reservation(a.ip, content.as_bytes()) {
                Ok(true) => written.push(a.ip),
                Ok(false) => {
                    outcome = Ok(Reserved::Taken(a.ip));
                    break;
                }
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
        if !matches!(outcome, Ok(Reserved::Done)) {
            for ip in &written {
                let _ = self.remove(*ip);
            }
            return outcome;
        }
        for a in new {
            // Only a hint for where the next search starts: a failure (a
            // directory in its place, named by `read`) costs a longer
            // search, not the ADD.
            let _ = self.set_last_reserved(a.set, a.ip);
        }
        Ok(Reserved::Done)
    }

    fn release(&mut self, gone: &[&Reservation]) -> Result<(), Error> {
        for r in gone {
            // Under the exclusive lock what was read is still there.
            if r.local && !matches!(r.owner, Owner::Unknown(_)) {
                self.remove(r.ip)?;
            }
        }
        Ok(())
    }
}

impl FileStore {
    fn lock(dir: PathBuf) -> Result<FileStore, Error> {
        let path = dir.join(LOCK_FILE);
        let open = |write: bool| {
            OpenOptions::new()
                .read(true)
                .write(write)
                .create(write)
                .mode(0o750)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
        };
        // Read-only is enough to flock; write is only needed to create it.
        let file = match open(true) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => open(false),
            other => other,
        }
        .map_err(|e| Error::io("open the lock file", &path, e))?;
        let lock = cni_skel::flock_within(file, true, &path, LOCK_TIMEOUT)?;
        Ok(FileStore {
            dir,
            lock: Some(lock),
            owners_before: HashMap::new(),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every entry whose name is an address, and those of them whose
    /// content could not be read. An entry that is not a regular file, or
    /// whose content is not an owner, is [`Owner::Unknown`]: its address is
    /// taken. Links are never followed.
    ///
    /// Under the exclusive lock no writer can be running, so a temporary
    /// file met here was left by a process that died mid-write: it is
    /// removed (in this listing, not one of its own: every ADD, DEL and
    /// GC reads the reservations under the lock).
    fn reservations(&self) -> Result<(Vec<Reservation>, Vec<Skipped>), Error> {
        let entries = fs::read_dir(&self.dir).map_err(|e| Error::io("read", &self.dir, e))?;
        let (mut out, mut unreadable) = (Vec::new(), Vec::new());
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("read", &self.dir, e))?;
            let Some(ip) = address_of(&entry) else {
                if self.lock.is_some()
                    && entry
                        .file_name()
                        .as_bytes()
                        .starts_with(TMP_PREFIX.as_bytes())
                {
                    let _ = fs::remove_file(entry.path());
                }
                continue;
            };
            let mut cannot_read = |e: io::Error| {
                let why = format!("cannot read it: {e}");
                unreadable.push(Skipped {
                    entry: entry.path().display().to_string(),
                    why: why.clone(),
                });
                Owner::Unknown(why)
            };
            // The same file ADD read before taking the lock.
            let read_before = (self.owners_before.get(&ip))
                .filter(|(ino, _)| *ino == entry.ino())
                .map(|(_, owner)| owner.clone());
            let owner = match (entry.file_type(), read_before) {
                (Ok(t), Some(owner)) if t.is_file() => owner,
                (Ok(t), _) if t.is_file() => match read_entry(&entry.path(), MAX_RESERVATION) {
                    Ok(Content::Bytes(bytes)) => parse_owner(&bytes),
                    Ok(Content::TooLong) => {
                        Owner::Unknown(format!("longer than {MAX_RESERVATION} bytes"))
                    }
                    Ok(Content::NotRegular) => Owner::Unknown("not a regular file".to_owned()),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => cannot_read(e),
                },
                (Ok(t), _) if t.is_dir() => Owner::Unknown("a directory".to_owned()),
                (Ok(t), _) if t.is_symlink() => Owner::Unknown("a symbolic link".to_owned()),
                (Ok(_), _) => Owner::Unknown("not a regular file".to_owned()),
                (Err(e), _) => cannot_read(e),
            };
            out.push(Reservation::new(ip, owner));
        }
        Ok((out, unreadable))
    }

    /// The address last handed out from range set `set`, if recorded.
    fn last_reserved(&self, set: usize) -> Result<Option<IpAddr>, Skipped> {
        let path = self.dir.join(format!("{LAST_RESERVED_PREFIX}{set}"));
        let skipped = |why: String| Skipped {
            entry: path.display().to_string(),
            why,
        };
        let bytes = match read_entry(&path, 64) {
            Ok(Content::Bytes(bytes)) => bytes,
            Ok(Content::TooLong) => return Err(skipped("longer than 64 bytes".to_owned())),
            Ok(Content::NotRegular) => return Err(skipped("not a regular file".to_owned())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(skipped(format!("cannot read it: {e}"))),
        };
        std::str::from_utf8(&bytes)
            .ok()
            .and_then(|t| t.trim().parse::<IpAddr>().ok())
            .map(|ip| Some(ip.to_canonical()))
            .ok_or_else(|| skipped("not an IP address".to_owned()))
    }

    /// Creates the reservation file of `ip`; `false` when the name exists.
    /// The content is written before the name exists.
    fn create_reservation(&self, ip: IpAddr, content: &[u8]) -> Result<bool, Error> {
        let target = self.dir.join(ip.to_string());
        let tmp = self.write_temporary(&ip.to_string(), content)?;
        let linked = fs::hard_link(&tmp, &target);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(Error::io("write", &target, e)),
        }
    }

    /// Whether no entry holds `ip`'s name. An entry that cannot be looked
    /// at counts as taken, as the listing would take it.
    fn is_free(&self, ip: IpAddr) -> bool {
        match fs::symlink_metadata(self.dir.join(ip.to_string())) {
            Err(e) => e.kind() == io::ErrorKind::NotFound,
            Ok(_) => false,
        }
    }

    /// Records `ip` as the last address handed out from range set `set`,
    /// in place: written over the old address, then cut to its length.
    /// Not truncated to nothing first (`O_TRUNC`): that frees the file's
    /// block and allocates another, and on a file system that discards
    /// freed blocks (`-o discard`, synchronous without a journal) each ADD
    /// then waited for the disk while holding the lock. Readers take no
    /// lock; one that meets a half-written address only searches from the
    /// range's start. A symbolic link in its place is not followed.
    fn set_last_reserved(&self, set: usize, ip: IpAddr) -> Result<(), Error> {
        use std::os::unix::fs::FileExt;
        let path = self.dir.join(format!("{LAST_RESERVED_PREFIX}{set}"));
        let text = ip.to_string();
        OpenOptions::new()
            .write(true)
            .create(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .and_then(|f| {
                f.write_all_at(text.as_bytes(), 0)?;
                f.set_len(text.len() as u64)
            })
            .map_err(|e| Error::io("write", &path, e))
    }

    /// Removes the reservation file of `ip`; an absent one is not an error.
    fn remove(&self, ip: IpAddr) -> Result<(), Error> {
        let path = self.dir.join(ip.to_string());
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(Error::io("remove", &path, e)),
            _ => Ok(()),
        }
    }

    fn write_temporary(&self, name: &str, content: &[u8]) -> Result<PathBuf, Error> {
        let tmp = self
            .dir
            .join(format!("{TMP_PREFIX}{}.{name}", std::process::id()));
        let create = || {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .open(&tmp)
        };
        // A leftover of a dead process with this one's pid, which the
        // locked listing has not met yet: removed only when it is there.
        let file = match create() {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let _ = fs::remove_file(&tmp);
                create()
            }
            other => other,
        };
        let written = file.and_then(|mut f| f.write_all(content));
        match written {
            Ok(()) => Ok(tmp),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(Error::io("write", &tmp, e))
            }
        }
    }
}

/// The owners of the reservation files of `dir`, with their inodes;
/// nothing for a file that cannot be read or names no owner (read again
/// under the lock).
fn owners_by_inode(dir: &Path) -> HashMap<IpAddr, (u64, Owner)> {
    let mut owners = HashMap::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return owners;
    };
    for entry in entries.flatten() {
        let Some(ip) = address_of(&entry) else {
            continue;
        };
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if let Ok(Content::Bytes(bytes)) = read_entry(&entry.path(), MAX_RESERVATION) {
            // Not an owner (yet: a reference host-local writes its file
            // after creating it, under the lock): read again under it.
            match parse_owner(&bytes) {
                Owner::Unknown(_) => {}
                owner => {
                    owners.insert(ip, (entry.ino(), owner));
                }
            }
        }
    }
    owners
}

impl Drop for FileStore {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            // nix's own drop panics if unlocking fails; closing the file
            // releases the lock anyway, so a failure is left to the close.
            match lock.unlock() {
                Ok(file) => drop(file),
                Err((lock, _)) => std::mem::forget(lock),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(held: &[Reservation], ip: &str) -> Option<Owner> {
        let ip: IpAddr = ip.parse().unwrap();
        held.iter().find(|r| r.ip == ip).map(|r| r.owner.clone())
    }

    #[test]
    fn an_add_lists_under_the_lock_what_changed_since_it_read_the_owners() {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join("net");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("10.1.0.2"), "ctr-a\r\neth0").unwrap();
        fs::write(dir.join("10.1.0.3"), "ctr-b\r\neth0").unwrap();
        let ipam = serde_json::json!({"type": "ipam-file", "dataDir": data.path()});
        let cfg = FileStore::config(ipam.as_object().unwrap()).unwrap();
        let mut store = FileStore::open("net", &cfg, Access::Create)
            .unwrap()
            .unwrap();
        // Between the early reading and the lock: one released, one
        // reserved, one written after its creation (a reference
        // host-local writes the file it created).
        fs::remove_file(dir.join("10.1.0.3")).unwrap();
        fs::write(dir.join("10.1.0.4"), "ctr-d\r\neth0").unwrap();
        let held = store.read(1).unwrap().held;
        let attachment = |id: &str| {
            Some(Owner::Attachment(Attachment {
                container_id: id.into(),
                ifname: "eth0".into(),
            }))
        };
        assert_eq!(owner(&held, "10.1.0.2"), attachment("ctr-a"));
        assert_eq!(owner(&held, "10.1.0.3"), None);
        assert_eq!(owner(&held, "10.1.0.4"), attachment("ctr-d"));
        assert_eq!(held.len(), 2);
    }

    #[test]
    fn a_file_that_named_no_owner_when_read_early_is_read_again_under_the_lock() {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join("net");
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("10.1.0.5");
        fs::write(&path, "").unwrap();
        let ipam = serde_json::json!({"type": "ipam-file", "dataDir": data.path()});
        let cfg = FileStore::config(ipam.as_object().unwrap()).unwrap();
        let mut store = FileStore::open("net", &cfg, Access::Create)
            .unwrap()
            .unwrap();
        // The same file (inode), written since its creation.
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| f.write_all(b"ctr-e\r\neth0"))
            .unwrap();
        let held = store.read(1).unwrap().held;
        let want = Owner::Attachment(Attachment {
            container_id: "ctr-e".into(),
            ifname: "eth0".into(),
        });
        assert_eq!(owner(&held, "10.1.0.5"), Some(want));
    }
}
