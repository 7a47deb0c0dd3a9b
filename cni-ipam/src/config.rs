//! The `ipam` section, read and validated in full before the store is
//! touched.
//!
//! The keys are host-local's: `ranges` (a list of range sets, each a list of
//! `{subnet, rangeStart, rangeEnd, gateway}`), the older single
//! `subnet`/`rangeStart`/`rangeEnd`/`gateway` at the top of the section
//! (prepended as range set 0 when given with `ranges`), `routes` and
//! `resolvConf`. `runtimeConfig.ipRanges` (the `ipRanges` capability)
//! replaces the ranges when the runtime passes a non-empty list. Each store
//! reads its own keys (`dataDir`; `store`): [`crate::store::Store::config`].
//!
//! - [`ranges`]: each range read as written ([`ranges::RangeSpec`]), then
//!   validated with host-local's defaults: the gateway and `rangeStart` the
//!   network address + 1 (the gateway is skipped when allocating),
//!   `rangeEnd` the last address of the subnet, less the broadcast address
//!   for IPv4.
//! - [`requested`]: the addresses a runtime asks for.
//!
//! Every error is code 7 naming the field's path (`ipam.ranges[0][1].rangeStart`)
//! with the offending value in the details ([`ConfigError`]).
//!
//! Go: host-local's `allocator/config.go`.

pub mod ranges;
pub mod requested;

use std::path::PathBuf;

use cni_types::{Error, Extra, NetConf, Route};
use serde_json::Value;

pub use self::requested::{requested_ips, Requested};
pub use crate::error::ConfigError;
use crate::range::RangeSet;
use ranges::{check_disjoint, check_families_for_version, configured_range_sets, read_range_sets};

/// The validated `ipam` section, but for the store's keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpamConfig {
    /// The network name: reservations are kept per network.
    pub name: String,
    /// The range sets, in allocation order; the index names the
    /// `last_reserved_ip.<index>` file.
    pub range_sets: Vec<RangeSet>,
    /// `routes`, returned as given.
    pub routes: Vec<Route>,
    /// `resolvConf`: a resolv.conf to report as the result's DNS (read on
    /// ADD only).
    pub resolv_conf: Option<PathBuf>,
}

impl IpamConfig {
    /// Reads and validates everything but the requested addresses and the
    /// store's keys (each store reads its own: [`crate::store::Store::config`]).
    pub fn from_conf(conf: &NetConf) -> Result<IpamConfig, Error> {
        IpamConfig::read(conf).map_err(Error::from)
    }

    /// The `ipam` section's keys (all but `type`); code 7 when there is none.
    pub fn section(conf: &NetConf) -> Result<&Extra, Error> {
        conf.ipam
            .as_ref()
            .map(|ipam| &ipam.extra)
            .ok_or_else(|| ConfigError::NoIpam.into())
    }

    fn read(conf: &NetConf) -> Result<IpamConfig, ConfigError> {
        let section = &conf.ipam.as_ref().ok_or(ConfigError::NoIpam)?.extra;
        let resolv_conf = opt_str(section, "resolvConf", "ipam")?
            .filter(|p| !p.is_empty())
            .map(PathBuf::from);
        let routes = read_routes(section)?;

        let runtime_ranges = conf
            .runtime_config
            .as_ref()
            .and_then(|rc| rc.value("ipRanges"));
        let range_sets = match runtime_ranges {
            Some(v) if v.as_array().is_none_or(|a| !a.is_empty()) => {
                read_range_sets(v, "runtimeConfig.ipRanges")?
            }
            _ => configured_range_sets(section)?,
        };
        if range_sets.is_empty() {
            return Err(ConfigError::invalid(
                "ipam.ranges",
                "missing",
                "no IP ranges specified: give ipam.ranges, ipam.subnet or the ipRanges capability",
            ));
        }
        check_disjoint(&range_sets)?;
        check_families_for_version(&range_sets, conf.version())?;
        Ok(IpamConfig {
            name: conf.name.clone(),
            range_sets,
            routes,
            resolv_conf,
        })
    }
}

fn read_routes(section: &Extra) -> Result<Vec<Route>, ConfigError> {
    let Some(v) = cni_types::go_field(section, "routes") else {
        return Ok(Vec::new());
    };
    let items = v
        .as_array()
        .ok_or_else(|| ConfigError::invalid("ipam.routes", v, "expected a list of {dst, gw}"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, r)| {
            <Route as serde::Deserialize>::deserialize(r).map_err(|source| ConfigError::Route {
                field: format!("ipam.routes[{i}]"),
                value: r.to_string(),
                source,
            })
        })
        .collect()
}

/// `obj[key]` as a string: `None` when absent or null, an error naming
/// `parent.key` otherwise.
pub(crate) fn opt_str<'a>(
    obj: &'a Extra,
    key: &str,
    parent: &str,
) -> Result<Option<&'a str>, ConfigError> {
    // Keys found as host-local's Go structs find them: "DataDir" is
    // "dataDir"; null is absent.
    match cni_types::go_field(obj, key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ConfigError::invalid(
            &format!("{parent}.{key}"),
            other,
            "expected a string",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_locals_keys_are_found_in_any_case_as_its_go_structs_find_them() {
        let conf: NetConf = NetConf::from_json(
            br#"{"cniVersion": "1.0.0", "name": "n",
                "ipam": {"Type": "host-local", "ResolvConf": "/etc/resolv.conf",
                         "Ranges": [[{"Subnet": "10.1.2.0/24", "RangeStart": "10.1.2.10", "GATEWAY": "10.1.2.1"}]],
                         "Routes": [{"dst": "0.0.0.0/0"}]}}"#,
        )
        .unwrap();
        let config = IpamConfig::from_conf(&conf).unwrap();
        let range = &config.range_sets[0].ranges[0];
        assert_eq!(range.subnet.to_string(), "10.1.2.0/24");
        assert_eq!(range.start.to_string(), "10.1.2.10");
        assert_eq!(range.gateway.to_string(), "10.1.2.1");
        assert_eq!(config.routes.len(), 1);
        assert_eq!(config.resolv_conf, Some(PathBuf::from("/etc/resolv.conf")));
    }
}
