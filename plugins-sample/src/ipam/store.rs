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
    /// The file's content, surrounding white space removed (host-local
    /// compares it so); empty when unreadable.
    owner: String,
}

impl Reservation {
    /// A reservation held by `owner_key(id, ifname)`.
    pub fn new(ip: IpAddr, owner: String) -> Reservation {
        Reservation { ip, owner }
    }

    /// Held by this attachment, as written by ipam-file or host-local.
    pub fn held_by(&self, id: &str, ifname: &str) -> bool {
        self.owner == owner_key(id, ifname)
    }

    /// Held by this container in the older format, without an interface.
    pub fn held_by_legacy(&self, id: &str) -> bool {
        self.owner == id.trim()
    }

    /// `container c1, interface eth0`, for messages.
    pub fn describe_owner(&self) -> String {
        match self.owner.split_once(LINE_BREAK) {
            Some((id, ifname)) => format!("container {id:?}, interface {ifname:?}"),
            None if self.owner.is_empty() => "an unreadable reservation".to_owned(),
            None => format!("container {:?}", self.owner),
        }
    }
}

/// A reservation file's content: `<containerID>\r\n<ifname>`.
pub fn owner_key(id: &str, ifname: &str) -> String {
    format!("{}{LINE_BREAK}{ifname}", id.trim())
}

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

    /// Every reservation: each file whose name is an address.
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
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            // An unreadable file still takes its address, held by nobody.
            let owner = match fs::read(entry.path()) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(_) => String::new(),
            };
            out.push(Reservation::new(ip, owner));
        }
        Ok(out)
    }

    /// The address last handed out from range set `set`, if recorded.
    pub fn last_reserved(&self, set: usize) -> Option<IpAddr> {
        let text =
            fs::read_to_string(self.dir.join(format!("{LAST_RESERVED_PREFIX}{set}"))).ok()?;
        Some(text.trim().parse::<IpAddr>().ok()?.to_canonical())
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

/// Code 5 naming the path.
fn io_error(what: &str, path: &Path, err: io::Error) -> Error {
    Error::new(Code::IO_FAILURE, format!("{what} {}", path.display())).with_details(err.to_string())
}
