//! Results of spec versions 0.1.0 and 0.2.0.

use std::net::IpAddr;

use cni_version::SpecVersion;
use serde::{Deserialize, Serialize};

use crate::{Dns, IpNetwork, Route};

/// A 0.1.0 or 0.2.0 result: at most one IPv4 and one IPv6 configuration.
///
/// "`ip4` and `ip6` ... are a dictionary with the following keys: `ip` (an
/// IP address in CIDR notation), `gateway` (the default gateway for this
/// subnet, if one exists), `routes` (a list of routes)" (0.1.0 proposal).
///
/// Go: `types020.Result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Result020 {
    /// 0.1.0 or 0.2.0.
    #[serde(rename = "cniVersion")]
    pub cni_version: SpecVersion,
    /// The IPv4 configuration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip4: Option<IpConfig020>,
    /// The IPv6 configuration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip6: Option<IpConfig020>,
    /// DNS settings; omitted when empty.
    #[serde(skip_serializing_if = "Dns::is_empty")]
    pub dns: Dns,
}

/// One address family's configuration in a 0.1.0/0.2.0 result.
///
/// Go: `types020.IPConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpConfig020 {
    /// The address, in CIDR notation.
    pub ip: IpNetwork,
    /// The subnet's default gateway, if any.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::ip::opt_ip_serde"
    )]
    pub gateway: Option<IpAddr>,
    /// Routes of this family.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::null_as_default"
    )]
    pub routes: Vec<Route>,
}
