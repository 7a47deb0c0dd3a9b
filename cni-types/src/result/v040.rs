//! Results of spec versions 0.3.0, 0.3.1 and 0.4.0.

use std::net::IpAddr;

use cni_version::SpecVersion;
use serde::{Deserialize, Serialize};

use crate::{Dns, Interface, IpFamily, IpNetwork, Route};

/// A 0.3.0, 0.3.1 or 0.4.0 result: interfaces, addresses tagged with their
/// family, routes and DNS. Interfaces here never carry the 1.1.0-only fields.
///
/// Go: `types040.Result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Result040 {
    /// 0.3.0, 0.3.1 or 0.4.0.
    #[serde(rename = "cniVersion")]
    pub cni_version: SpecVersion,
    /// Interfaces created or configured.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<Interface>,
    /// Assigned addresses.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<IpConfig040>,
    /// Routes created.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
    /// DNS settings; omitted when empty.
    #[serde(skip_serializing_if = "Dns::is_empty")]
    pub dns: Dns,
}

/// An `ips` entry of a 0.3.x/0.4.0 result.
///
/// Go: `types040.IPConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpConfig040 {
    /// "`version` (string): either "4" or "6"" (0.4.0). An entry read
    /// without one takes its family from its address when converted; see
    /// [`IpConfig040::family`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "empty_family"
    )]
    pub version: Option<IpFamily>,
    /// Index into `interfaces` of the interface this address is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<usize>,
    /// The address, in CIDR notation.
    pub address: IpNetwork,
    /// The subnet's default gateway, if any.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::ip::opt_ip_serde"
    )]
    pub gateway: Option<IpAddr>,
}

impl IpConfig040 {
    /// The entry's family: its `version` tag, or, when the tag is missing,
    /// the family of its address.
    ///
    /// Deliberate improvement: the reference drops an untagged entry when
    /// converting to 0.2.0 and can then fail with "no valid IP addresses".
    pub fn family(&self) -> IpFamily {
        self.version.unwrap_or(self.address.family())
    }
}

/// `"version": ""` is how Go prints an untagged entry; read it as untagged.
fn empty_family<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<IpFamily>, D::Error> {
    match Option::<std::borrow::Cow<'de, str>>::deserialize(d)?.as_deref() {
        None | Some("") => Ok(None),
        Some("4") => Ok(Some(IpFamily::V4)),
        Some("6") => Ok(Some(IpFamily::V6)),
        Some(other) => Err(serde::de::Error::custom(format_args!(
            "invalid IP version {other:?}: expected \"4\" or \"6\""
        ))),
    }
}
