//! Blocks: the aligned parts of a network's ranges that nodes own, their
//! names in keys, the addresses each offers a range set, and the order in
//! which a node looks for a free one.

use std::net::IpAddr;

use cni_types::Error;

use crate::error::ConfigError;
use crate::range::{bits, from_bits, Range, RangeSet};

/// Why a key's name is not one of this network's blocks (the key is then
/// skipped, and named in the result's warnings).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotABlock {
    /// No `-` between an address and a prefix length.
    #[error("not named <address>-<prefix length>")]
    Unnamed,
    /// What comes before the `-` is not an address.
    #[error("{0:?} is not an address")]
    NotAnAddress(String),
    /// An address and length, but not a block of this network's size
    /// (given), or not aligned to it.
    #[error("not a block of this network's size (/{0}, aligned)")]
    OtherSize(u8),
}

/// The prefix lengths of blocks, per family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sizes {
    pub(super) v4: u8,
    pub(super) v6: u8,
}

impl Sizes {
    fn of(&self, v4: bool) -> u8 {
        if v4 {
            self.v4
        } else {
            self.v6
        }
    }

    /// How many addresses a block of `set`'s family spans.
    pub(super) fn addresses(&self, set: &RangeSet) -> u128 {
        let v4 = set.is_ipv4();
        host_mask(v4, self.of(v4)).saturating_add(1)
    }
}

/// One block: an aligned CIDR of the configured size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Block {
    v4: bool,
    net: u128,
    len: u8,
}

impl Block {
    /// The block holding `ip`.
    pub(super) fn of(ip: IpAddr, sizes: Sizes) -> Block {
        let v4 = ip.is_ipv4();
        let len = sizes.of(v4);
        Block {
            v4,
            net: bits(ip) & !host_mask(v4, len),
            len,
        }
    }

    /// Its name in keys: `10.1.2.64-26`, `fd00::40-122` (a `/` would be a
    /// key level).
    pub(super) fn name(&self) -> String {
        format!("{}-{}", from_bits(self.net, self.v4), self.len)
    }

    /// The block a key names, if it is one of `sizes`' blocks; why not
    /// otherwise.
    pub(super) fn parse(name: &str, sizes: Sizes) -> Result<Block, NotABlock> {
        let (ip, len) = name.rsplit_once('-').ok_or(NotABlock::Unnamed)?;
        let ip: IpAddr = ip
            .parse()
            .map_err(|_| NotABlock::NotAnAddress(ip.to_owned()))?;
        let block = Block::of(ip, sizes);
        if len != block.len.to_string() || block.net != bits(ip) {
            return Err(NotABlock::OtherSize(block.len));
        }
        Ok(block)
    }

    /// Its first address as a number.
    fn first(&self) -> u128 {
        self.net
    }

    /// Its last address as a number.
    fn last(&self) -> u128 {
        self.net | host_mask(self.v4, self.len)
    }

    /// Whether it holds `ip`.
    pub(super) fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.v4 && (self.first()..=self.last()).contains(&bits(ip))
    }

    /// The parts of `set`'s ranges inside this block, each with its range's
    /// subnet and gateway: where it offers addresses to the set.
    pub(super) fn pool(&self, set: &RangeSet) -> Vec<Range> {
        set.ranges
            .iter()
            .filter(|r| r.start.is_ipv4() == self.v4)
            .filter_map(|r| {
                let lo = self.first().max(bits(r.start));
                let hi = self.last().min(bits(r.end));
                (lo <= hi).then(|| Range {
                    subnet: r.subnet,
                    start: from_bits(lo, self.v4),
                    end: from_bits(hi, self.v4),
                    gateway: r.gateway,
                })
            })
            .collect()
    }
}

/// How many addresses of `pool` can be handed out (gateways excluded).
pub(super) fn capacity(pool: &[Range]) -> u128 {
    pool.iter()
        .map(|r| {
            let size = (bits(r.end) - bits(r.start)).saturating_add(1);
            size - u128::from(r.contains(r.gateway))
        })
        .fold(0, u128::saturating_add)
}

/// The host bits of a prefix length.
fn host_mask(v4: bool, len: u8) -> u128 {
    let width = if v4 { 32 } else { 128 };
    let host = u32::from(width - len.min(width));
    if host >= 128 {
        u128::MAX
    } else {
        (1u128 << host) - 1
    }
}

impl Sizes {
    /// The sizes for `sets`: those given, else the defaults, made as small
    /// as the smallest subnet of their family when one is smaller.
    pub(super) fn for_ranges(
        given: (Option<u8>, Option<u8>),
        defaults: Sizes,
        sets: &[RangeSet],
    ) -> Result<Sizes, Error> {
        let longest = |v4: bool, default: u8| {
            sets.iter()
                .flat_map(|s| &s.ranges)
                .filter(|r| r.start.is_ipv4() == v4)
                .map(|r| r.subnet.prefix())
                .fold(default, u8::max)
        };
        let sizes = Sizes {
            v4: given.0.unwrap_or_else(|| longest(true, defaults.v4)),
            v6: given.1.unwrap_or_else(|| longest(false, defaults.v6)),
        };
        check_sizes(sets, sizes)?;
        Ok(sizes)
    }
}

/// Code 7 naming `ipam.store.blockSize` (or `blockSizeV6`) when a block is
/// larger than the subnet of one of the ranges: it would not fit.
fn check_sizes(sets: &[RangeSet], sizes: Sizes) -> Result<(), Error> {
    for set in sets {
        for r in &set.ranges {
            let v4 = r.start.is_ipv4();
            let len = sizes.of(v4);
            if r.subnet.prefix() > len {
                let field = if v4 {
                    "ipam.store.blockSize"
                } else {
                    "ipam.store.blockSizeV6"
                };
                return Err(ConfigError::invalid(
                    field,
                    &serde_json::Value::from(len),
                    &format!(
                        "blocks of /{len} do not fit the range {r} of {} (subnet {}): give a \
                         prefix length of at least {}",
                        set.field,
                        r.subnet,
                        r.subnet.prefix()
                    ),
                )
                .into());
            }
        }
    }
    Ok(())
}

/// How many blocks `set`'s ranges span (those [`candidates`] yields),
/// without listing them.
pub(super) fn block_count(set: &RangeSet, sizes: Sizes) -> u128 {
    set.ranges
        .iter()
        .map(|r| {
            let (first, last) = (Block::of(r.start, sizes), Block::of(r.end, sizes));
            let step = host_mask(first.v4, first.len).saturating_add(1);
            ((last.net - first.net) / step).saturating_add(1)
        })
        .fold(0u128, u128::saturating_add)
}

/// The blocks of `set` in order, starting at a place chosen by `hint` and
/// wrapping, each once (a block spanning two ranges of the set may come
/// twice). Lazy: an IPv6 range has more blocks than can be listed.
pub(super) fn candidates(set: &RangeSet, sizes: Sizes, hint: u64) -> impl Iterator<Item = Block> {
    // (first block, how many) per range.
    let spans: Vec<(Block, u128)> = set
        .ranges
        .iter()
        .map(|r| {
            let (first, last) = (Block::of(r.start, sizes), Block::of(r.end, sizes));
            let step = host_mask(first.v4, first.len).saturating_add(1);
            (first, ((last.net - first.net) / step).saturating_add(1))
        })
        .collect();
    let total = spans.iter().map(|s| s.1).fold(0u128, u128::saturating_add);
    let start = u128::from(hint) % total.max(1);
    let mut k = 0u128;
    std::iter::from_fn(move || {
        if k >= total {
            return None;
        }
        let mut n = (start + k) % total;
        k += 1;
        for (first, count) in &spans {
            if n < *count {
                let step = host_mask(first.v4, first.len).saturating_add(1);
                return Some(Block {
                    net: first.net + n * step,
                    ..*first
                });
            }
            n -= count;
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::test_values::{config, ip};

    const SIZES: Sizes = Sizes { v4: 26, v6: 122 };

    #[test]
    fn a_block_is_named_and_parsed_back_and_misaligned_names_are_refused() {
        let b = Block::of(ip("10.1.2.77"), SIZES);
        assert_eq!(b.name(), "10.1.2.64-26");
        assert_eq!(Block::parse("10.1.2.64-26", SIZES), Ok(b));
        assert!(Block::parse("10.1.2.65-26", SIZES).is_err());
        assert!(Block::parse("10.1.2.64-24", SIZES).is_err());
        assert!(Block::parse("garbage", SIZES).is_err());
        let v6 = Block::of(ip("fd00::7f"), SIZES);
        assert_eq!(v6.name(), "fd00::40-122");
        assert!(v6.contains(ip("fd00::40")) && !v6.contains(ip("fd00::80")));
    }

    #[test]
    fn a_block_offers_its_part_of_the_ranges_less_the_gateway() {
        let cfg = config(json!([[{"subnet": "10.1.2.0/24"}]]));
        let set = &cfg.range_sets[0];
        let first = Block::of(ip("10.1.2.0"), SIZES).pool(set);
        assert_eq!(first.len(), 1);
        assert_eq!(
            (first[0].start, first[0].end),
            (ip("10.1.2.1"), ip("10.1.2.63"))
        );
        assert_eq!(capacity(&first), 62, "10.1.2.1 is the gateway");
        assert_eq!(
            SIZES.addresses(set),
            64,
            "what a block spans, gateway or not"
        );
        let v6 = config(json!([[{"subnet": "fd00::/64"}]]));
        assert_eq!(SIZES.addresses(&v6.range_sets[0]), 64);
        let last = Block::of(ip("10.1.2.200"), SIZES).pool(set);
        assert_eq!(
            capacity(&last),
            63,
            "the broadcast address is not in the range"
        );
        let all: Vec<String> = candidates(set, SIZES, 6).map(|b| b.name()).collect();
        assert_eq!(
            all,
            [
                "10.1.2.128-26",
                "10.1.2.192-26",
                "10.1.2.0-26",
                "10.1.2.64-26"
            ]
        );
    }

    #[test]
    fn a_block_size_given_larger_than_a_subnet_is_code_7_naming_the_field() {
        let cfg = config(json!([[{"subnet": "10.1.2.0/28"}], [{"subnet": "fd00::/120"}]]));
        let err = Sizes::for_ranges((Some(26), None), SIZES, &cfg.range_sets).unwrap_err();
        assert_eq!(err.code, cni_types::Code::INVALID_NETWORK_CONFIG);
        assert_eq!(err.msg, "invalid ipam.store.blockSize");
        assert!(err.details.contains("at least 28"), "{err:?}");
        let err = Sizes::for_ranges((None, Some(118)), SIZES, &cfg.range_sets).unwrap_err();
        assert_eq!(err.msg, "invalid ipam.store.blockSizeV6");
        // Not given, the default shrinks to the smallest subnet.
        let sizes = Sizes::for_ranges((None, None), SIZES, &cfg.range_sets).unwrap();
        assert_eq!(sizes, Sizes { v4: 28, v6: 122 });
    }
}
