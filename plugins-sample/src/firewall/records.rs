//! What ADD under iptables recorded for each attachment: its addresses,
//! so that GC can find the iptables rules of attachments the runtime no
//! longer lists (the reference's rules name an address, not its owner),
//! and DEL without a previous result still finds them.
//!
//! One JSON file per attachment, `<dataDir>/<network>/<hash>.json`, where
//! the hash is of ifname and container ID (both in the file too):
//! `{"containerID": "..", "ifname": "..", "addresses": ["10.88.0.5/16"]}`.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use cni_types::{Code, Error, IpNetwork};
use serde::{Deserialize, Serialize};

/// Where records are kept when `dataDir` is not given.
pub const DEFAULT_DATA_DIR: &str = "/var/lib/cni/firewall";

/// The most one record may hold: far above any attachment's addresses,
/// and a bound on what a damaged file makes us read.
const MAX_RECORD: u64 = 64 << 10;

/// One attachment's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// `CNI_CONTAINERID`.
    #[serde(rename = "containerID")]
    pub container_id: String,
    /// `CNI_IFNAME`.
    pub ifname: String,
    /// The container's addresses the rules name.
    pub addresses: Vec<IpNetwork>,
}

/// The records of one network.
#[derive(Debug, Clone)]
pub struct Records {
    dir: PathBuf,
}

impl Records {
    /// The records of `network` under `data_dir`; a network name that is
    /// not one path component is code 7 naming `name`.
    pub fn of(data_dir: &Path, network: &str) -> Result<Records, Error> {
        if network.is_empty() || network.contains('/') || network.starts_with('.') {
            return Err(Error::invalid_config(
                "name",
                format!("{network:?}: cannot name a directory of records"),
            ));
        }
        Ok(Records {
            dir: data_dir.join(network),
        })
    }

    fn path(&self, container_id: &str, ifname: &str) -> PathBuf {
        let key = format!("{ifname}:{container_id}");
        self.dir
            .join(format!("{}.json", cni_netfilter::hashed("", &key, 32)))
    }

    /// Writes the attachment's record, replacing an earlier one at once
    /// (a temporary file renamed over it).
    pub fn save(&self, record: &Record) -> Result<(), Error> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| Error::io("create", &self.dir, e))?;
        let path = self.path(&record.container_id, &record.ifname);
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        let json = serde_json::to_vec(record).map_err(|e| {
            Error::new(Code::INTERNAL, "failed to encode a firewall record")
                .with_details(e.to_string())
        })?;
        let written = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(&json))
            .and_then(|()| fs::rename(&tmp, &path));
        written.map_err(|e| {
            let _ = fs::remove_file(&tmp);
            Error::io("write", &path, e)
        })
    }

    /// The attachment's record, if there is one.
    pub fn load(&self, container_id: &str, ifname: &str) -> Result<Option<Record>, Error> {
        read(&self.path(container_id, ifname))
    }

    /// Removes the attachment's record (absent is fine), and the network's
    /// directory once it is empty.
    pub fn remove(&self, container_id: &str, ifname: &str) -> Result<(), Error> {
        let path = self.path(container_id, ifname);
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("remove", &path, e)),
        }
        // Fails while another record is there, as it should.
        let _ = fs::remove_dir(&self.dir);
        Ok(())
    }

    /// Every record of the network; none when its directory is absent.
    pub fn all(&self) -> Result<Vec<Record>, Error> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io("read", &self.dir, e)),
        };
        let mut records = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| Error::io("read", &self.dir, e))?.path();
            if path.extension().is_some_and(|x| x == "json") {
                records.extend(read(&path)?);
            }
        }
        Ok(records)
    }
}

/// The record at `path`; `None` when there is none.
fn read(path: &Path) -> Result<Option<Record>, Error> {
    let bytes = match cni_types::read_regular_file(path, MAX_RECORD) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("read", path, e)),
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        Error::new(
            Code::IO_FAILURE,
            format!("invalid firewall record {}", path.display()),
        )
        .with_details(e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_found_again_by_its_attachment_and_removed_with_its_directory() {
        let data = tempfile::tempdir().unwrap();
        let records = Records::of(data.path(), "net").unwrap();
        let record = Record {
            container_id: "c_1".into(),
            ifname: "eth0".into(),
            addresses: vec!["10.88.0.5/16".parse().unwrap()],
        };
        records.save(&record).unwrap();
        // Underscores in either part do not make two attachments one.
        assert_eq!(records.load("c", "1_eth0").unwrap(), None);
        assert_eq!(records.load("c_1", "eth0").unwrap(), Some(record.clone()));
        assert_eq!(records.all().unwrap(), vec![record]);
        records.remove("c_1", "eth0").unwrap();
        records.remove("c_1", "eth0").unwrap();
        assert!(!data.path().join("net").exists());
    }

    #[test]
    fn a_network_name_that_is_not_one_path_component_is_refused() {
        for name in ["", "a/b", "..", ".hidden"] {
            let err = Records::of(Path::new("/tmp"), name).unwrap_err();
            assert_eq!(err.code.0, 7, "{name:?}");
        }
    }
}
