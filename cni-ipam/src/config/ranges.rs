//! Range sets: read as written ([`RangeSpec`]), then validated with
//! host-local's defaults, each error naming its key.
//!
//! Go: host-local's `allocator/config.go` (`LoadIPAMConfig`) and
//! `range.go` (`Canonicalize`), `range_set.go` (`Canonicalize`).

use std::net::IpAddr;

use cni_types::{Extra, IpNetwork};
use serde_json::Value;

use super::opt_str;
use crate::error::ConfigError;
use crate::range::{bits, from_bits, same_family, Range, RangeSet};

/// One `{subnet, rangeStart, rangeEnd, gateway}` as written, each key
/// read as text (a key of another type is an error naming it).
///
/// Go: `allocator.Range` before `Canonicalize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeSpec<'a> {
    /// Where it is: `ipam.ranges[0][1]`, `ipam`.
    pub field: String,
    /// `subnet`.
    pub subnet: Option<&'a str>,
    /// `rangeStart`.
    pub range_start: Option<&'a str>,
    /// `rangeEnd`.
    pub range_end: Option<&'a str>,
    /// `gateway`.
    pub gateway: Option<&'a str>,
}

impl<'a> RangeSpec<'a> {
    /// The keys of the range at `field`. An empty string is as absent.
    pub fn read(obj: &'a Extra, field: &str) -> Result<RangeSpec<'a>, ConfigError> {
        let key = |k: &str| -> Result<Option<&'a str>, ConfigError> {
            Ok(opt_str(obj, k, field)?.filter(|s| !s.is_empty()))
        };
        Ok(RangeSpec {
            field: field.to_owned(),
            subnet: key("subnet")?,
            range_start: key("rangeStart")?,
            range_end: key("rangeEnd")?,
            gateway: key("gateway")?,
        })
    }

    /// The range, validated, with host-local's defaults: the gateway and
    /// `rangeStart` the network address + 1, `rangeEnd` the last address
    /// (less the broadcast for IPv4). Each error names the key.
    ///
    /// Go: `(*Range).Canonicalize`.
    pub fn canonicalize(&self) -> Result<Range, ConfigError> {
        let field = &self.field;
        let subnet_field = format!("{field}.subnet");
        let text = self.subnet.ok_or_else(|| {
            ConfigError::invalid(&subnet_field, "missing", "every range needs a subnet")
        })?;
        let subnet: IpNetwork = text.parse().map_err(|_| {
            ConfigError::invalid(&subnet_field, text, "not an address/prefix (CIDR)")
        })?;
        if matches!(subnet.addr(), IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some()) {
            return Err(ConfigError::invalid(
                &subnet_field,
                text,
                "IPv4-mapped IPv6 subnets are not supported; write the IPv4 subnet",
            ));
        }
        if subnet.addr() != subnet.network() {
            return Err(ConfigError::invalid(
                &subnet_field,
                text,
                &format!(
                    "host bits set; the network address for /{} is {}",
                    subnet.prefix(),
                    subnet.network()
                ),
            ));
        }
        let v4 = subnet.addr().is_ipv4();
        let max = if v4 { 32 } else { 128 };
        if subnet.prefix() > max - 2 {
            return Err(ConfigError::invalid(
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
        if v4 {
            last -= 1; // the broadcast address
        }
        let in_subnet = |key: &str, given: Option<&str>, default: u128| match given {
            None => Ok(from_bits(default, v4)),
            Some(s) => {
                let here = format!("{field}.{key}");
                let ip: IpAddr = s
                    .parse::<IpAddr>()
                    .map_err(|_| ConfigError::invalid(&here, s, "not an IP address"))?
                    .to_canonical();
                if !subnet.contains(ip) {
                    return Err(ConfigError::invalid(
                        &here,
                        s,
                        &format!("outside the subnet {subnet}"),
                    ));
                }
                Ok(ip)
            }
        };
        let gateway = in_subnet("gateway", self.gateway, first)?;
        let start = in_subnet("rangeStart", self.range_start, first)?;
        let end = in_subnet("rangeEnd", self.range_end, last)?;
        // host-local's defaults leave out the network address (`::` in
        // `::/0`) and the IPv4 broadcast; it hands them out when rangeStart
        // or rangeEnd names them, and no container can use them: refused.
        let unusable = |key: &str, ip: IpAddr, what: &str, bound: &str, instead: u128| {
            ConfigError::invalid(
                &format!("{field}.{key}"),
                &ip.to_string(),
                &format!(
                    "the {what} address of {subnet} cannot be allocated; the {bound} \
                     allocatable address is {}",
                    from_bits(instead, v4)
                ),
            )
        };
        if bits(start) == bits(subnet.network()) {
            return Err(unusable("rangeStart", start, "network", "first", first));
        }
        if v4 && bits(end) == last + 1 {
            return Err(unusable("rangeEnd", end, "broadcast", "last", last));
        }
        if bits(start) > bits(end) {
            return Err(ConfigError::invalid(
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
}

/// The old single range (when `subnet` is given) then `ranges`.
pub(super) fn configured_range_sets(section: &Extra) -> Result<Vec<RangeSet>, ConfigError> {
    let mut sets = Vec::new();
    // Like host-local, the other single-range keys mean nothing without a
    // subnet and are ignored then.
    if opt_str(section, "subnet", "ipam")?.is_some() {
        sets.push(RangeSet {
            ranges: vec![RangeSpec::read(section, "ipam")?.canonicalize()?],
            field: "ipam".to_owned(),
        });
    }
    if let Some(v) = cni_types::go_field(section, "ranges") {
        sets.extend(read_range_sets(v, "ipam.ranges")?);
    }
    Ok(sets)
}

pub(super) fn read_range_sets(value: &Value, field: &str) -> Result<Vec<RangeSet>, ConfigError> {
    let sets = value
        .as_array()
        .ok_or_else(|| ConfigError::invalid(field, value, "expected a list of range sets"))?;
    sets.iter()
        .enumerate()
        .map(|(i, set)| read_range_set(set, &format!("{field}[{i}]")))
        .collect()
}

fn read_range_set(value: &Value, field: &str) -> Result<RangeSet, ConfigError> {
    let items = value
        .as_array()
        .ok_or_else(|| ConfigError::invalid(field, value, "expected a list of ranges"))?;
    if items.is_empty() {
        return Err(ConfigError::invalid(field, value, "empty range set"));
    }
    let mut ranges: Vec<Range> = Vec::with_capacity(items.len());
    for (j, item) in items.iter().enumerate() {
        let here = format!("{field}[{j}]");
        let obj = item
            .as_object()
            .ok_or_else(|| ConfigError::invalid(&here, item, "expected an object"))?;
        let range = RangeSpec::read(obj, &here)?.canonicalize()?;
        if let Some(first) = ranges.first() {
            if !same_family(first.start, range.start) {
                return Err(ConfigError::invalid(
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
            return Err(ConfigError::invalid(
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

/// No two range sets may share an address (host-local's rule).
pub(super) fn check_disjoint(sets: &[RangeSet]) -> Result<(), ConfigError> {
    for (i, a) in sets.iter().enumerate() {
        for b in &sets[i + 1..] {
            for ra in &a.ranges {
                if let Some(rb) = b.ranges.iter().find(|rb| ra.overlaps(rb)) {
                    return Err(ConfigError::invalid(
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
pub(super) fn check_families_for_version(
    sets: &[RangeSet],
    version: &str,
) -> Result<(), ConfigError> {
    if !matches!(version, "0.1.0" | "0.2.0") {
        return Ok(());
    }
    let v4 = sets.iter().filter(|s| s.is_ipv4()).count();
    if v4 > 1 || sets.len() - v4 > 1 {
        return Err(ConfigError::invalid(
            "ipam.ranges",
            &format!("{} range sets", sets.len()),
            &format!("CNI version {version} does not support more than 1 address per family"),
        ));
    }
    Ok(())
}
