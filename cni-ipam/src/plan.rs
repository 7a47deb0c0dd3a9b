//! Choosing addresses: pure functions over the configuration and what is
//! reserved, so every decision is made (and every error found) before the
//! store is changed. No I/O here: the planner never touches a store, and a
//! store never decides.
//!
//! The search is host-local's round robin: in each range set, start after
//! the address recorded in `last_reserved_ip.<index>` (at `rangeStart` of
//! the first range when there is none, or it is no longer in the set), walk
//! the ranges in order, wrapping from the end of the last range to the start
//! of the first, skip each range's gateway, and take the first address with
//! no reservation file. A fresh directory therefore hands out the network
//! address + 2 first when the gateway defaults to + 1.
//!
//! Go: `(*IPAllocator).Get` in host-local's `backend/allocator`.

use std::collections::HashMap;
use std::net::IpAddr;

use cni_types::{Attachment, Error};

use crate::config::{IpamConfig, Requested};
use crate::range::{bits, Range, RangeIter, RangeSet};
use crate::store::{Assigned, Reservation, State};
use crate::{ADDRESS_NOT_ALLOCATABLE, ADDRESS_UNAVAILABLE, DUPLICATE_ALLOCATION, RANGE_EXHAUSTED};

/// Refuses an ADD for an attachment that already holds an address in one
/// of the range sets ([`DUPLICATE_ALLOCATION`]), naming the address: "a
/// runtime should not call `ADD` twice (without an intervening DEL)"
/// (SPEC-1.0.0). Called on the store as an ADD first reads it; older
/// reservations naming only the container do not count, as in host-local.
///
/// Go: the `GetByID` check of `(*IPAllocator).Get` ("%s has been allocated
/// to %s, duplicate allocation is not allowed").
pub fn refuse_duplicate(
    cfg: &IpamConfig,
    state: &State,
    attachment: &Attachment,
) -> Result<(), Error> {
    let (id, ifname) = (attachment.container_id.as_str(), attachment.ifname.as_str());
    for set in &cfg.range_sets {
        let mut mine: Vec<IpAddr> = state
            .held
            .iter()
            .filter(|r| r.held_by(attachment) && set.contains(r.ip))
            .map(|r| r.ip)
            .collect();
        mine.sort_by_key(|ip| bits(*ip));
        if let Some(held) = mine.first() {
            return Err(Error::new(
                DUPLICATE_ALLOCATION,
                format!(
                    "{held} has been allocated to container {id:?}, interface {ifname:?}, \
                     duplicate allocation is not allowed"
                ),
            )
            .with_details(format!(
                "range set {} ({set}); a runtime should not call ADD twice without an \
                 intervening DEL (SPEC-1.0.0): DEL it first",
                set.field
            )));
        }
    }
    Ok(())
}

/// One address per range set for the attachment `(id, ifname)`.
///
/// An address the attachment already holds in a set is returned again:
/// an ADD refuses a duplicate first ([`refuse_duplicate`]), so it holds one
/// only after a transaction of its own whose answer was lost (the etcd
/// store), and that is this ADD's reservation. A requested
/// address must lie in a range (`rangeStart`..`rangeEnd`), not be its
/// gateway, and be free or already this attachment's.
pub fn plan(
    cfg: &IpamConfig,
    state: &State,
    attachment: &Attachment,
    requested: &[Requested],
) -> Result<Vec<Assigned>, Error> {
    plan_skipping(cfg, state, attachment, requested, 0)
}

/// [`plan`], but a new address is the free one `skip` places further in
/// host-local's order (the first free one when fewer are free). A store
/// without a lock retries with a few random skips after losing a race, so
/// that the nodes which lost do not all race again for the same next
/// address.
pub fn plan_skipping(
    cfg: &IpamConfig,
    state: &State,
    attachment: &Attachment,
    requested: &[Requested],
    skip: usize,
) -> Result<Vec<Assigned>, Error> {
    let (held, last_reserved) = (&state.held, &state.last_reserved);
    let (id, ifname) = (attachment.container_id.as_str(), attachment.ifname.as_str());
    let wanted = requested_per_set(&cfg.range_sets, requested)?;
    let taken: HashMap<IpAddr, &Reservation> = held.iter().map(|r| (r.ip, r)).collect();
    let mut out = Vec::with_capacity(cfg.range_sets.len());
    for (i, set) in cfg.range_sets.iter().enumerate() {
        let mut mine: Vec<IpAddr> = held
            .iter()
            .filter(|r| r.held_by(attachment) && set.contains(r.ip))
            .map(|r| r.ip)
            .collect();
        mine.sort_by_key(|ip| bits(*ip));
        let (ip, new) = match (wanted[i], mine.first()) {
            (Some(req), _) if mine.contains(&req.ip) => (req.ip, false),
            (Some(req), Some(holding)) => {
                return Err(Error::new(
                    ADDRESS_UNAVAILABLE,
                    format!(
                        "requested address {} ({}) but the attachment already holds {holding}",
                        req.ip, req.source
                    ),
                )
                .with_details(format!(
                    "container {id:?}, interface {ifname:?} in range set {} ({set}); DEL it first",
                    set.field
                )))
            }
            (Some(req), None) => match taken.get(&req.ip) {
                Some(other) => {
                    return Err(Error::new(
                        ADDRESS_UNAVAILABLE,
                        format!(
                            "requested address {} ({}) is already reserved",
                            req.ip, req.source
                        ),
                    )
                    .with_details(format!("held by {}", other.describe_owner())))
                }
                None => (req.ip, true),
            },
            (None, Some(holding)) => (*holding, false),
            (None, None) => {
                let last = last_reserved.get(i).copied().flatten();
                let pool = match state.pools.get(i) {
                    Some(Some(ranges)) => RangeSet {
                        ranges: ranges.clone(),
                        field: set.field.clone(),
                    },
                    _ => set.clone(),
                };
                let mut free = RangeIter::new(&pool, last).filter(|ip| !taken.contains_key(ip));
                let first = free.next();
                let free = match skip {
                    0 => first,
                    n => free.nth(n - 1).or(first),
                };
                match free {
                    Some(ip) => (ip, true),
                    None => {
                        return Err(Error::new(
                            RANGE_EXHAUSTED,
                            format!(
                                "no IP addresses available in range set {} ({set})",
                                set.field
                            ),
                        )
                        .with_details(format!("{} addresses held", held.len())))
                    }
                }
            }
        };
        let range = set.range_for(ip).unwrap_or(&set.ranges[0]);
        out.push(Assigned {
            set: i,
            ip,
            prefix: range.subnet.prefix(),
            gateway: range.gateway,
            new,
        });
    }
    Ok(out)
}

/// Which requested address goes to which range set (at most one each).
fn requested_per_set<'r>(
    sets: &[RangeSet],
    requested: &'r [Requested],
) -> Result<Vec<Option<&'r Requested>>, Error> {
    let mut per_set: Vec<Option<&Requested>> = vec![None; sets.len()];
    for req in requested {
        let Some((i, range)) = sets
            .iter()
            .enumerate()
            .find_map(|(i, s)| s.range_for(req.ip).map(|r| (i, r)))
        else {
            let ranges: Vec<String> = sets.iter().map(|s| format!("{} ({s})", s.field)).collect();
            return Err(Error::new(
                ADDRESS_NOT_ALLOCATABLE,
                format!(
                    "requested address {} ({}) is in no range",
                    req.ip, req.source
                ),
            )
            .with_details(format!("ranges: {}", ranges.join("; "))));
        };
        if req.ip == range.gateway {
            return Err(Error::new(
                ADDRESS_NOT_ALLOCATABLE,
                format!(
                    "requested address {} ({}) is the gateway of its range",
                    req.ip, req.source
                ),
            )
            .with_details(format!("range {range} of {}", sets[i].field)));
        }
        if let Some(first) = per_set[i] {
            return Err(Error::new(
                ADDRESS_NOT_ALLOCATABLE,
                format!(
                    "requested addresses {} ({}) and {} ({}) are in the same range set",
                    first.ip, first.source, req.ip, req.source
                ),
            )
            .with_details(format!(
                "one address is allocated per range set; {} is {}",
                sets[i].field, sets[i]
            )));
        }
        per_set[i] = Some(req);
    }
    Ok(per_set)
}

/// The range sets in which every address is reserved (or is a gateway), by
/// index: ADD cannot succeed while there is one.
pub fn exhausted_sets(sets: &[RangeSet], held: &[IpAddr]) -> Vec<usize> {
    sets.iter()
        .enumerate()
        .filter(|(_, set)| set.ranges.iter().all(|r| free_in_range(r, held) == 0))
        .map(|(i, _)| i)
        .collect()
}

/// How many addresses of `range` could still be handed out.
fn free_in_range(range: &Range, held: &[IpAddr]) -> u128 {
    let (start, end) = (bits(range.start), bits(range.end));
    let gateway_inside = range.contains(range.gateway);
    // Saturates rather than trusting that no range is the whole IPv6
    // space (`::` is refused as a rangeStart, so none is).
    let size = (end - start).saturating_add(1);
    let used = held
        .iter()
        .filter(|ip| range.contains(**ip) && **ip != range.gateway)
        .count() as u128;
    size.saturating_sub(used + u128::from(gateway_inside))
}

#[cfg(test)]
mod tests {
    use crate::test_values::{config, ip};
    use serde_json::json;

    use super::*;
    use crate::store::Owner;

    fn ips(ips: &[&str]) -> Vec<IpAddr> {
        ips.iter().map(|s| ip(s)).collect()
    }

    /// `ips` held by another attachment, and the last reserved addresses.
    fn state(held: &[&str], last: &[Option<&str>]) -> State {
        State {
            held: ips(held)
                .into_iter()
                .map(|ip| Reservation::new(ip, Owner::Container("other".into())))
                .collect(),
            last_reserved: last.iter().map(|l| l.map(ip)).collect(),
            ..State::default()
        }
    }

    fn c() -> Attachment {
        Attachment {
            container_id: "c".into(),
            ifname: "eth0".into(),
        }
    }

    #[test]
    fn defaults_exclude_the_ipv4_broadcast_but_not_the_last_ipv6_address() {
        let cfg = config(json!([[{"subnet": "10.0.0.0/24"}], [{"subnet": "2001:db8::/120"}]]));
        let [v4, v6] = [&cfg.range_sets[0].ranges[0], &cfg.range_sets[1].ranges[0]];
        assert_eq!(
            (v4.start, v4.end, v4.gateway),
            (ip("10.0.0.1"), ip("10.0.0.254"), ip("10.0.0.1"))
        );
        assert_eq!(
            (v6.start, v6.end, v6.gateway),
            (ip("2001:db8::1"), ip("2001:db8::ff"), ip("2001:db8::1"))
        );
    }

    #[test]
    fn plan_takes_the_first_free_address_after_the_last_one() {
        let cfg = config(json!([[{"subnet": "10.0.0.0/29"}]]));
        let taken = ["10.0.0.2", "10.0.0.6", "10.0.0.3"];
        let got = plan(&cfg, &state(&taken, &[Some("10.0.0.5")]), &c(), &[]).unwrap();
        assert_eq!(
            (got[0].ip, got[0].prefix, got[0].new),
            (ip("10.0.0.4"), 29, true)
        );
        let all = ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"];
        assert_eq!(
            plan(&cfg, &state(&all, &[None]), &c(), &[])
                .unwrap_err()
                .code,
            RANGE_EXHAUSTED
        );
        assert_eq!(exhausted_sets(&cfg.range_sets, &ips(&all)), [0]);
        assert!(exhausted_sets(&cfg.range_sets, &ips(&taken)).is_empty());
    }

    #[test]
    fn a_skip_takes_a_later_free_address_or_the_first_when_too_few() {
        let cfg = config(json!([[{"subnet": "10.0.0.0/29"}]]));
        let st = state(&["10.0.0.3"], &[None]);
        let at = |skip| plan_skipping(&cfg, &st, &c(), &[], skip).unwrap()[0].ip;
        assert_eq!(at(0), ip("10.0.0.2"));
        assert_eq!(at(1), ip("10.0.0.4"));
        assert_eq!(at(3), ip("10.0.0.6"));
        assert_eq!(at(4), ip("10.0.0.2"));
    }

    #[test]
    fn the_whole_ipv6_space_is_counted_without_overflow() {
        let cfg = config(json!([[{"subnet": "::/0"}]]));
        assert!(exhausted_sets(&cfg.range_sets, &ips(&["::2", "::3"])).is_empty());
        let got = plan(&cfg, &state(&["::2"], &[None]), &c(), &[]).unwrap();
        assert_eq!(got[0].ip, ip("::3"));
    }

    #[test]
    fn two_requests_in_one_range_set_are_refused() {
        let cfg = config(json!([[{"subnet": "10.0.0.0/24"}]]));
        let req = |s: &str, src: &str| Requested {
            ip: ip(s),
            source: src.into(),
        };
        let requested = [req("10.0.0.7", "a"), req("10.0.0.8", "b")];
        let e = plan(&cfg, &state(&[], &[None]), &c(), &requested).unwrap_err();
        assert_eq!(e.code, ADDRESS_NOT_ALLOCATABLE);
        assert!(e.msg.contains("10.0.0.7 (a) and 10.0.0.8 (b)"), "{e:?}");
    }
}
