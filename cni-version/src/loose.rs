//! The reference library's lenient version parser.
//!
//! The reference `version.ParseVersion` treats `""` as 0.1.0, accepts one to
//! three dot-separated parts, and parses each with Go's `strconv.Atoi` (an
//! optional sign, decimal digits). Its ordering gates (`CHECK` needs a
//! configuration >= 0.4.0, `GC` and `STATUS` >= 1.1.0) and the choice among
//! `cniVersions` use it; so do ours, so that `"1.0"` or the reference test
//! double's `"0.-42.0"` are ordered exactly as the reference orders them,
//! and a version it cannot parse fails where the reference's fails.

use std::cmp::Ordering;
use std::fmt;

/// A `major.minor.micro` triple parsed the way the reference library does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LooseVersion {
    /// Major part.
    pub major: i64,
    /// Minor part (0 when absent).
    pub minor: i64,
    /// Micro part (0 when absent).
    pub micro: i64,
}

/// A version the lenient parser cannot read either.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LooseVersionError {
    /// Four or more dot-separated parts.
    #[error("invalid version {0:?}: too many parts")]
    TooManyParts(String),
    /// A part that is not a decimal integer.
    #[error("failed to convert {which} version part {part:?}")]
    BadPart {
        /// `major`, `minor` or `micro`.
        which: &'static str,
        /// The offending part.
        part: String,
    },
}

impl LooseVersion {
    /// Parses like the reference `ParseVersion`; `""` means 0.1.0.
    pub fn parse(s: &str) -> Result<LooseVersion, LooseVersionError> {
        if s.is_empty() {
            return Ok(LooseVersion {
                major: 0,
                minor: 1,
                micro: 0,
            });
        }
        let parts: Vec<&str> = s.split('.').collect();
        if parts.len() >= 4 {
            return Err(LooseVersionError::TooManyParts(s.to_owned()));
        }
        let part = |i: usize, which: &'static str| -> Result<i64, LooseVersionError> {
            match parts.get(i) {
                None => Ok(0),
                Some(p) => atoi(p).ok_or_else(|| LooseVersionError::BadPart {
                    which,
                    part: (*p).to_owned(),
                }),
            }
        };
        Ok(LooseVersion {
            major: part(0, "major")?,
            minor: part(1, "minor")?,
            micro: part(2, "micro")?,
        })
    }

    /// `a >= b` with both parsed leniently, as the reference
    /// `GreaterThanOrEqualTo`.
    pub fn greater_or_equal(a: &str, b: &str) -> Result<bool, LooseVersionError> {
        Ok(Self::parse(a)?.cmp(&Self::parse(b)?) != Ordering::Less)
    }

    /// `a > b` with both parsed leniently, as the reference `GreaterThan`.
    pub fn greater(a: &str, b: &str) -> Result<bool, LooseVersionError> {
        Ok(Self::parse(a)? > Self::parse(b)?)
    }
}

impl fmt::Display for LooseVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.micro)
    }
}

/// Go's `strconv.Atoi`: optional `+`/`-`, then at least one ASCII digit, in
/// range of a 64-bit int.
fn atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // i64's parser takes the same sign syntax as Go.
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_means_0_1_0() {
        assert_eq!(LooseVersion::parse("").unwrap().to_string(), "0.1.0");
    }

    #[test]
    fn short_and_signed_versions_parse_like_the_reference() {
        assert_eq!(LooseVersion::parse("1").unwrap().to_string(), "1.0.0");
        assert_eq!(LooseVersion::parse("1.0").unwrap().to_string(), "1.0.0");
        assert_eq!(
            LooseVersion::parse("0.-42.0").unwrap().to_string(),
            "0.-42.0"
        );
        assert_eq!(LooseVersion::parse("+1.+2.3").unwrap().to_string(), "1.2.3");
    }

    #[test]
    fn unparseable_versions_are_errors() {
        for bad in [
            "1.0.0.0",
            "a.b.c",
            "1..0",
            "1.0.",
            "v1",
            "1.0.0-rc1",
            " 1",
            "-",
        ] {
            assert!(LooseVersion::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ordering_gates_compare_numerically() {
        assert!(LooseVersion::greater_or_equal("0.4.0", "0.4.0").unwrap());
        assert!(LooseVersion::greater_or_equal("0.10.0", "0.4.0").unwrap());
        assert!(!LooseVersion::greater_or_equal("0.3.1", "0.4.0").unwrap());
        assert!(!LooseVersion::greater_or_equal("0.-42.0", "0.1.0").unwrap());
        assert!(LooseVersion::greater("1.1.0", "1.0.0").unwrap());
        assert!(!LooseVersion::greater("1.0", "1.0.0").unwrap());
    }
}
