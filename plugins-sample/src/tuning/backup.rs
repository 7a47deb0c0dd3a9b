//! The values ADD changes on the link, saved in `dataDir` for DEL to put
//! back, in the reference's file: `<dataDir>/<CNI_CONTAINERID>_<CNI_IFNAME>.json`
//! holding `configToRestore` (`mac`, `promisc`, `mtu`, `allmulti`, each
//! only when ADD changes it), indented by one space as Go's
//! `json.MarshalIndent(config, "", " ")` writes it.
//!
//! Unlike the reference's file, ours is never written in place: the JSON
//! goes to a hidden temporary file (mode 0600) that is then given the
//! backup's name, so no reader sees half a file and no link planted at
//! the name is written through. The first backup of an attachment is
//! kept: a second ADD without a DEL between adds only the values the
//! first did not save (their live values are still the originals), and
//! never replaces a saved one with a value tuning itself set. The file is
//! read with [`read_regular_file`]: no link followed, no FIFO waited on,
//! at most [`MAX_BACKUP`] bytes; a file that cannot be read or is not the
//! reference's JSON is code 5 naming it (the reference ignores such a
//! file and leaves it behind).

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use cni_net::Link;
use cni_types::{read_regular_file, Code, Error, Mac};
use serde::{Deserialize, Serialize};

use super::config::Wanted;
use super::Req;

/// Longest backup read; the reference's is under 150 bytes.
pub const MAX_BACKUP: u64 = 4096;

/// The values to restore on DEL, in the reference's file format (Go:
/// `configToRestore`). The reference's `txQLen`, which this plugin does
/// not set, is ignored when read.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Backup {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<Mac>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promisc: Option<bool>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mtu: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allmulti: Option<bool>,
    /// Ours: the container's namespace (`CNI_NETNS`) at ADD, so that GC
    /// can tell a backup whose namespace is gone. The reference ignores
    /// the key; its own backups lack it and are never collected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<PathBuf>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The backup file of the request's attachment in `data_dir`.
pub(super) fn path(data_dir: &Path, req: &Req) -> PathBuf {
    data_dir.join(format!("{}_{}.json", req.container_id, req.ifname))
}

/// Makes `data_dir` (mode 0700 when created; the reference asks 0600, a
/// directory no one but root can enter either way) and checks it is a
/// directory: a `dataDir` naming anything else is code 7.
pub(super) fn prepare_dir(data_dir: &Path) -> Result<(), Error> {
    match fs::metadata(data_dir) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => {
            return Err(Error::invalid_config(
                "dataDir",
                format_args!("{}: not a directory", data_dir.display()),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("read", data_dir, e)),
    }
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(data_dir)
        .map_err(|e| Error::io("create", data_dir, e))
}

impl Backup {
    /// The backup at `path`; `None` when there is none.
    pub fn read(path: &Path) -> Result<Option<Backup>, Error> {
        let bad = |details: String| {
            Error::new(
                Code::IO_FAILURE,
                format!("invalid tuning backup {}", path.display()),
            )
            .with_details(details)
        };
        let bytes = match read_regular_file(path, MAX_BACKUP) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(bad(e.to_string())),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| bad(e.to_string()))
    }

    /// What `wanted` is about to change on `link`, as it is now, added to
    /// the values an earlier ADD saved (which win: they are the originals).
    pub fn merged(earlier: Option<&Backup>, wanted: &Wanted, link: &Link) -> Backup {
        let mut backup = earlier.cloned().unwrap_or_default();
        if wanted.mac.is_some() && backup.mac.is_none() {
            backup.mac = link.mac;
        }
        if wanted.promisc && backup.promisc.is_none() {
            backup.promisc = Some(link.promisc);
        }
        if wanted.mtu.is_some() && backup.mtu == 0 {
            backup.mtu = link.mtu;
        }
        if wanted.allmulti.is_some() && backup.allmulti.is_none() {
            backup.allmulti = Some(link.allmulti);
        }
        backup
    }

    /// Writes this at `path`, in place of `earlier` (what [`Backup::read`]
    /// found there). With no earlier backup, the name is taken only if it
    /// is still free, so of two racing ADDs the first backup stays.
    pub fn save(&self, path: &Path, earlier: Option<&Backup>) -> Result<(), Error> {
        if earlier == Some(self) {
            return Ok(());
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
        write_new(&tmp, &self.to_json()?).map_err(|e| {
            let _ = fs::remove_file(&tmp);
            Error::io("write", &tmp, e)
        })?;
        // A rename replaces what is at `path`; a hard link never does.
        // (renameat2's RENAME_NOREPLACE would do both, but the musl build
        // has no binding for it.)
        let placed = match earlier {
            Some(_) => fs::rename(&tmp, path),
            None => fs::hard_link(&tmp, path).or_else(|e| match e.kind() {
                io::ErrorKind::AlreadyExists => Ok(()),
                _ => Err(e),
            }),
        };
        let _ = fs::remove_file(&tmp);
        placed.map_err(|e| Error::io("write", path, e))
    }

    /// The file's content, as the reference writes it.
    fn to_json(&self) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        let format = serde_json::ser::PrettyFormatter::with_indent(b" ");
        let mut ser = serde_json::Serializer::with_formatter(&mut out, format);
        self.serialize(&mut ser).map_err(|e| Error::internal(&e))?;
        Ok(out)
    }
}

/// Creates `path` (mode 0600, failing if it exists) holding `content`.
fn write_new(path: &Path, content: &[u8]) -> io::Result<()> {
    let _ = fs::remove_file(path);
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?
        .write_all(content)
}

/// GC: removes the backups in `data_dir` whose namespace is gone, but
/// those named in `kept` (file names of valid attachments); returns their
/// paths. A backup without a namespace (the reference's, an older one
/// of ours) or that cannot be read is kept.
///
/// Go: none; the reference's tuning has no GC.
pub(super) fn collect(data_dir: &Path, kept: &[String]) -> Result<Vec<PathBuf>, Error> {
    let entries = match fs::read_dir(data_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read", data_dir, e)),
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !name.ends_with(".json") || kept.contains(&name) {
            continue;
        }
        let path = entry.path();
        let Ok(Some(Backup {
            netns: Some(netns), ..
        })) = Backup::read(&path)
        else {
            continue;
        };
        if !netns.exists() {
            remove(&path)?;
            removed.push(path);
        }
    }
    Ok(removed)
}

/// Removes the backup at `path`; an absent one is not an error.
pub(super) fn remove(path: &Path) -> Result<(), Error> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(Error::io("remove", path, e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_the_references_json() {
        let backup = Backup {
            mac: Some("02:00:00:00:00:01".parse().unwrap()),
            promisc: Some(false),
            mtu: 1500,
            allmulti: None,
            netns: None,
        };
        let json = String::from_utf8(backup.to_json().unwrap()).unwrap();
        assert_eq!(
            json,
            "{\n \"mac\": \"02:00:00:00:00:01\",\n \"promisc\": false,\n \"mtu\": 1500\n}"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c1_eth0.json");
        // As the reference writes it for a link it only changes the MTU of,
        // with its txQLen, which this plugin leaves alone.
        fs::write(&path, "{\n \"mtu\": 9000,\n \"txQLen\": 1000\n}").unwrap();
        let read = Backup::read(&path).unwrap().unwrap();
        assert_eq!(
            read,
            Backup {
                mtu: 9000,
                ..Backup::default()
            }
        );
    }
}
