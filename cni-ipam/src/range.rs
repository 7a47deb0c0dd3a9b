//! Ranges and range sets, and host-local's order of walking them.
//!
//! Go: `plugins/ipam/host-local/backend/allocator/range.go`,
//! `range_set.go`, and `RangeIter` in `allocator.go`.

use std::fmt;
use std::net::IpAddr;

use cni_types::IpNetwork;

/// One range: a subnet and the addresses of it that may be handed out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    /// The subnet, network address and prefix (no host bits).
    pub subnet: IpNetwork,
    /// First allocatable address, inclusive.
    pub start: IpAddr,
    /// Last allocatable address, inclusive.
    pub end: IpAddr,
    /// The gateway reported with addresses of this range; never allocated.
    pub gateway: IpAddr,
}

impl Range {
    /// Whether `ip` is between `start` and `end` (same family).
    pub fn contains(&self, ip: IpAddr) -> bool {
        same_family(ip, self.start) && bits(self.start) <= bits(ip) && bits(ip) <= bits(self.end)
    }

    /// Whether the two share an address.
    pub fn overlaps(&self, other: &Range) -> bool {
        same_family(self.start, other.start)
            && bits(self.start) <= bits(other.end)
            && bits(other.start) <= bits(self.end)
    }
}

impl fmt::Display for Range {
    /// `start-end`, as host-local names a range in its messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.start, self.end)
    }
}

/// A pool of ranges of one family: one address is allocated from each set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeSet {
    /// The ranges, tried in order.
    pub ranges: Vec<Range>,
    /// Where the set came from (`ipam.ranges[1]`, `ipam`,
    /// `runtimeConfig.ipRanges[0]`), for messages.
    pub field: String,
}

impl RangeSet {
    /// The range holding `ip`, if any.
    pub fn range_for(&self, ip: IpAddr) -> Option<&Range> {
        self.ranges.iter().find(|r| r.contains(ip))
    }

    /// Whether any range holds `ip`.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.range_for(ip).is_some()
    }

    /// Whether the set holds IPv4 ranges.
    pub fn is_ipv4(&self) -> bool {
        self.ranges.first().is_some_and(|r| r.start.is_ipv4())
    }
}

impl fmt::Display for RangeSet {
    /// `a-b,c-d`, as host-local names a range set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// host-local's `RangeIter`: every address of the set once, starting after
/// `last` (or at the first `rangeStart`), skipping gateways.
pub struct RangeIter<'s> {
    set: &'s RangeSet,
    range: usize,
    cur: Option<u128>,
    start: Option<u128>,
    done: bool,
}

impl<'s> RangeIter<'s> {
    /// Every address of `set` once, starting after `last`.
    pub fn new(set: &'s RangeSet, last: Option<IpAddr>) -> RangeIter<'s> {
        let from_last = last.and_then(|ip| {
            set.ranges
                .iter()
                .position(|r| r.contains(ip))
                .map(|i| (i, bits(ip)))
        });
        let (range, cur) = match from_last {
            Some((i, ip)) => (i, Some(ip)),
            None => (0, None),
        };
        RangeIter {
            set,
            range,
            cur,
            start: None,
            done: set.ranges.is_empty(),
        }
    }
}

impl Iterator for RangeIter<'_> {
    type Item = IpAddr;

    fn next(&mut self) -> Option<IpAddr> {
        while !self.done {
            let r = &self.set.ranges[self.range];
            let cur = match self.cur {
                None => {
                    let first = bits(r.start);
                    self.start = Some(first);
                    first
                }
                Some(c) => {
                    let next = if c == bits(r.end) {
                        self.range = (self.range + 1) % self.set.ranges.len();
                        bits(self.set.ranges[self.range].start)
                    } else {
                        c + 1
                    };
                    match self.start {
                        None => self.start = Some(next),
                        Some(s) if s == next => {
                            self.done = true;
                            return None;
                        }
                        Some(_) => {}
                    }
                    next
                }
            };
            self.cur = Some(cur);
            let r = &self.set.ranges[self.range];
            let ip = from_bits(cur, r.start.is_ipv4());
            if ip != r.gateway {
                return Some(ip);
            }
        }
        None
    }
}

/// An address as a number (IPv4 in the low 32 bits).
pub(crate) fn bits(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

/// The address of a number, in the given family. IPv4 keeps the low 32
/// bits; callers only pass numbers inside a subnet of that family.
pub(crate) fn from_bits(n: u128, v4: bool) -> IpAddr {
    if v4 {
        IpAddr::V4(std::net::Ipv4Addr::from(n as u32))
    } else {
        IpAddr::V6(std::net::Ipv6Addr::from(n))
    }
}

pub(crate) fn same_family(a: IpAddr, b: IpAddr) -> bool {
    a.is_ipv4() == b.is_ipv4()
}

#[cfg(test)]
mod tests {
    use crate::test_values::{config, ip};
    use serde_json::json;

    use super::*;

    #[test]
    fn the_search_wraps_from_the_last_range_to_the_first_skipping_gateways() {
        let cfg = config(json!([[
            {"subnet": "10.0.0.0/29", "rangeStart": "10.0.0.4"},
            {"subnet": "10.0.1.0/29", "rangeEnd": "10.0.1.3"}
        ]]));
        let set = &cfg.range_sets[0];
        let all: Vec<IpAddr> = RangeIter::new(set, Some(ip("10.0.0.5"))).collect();
        let want: Vec<IpAddr> = ["10.0.0.6", "10.0.1.2", "10.0.1.3", "10.0.0.4", "10.0.0.5"]
            .map(ip)
            .to_vec();
        assert_eq!(all, want);
        // A last address outside the set starts at the first rangeStart.
        assert_eq!(
            RangeIter::new(set, Some(ip("10.9.9.9"))).next(),
            Some(ip("10.0.0.4"))
        );
    }
}
