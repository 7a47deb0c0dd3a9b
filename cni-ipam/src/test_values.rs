//! Plain values for the planner's and the ranges' unit tests.

use std::net::IpAddr;

use cni_types::NetConf;
use serde_json::json;

use crate::config::IpamConfig;

/// The IPAM configuration of a host-local section with these `ranges`.
pub(crate) fn config(ranges: serde_json::Value) -> IpamConfig {
    let conf: NetConf = NetConf::from_value(json!({
        "cniVersion": "1.1.0", "name": "n",
        "ipam": {"type": "host-local", "ranges": ranges}
    }))
    .unwrap();
    IpamConfig::from_conf(&conf).unwrap()
}

/// An address from its text.
pub(crate) fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}
