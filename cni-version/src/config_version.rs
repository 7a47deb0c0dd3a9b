//! Reading the version of a configuration.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use crate::{LooseVersion, LooseVersionError};

/// The version fields of a configuration or configuration list.
///
/// Go: `version.ConfigDecoder`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigVersion {
    /// `cniVersion`; `"0.1.0"` when absent, null or empty, as in the
    /// reference library. Kept verbatim: reconciliation is by exact string.
    pub cni_version: String,
    /// 1.1.0's `cniVersions` list (empty when absent).
    pub cni_versions: Vec<String>,
}

/// A configuration whose version fields cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigVersionError {
    /// Not a JSON object, or a version field of the wrong type.
    #[error("decoding version from network config: {0}")]
    Json(#[from] serde_json::Error),
    /// `cniVersion` is present but not a string.
    #[error("decoding version from network config: cniVersion must be a string, got {0}")]
    NotAString(Value),
    /// `cniVersions` is present but not a list of strings.
    #[error(
        "decoding version from network config: cniVersions must be a list of strings, got {0}"
    )]
    NotAList(Value),
    /// An entry of `cniVersions` is not a version even to the lenient parser.
    #[error("invalid cniVersions entry: {0}")]
    BadEntry(#[from] LooseVersionError),
}

impl ConfigVersion {
    /// Reads `cniVersion` and `cniVersions` from a configuration.
    ///
    /// Keys match as the reference's JSON decoder matches struct fields
    /// (exactly, else ASCII-case-insensitively), so the same documents are
    /// accepted and rejected; the rest of the document is checked for JSON
    /// syntax only.
    pub fn from_json(json: &[u8]) -> Result<ConfigVersion, ConfigVersionError> {
        let [version, versions] = peek_fields(json, ["cniVersion", "cniVersions"])?;
        let cni_version = match version {
            None => String::new(),
            Some(Value::String(s)) => s,
            Some(other) => return Err(ConfigVersionError::NotAString(other)),
        };
        let cni_versions = match versions {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s),
                    other => Err(ConfigVersionError::NotAList(other)),
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(ConfigVersionError::NotAList(other)),
        };
        Ok(ConfigVersion {
            cni_version: if cni_version.is_empty() {
                "0.1.0".to_owned()
            } else {
                cni_version
            },
            cni_versions,
        })
    }

    /// The version a runtime that implements at most `limit` uses for this
    /// configuration: the highest of `cniVersions` and `cniVersion` that is
    /// not newer than `limit` (the 1.1.0 rule), or `cniVersion` when the list
    /// is empty or nothing in it qualifies.
    pub fn highest_up_to(&self, limit: &str) -> Result<String, LooseVersionError> {
        let mut best: Option<(LooseVersion, &str)> = None;
        for v in self
            .cni_versions
            .iter()
            .chain(std::iter::once(&self.cni_version))
        {
            let parsed = LooseVersion::parse(v)?;
            if parsed > LooseVersion::parse(limit)? {
                continue;
            }
            if best.is_none_or(|(b, _)| parsed > b) {
                best = Some((parsed, v));
            }
        }
        Ok(best.map_or_else(|| self.cni_version.clone(), |(_, v)| v.to_owned()))
    }
}

/// Reads top-level fields of a JSON object the way the reference's decoder
/// fills a struct with those fields: keys match exactly or case-insensitively
/// (see [`json_key_matches`]), the last occurrence wins, `null` leaves a field
/// unset, and a top-level `null` is an object with no fields. Every other value
/// is only checked for syntax.
pub fn peek_fields<const N: usize>(
    json: &[u8],
    names: [&'static str; N],
) -> Result<[Option<Value>; N], serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let out = PeekFields { names }.deserialize(&mut de)?;
    de.end()?;
    Ok(out)
}

/// Whether a JSON object key fills the struct field `field` in the
/// reference's decoder: an exact match, or equal under simple case folding
/// (which also maps `ſ` to `s` and the Kelvin sign to `k`).
pub fn json_key_matches(key: &str, field: &str) -> bool {
    if key == field {
        return true;
    }
    let mut k = key.chars();
    let mut f = field.chars();
    loop {
        match (k.next(), f.next()) {
            (None, None) => return true,
            (Some(a), Some(b)) => {
                let a = match a {
                    '\u{17f}' => 's',
                    '\u{212a}' => 'k',
                    a => a.to_ascii_lowercase(),
                };
                if a != b.to_ascii_lowercase() {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

struct PeekFields<const N: usize> {
    names: [&'static str; N],
}

impl<'de, const N: usize> DeserializeSeed<'de> for PeekFields<N> {
    type Value = [Option<Value>; N];
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, const N: usize> Visitor<'de> for PeekFields<N> {
    type Value = [Option<Value>; N];

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(std::array::from_fn(|_| None))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out: [Option<Value>; N] = std::array::from_fn(|_| None);
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let exact = self.names.iter().position(|n| *n == key);
            let slot = exact.or_else(|| self.names.iter().position(|n| json_key_matches(&key, n)));
            match slot {
                Some(i) => match map.next_value::<Value>()? {
                    Value::Null => {}
                    v => out[i] = Some(v),
                },
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_or_empty_version_means_0_1_0() {
        for json in [
            &br#"{"name":"n"}"#[..],
            br#"{"cniVersion":""}"#,
            br#"{"cniVersion":null}"#,
            b"null",
        ] {
            assert_eq!(ConfigVersion::from_json(json).unwrap().cni_version, "0.1.0");
        }
    }

    #[test]
    fn version_is_kept_verbatim() {
        let v = ConfigVersion::from_json(br#"{"cniVersion":"1.0"}"#).unwrap();
        assert_eq!(v.cni_version, "1.0");
    }

    #[test]
    fn keys_match_case_insensitively_and_last_wins() {
        let v =
            ConfigVersion::from_json(br#"{"cniVersion":"0.3.1","CNIVERSION":"0.4.0"}"#).unwrap();
        assert_eq!(v.cni_version, "0.4.0");
        let v = ConfigVersion::from_json(br#"{"cniVersion":"0.3.1","cniversion":null}"#).unwrap();
        assert_eq!(v.cni_version, "0.3.1");
        assert!(json_key_matches("cniVer\u{17f}ion", "cniVersion"));
        assert!(!json_key_matches("cniVersio", "cniVersion"));
    }

    #[test]
    fn malformed_version_fields_are_typed_errors() {
        assert!(matches!(
            ConfigVersion::from_json(br#"{"cniVersion":1}"#),
            Err(ConfigVersionError::NotAString(_))
        ));
        assert!(matches!(
            ConfigVersion::from_json(br#"{"cniVersions":"1.0.0"}"#),
            Err(ConfigVersionError::NotAList(_))
        ));
        for bad in [&b"[]"[..], b"\"x\"", b"", b"{", b"{} {}", b"{\"a\":01}"] {
            assert!(
                matches!(
                    ConfigVersion::from_json(bad),
                    Err(ConfigVersionError::Json(_))
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn other_fields_are_only_syntax_checked() {
        let v =
            ConfigVersion::from_json(br#"{"big":1e400,"deep":[[[[[]]]]],"cniVersion":"1.0.0"}"#)
                .unwrap();
        assert_eq!(v.cni_version, "1.0.0");
    }

    #[test]
    fn highest_listed_version_up_to_the_limit_wins() {
        let v = ConfigVersion::from_json(
            br#"{"cniVersion":"0.4.0","cniVersions":["1.0.0","1.1.0","2.0.0"]}"#,
        )
        .unwrap();
        assert_eq!(v.highest_up_to("1.1.0").unwrap(), "1.1.0");
        assert_eq!(v.highest_up_to("1.0.0").unwrap(), "1.0.0");
        let v = ConfigVersion::from_json(br#"{"cniVersion":"1.0.0"}"#).unwrap();
        assert_eq!(v.highest_up_to("1.1.0").unwrap(), "1.0.0");
        let v = ConfigVersion::from_json(br#"{"cniVersions":["x"]}"#).unwrap();
        assert!(v.highest_up_to("1.1.0").is_err());
    }
}
