//! Reserving what the planner chose, again and again while other nodes
//! take the chosen addresses first (the etcd store has no lock): each lost
//! race is followed by a pause, a fresh read and a plan a random distance
//! further, up to a bound in races and in time.

use std::time::{Duration, Instant};

use cni_types::{Attachment, Error};

use crate::config::{IpamConfig, Requested};
use crate::plan;
use crate::store::{Assigned, Reserved, State, Store};

/// How long an ADD keeps re-planning when addresses it chose are taken by
/// other nodes meanwhile; then code 11.
const CONTENTION_LIMIT: Duration = Duration::from_secs(10);
/// How many races an ADD may lose before giving up with code 11, however
/// quickly: each loss is another node's success, and more than this many
/// contenders for one range at once is not contention but a fault.
const MAX_LOST_RACES: u32 = 32;
/// The longest pause between two attempts; the pause doubles from 2 ms
/// with each race lost, and a random part of it is taken.
const MAX_BACKOFF: Duration = Duration::from_millis(100);

/// Plans and reserves one address per range set for `attachment`,
/// starting from `state` (read from `store`): the addresses to return.
pub(super) fn reserve<S: Store>(
    store: &mut S,
    cfg: &IpamConfig,
    mut state: State,
    attachment: &Attachment,
    requested: &[Requested],
) -> Result<Vec<Assigned>, Error> {
    // Under a lock, a planned address is free unless something ignores
    // the lock; without one (etcd), another node may have won it. Either
    // way it now shows as held: read again and re-plan.
    let (sets, started) = (cfg.range_sets.len(), Instant::now());
    let mut lost = 0u32;
    loop {
        let plan = plan::plan_skipping(cfg, &state, attachment, requested, spread(lost))?;
        let new: Vec<Assigned> = plan.iter().filter(|a| a.new).cloned().collect();
        if new.is_empty() {
            return Ok(plan);
        }
        match store.reserve(&new, attachment)? {
            Reserved::Done => return Ok(plan),
            Reserved::Taken(_)
                if lost + 1 < MAX_LOST_RACES
                    && started.elapsed() + MAX_BACKOFF < CONTENTION_LIMIT =>
            {
                lost += 1;
                std::thread::sleep(backoff(lost));
                state = store.read(sets)?;
            }
            Reserved::Taken(ip) => {
                return Err(Error::try_again_later(
                    format!(
                        "the addresses chosen kept being taken by others: {} races lost \
                         (the last for {ip})",
                        lost + 1
                    ),
                    format!(
                        "in {} within {:?} (at most {MAX_LOST_RACES} races, {CONTENTION_LIMIT:?})",
                        store.describe(),
                        started.elapsed()
                    ),
                ))
            }
        }
    }
}

/// A random number below `below` (at least 1), drawn anew for `lost`.
fn draw(lost: u32, below: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded per process: a different draw in every plugin.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(lost);
    h.finish() % below.max(1)
}

/// How far past the next free address to look after losing `lost` races:
/// 0 at first (host-local's order), then a random distance in a window
/// that doubles, up to 64, so that contenders spread out.
fn spread(lost: u32) -> usize {
    if lost == 0 {
        return 0;
    }
    draw(lost, 4u64 << lost.min(4)) as usize
}

/// The pause after losing `lost` races (at least one): a random part of a
/// window doubling from 2 ms up to [`MAX_BACKOFF`], so that contenders do
/// not read and write again all at once.
fn backoff(lost: u32) -> Duration {
    let window = (2u64 << lost.min(16)).min(MAX_BACKOFF.as_millis() as u64);
    Duration::from_millis(window / 2 + draw(lost.wrapping_add(1 << 20), window / 2 + 1))
}
