//! Reservations on disk, in host-local's format, so the two plugins can
//! share or take over a data directory:
//!
//! - `dataDir/<network>/` (mode 0755) holds the network's files;
//! - one file per reserved address, named by the address (`10.1.2.3`,
//!   `2001:db8::3`), holding `<containerID>\r\n<ifname>` (mode 0644); a file
//!   holding only the container id is an older host-local's reservation and
//!   is honoured as one;
//! - `last_reserved_ip.<range set index>` holds the last address handed out
//!   from that range set, where the next search starts;
//! - `lock` (mode 0750, empty) is `flock`ed exclusively for every change, as
//!   host-local's go-filemutex does, so both plugins exclude each other.
//!
//! A reservation is written to a hidden temporary file, flushed to disk, and
//! hard-linked to its final name, which fails if the name exists: a file of
//! that name is never seen half-written and never replaced. The directory is
//! flushed after the names change.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::net::IpAddr;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use cni_types::{Code, Error};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use nix::libc;

/// Prefix of the per-range-set round-robin files.
pub const LAST_RESERVED_PREFIX: &str = "last_reserved_ip.";
/// Between the container id and the interface name in a reservation.
pub const LINE_BREAK: &str = "\r\n";
/// The lock file's name.
pub const LOCK_FILE: &str = "lock";
/// Temporary files start with this; they never parse as an address.
const TMP_PREFIX: &str = ".ipam-file-tmp.";

/// A reserved address and who holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    /// The address, from the file name.
    pub ip: IpAddr,
    /// Who holds it, from the file's content.
    pub owner: Owner,
}

/// Who holds a reservation, read from its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// `<containerID>\r\n<ifname>`, as ipam-file and host-local write it.
    Attachment {
        /// The container id.
        container_id: String,
        /// The interface name.
        ifname: String,
    },
    /// A container id alone: an older host-local's reservation, which
    /// belongs to the container whatever its interface.
    Container(String),
    /// Something this plugin did not write (a directory, a symlink, binary
    /// content, an unreadable file): its address is taken, and no DEL or GC
    /// ever removes it. Holds why, for the message naming it.
    Unknown(String),
}

impl Reservation {
    /// A reservation held by `owner`.
    pub fn new(ip: IpAddr, owner: Owner) -> Reservation {
        Reservation { ip, owner }
    }

    /// Held by this attachment, as written by ipam-file or host-local.
    pub fn held_by(&self, id: &str, ifname: &str) -> bool {
        matches!(&self.owner, Owner::Attachment { container_id, ifname: i }
            if container_id == id.trim() && i == ifname)
    }

    /// Held by this container in the older format, without an interface.
    pub fn held_by_legacy(&self, id: &str) -> bool {
        matches!(&self.owner, Owner::Container(c) if c == id.trim())
    }

    /// `container c1, interface eth0`, for messages.
    pub fn describe_owner(&self) -> String {
        match &self.owner {
            Owner::Attachment {
                container_id,
                ifname,
            } => format!("container {container_id:?}, interface {ifname:?}"),
            Owner::Container(id) => format!("container {id:?}"),
            Owner::Unknown(why) => format!("an entry ipam-file did not write ({why})"),
        }
    }
}

impl Owner {
    /// Reads a reservation file's content as host-local does: surrounding
    /// white space removed, then `<id>\r\n<ifname>` or `<id>`. Anything
    /// else (not UTF-8, control characters, empty) is [`Owner::Unknown`].
    pub fn parse(bytes: &[u8]) -> Owner {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return Owner::Unknown("content is not text".to_owned());
        };
        let text = text.trim();
        let (id, ifname) = match text.split_once(LINE_BREAK) {
            Some((id, ifname)) => (id, Some(ifname)),
            None => (text, None),
        };
        let clean = |s: &str| !s.is_empty() && !s.chars().any(char::is_control);
        match ifname {
            _ if !clean(id) => Owner::Unknown("content is not a container id".to_owned()),
            Some(i) if !clean(i) => {
                Owner::Unknown("content is not a container id and interface".to_owned())
            }
            Some(i) => Owner::Attachment {
                container_id: id.to_owned(),
                ifname: i.to_owned(),
            },
            None => Owner::Container(id.to_owned()),
        }
    }
}

/// A reservation file's content: `<containerID>\r\n<ifname>`.
pub fn owner_key(id: &str, ifname: &str) -> String {
    format!("{}{LINE_BREAK}{ifname}", id.trim())
}

/// Longest reservation file read; longer content is not one of ours.
const MAX_RESERVATION: u64 = 4096;

/// How the lock is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// For reading (CHECK, STATUS).
    Shared,
    /// For changing anything.
    Exclusive,
}

/// A network's directory, locked for as long as this value lives.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    lock: Option<Flock<File>>,
    mode: LockMode,
}

impl Store {
    /// Creates the directory when missing and locks it exclusively.
    pub fn create(dir: &Path) -> Result<Store, Error> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .map_err(|e| io_error("cannot create", dir, e))?;
        Store::lock(dir, LockMode::Exclusive)
    }

    /// Locks an existing directory; `None` when there is none (nothing was
    /// ever reserved), so reading or releasing creates nothing.
    pub fn open_existing(dir: &Path, mode: LockMode) -> Result<Option<Store>, Error> {
        match fs::metadata(dir) {
            Ok(m) if m.is_dir() => Store::lock(dir, mode).map(Some),
            Ok(_) => Err(io_error(
                "not a directory:",
                dir,
                io::Error::from(io::ErrorKind::NotADirectory),
            )),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error("cannot read", dir, e)),
        }
    }

    fn lock(dir: &Path, mode: LockMode) -> Result<Store, Error> {
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
        let mut file = match open(true) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => open(false),
            other => other,
        }
        .map_err(|e| io_error("cannot open lock file", &path, e))?;
        let arg = match mode {
            LockMode::Shared => FlockArg::LockShared,
            LockMode::Exclusive => FlockArg::LockExclusive,
        };
        // Blocks until the holder is done; EINTR only means a signal came.
        let lock = loop {
            match Flock::lock(file, arg) {
                Ok(lock) => break lock,
                Err((f, Errno::EINTR)) => file = f,
                Err((_, errno)) => {
                    return Err(io_error(
                        "cannot lock",
                        &path,
                        io::Error::from_raw_os_error(errno as i32),
                    ))
                }
            }
        };
        let store = Store {
            dir: dir.to_owned(),
            lock: Some(lock),
            mode,
        };
        if mode == LockMode::Exclusive {
            store.remove_stale_temporaries();
        }
        Ok(store)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every reservation: each entry whose name is an address. An entry
    /// that is not a regular file, or whose content is not an owner, is
    /// [`Owner::Unknown`]: its address is taken. Links are never followed.
    pub fn reservations(&self) -> Result<Vec<Reservation>, Error> {
        let entries = fs::read_dir(&self.dir).map_err(|e| io_error("cannot read", &self.dir, e))?;
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error("cannot read", &self.dir, e))?;
            let Some(ip) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<IpAddr>().ok())
            else {
                continue;
            };
            let owner = match entry.file_type() {
                Ok(t) if t.is_file() => match read_no_follow(&entry.path(), MAX_RESERVATION) {
                    Ok(bytes) => Owner::parse(&bytes),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => Owner::Unknown(format!("cannot read it: {e}")),
                },
                Ok(t) if t.is_dir() => Owner::Unknown("a directory".to_owned()),
                Ok(t) if t.is_symlink() => Owner::Unknown("a symbolic link".to_owned()),
                Ok(_) => Owner::Unknown("not a regular file".to_owned()),
                Err(e) => Owner::Unknown(format!("cannot read it: {e}")),
            };
            out.push(Reservation::new(ip, owner));
        }
        Ok(out)
    }

    /// The address last handed out from range set `set`, if recorded; an
    /// entry that is not one is [`Skipped`] (the search then starts at the
    /// first address, as with none).
    pub fn last_reserved(&self, set: usize) -> Result<Option<IpAddr>, Skipped> {
        let path = self.dir.join(format!("{LAST_RESERVED_PREFIX}{set}"));
        let bytes = match read_no_follow(&path, 64) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Skipped::new(path, format!("cannot read it: {e}"))),
        };
        std::str::from_utf8(&bytes)
            .ok()
            .and_then(|t| t.trim().parse::<IpAddr>().ok())
            .map(|ip| Some(ip.to_canonical()))
            .ok_or_else(|| Skipped::new(path, "not an IP address".to_owned()))
    }

    /// Reserves `ip` for the attachment; `false` when the address is
    /// already reserved. The file's content is on disk before its name.
    pub fn reserve(&self, ip: IpAddr, id: &str, ifname: &str) -> Result<bool, Error> {
        self.require_exclusive()?;
        let target = self.dir.join(ip.to_string());
        let tmp = self.write_temporary(&ip.to_string(), owner_key(id, ifname).as_bytes(), true)?;
        let linked = fs::hard_link(&tmp, &target);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(io_error("cannot write", &target, e)),
        }
    }

    /// Records `ip` as the last address handed out from range set `set`.
    /// Only a hint: a caller may carry on when it fails.
    pub fn set_last_reserved(&self, set: usize, ip: IpAddr) -> Result<(), Error> {
        self.require_exclusive()?;
        let name = format!("{LAST_RESERVED_PREFIX}{set}");
        // Only a hint for where the next search starts: replaced atomically,
        // not worth a flush of its own.
        let tmp = self.write_temporary(&name, ip.to_string().as_bytes(), false)?;
        let target = self.dir.join(&name);
        fs::rename(&tmp, &target).map_err(|e| {
            let _ = fs::remove_file(&tmp);
            io_error("cannot write", &target, e)
        })
    }

    /// Removes the reservation of `ip`; an absent one is not an error.
    pub fn release(&self, ip: IpAddr) -> Result<(), Error> {
        self.require_exclusive()?;
        let path = self.dir.join(ip.to_string());
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(io_error("cannot remove", &path, e))
            }
            _ => Ok(()),
        }
    }

    /// Flushes the directory, making created and removed names durable.
    pub fn sync(&self) -> Result<(), Error> {
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_error("cannot flush", &self.dir, e))
    }

    fn write_temporary(&self, name: &str, content: &[u8], flush: bool) -> Result<PathBuf, Error> {
        let tmp = self
            .dir
            .join(format!("{TMP_PREFIX}{}.{name}", std::process::id()));
        let _ = fs::remove_file(&tmp);
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)
            .and_then(|mut f| {
                f.write_all(content)?;
                if flush {
                    f.sync_all()?;
                }
                Ok(())
            });
        match written {
            Ok(()) => Ok(tmp),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(io_error("cannot write", &tmp, e))
            }
        }
    }

    /// Temporary files left by a process that died mid-write. Only called
    /// under the exclusive lock, when no writer can be running.
    fn remove_stale_temporaries(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(TMP_PREFIX) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    fn require_exclusive(&self) -> Result<(), Error> {
        if self.mode == LockMode::Exclusive {
            Ok(())
        } else {
            Err(Error::new(
                Code::INTERNAL,
                "ipam-file: store changed under a shared lock",
            ))
        }
    }
}

impl Drop for Store {
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

/// An entry of the store that is not what its name says, skipped; named
/// on stderr by the plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The entry.
    pub path: PathBuf,
    /// What is wrong with it.
    pub why: String,
}

impl Skipped {
    fn new(path: PathBuf, why: String) -> Skipped {
        Skipped { path, why }
    }
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipping {}: {}", self.path.display(), self.why)
    }
}

/// At most `limit` bytes of the regular file at `path`; a symbolic link is
/// an error (`O_NOFOLLOW`), so nothing outside the store is ever read.
fn read_no_follow(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::other(format!("longer than {limit} bytes")));
    }
    Ok(bytes)
}

/// Code 5 naming the path.
fn io_error(what: &str, path: &Path, err: io::Error) -> Error {
    Error::new(Code::IO_FAILURE, format!("{what} {}", path.display())).with_details(err.to_string())
}
