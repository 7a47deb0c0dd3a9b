//! Results of every spec version, and one type that holds any of them.

mod convert;
mod v020;
mod v040;
mod v100;

use std::borrow::Cow;

use cni_version::SpecVersion;
use serde::{Deserialize, Serialize};

pub use convert::ConvertError;
pub use v020::{IpConfig020, Result020};
pub use v040::{IpConfig040, Result040};
pub use v100::{Interface, IpConfig, Result100};

use crate::{Dns, Route};

/// A success result of any spec version.
///
/// Parse raw JSON in a given version, print it, and convert it to any other
/// of the seven versions with the reference library's semantics (see
/// [`CniResult::convert_to`]).
///
/// ```
/// use cni_types::{CniResult, SpecVersion};
///
/// let json = br#"{"cniVersion":"0.2.0","ip4":{"ip":"10.1.0.5/16","gateway":"10.1.0.1"}}"#;
/// let r = CniResult::parse("0.2.0", json).unwrap();
/// let new = r.convert_to(&SpecVersion::V1_0_0).unwrap();
/// let v: serde_json::Value = serde_json::from_slice(&new.to_json()).unwrap();
/// assert_eq!(v, serde_json::json!({
///     "cniVersion": "1.0.0",
///     "ips": [{"address": "10.1.0.5/16", "gateway": "10.1.0.1"}]
/// }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CniResult {
    /// 0.1.0 or 0.2.0.
    V020(Result020),
    /// 0.3.0, 0.3.1 or 0.4.0.
    V040(Result040),
    /// 1.0.0 or 1.1.0.
    V100(Result100),
}

/// A result that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    /// The version is not one of the seven released ones.
    #[error("unsupported CNI result version {0:?}")]
    UnsupportedVersion(String),
    /// The JSON does not have the shape of a result.
    #[error("failed to decode CNI result: {0}")]
    Json(#[from] serde_json::Error),
    /// The result's own version cannot be converted to the requested one.
    #[error(transparent)]
    Convert(#[from] ConvertError),
}

/// The union of every version's fields, read in one pass; the version then
/// decides which of them the result keeps (others are ignored, as the
/// reference's decoder ignores unknown keys).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct Wire {
    #[serde(rename = "cniVersion", default)]
    cni_version: Option<String>,
    #[serde(default)]
    ip4: Option<IpConfig020>,
    #[serde(default)]
    ip6: Option<IpConfig020>,
    #[serde(default, deserialize_with = "crate::serde_util::null_as_default")]
    interfaces: Vec<Interface>,
    #[serde(default, deserialize_with = "crate::serde_util::null_as_default")]
    ips: Vec<IpConfig040>,
    #[serde(default, deserialize_with = "crate::serde_util::null_as_default")]
    routes: Vec<Route>,
    #[serde(default, deserialize_with = "crate::serde_util::null_as_default")]
    dns: Dns,
}

/// A released version, or the error naming the text.
pub(crate) fn released(version: &str) -> Result<SpecVersion, ResultError> {
    SpecVersion::parse(version)
        .ok()
        .filter(SpecVersion::is_released)
        .ok_or_else(|| ResultError::UnsupportedVersion(version.to_owned()))
}

impl CniResult {
    /// Reads a result and returns it in `version`.
    ///
    /// The result is read in its own `cniVersion` when it carries one, else
    /// in `version`, and then converted to `version` (so a 0.4.0 result read
    /// for a 1.0.0 configuration comes back as 1.0.0).
    pub fn parse(version: &str, json: &[u8]) -> Result<CniResult, ResultError> {
        let wanted = released(version)?;
        let wire: Wire = serde_json::from_slice(json)?;
        Self::wire_in_version(wanted, version, wire)
    }

    /// Like [`CniResult::parse`], for a result already read as part of a
    /// larger document (a configuration's `prevResult`).
    pub(crate) fn from_wire_in(version: &str, wire: Wire) -> Result<CniResult, ResultError> {
        Self::wire_in_version(released(version)?, version, wire)
    }

    /// `wire` read in its own version (else `fallback`), then in `wanted`
    /// (a result already there is returned as it is).
    fn wire_in_version(
        wanted: SpecVersion,
        fallback: &str,
        wire: Wire,
    ) -> Result<CniResult, ResultError> {
        Ok(Self::resolve(fallback, wire)?.into_version(&wanted)?)
    }

    /// Reads a result in its own `cniVersion`, or in `fallback` when it has
    /// none (an IPAM plugin's abbreviated result), without converting it: a
    /// runtime passes a plugin's result on as the plugin gave it.
    ///
    /// Go: `create.Create`.
    pub fn parse_as_given(fallback: &str, json: &[u8]) -> Result<CniResult, ResultError> {
        let wire: Wire = serde_json::from_slice(json)?;
        Self::resolve(fallback, wire)
    }

    /// Reads a result from an already-parsed JSON value (such as a
    /// configuration's `prevResult`), like [`CniResult::parse`].
    pub fn from_value(version: &str, value: serde_json::Value) -> Result<CniResult, ResultError> {
        let wanted = released(version)?;
        let wire: Wire = serde_json::from_value(value)?;
        Self::wire_in_version(wanted, version, wire)
    }

    fn resolve(fallback: &str, wire: Wire) -> Result<CniResult, ResultError> {
        let own = match wire.cni_version.as_deref() {
            None | Some("") => released(fallback)?,
            Some(v) => released(v)?,
        };
        Ok(CniResult::from_wire(wire, own))
    }

    fn from_wire(wire: Wire, version: SpecVersion) -> CniResult {
        if version < SpecVersion::V0_3_0 {
            CniResult::V020(Result020 {
                cni_version: version,
                ip4: wire.ip4,
                ip6: wire.ip6,
                dns: wire.dns,
            })
        } else if version < SpecVersion::V1_0_0 {
            CniResult::V040(Result040 {
                cni_version: version,
                // 0.x interfaces have no 1.1.0 fields; the reference drops them.
                interfaces: wire
                    .interfaces
                    .into_iter()
                    .map(Interface::without_1_1_fields)
                    .collect(),
                // An untagged address (as an IPAM plugin may print) is
                // tagged with its family, so what we print is valid 0.x.
                ips: wire
                    .ips
                    .into_iter()
                    .map(|ip| IpConfig040 {
                        version: Some(ip.family()),
                        ..ip
                    })
                    .collect(),
                routes: wire.routes,
                dns: wire.dns,
            })
        } else {
            CniResult::V100(Result100 {
                cni_version: version,
                interfaces: wire.interfaces,
                ips: wire
                    .ips
                    .into_iter()
                    .map(|ip| IpConfig {
                        interface: ip.interface,
                        address: ip.address,
                        gateway: ip.gateway,
                    })
                    .collect(),
                routes: wire.routes,
                dns: wire.dns,
            })
        }
    }

    /// The result's spec version.
    pub fn version(&self) -> &SpecVersion {
        match self {
            CniResult::V020(r) => &r.cni_version,
            CniResult::V040(r) => &r.cni_version,
            CniResult::V100(r) => &r.cni_version,
        }
    }

    /// Converts to another version, with the reference library's semantics:
    ///
    /// - same version: unchanged;
    /// - 0.1.0/0.2.0 up: `ip4` then `ip6` become `ips`, their routes become
    ///   `routes`;
    /// - down to 0.1.0/0.2.0: the first IPv4 and first IPv6 `ips` entries are
    ///   taken, each route goes to `ip4` or `ip6` by the family of its `dst`
    ///   (dropped when that family has no address), and a result with no
    ///   address at all cannot be converted;
    /// - to 0.3.x/0.4.0 each address is tagged with its family, to 1.x the
    ///   tag is dropped; interface indexes survive;
    /// - the 1.1.0-only fields are dropped going below 1.1.0 (the reference
    ///   keeps the route ones down to 0.3.0); route fields a 0.x result
    ///   carries against its spec (Go plugins on newer libraries print them
    ///   in 0.4.0 results) go up to 1.1.0 with the route, as in the
    ///   reference. A conversion never fails because of them.
    pub fn convert_to(&self, version: &SpecVersion) -> Result<CniResult, ConvertError> {
        convert::convert(self.clone(), version)
    }

    /// Like [`CniResult::convert_to`], consuming the result: its strings
    /// and lists move into the converted one instead of being copied (what
    /// the entry point does with a plugin's result).
    ///
    /// ```
    /// use cni_types::{CniResult, SpecVersion};
    ///
    /// let r = CniResult::parse("0.4.0", br#"{"cniVersion":"0.4.0",
    ///     "ips":[{"version":"4","address":"10.0.0.2/24"}],"dns":{"domain":"example.com"}}"#).unwrap();
    /// let r = r.into_version(&SpecVersion::V1_0_0).unwrap();
    /// assert_eq!(r.version(), &SpecVersion::V1_0_0);
    /// ```
    ///
    /// Go: `Result.GetAsVersion`.
    pub fn into_version(self, version: &SpecVersion) -> Result<CniResult, ConvertError> {
        convert::convert(self, version)
    }

    /// The result in the current shape (1.1.0), for a plugin to inspect or
    /// modify; the entry point converts what the plugin returns back to the
    /// configuration's version.
    pub fn to_current(&self) -> Result<Result100, ConvertError> {
        match self.convert_to(&SpecVersion::V1_1_0)? {
            CniResult::V100(r) => Ok(r),
            _ => unreachable!("conversion to 1.1.0 yields a 1.x result"),
        }
    }

    /// Like [`CniResult::to_current`], consuming the result: nothing is
    /// copied (a 1.x result is only relabelled 1.1.0).
    ///
    /// ```
    /// use cni_types::{CniResult, SpecVersion};
    ///
    /// let r = CniResult::parse("0.4.0", br#"{"cniVersion":"0.4.0",
    ///     "ips":[{"version":"4","address":"10.0.0.2/24"}]}"#).unwrap();
    /// let current = r.into_current().unwrap();
    /// assert_eq!(current.cni_version, SpecVersion::V1_1_0);
    /// assert_eq!(current.ips[0].address.to_string(), "10.0.0.2/24");
    /// ```
    pub fn into_current(self) -> Result<Result100, ConvertError> {
        match self.into_version(&SpecVersion::V1_1_0)? {
            CniResult::V100(r) => Ok(r),
            _ => unreachable!("conversion to 1.1.0 yields a 1.x result"),
        }
    }

    /// The result in the current shape without copying it when it has that
    /// shape already (any 1.x result, its version left as it is); an older
    /// one is converted. For reading; `.into_owned()` to modify.
    ///
    /// ```
    /// use std::borrow::Cow;
    /// use cni_types::CniResult;
    ///
    /// let r = CniResult::parse("1.0.0", br#"{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24"}]}"#).unwrap();
    /// assert!(matches!(r.as_current().unwrap(), Cow::Borrowed(_)));
    /// ```
    pub fn as_current(&self) -> Result<Cow<'_, Result100>, ConvertError> {
        match self {
            CniResult::V100(r) => Ok(Cow::Borrowed(r)),
            other => other.to_current().map(Cow::Owned),
        }
    }

    /// The result as pretty JSON (four-space indents, as the reference
    /// prints), ending in a newline.
    pub fn to_json(&self) -> Vec<u8> {
        crate::print::pretty(self)
    }
}

impl From<Result020> for CniResult {
    fn from(r: Result020) -> CniResult {
        CniResult::V020(r)
    }
}

impl From<Result040> for CniResult {
    fn from(r: Result040) -> CniResult {
        CniResult::V040(r)
    }
}

impl From<Result100> for CniResult {
    fn from(r: Result100) -> CniResult {
        CniResult::V100(r)
    }
}
