//! The suite on the file store, and what only it has: the lock file.

use std::fs;
use std::net::IpAddr;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use cni_ipam::store::file::{FileStore, LAST_RESERVED_PREFIX, LOCK_FILE};
use serde_json::{json, Value};

use crate::suite::{Backend, NETWORK};

/// A temporary data directory.
pub struct Files {
    data: tempfile::TempDir,
}

impl Files {
    fn dir(&self) -> PathBuf {
        self.data.path().join(NETWORK)
    }
}

impl Backend for Files {
    type Store = FileStore;

    fn start() -> Files {
        Files {
            data: tempfile::tempdir().expect("temporary directory"),
        }
    }

    fn ipam(&self) -> Value {
        json!({"type": "ipam-file", "dataDir": self.data.path()})
    }

    fn plant_legacy(&self, ip: IpAddr, container_id: &str) {
        fs::create_dir_all(self.dir()).expect("mkdir");
        fs::write(self.dir().join(ip.to_string()), container_id).expect("write");
    }

    fn plant_stray(&self, ip: IpAddr) {
        fs::create_dir_all(self.dir().join(ip.to_string())).expect("mkdir");
    }

    fn bookkeeping(&self) -> Vec<String> {
        let mut out: Vec<String> = fs::read_dir(self.dir())
            .expect("store directory")
            .flatten()
            .filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name == LOCK_FILE || name.starts_with(LAST_RESERVED_PREFIX)
            })
            .map(|e| {
                let meta = fs::symlink_metadata(e.path()).expect("metadata");
                let content = fs::read_to_string(e.path()).expect("read");
                format!(
                    "{} inode {} {content:?}",
                    e.file_name().to_string_lossy(),
                    meta.ino()
                )
            })
            .collect();
        out.sort();
        out
    }
}

crate::store_suite!(Files);
