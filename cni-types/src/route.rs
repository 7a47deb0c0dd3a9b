//! Routes, in results and configurations.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::IpNetwork;

/// A route: "`dst`: The destination of the route, in CIDR notation. `gw`: The
/// next hop address. If unset, a value in `gateway` in the `ips` array may be
/// used." (spec, section 5). The other fields are new in 1.1.0 and are
/// dropped when a result is converted to any version below 1.1.0.
///
/// Go: `types.Route`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// Destination network.
    pub dst: IpNetwork,
    /// Next hop; none means the `ips` gateway may be used.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::ip::opt_ip_serde"
    )]
    pub gw: Option<IpAddr>,
    /// 1.1.0: "The MTU (Maximum transmission unit) along the path to the
    /// destination." 0 means unset.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_util::nonzero"
    )]
    pub mtu: Option<u32>,
    /// 1.1.0: "The MSS (Maximal Segment Size) to advertise to these
    /// destinations when establishing TCP connections." 0 means unset.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_util::nonzero"
    )]
    pub advmss: Option<u32>,
    /// 1.1.0: "The priority of route, lower is higher." 0 means unset.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_util::nonzero"
    )]
    pub priority: Option<u32>,
    /// 1.1.0: "The table to add the route to." 0 is a value here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<u32>,
    /// 1.1.0: "The scope of the destinations covered by the route prefix
    /// (global (0), link (253), host (254))." 0 is a value here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<u32>,
}

impl Route {
    /// A route to `dst`, via `gw` when given.
    pub fn new(dst: IpNetwork, gw: Option<IpAddr>) -> Route {
        Route {
            dst,
            gw,
            mtu: None,
            advmss: None,
            priority: None,
            table: None,
            scope: None,
        }
    }

    /// The route without its 1.1.0-only fields.
    pub(crate) fn without_1_1_fields(self) -> Route {
        Route::new(self.dst, self.gw)
    }
}
