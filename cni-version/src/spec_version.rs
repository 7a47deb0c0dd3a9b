//! Released CNI specification versions.

use std::fmt;
use std::str::FromStr;

use semver::{BuildMetadata, Prerelease, Version};

/// A CNI specification version such as `1.0.0`.
///
/// Backed by [`semver::Version`], so it orders the way the spec's versions do.
/// Only plain `MAJOR.MINOR.PATCH` versions are accepted: the spec has never
/// released anything with a pre-release or build suffix.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SpecVersion(Version);

const fn v(major: u64, minor: u64, patch: u64) -> SpecVersion {
    SpecVersion(Version {
        major,
        minor,
        patch,
        pre: Prerelease::EMPTY,
        build: BuildMetadata::EMPTY,
    })
}

impl SpecVersion {
    /// 0.1.0, the original proposal; also what a configuration without
    /// `cniVersion` means.
    pub const V0_1_0: SpecVersion = v(0, 1, 0);
    /// 0.2.0: results gain `cniVersion`.
    pub const V0_2_0: SpecVersion = v(0, 2, 0);
    /// 0.3.0: results gain `interfaces` and the `ips` list.
    pub const V0_3_0: SpecVersion = v(0, 3, 0);
    /// 0.3.1: same result format as 0.3.0.
    pub const V0_3_1: SpecVersion = v(0, 3, 1);
    /// 0.4.0: adds CHECK.
    pub const V0_4_0: SpecVersion = v(0, 4, 0);
    /// 1.0.0: `ips[].version` removed.
    pub const V1_0_0: SpecVersion = v(1, 0, 0);
    /// 1.1.0: adds GC and STATUS and new optional result fields.
    pub const V1_1_0: SpecVersion = v(1, 1, 0);

    /// Every released version, oldest first.
    pub const ALL: [SpecVersion; 7] = [
        Self::V0_1_0,
        Self::V0_2_0,
        Self::V0_3_0,
        Self::V0_3_1,
        Self::V0_4_0,
        Self::V1_0_0,
        Self::V1_1_0,
    ];

    /// The newest version this crate knows.
    ///
    /// Go: `version.Current`.
    pub const CURRENT: SpecVersion = Self::V1_1_0;

    /// Parses a version such as `"0.4.0"`; any valid `MAJOR.MINOR.PATCH` is
    /// accepted, known or not (see [`SpecVersion::is_released`]).
    pub fn parse(s: &str) -> Result<SpecVersion, SpecVersionError> {
        let version = Version::parse(s).map_err(|e| SpecVersionError {
            version: s.to_owned(),
            reason: e.to_string(),
        })?;
        if !version.pre.is_empty() || !version.build.is_empty() {
            return Err(SpecVersionError {
                version: s.to_owned(),
                reason: "pre-release and build suffixes are not CNI versions".to_owned(),
            });
        }
        Ok(SpecVersion(version))
    }

    /// Whether this is one of the seven released versions.
    pub fn is_released(&self) -> bool {
        Self::ALL.contains(self)
    }

    /// The underlying semver version.
    pub fn as_semver(&self) -> &Version {
        &self.0
    }
}

impl fmt::Display for SpecVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl FromStr for SpecVersion {
    type Err = SpecVersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl serde::Serialize for SpecVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for SpecVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        SpecVersion::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// A string that is not a `MAJOR.MINOR.PATCH` version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CNI version {version:?}: {reason}")]
pub struct SpecVersionError {
    /// The text that failed to parse.
    pub version: String,
    /// Why it failed.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_versions_are_ordered_oldest_first() {
        let mut sorted = SpecVersion::ALL.to_vec();
        sorted.sort();
        assert_eq!(sorted, SpecVersion::ALL.to_vec());
        assert!(SpecVersion::V0_3_1 > SpecVersion::V0_3_0);
        assert!(SpecVersion::V1_0_0 > SpecVersion::V0_4_0);
    }

    #[test]
    fn parse_and_display_round_trip() {
        for v in SpecVersion::ALL {
            assert_eq!(SpecVersion::parse(&v.to_string()).unwrap(), v);
        }
        assert!(!SpecVersion::parse("2.0.0").unwrap().is_released());
    }

    #[test]
    fn malformed_versions_are_typed_errors_naming_the_value() {
        for bad in ["", "1.0", "0.-42.0", "v1.0.0", "1.0.0-rc1", "1.0.0+x"] {
            let err = SpecVersion::parse(bad).unwrap_err();
            assert_eq!(err.version, bad);
            assert!(err.to_string().contains(&format!("{bad:?}")));
        }
    }
}
