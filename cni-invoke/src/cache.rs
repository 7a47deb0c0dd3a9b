//! The result cache: what ADD returned, kept for CHECK, DEL and GC, in
//! libcni's format and place so either runtime can read the other's.

use std::path::{Path, PathBuf};

use cni_types::{CniResult, Code, Error};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::RuntimeConf;

/// `kind` of libcni's cache files.
const CACHE_KIND: &str = "cniCacheV1";

/// One cached attachment, as libcni writes it.
///
/// Go: libcni's `cachedInfo`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CachedAttachment {
    /// Always `cniCacheV1`.
    pub kind: String,
    /// The container id.
    #[serde(rename = "containerId")]
    pub container_id: String,
    /// The list's bytes, base64 (Go's encoding of a byte slice).
    #[serde(with = "b64")]
    pub config: Vec<u8>,
    /// The interface name.
    #[serde(rename = "ifName")]
    pub ifname: String,
    /// The network name.
    #[serde(rename = "networkName")]
    pub network_name: String,
    /// The netns path.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub netns: String,
    /// `CNI_ARGS` pairs.
    #[serde(rename = "cniArgs", default, skip_serializing_if = "Vec::is_empty")]
    pub cni_args: Vec<(String, String)>,
    /// Capability arguments.
    #[serde(
        rename = "capabilityArgs",
        default,
        skip_serializing_if = "Map::is_empty"
    )]
    pub capability_args: Map<String, Value>,
    /// The final ADD result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

mod b64 {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = Option::<String>::deserialize(d)?.unwrap_or_default();
        base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(serde::de::Error::custom)
    }
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::new(Code::IO_FAILURE, format!("{what} {}", path.display())).with_details(e.to_string())
}

/// `<cache dir>/results/<network>-<container id>-<ifname>`.
pub(crate) fn path(cache_dir: &Path, network: &str, rt: &RuntimeConf) -> PathBuf {
    cache_dir
        .join("results")
        .join(format!("{network}-{}-{}", rt.container_id, rt.ifname))
}

/// Stores the ADD result (atomically: a temp file renamed into place).
pub(crate) fn store(
    cache_dir: &Path,
    network: &str,
    list_bytes: &[u8],
    rt: &RuntimeConf,
    result: &CniResult,
) -> Result<(), Error> {
    let entry = CachedAttachment {
        kind: CACHE_KIND.into(),
        container_id: rt.container_id.clone(),
        config: list_bytes.to_vec(),
        ifname: rt.ifname.clone(),
        network_name: network.into(),
        netns: rt.netns.clone(),
        cni_args: rt.args.clone(),
        capability_args: rt.capability_args.clone(),
        result: Some(serde_json::to_value(result).unwrap_or(Value::Null)),
    };
    let file = path(cache_dir, network, rt);
    let dir = file.parent().unwrap_or(cache_dir);
    std::fs::create_dir_all(dir).map_err(|e| io_error("cannot create", dir, e))?;
    let tmp = file.with_extension("tmp");
    let bytes = serde_json::to_vec(&entry).unwrap_or_default();
    std::fs::write(&tmp, bytes).map_err(|e| io_error("cannot write", &tmp, e))?;
    std::fs::rename(&tmp, &file).map_err(|e| io_error("cannot write", &file, e))
}

/// The cached result in `version`, or `None` when nothing (readable) is
/// cached.
pub(crate) fn load(
    cache_dir: &Path,
    network: &str,
    rt: &RuntimeConf,
    version: &str,
) -> Result<Option<CniResult>, Error> {
    let Ok(bytes) = std::fs::read(path(cache_dir, network, rt)) else {
        return Ok(None);
    };
    let Ok(entry) = serde_json::from_slice::<CachedAttachment>(&bytes) else {
        return Ok(None);
    };
    let Some(result) = entry.result.filter(|_| entry.kind == CACHE_KIND) else {
        return Ok(None);
    };
    let own = result
        .get("cniVersion")
        .and_then(Value::as_str)
        .unwrap_or(version)
        .to_owned();
    let parsed = CniResult::from_value(&own, result)
        .and_then(|r| {
            Ok(r.into_version(
                &cni_types::SpecVersion::parse(version)
                    .map_err(|e| cni_types::ResultError::UnsupportedVersion(e.version))?,
            )?)
        })
        .map_err(|e| {
            Error::new(
                Code::DECODING_FAILURE,
                format!("failed to read the cached result of {network}"),
            )
            .with_details(e.to_string())
        })?;
    Ok(Some(parsed))
}

/// Removes the cache entry; a missing one is fine.
pub(crate) fn remove(cache_dir: &Path, network: &str, rt: &RuntimeConf) {
    let _ = std::fs::remove_file(path(cache_dir, network, rt));
}

/// Every cached attachment of `network`.
pub(crate) fn attachments(cache_dir: &Path, network: &str) -> Vec<CachedAttachment> {
    let Ok(entries) = std::fs::read_dir(cache_dir.join("results")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|b| serde_json::from_slice::<CachedAttachment>(&b).ok())
        .filter(|a| a.kind == CACHE_KIND && a.network_name == network)
        .collect()
}
