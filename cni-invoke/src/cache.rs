//! The result cache: what ADD returned, kept for CHECK, DEL and GC, in
//! libcni's format and place so either runtime can read the other's.

use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use cni_types::{CniResult, Error};
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

/// `<cache dir>/results/<network>-<container id>-<ifname>`.
pub(crate) fn path(cache_dir: &Path, network: &str, rt: &RuntimeConf) -> PathBuf {
    cache_dir
        .join("results")
        .join(format!("{network}-{}-{}", rt.container_id, rt.ifname))
}

/// Stores the ADD result, in a directory of mode 0700 and a file of mode
/// 0600 as libcni's `cacheAdd` makes them. Atomically: a temporary file
/// of its own (`.NAME.XXXXXX.tmp`, unique even among attachments whose
/// names differ only after a dot, `eth0.100` and `eth0.200`), renamed into
/// place, so concurrent ADDs never lose or swap each other's entry.
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
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::io("create", dir, e))?;
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // tempfile creates it with mode 0600 and a random suffix.
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| Error::io("create a temporary file in", dir, e))?;
    let bytes = serde_json::to_vec(&entry).unwrap_or_default();
    tmp.write_all(&bytes)
        .map_err(|e| Error::io("write", tmp.path(), e))?;
    tmp.persist(&file)
        .map_err(|e| Error::io("write", &file, e.error))?;
    Ok(())
}

/// Whether a file in `results/` is an entry, not one being written.
fn is_entry(name: &std::ffi::OsStr) -> bool {
    !name.as_encoded_bytes().starts_with(b".")
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
        .map_err(|e| Error::decoding(&format!("the cached result of {network}"), e))?;
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
        .filter(|e| is_entry(&e.file_name()))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|b| serde_json::from_slice::<CachedAttachment>(&b).ok())
        .filter(|a| a.kind == CACHE_KIND && a.network_name == network)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni_types::Code;
    use std::os::unix::fs::PermissionsExt;

    fn attachment(ifname: &str) -> RuntimeConf {
        RuntimeConf {
            container_id: "c1".into(),
            netns: "/var/run/netns/none".into(),
            ifname: ifname.into(),
            ..RuntimeConf::default()
        }
    }

    fn result() -> CniResult {
        CniResult::parse_as_given("1.0.0", br#"{"cniVersion":"1.0.0"}"#).unwrap()
    }

    #[test]
    fn concurrent_adds_of_names_alike_up_to_a_dot_keep_their_own_entries() {
        // `eth0.100` and `eth0.200` once shared the temporary file
        // `net-c1-eth0.tmp`: entries were lost (a rename found nothing)
        // or swapped (one rename moved the other's bytes).
        let dir = tempfile::tempdir().unwrap();
        let stores = |ifname: &'static str| {
            let cache = dir.path();
            move || {
                let rt = attachment(ifname);
                for _ in 0..300 {
                    store(cache, "net", b"{}", &rt, &result())?;
                    let bytes = std::fs::read(path(cache, "net", &rt))
                        .map_err(|e| Error::io("read", cache, e))?;
                    let entry: CachedAttachment = serde_json::from_slice(&bytes)
                        .map_err(|e| Error::decoding("the entry", e))?;
                    if entry.ifname != ifname {
                        return Err(Error::new(
                            Code::INTERNAL,
                            format!("{ifname}'s entry holds {}", entry.ifname),
                        ));
                    }
                }
                Ok(())
            }
        };
        std::thread::scope(|scope| {
            let a = scope.spawn(stores("eth0.100"));
            let b = scope.spawn(stores("eth0.200"));
            a.join().unwrap().unwrap();
            b.join().unwrap().unwrap();
        });
        let mut left: Vec<String> = std::fs::read_dir(dir.path().join("results"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["net-c1-eth0.100", "net-c1-eth0.200"]);
    }

    #[test]
    fn the_cache_is_private_to_its_owner_as_libcni_makes_it() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let rt = attachment("eth0");
        store(&cache, "net", b"{}", &rt, &result()).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&cache), 0o700);
        assert_eq!(mode(&cache.join("results")), 0o700);
        assert_eq!(mode(&path(&cache, "net", &rt)), 0o600);
    }

    #[test]
    fn a_file_being_written_is_not_an_attachment() {
        let dir = tempfile::tempdir().unwrap();
        let rt = attachment("eth0");
        store(dir.path(), "net", b"{}", &rt, &result()).unwrap();
        let entry = std::fs::read(path(dir.path(), "net", &rt)).unwrap();
        std::fs::write(dir.path().join("results/.net-c1-eth0.abc123.tmp"), &entry).unwrap();
        assert_eq!(attachments(dir.path(), "net").len(), 1);
    }
}
