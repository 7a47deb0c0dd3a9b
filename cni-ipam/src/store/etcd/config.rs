//! `"store": {"type": "etcd", "endpoints": [..], "prefix": .., "node": ..,
//! "blockSize": 26, "blockSizeV6": 122, "strictBlocks": false}`: the etcd
//! store's keys of the `ipam` section, validated.

use cni_types::{Error, Extra};
use serde_json::Value;

use crate::config::opt_str;
use crate::error::ConfigError;

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "/cni-ipam";

/// The default prefix length of an IPv4 block: 64 addresses.
pub const DEFAULT_BLOCK_SIZE_V4: u8 = 26;

/// The default prefix length of an IPv6 block: 64 addresses.
pub const DEFAULT_BLOCK_SIZE_V6: u8 = 122;

/// `"store": {"type": "etcd", ...}`: reservations shared by every node of a
/// cluster, in etcd (v3 API).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdConfig {
    /// `endpoints`: `http://host:port` URLs of the etcd cluster's members
    /// (one or more), tried in turn within one deadline per request,
    /// starting with the one that answered last (see "Endpoints and
    /// faults" in [`super`]). Credentials in a URL are refused, and never
    /// shown.
    pub endpoints: Vec<String>,
    /// `prefix` (default [`DEFAULT_PREFIX`]): keys are
    /// `<prefix>/<network>/...`. Letters, digits and `/ - _ .` only,
    /// non-empty once trailing slashes are removed.
    pub prefix: String,
    /// `node`: the name recorded with each reservation, and the scope of
    /// GC; the host name when absent.
    pub node: Option<String>,
    /// `blockSize`: the prefix length of the blocks IPv4 ranges are cut
    /// into, at most 30 (4 addresses) and no shorter than any IPv4 range's
    /// subnet prefix (checked when the ranges are known,
    /// [`crate::store::Store::use_ranges`]). When absent,
    /// [`DEFAULT_BLOCK_SIZE_V4`], or the longest subnet prefix of the
    /// IPv4 ranges when one is longer (a /28 is one block). Fixed for a
    /// network's life: blocks of another size are skipped and named.
    pub block_size_v4: Option<u8>,
    /// `blockSizeV6`: the same for IPv6 ranges, at most 126, by default
    /// [`DEFAULT_BLOCK_SIZE_V6`].
    pub block_size_v6: Option<u8>,
    /// `strictBlocks` (default false): when no block is free, an ADD fails
    /// with [`crate::RANGE_EXHAUSTED`] instead of borrowing one address of
    /// another node's block.
    pub strict_blocks: bool,
}

impl EtcdConfig {
    /// The etcd store's keys of the `ipam` section: `store` must be an
    /// object of type `etcd`. Code 7 naming the field otherwise.
    pub fn from_section(ipam: &Extra) -> Result<EtcdConfig, Error> {
        let store = ipam.get("store").filter(|v| !v.is_null());
        let Some(obj) = store.and_then(Value::as_object) else {
            return Err(ConfigError::invalid(
                "ipam.store",
                store.unwrap_or(&Value::Null),
                "this plugin keeps reservations in etcd: give \"store\": {\"type\": \"etcd\", \"endpoints\": [..]}",
            )
            .into());
        };
        match opt_str(obj, "type", "ipam.store")? {
            Some("etcd") => Ok(EtcdConfig::read(obj)?),
            other => Err(ConfigError::invalid(
                "ipam.store.type",
                other.unwrap_or("file"),
                "this plugin keeps reservations in etcd: give \"store\": {\"type\": \"etcd\", \"endpoints\": [..]}",
            )
            .into()),
        }
    }
    /// The `store` object's keys, validated; errors name the field.
    fn read(obj: &Extra) -> Result<EtcdConfig, ConfigError> {
        let field = "ipam.store.endpoints";
        let list = obj
            .get("endpoints")
            .and_then(Value::as_array)
            .filter(|l| !l.is_empty())
            .ok_or_else(|| {
                ConfigError::invalid(
                    field,
                    obj.get("endpoints").unwrap_or(&Value::Null),
                    "expected a non-empty list of \"http://host:port\"",
                )
            })?;
        let mut endpoints = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            let here = format!("{field}[{i}]");
            let url = item
                .as_str()
                .ok_or_else(|| ConfigError::invalid(&here, item, "expected a string"))?;
            // Checked first, so that no message ever shows them.
            if let Some((_, host)) = url
                .split_once("://")
                .and_then(|(_, rest)| rest.split('/').next()?.rsplit_once('@'))
            {
                return Err(ConfigError::invalid(
                    &here,
                    format!("http://<credentials>@{host}").as_str(),
                    "credentials in an endpoint URL are refused, never sent: this store does not \
                     authenticate to etcd, so give an endpoint that needs no credentials \
                     (reachable only from the nodes)",
                ));
            }
            let rest = url.strip_prefix("http://").ok_or_else(|| {
                ConfigError::invalid(
                    &here,
                    url,
                    "expected http://host:port (TLS is not supported)",
                )
            })?;
            let host = rest.trim_end_matches('/');
            if host.is_empty() || host.contains('/') {
                return Err(ConfigError::invalid(
                    &here,
                    url,
                    "expected http://host:port",
                ));
            }
            endpoints.push(format!("http://{host}"));
        }
        let prefix = read_prefix(obj)?;
        let node = opt_str(obj, "node", "ipam.store")?
            .filter(|n| !n.is_empty())
            .map(str::to_owned);
        if let Some(n) = &node {
            if n.chars().any(|c| c.is_control()) {
                return Err(ConfigError::invalid(
                    "ipam.store.node",
                    n,
                    "control characters",
                ));
            }
        }
        Ok(EtcdConfig {
            endpoints,
            prefix,
            node,
            block_size_v4: read_block_size(obj, "blockSize", 30)?,
            block_size_v6: read_block_size(obj, "blockSizeV6", 126)?,
            strict_blocks: match obj.get("strictBlocks") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(other) => {
                    return Err(ConfigError::invalid(
                        "ipam.store.strictBlocks",
                        other,
                        "expected true or false",
                    ))
                }
            },
        })
    }
}

/// A block size (`key`): a prefix length from 1 to `most` (blocks of at
/// least 4 addresses), if given.
fn read_block_size(obj: &Extra, key: &str, most: u8) -> Result<Option<u8>, ConfigError> {
    let field = format!("ipam.store.{key}");
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|n| (1..=u64::from(most)).contains(n))
            .map(|n| Some(n as u8))
            .ok_or_else(|| {
                ConfigError::invalid(
                    &field,
                    v,
                    &format!(
                        "expected a prefix length from 1 to {most}: a block holds at least 4 \
                         addresses"
                    ),
                )
            }),
    }
}

/// `prefix`: non-empty once trailing slashes are removed, of letters,
/// digits and `/`, `-`, `_`, `.` only, so that every key is printable and
/// no two prefixes name one key space.
fn read_prefix(obj: &Extra) -> Result<String, ConfigError> {
    let Some(given) = opt_str(obj, "prefix", "ipam.store")? else {
        return Ok(DEFAULT_PREFIX.to_owned());
    };
    let prefix = given.trim_end_matches('/');
    if prefix.is_empty() {
        return Err(ConfigError::invalid(
            "ipam.store.prefix",
            given,
            "empty: keys would be at the root of etcd's key space; give one such as \"/cni-ipam\"",
        ));
    }
    if let Some(c) = prefix
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.')))
    {
        return Err(ConfigError::invalid(
            "ipam.store.prefix",
            given,
            &format!("{c:?} is not allowed: use letters, digits and / - _ . only"),
        ));
    }
    Ok(prefix.to_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn invalid_store_sections_are_code_7_naming_the_field_and_never_show_credentials() {
        let endpoints = |e: Value| json!({"store": {"type": "etcd", "endpoints": e}});
        let with = |k: &str, v: &str| json!({"store": {"type": "etcd", "endpoints": ["http://e:2379"], k: v}});
        for (section, msg, value) in [
            (json!({}), "invalid ipam.store", "null"),
            (
                json!({"store": {"type": "file"}}),
                "invalid ipam.store.type",
                "file",
            ),
            (
                endpoints(json!(["https://e:2379"])),
                "invalid ipam.store.endpoints[0]",
                "TLS",
            ),
            (
                endpoints(json!([])),
                "invalid ipam.store.endpoints",
                "non-empty",
            ),
            (
                endpoints(json!(["http://root:s3cret@127.0.0.1:2379"])),
                "invalid ipam.store.endpoints[0]",
                "http://<credentials>@127.0.0.1:2379",
            ),
            (with("prefix", "/"), "invalid ipam.store.prefix", "empty"),
            (
                with("prefix", "/cni\nipam"),
                "invalid ipam.store.prefix",
                "not allowed",
            ),
            (with("node", "a\u{7}"), "invalid ipam.store.node", "control"),
            (
                json!({"store": {"type": "etcd", "endpoints": ["http://e:2379"], "blockSize": 31}}),
                "invalid ipam.store.blockSize",
                "at least 4 addresses",
            ),
            (
                json!({"store": {"type": "etcd", "endpoints": ["http://e:2379"], "blockSizeV6": "x"}}),
                "invalid ipam.store.blockSizeV6",
                "prefix length",
            ),
            (
                json!({"store": {"type": "etcd", "endpoints": ["http://e:2379"], "strictBlocks": 1}}),
                "invalid ipam.store.strictBlocks",
                "true or false",
            ),
        ] {
            let err = EtcdConfig::from_section(section.as_object().unwrap()).unwrap_err();
            assert_eq!(
                (err.code, err.msg.as_str()),
                (cni_types::Code::INVALID_NETWORK_CONFIG, msg),
                "{section}: {err:?}"
            );
            assert!(err.details.contains(value), "{section}: {err:?}");
            assert!(!err.details.contains("s3cret"), "{err:?}");
        }
    }

    #[test]
    fn the_prefix_defaults_and_loses_trailing_slashes() {
        let read =
            |store: Value| EtcdConfig::from_section(json!({"store": store}).as_object().unwrap());
        let cfg = read(json!({"type": "etcd", "endpoints": ["http://e:2379/"]})).unwrap();
        assert_eq!(
            (cfg.endpoints, cfg.prefix.as_str()),
            (vec!["http://e:2379".to_owned()], DEFAULT_PREFIX)
        );
        let cfg =
            read(json!({"type": "etcd", "endpoints": ["http://e:2379"], "prefix": "/k8s/ipam//"}));
        assert_eq!(cfg.unwrap().prefix, "/k8s/ipam");
    }
}
