//! What a plugin says about the versions it supports.

use serde::{Deserialize, Serialize};

use crate::{reconcile, Incompatible, LooseVersion, SpecVersion};

/// The spec versions a plugin supports, kept as the strings given.
///
/// Matching is by exact string (see [`reconcile`](crate::reconcile)); the
/// strings are only parsed, leniently, where an order is needed.
///
/// Go: `version.PluginInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    supported: Vec<String>,
}

impl PluginInfo {
    /// A plugin supporting exactly these versions, in this order.
    ///
    /// Go: `version.PluginSupports`.
    pub fn new<I, S>(versions: I) -> PluginInfo
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        PluginInfo {
            supported: versions.into_iter().map(Into::into).collect(),
        }
    }

    /// Every released version, 0.1.0 to 1.1.0.
    ///
    /// Go: `version.All`.
    pub fn all() -> PluginInfo {
        Self::from_version(SpecVersion::V0_1_0)
    }

    /// The legacy versions 0.1.0 and 0.2.0.
    ///
    /// Go: `version.Legacy`.
    pub fn legacy() -> PluginInfo {
        Self::new(["0.1.0", "0.2.0"])
    }

    /// Every released version from `min` on, inclusive.
    pub fn from_version(min: SpecVersion) -> PluginInfo {
        Self::new(
            SpecVersion::ALL
                .iter()
                .filter(|v| **v >= min)
                .map(ToString::to_string),
        )
    }

    /// The supported versions as advertised.
    ///
    /// Go: `PluginInfo.SupportedVersions`.
    pub fn supported(&self) -> &[String] {
        &self.supported
    }

    /// Checks a configuration's version against this set (exact match).
    ///
    /// Go: `version.Reconciler.Check`.
    pub fn reconcile(&self, config_version: &str) -> Result<(), Incompatible> {
        reconcile(config_version, &self.supported)
    }

    /// The newest supported version in the reference's lenient order; the
    /// current spec version when none parses.
    pub fn newest(&self) -> &str {
        self.supported
            .iter()
            .filter_map(|s| LooseVersion::parse(s).ok().map(|v| (v, s)))
            .max_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, s)| s.as_str())
            .unwrap_or("1.1.0")
    }

    /// The answer to `VERSION`, one JSON line ending in a newline.
    ///
    /// Its `cniVersion` is `requested` when the plugin supports it (the spec:
    /// the answer is in the version the runtime asked in), else the newest
    /// supported version. The reference always answers `1.1.0`; see the
    /// `cni-skel` crate docs for why we follow the spec here.
    pub fn version_answer(&self, requested: Option<&str>) -> Vec<u8> {
        let cni_version = match requested {
            Some(r) if self.supported.iter().any(|s| s == r) => r,
            _ => self.newest(),
        };
        let mut out = serde_json::to_vec(&VersionAnswer {
            cni_version: cni_version.to_owned(),
            supported_versions: self.supported.clone(),
        })
        .unwrap_or_default();
        out.push(b'\n');
        out
    }

    /// Decodes a plugin's `VERSION` answer the way runtimes do: an answer
    /// without `supportedVersions` whose `cniVersion` is 0.2.0 comes from a
    /// plugin that predates the field and means 0.1.0 and 0.2.0.
    ///
    /// Go: `version.PluginDecoder.Decode`.
    pub fn decode(answer: &[u8]) -> Result<PluginInfo, PluginInfoDecodeError> {
        let answer: VersionAnswer = serde_json::from_slice(answer)
            .map_err(|e| PluginInfoDecodeError::Json(e.to_string()))?;
        if answer.cni_version.is_empty() {
            return Err(PluginInfoDecodeError::MissingCniVersion);
        }
        if answer.supported_versions.is_empty() {
            if answer.cni_version == "0.2.0" {
                return Ok(Self::legacy());
            }
            return Err(PluginInfoDecodeError::MissingSupportedVersions);
        }
        Ok(PluginInfo::new(answer.supported_versions))
    }
}

/// The JSON shape of a `VERSION` answer.
#[derive(Serialize, Deserialize)]
struct VersionAnswer {
    #[serde(rename = "cniVersion", default)]
    cni_version: String,
    #[serde(
        rename = "supportedVersions",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    supported_versions: Vec<String>,
}

/// A `VERSION` answer a runtime cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginInfoDecodeError {
    /// Not JSON of the right shape.
    #[error("decoding version info: {0}")]
    Json(String),
    /// No `cniVersion`.
    #[error("decoding version info: missing field cniVersion")]
    MissingCniVersion,
    /// No `supportedVersions` and not a 0.2.0 plugin.
    #[error("decoding version info: missing field supportedVersions")]
    MissingSupportedVersions,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_list_the_expected_versions() {
        assert_eq!(
            PluginInfo::all().supported(),
            ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]
        );
        assert_eq!(PluginInfo::legacy().supported(), ["0.1.0", "0.2.0"]);
        assert_eq!(
            PluginInfo::from_version(SpecVersion::V1_0_0).supported(),
            ["1.0.0", "1.1.0"]
        );
    }

    #[test]
    fn version_answer_uses_the_requested_version_when_supported() {
        let info = PluginInfo::all();
        assert_eq!(
            info.version_answer(Some("0.4.0")),
            b"{\"cniVersion\":\"0.4.0\",\"supportedVersions\":[\"0.1.0\",\"0.2.0\",\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}\n"
        );
        let answer: serde_json::Value =
            serde_json::from_slice(&info.version_answer(Some("9.9.9"))).unwrap();
        assert_eq!(answer["cniVersion"], "1.1.0");
    }

    #[test]
    fn newest_ignores_unparseable_and_orders_leniently() {
        let info = PluginInfo::new(["0.-42.0", "0.10.0", "0.9.0", "junk"]);
        assert_eq!(info.newest(), "0.10.0");
        assert_eq!(PluginInfo::new(Vec::<String>::new()).newest(), "1.1.0");
    }

    #[test]
    fn decoding_a_0_2_0_answer_without_supported_versions_means_legacy() {
        let info = PluginInfo::decode(br#"{"cniVersion":"0.2.0"}"#).unwrap();
        assert_eq!(info, PluginInfo::legacy());
        assert_eq!(
            PluginInfo::decode(br#"{"cniVersion":"0.3.0"}"#),
            Err(PluginInfoDecodeError::MissingSupportedVersions)
        );
        assert_eq!(
            PluginInfo::decode(br#"{"supportedVersions":["0.3.0"]}"#),
            Err(PluginInfoDecodeError::MissingCniVersion)
        );
        assert!(matches!(
            PluginInfo::decode(b"nope"),
            Err(PluginInfoDecodeError::Json(_))
        ));
        let info = PluginInfo::decode(
            br#"{"cniVersion":"1.0.0","supportedVersions":["0.-42.0","1.0.0"]}"#,
        )
        .unwrap();
        assert_eq!(info.supported(), ["0.-42.0", "1.0.0"]);
    }
}
