//! The `ipam` section, read and validated in full before the store is
//! touched.
//!
//! The keys are host-local's: `ranges` (a list of range sets, each a list of
//! `{subnet, rangeStart, rangeEnd, gateway}`), the older single
//! `subnet`/`rangeStart`/`rangeEnd`/`gateway` at the top of the section
//! (prepended as range set 0 when given with `ranges`), `routes`, `dataDir`
//! and `resolvConf`. `runtimeConfig.ipRanges` (the `ipRanges` capability)
//! replaces them all when the runtime passes a non-empty list. `store`
//! chooses where reservations live ([`StoreConfig`]); without it they are
//! files under `dataDir`, as host-local keeps them.
//!
//! Defaults are host-local's: the gateway is the network address + 1,
//! `rangeStart` the network address + 1 (the gateway is skipped when
//! allocating), `rangeEnd` the last address of the subnet, less the
//! broadcast address for IPv4.
//!
//! Every error is code 7 naming the field's path (`ipam.ranges[0][1].rangeStart`)
//! with the offending value in the details.

use std::net::IpAddr;
use std::path::PathBuf;

use cni_types::{Code, Error, Extra, IpNetwork, NetConf, Route};
use serde_json::Value;

use crate::range::{bits, from_bits, same_family, Range, RangeSet};

/// Where reservations live when `dataDir` is not given, as in host-local.
pub const DEFAULT_DATA_DIR: &str = "/var/lib/cni/networks";

/// The validated `ipam` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpamConfig {
    /// The network name: reservations are kept per network.
    pub name: String,
    /// Where reservations live: `store`, else `dataDir`.
    pub store: StoreConfig,
    /// The range sets, in allocation order; the index names the
    /// `last_reserved_ip.<index>` file.
    pub range_sets: Vec<RangeSet>,
    /// `routes`, returned as given.
    pub routes: Vec<Route>,
    /// `resolvConf`: a resolv.conf to report as the result's DNS (read on
    /// ADD only).
    pub resolv_conf: Option<PathBuf>,
}

/// Where reservations live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreConfig {
    /// No `store`, or `{"type": "file"}`: files under `dataDir` (default
    /// [`DEFAULT_DATA_DIR`]), host-local's format.
    File {
        /// `dataDir`; the network's files are in `dataDir/<name>/`.
        data_dir: PathBuf,
    },
    /// `{"type": "etcd", "endpoints": [..], "prefix": "/cni-ipam", "node": ..}`.
    Etcd(EtcdConfig),
}

/// `"store": {"type": "etcd", ...}`: reservations shared by every node of a
/// cluster, in etcd (v3 API).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdConfig {
    /// `endpoints`: `http://host:port` URLs of etcd members, tried in order.
    pub endpoints: Vec<String>,
    /// `prefix` (default `/cni-ipam`): keys are `<prefix>/<network>/...`.
    pub prefix: String,
    /// `node`: the name recorded with each reservation, and the scope of
    /// GC; the host name when absent.
    pub node: Option<String>,
}

/// The default etcd key prefix.
pub const DEFAULT_ETCD_PREFIX: &str = "/cni-ipam";

impl StoreConfig {
    fn read(section: &Extra) -> Result<StoreConfig, Error> {
        let data_dir = opt_str(section, "dataDir", "ipam")?
            .filter(|d| !d.is_empty())
            .unwrap_or(DEFAULT_DATA_DIR);
        // host-local takes a relative path from its working directory,
        // which is the runtime's: two runtimes (or one restarted elsewhere)
        // would keep two stores and hand out one address twice.
        if !data_dir.starts_with('/') {
            return Err(invalid(
                "ipam.dataDir",
                data_dir,
                "a relative path; give an absolute one (a relative one would be taken from the \
                 runtime's working directory, which differs between runtimes)",
            ));
        }
        let file = StoreConfig::File {
            data_dir: PathBuf::from(data_dir),
        };
        let Some(store) = section.get("store").filter(|v| !v.is_null()) else {
            return Ok(file);
        };
        let obj = store
            .as_object()
            .ok_or_else(|| invalid("ipam.store", store, "expected an object with a type"))?;
        match opt_str(obj, "type", "ipam.store")? {
            None | Some("file") => Ok(file),
            Some("etcd") => Ok(StoreConfig::Etcd(EtcdConfig::read(obj)?)),
            Some(other) => Err(invalid(
                "ipam.store.type",
                other,
                "unknown store type; expected \"file\" or \"etcd\"",
            )),
        }
    }
}

impl EtcdConfig {
    fn read(obj: &Extra) -> Result<EtcdConfig, Error> {
        let field = "ipam.store.endpoints";
        let list = obj
            .get("endpoints")
            .and_then(Value::as_array)
            .filter(|l| !l.is_empty())
            .ok_or_else(|| {
                invalid(
                    field,
                    obj.get("endpoints").unwrap_or(&Value::Null),
                    "expected a non-empty list of \"http://host:port\"",
                )
            })?;
        let mut endpoints = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            let here = format!("{field}[{i}]");
            let url = item
                .as_str()
                .ok_or_else(|| invalid(&here, item, "expected a string"))?;
            // Checked first, so that no message ever shows them.
            if let Some((_, host)) = url
                .split_once("://")
                .and_then(|(_, rest)| rest.split('/').next()?.rsplit_once('@'))
            {
                return Err(invalid(
                    &here,
                    format!("http://<credentials>@{host}").as_str(),
                    "credentials in an endpoint URL are refused, never sent: this store does not \
                     authenticate to etcd, so give an endpoint that needs no credentials \
                     (reachable only from the nodes)",
                ));
            }
            let rest = url.strip_prefix("http://").ok_or_else(|| {
                invalid(
                    &here,
                    url,
                    "expected http://host:port (TLS is not supported)",
                )
            })?;
            let host = rest.trim_end_matches('/');
            if host.is_empty() || host.contains('/') {
                return Err(invalid(&here, url, "expected http://host:port"));
            }
            endpoints.push(format!("http://{host}"));
        }
        let prefix = read_prefix(obj)?;
        let node = opt_str(obj, "node", "ipam.store")?
            .filter(|n| !n.is_empty())
            .map(str::to_owned);
        if let Some(n) = &node {
            if n.chars().any(|c| c.is_control()) {
                return Err(invalid("ipam.store.node", n, "control characters"));
            }
        }
        Ok(EtcdConfig {
            endpoints,
            prefix,
            node,
        })
    }
}

/// `prefix`: non-empty once trailing slashes are removed, of letters,
/// digits and `/`, `-`, `_`, `.` only, so that every key is printable and
/// no two prefixes name one key space.
fn read_prefix(obj: &Extra) -> Result<String, Error> {
    let Some(given) = opt_str(obj, "prefix", "ipam.store")? else {
        return Ok(DEFAULT_ETCD_PREFIX.to_owned());
    };
    let prefix = given.trim_end_matches('/');
    if prefix.is_empty() {
        return Err(invalid(
            "ipam.store.prefix",
            given,
            "empty: keys would be at the root of etcd's key space; give one such as \"/cni-ipam\"",
        ));
    }
    if let Some(c) = prefix
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.')))
    {
        return Err(invalid(
            "ipam.store.prefix",
            given,
            &format!("{c:?} is not allowed: use letters, digits and / - _ . only"),
        ));
    }
    Ok(prefix.to_owned())
}

impl IpamConfig {
    /// Reads and validates everything but the requested addresses.
    pub fn from_conf(conf: &NetConf) -> Result<IpamConfig, Error> {
        let ipam = conf.ipam.as_ref().ok_or_else(|| {
            Error::new(Code::INVALID_NETWORK_CONFIG, "invalid ipam")
                .with_details("the configuration has no ipam section")
        })?;
        let section = &ipam.extra;
        let store = StoreConfig::read(section)?;
        let resolv_conf = opt_str(section, "resolvConf", "ipam")?
            .filter(|p| !p.is_empty())
            .map(PathBuf::from);
        let routes = read_routes(section)?;

        let runtime_ranges = conf
            .runtime_config
            .as_ref()
            .and_then(|rc| rc.0.get("ipRanges"))
            .filter(|v| !v.is_null());
        let range_sets = match runtime_ranges {
            Some(v) if v.as_array().is_none_or(|a| !a.is_empty()) => {
                read_range_sets(v, "runtimeConfig.ipRanges")?
            }
            _ => configured_range_sets(section)?,
        };
        if range_sets.is_empty() {
            return Err(invalid(
                "ipam.ranges",
                "missing",
                "no IP ranges specified: give ipam.ranges, ipam.subnet or the ipRanges capability",
            ));
        }
        check_disjoint(&range_sets)?;
        check_families_for_version(&range_sets, conf.version())?;
        Ok(IpamConfig {
            name: conf.name.clone(),
            store,
            range_sets,
            routes,
            resolv_conf,
        })
    }
}

/// An address the runtime asked for, and where it asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requested {
    /// The address (IPv4-mapped IPv6 read as IPv4). A prefix given with it
    /// is checked for form and otherwise ignored, as host-local does: the
    /// range's subnet decides the prefix.
    pub ip: IpAddr,
    /// `args.cni.ips[0]`, `runtimeConfig.ips[1]` or `CNI_ARGS IP`.
    pub source: String,
}

/// The addresses requested for this attachment: `args.cni.ips` and
/// `runtimeConfig.ips` (the `ips` capability) together; `CNI_ARGS` `IP`
/// only when neither gives any, since CONVENTIONS.md says a plugin that
/// understands `args` "must ignore the CNI_ARGS Field" then. (host-local
/// takes the union of all three.) Other `CNI_ARGS` keys are ignored.
///
/// A malformed entry is code 7 naming it; a malformed `CNI_ARGS` code 4.
pub fn requested_ips(conf: &NetConf, cni_args: &str) -> Result<Vec<Requested>, Error> {
    let mut out: Vec<Requested> = Vec::new();
    let args_ips = conf
        .args
        .as_ref()
        .and_then(|a| a.0.get("cni"))
        .and_then(Value::as_object)
        .and_then(|cni| cni.get("ips"));
    let runtime_ips = conf.runtime_config.as_ref().and_then(|rc| rc.0.get("ips"));
    for (field, list) in [
        ("args.cni.ips", args_ips),
        ("runtimeConfig.ips", runtime_ips),
    ] {
        let Some(list) = list.filter(|v| !v.is_null()) else {
            continue;
        };
        let items = list
            .as_array()
            .ok_or_else(|| invalid(field, list, "expected a list of \"<ip>[/<prefix>]\""))?;
        for (i, item) in items.iter().enumerate() {
            let here = format!("{field}[{i}]");
            let text = item
                .as_str()
                .ok_or_else(|| invalid(&here, item, "expected a string"))?;
            let ip = parse_requested(text).ok_or_else(|| {
                invalid(&here, text, "not an IP address with an optional /prefix")
            })?;
            push_unique(&mut out, ip, here);
        }
    }
    if out.is_empty() {
        // A malformed pair is code 4, "invalid CNI_ARGS", as everywhere.
        let args = cni_types::CniArgs::parse(cni_args)?;
        if let Some(text) = args.get("IP").filter(|t| !t.is_empty()) {
            let ip = parse_requested(text).ok_or_else(|| {
                Error::new(Code::INVALID_ENVIRONMENT_VARIABLES, "invalid CNI_ARGS IP").with_details(
                    format!("{text:?}: not an IP address with an optional /prefix"),
                )
            })?;
            push_unique(&mut out, ip, "CNI_ARGS IP".to_owned());
        }
    }
    Ok(out)
}

fn push_unique(out: &mut Vec<Requested>, ip: IpAddr, source: String) {
    if !out.iter().any(|r| r.ip == ip) {
        out.push(Requested { ip, source });
    }
}

/// `<ip>` or `<ip>/<prefix>`.
fn parse_requested(text: &str) -> Option<IpAddr> {
    let ip = match text.split_once('/') {
        Some(_) => text.parse::<IpNetwork>().ok()?.addr(),
        None => text.parse().ok()?,
    };
    Some(ip.to_canonical())
}

/// The old single range (when `subnet` is given) then `ranges`.
fn configured_range_sets(section: &Extra) -> Result<Vec<RangeSet>, Error> {
    let mut sets = Vec::new();
    // Like host-local, the other single-range keys mean nothing without a
    // subnet and are ignored then.
    if opt_str(section, "subnet", "ipam")?.is_some() {
        sets.push(RangeSet {
            ranges: vec![read_range(section, "ipam")?],
            field: "ipam".to_owned(),
        });
    }
    if let Some(v) = section.get("ranges").filter(|v| !v.is_null()) {
        sets.extend(read_range_sets(v, "ipam.ranges")?);
    }
    Ok(sets)
}

fn read_range_sets(value: &Value, field: &str) -> Result<Vec<RangeSet>, Error> {
    let sets = value
        .as_array()
        .ok_or_else(|| invalid(field, value, "expected a list of range sets"))?;
    sets.iter()
        .enumerate()
        .map(|(i, set)| read_range_set(set, &format!("{field}[{i}]")))
        .collect()
}

fn read_range_set(value: &Value, field: &str) -> Result<RangeSet, Error> {
    let items = value
        .as_array()
        .ok_or_else(|| invalid(field, value, "expected a list of ranges"))?;
    if items.is_empty() {
        return Err(invalid(field, value, "empty range set"));
    }
    let mut ranges: Vec<Range> = Vec::with_capacity(items.len());
    for (j, item) in items.iter().enumerate() {
        let here = format!("{field}[{j}]");
        let obj = item
            .as_object()
            .ok_or_else(|| invalid(&here, item, "expected an object"))?;
        let range = read_range(obj, &here)?;
        if let Some(first) = ranges.first() {
            if !same_family(first.start, range.start) {
                return Err(invalid(
                    &format!("{here}.subnet"),
                    &range.subnet.to_string(),
                    &format!(
                        "mixed address families in one range set ({field}[0] is {})",
                        first.subnet
                    ),
                ));
            }
        }
        if let Some((k, other)) = ranges.iter().enumerate().find(|(_, r)| r.overlaps(&range)) {
            return Err(invalid(
                &here,
                &range.to_string(),
                &format!("overlaps {field}[{k}] ({other})"),
            ));
        }
        ranges.push(range);
    }
    Ok(RangeSet {
        ranges,
        field: field.to_owned(),
    })
}

/// One `{subnet, rangeStart, rangeEnd, gateway}` at `field`.
fn read_range(obj: &Extra, field: &str) -> Result<Range, Error> {
    let subnet_field = format!("{field}.subnet");
    let text = opt_str(obj, "subnet", field)?
        .ok_or_else(|| invalid(&subnet_field, "missing", "every range needs a subnet"))?;
    let subnet: IpNetwork = text
        .parse()
        .map_err(|_| invalid(&subnet_field, text, "not an address/prefix (CIDR)"))?;
    if matches!(subnet.addr(), IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some()) {
        return Err(invalid(
            &subnet_field,
            text,
            "IPv4-mapped IPv6 subnets are not supported; write the IPv4 subnet",
        ));
    }
    if subnet.addr() != subnet.network() {
        return Err(invalid(
            &subnet_field,
            text,
            &format!(
                "host bits set; the network address for /{} is {}",
                subnet.prefix(),
                subnet.network()
            ),
        ));
    }
    let max = if subnet.addr().is_ipv4() { 32 } else { 128 };
    if subnet.prefix() > max - 2 {
        return Err(invalid(
            &subnet_field,
            text,
            "network too small to allocate from",
        ));
    }
    let first = bits(subnet.network()) + 1;
    let host_mask = u128::MAX
        .checked_shr(u32::from(subnet.prefix()) + (128 - u32::from(max)))
        .unwrap_or(0);
    let mut last = bits(subnet.network()) | host_mask;
    if subnet.addr().is_ipv4() {
        last -= 1; // the broadcast address
    }
    let v4 = subnet.addr().is_ipv4();
    let in_subnet = |key: &str, default: u128| -> Result<IpAddr, Error> {
        match opt_str(obj, key, field)? {
            None | Some("") => Ok(from_bits(default, v4)),
            Some(s) => {
                let here = format!("{field}.{key}");
                let ip: IpAddr = s
                    .parse::<IpAddr>()
                    .map_err(|_| invalid(&here, s, "not an IP address"))?
                    .to_canonical();
                if !subnet.contains(ip) {
                    return Err(invalid(&here, s, &format!("outside the subnet {subnet}")));
                }
                Ok(ip)
            }
        }
    };
    let gateway = in_subnet("gateway", first)?;
    let start = in_subnet("rangeStart", first)?;
    let end = in_subnet("rangeEnd", last)?;
    // host-local's defaults leave out the network address (`::` in `::/0`)
    // and the IPv4 broadcast; it hands them out when rangeStart or rangeEnd
    // names them, and no container can use them: refused instead.
    if bits(start) == bits(subnet.network()) {
        return Err(invalid(
            &format!("{field}.rangeStart"),
            &start.to_string(),
            &format!(
                "the network address of {subnet} cannot be allocated; the first allocatable \
                 address is {}",
                from_bits(first, v4)
            ),
        ));
    }
    if v4 && bits(end) == last + 1 {
        return Err(invalid(
            &format!("{field}.rangeEnd"),
            &end.to_string(),
            &format!(
                "the broadcast address of {subnet} cannot be allocated; the last allocatable \
                 address is {}",
                from_bits(last, v4)
            ),
        ));
    }
    if bits(start) > bits(end) {
        return Err(invalid(
            &format!("{field}.rangeStart"),
            &start.to_string(),
            &format!("after rangeEnd {end}"),
        ));
    }
    Ok(Range {
        subnet,
        start,
        end,
        gateway,
    })
}

fn read_routes(section: &Extra) -> Result<Vec<Route>, Error> {
    let Some(v) = section.get("routes").filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let items = v
        .as_array()
        .ok_or_else(|| invalid("ipam.routes", v, "expected a list of {dst, gw}"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, r)| {
            <Route as serde::Deserialize>::deserialize(r)
                .map_err(|e| invalid(&format!("ipam.routes[{i}]"), r, &e.to_string()))
        })
        .collect()
}

/// No two range sets may share an address (host-local's rule).
fn check_disjoint(sets: &[RangeSet]) -> Result<(), Error> {
    for (i, a) in sets.iter().enumerate() {
        for b in &sets[i + 1..] {
            for ra in &a.ranges {
                if let Some(rb) = b.ranges.iter().find(|rb| ra.overlaps(rb)) {
                    return Err(invalid(
                        &b.field,
                        &rb.to_string(),
                        &format!("overlaps range set {} ({ra})", a.field),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// "CNI spec 0.2.0 and below supported only one v4 and v6 address."
fn check_families_for_version(sets: &[RangeSet], version: &str) -> Result<(), Error> {
    if !matches!(version, "0.1.0" | "0.2.0") {
        return Ok(());
    }
    let v4 = sets.iter().filter(|s| s.is_ipv4()).count();
    if v4 > 1 || sets.len() - v4 > 1 {
        return Err(invalid(
            "ipam.ranges",
            &format!("{} range sets", sets.len()),
            &format!("CNI version {version} does not support more than 1 address per family"),
        ));
    }
    Ok(())
}

/// `obj[key]` as a string: `None` when absent or null, code 7 otherwise.
fn opt_str<'a>(obj: &'a Extra, key: &str, parent: &str) -> Result<Option<&'a str>, Error> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(invalid(
            &format!("{parent}.{key}"),
            other,
            "expected a string",
        )),
    }
}

/// Code 7: `invalid <field>`, with the value and the reason as details.
pub(crate) fn invalid(field: &str, value: impl ShowValue, why: &str) -> Error {
    Error::new(Code::INVALID_NETWORK_CONFIG, format!("invalid {field}"))
        .with_details(format!("{}: {why}", value.show()))
}

/// How a value is quoted in a message: text as a JSON string, JSON as is.
pub(crate) trait ShowValue {
    fn show(&self) -> String;
}

impl ShowValue for &str {
    fn show(&self) -> String {
        format!("{self:?}")
    }
}

impl ShowValue for &String {
    fn show(&self) -> String {
        format!("{self:?}")
    }
}

impl ShowValue for &Value {
    fn show(&self) -> String {
        self.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf() -> NetConf {
        NetConf::from_json(br#"{"cniVersion": "1.1.0", "name": "n"}"#).unwrap()
    }

    #[test]
    fn a_malformed_cni_args_is_code_4_naming_the_pair() {
        let err = requested_ips(&conf(), "IP").unwrap_err();
        assert_eq!(err.code, Code::INVALID_ENVIRONMENT_VARIABLES, "{err:?}");
        assert_eq!(err.msg, "invalid CNI_ARGS");
        assert!(err.details.contains("IP"), "{err:?}");
    }

    #[test]
    fn a_cni_args_ip_that_is_no_address_is_code_4_naming_it() {
        let err = requested_ips(&conf(), "IP=nonsense").unwrap_err();
        assert_eq!(err.code, Code::INVALID_ENVIRONMENT_VARIABLES, "{err:?}");
        assert_eq!(err.msg, "invalid CNI_ARGS IP");
        assert!(err.details.contains("nonsense"), "{err:?}");
    }
}
