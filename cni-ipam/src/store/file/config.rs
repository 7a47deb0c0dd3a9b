//! The file store's keys of the `ipam` section: `dataDir`, and `store`.

use std::path::PathBuf;

use cni_types::Extra;

use crate::config::opt_str;
use crate::error::ConfigError;

/// Where reservations live when `dataDir` is not given, as in host-local.
pub const DEFAULT_DATA_DIR: &str = "/var/lib/cni/networks";

/// The file store's keys of the `ipam` section: `dataDir`, and `store`
/// absent or `{"type": "file"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileConfig {
    /// `dataDir` (default [`DEFAULT_DATA_DIR`]), an absolute path; the
    /// network's files are in `dataDir/<network>/`.
    pub data_dir: PathBuf,
}

impl FileConfig {
    /// Reads `dataDir` and `store`; errors name the field.
    pub(super) fn from_section(ipam: &Extra) -> Result<FileConfig, ConfigError> {
        let data_dir = opt_str(ipam, "dataDir", "ipam")?
            .filter(|d| !d.is_empty())
            .unwrap_or(DEFAULT_DATA_DIR);
        // host-local takes a relative path from its working directory,
        // which is the runtime's: two runtimes (or one restarted elsewhere)
        // would keep two stores and hand out one address twice.
        if !data_dir.starts_with('/') {
            return Err(ConfigError::invalid(
                "ipam.dataDir",
                data_dir,
                "a relative path; give an absolute one (a relative one would be taken from the \
                 runtime's working directory, which differs between runtimes)",
            ));
        }
        if let Some(store) = cni_types::go_field(ipam, "store") {
            let obj = store.as_object().ok_or_else(|| {
                ConfigError::invalid("ipam.store", store, "expected an object with a type")
            })?;
            match opt_str(obj, "type", "ipam.store")? {
                None | Some("file") => {}
                Some("etcd") => {
                    return Err(ConfigError::invalid(
                        "ipam.store.type",
                        "etcd",
                        "this plugin keeps reservations in files; the etcd store is served by \
                         ipam-etcd",
                    ))
                }
                Some(other) => {
                    return Err(ConfigError::invalid(
                        "ipam.store.type",
                        other,
                        "unknown store type; expected \"file\" (ipam-file) or \"etcd\" (ipam-etcd)",
                    ))
                }
            }
        }
        Ok(FileConfig {
            data_dir: PathBuf::from(data_dir),
        })
    }
}
