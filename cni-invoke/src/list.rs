//! Network configuration lists as a runtime loads them.

use std::path::Path;

use cni_types::validate::validate_network_name;
use cni_types::{Code, Error, Extra, NetConfList};
use serde_json::Value;

/// A network configuration list, with the bytes it was read from (the
/// result cache keeps them, as libcni's does).
///
/// Go: `libcni.NetworkConfigList`.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkList {
    /// The parsed list.
    pub list: NetConfList,
    /// The bytes it was read from.
    pub bytes: Vec<u8>,
}

impl NetworkList {
    /// Reads a `.conflist`: a name, and plugins that each have a `type`.
    ///
    /// Go: `libcni.ConfListFromBytes`.
    pub fn from_bytes(bytes: &[u8]) -> Result<NetworkList, Error> {
        let list: NetConfList = serde_json::from_slice(bytes)
            .map_err(|e| Error::decoding("the configuration list", e))?;
        if list.name.is_empty() {
            return Err(Error::invalid_config("name", "the list has none"));
        }
        validate_network_name(&list.name)?;
        if list.plugins.is_empty() {
            return Err(Error::invalid_config("plugins", "no plugins in list"));
        }
        for (i, plugin) in list.plugins.iter().enumerate() {
            if plugin
                .get("type")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                return Err(Error::invalid_config(
                    &format!("plugins[{i}].type"),
                    "missing or empty",
                ));
            }
        }
        Ok(NetworkList {
            list,
            bytes: bytes.to_vec(),
        })
    }

    /// Wraps a single plugin configuration (`.conf`) into a list of one, as
    /// runtimes do.
    ///
    /// Go: `libcni.ConfListFromConf`.
    pub fn from_plugin_config(bytes: &[u8]) -> Result<NetworkList, Error> {
        let conf: Extra =
            serde_json::from_slice(bytes).map_err(|e| Error::decoding("the configuration", e))?;
        let list = serde_json::json!({
            "name": conf.get("name").cloned().unwrap_or(Value::Null),
            "cniVersion": conf.get("cniVersion").cloned().unwrap_or(Value::Null),
            "plugins": [conf],
        });
        Self::from_bytes(&serde_json::to_vec(&list).unwrap_or_default())
    }

    /// Reads a list or a single configuration, whichever `bytes` holds.
    pub fn from_any(bytes: &[u8]) -> Result<NetworkList, Error> {
        let is_list = serde_json::from_slice::<Extra>(bytes)
            .map(|m| m.contains_key("plugins"))
            .unwrap_or(true);
        if is_list {
            Self::from_bytes(bytes)
        } else {
            Self::from_plugin_config(bytes)
        }
    }

    /// Finds the network `name` in a configuration directory as libcni
    /// does: `.conflist` files first, then `.conf` and `.json`, each in file
    /// name order.
    ///
    /// Go: `libcni.LoadConfList`.
    pub fn load(dir: &Path, name: &str) -> Result<NetworkList, Error> {
        let mut lists = Vec::new();
        let mut singles = Vec::new();
        let entries =
            std::fs::read_dir(dir).map_err(|e| Error::io("read config directory", dir, e))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_file() {
                continue;
            }
            match path.extension().and_then(|e| e.to_str()) {
                Some("conflist") => lists.push(path),
                Some("conf" | "json") => singles.push(path),
                _ => {}
            }
        }
        lists.sort();
        singles.sort();
        let read = |p: &Path| std::fs::read(p).map_err(|e| Error::io("read", p, e));
        for path in &lists {
            let list = Self::from_bytes(&read(path)?)
                .map_err(|e| e.with_details(format!("{}", path.display())))?;
            if list.list.name == name {
                return Ok(list);
            }
        }
        for path in &singles {
            let bytes = read(path)?;
            let conf: Extra = serde_json::from_slice(&bytes)
                .map_err(|e| Error::decoding(&path.display().to_string(), e))?;
            if conf.get("name").and_then(Value::as_str) == Some(name) {
                return Self::from_plugin_config(&bytes);
            }
        }
        Err(Error::new(
            Code::INVALID_NETWORK_CONFIG,
            format!(
                "no net configuration with name {name:?} in {}",
                dir.display()
            ),
        ))
    }

    /// The list's `cniVersion` (0.1.0 when absent).
    pub fn version(&self) -> &str {
        if self.list.cni_version.is_empty() {
            "0.1.0"
        } else {
            &self.list.cni_version
        }
    }
}
