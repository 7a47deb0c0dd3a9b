//! [`Retry`]: attempts made again while the ruleset keeps changing under
//! them, after random pauses, until a deadline.

use std::time::{Duration, Instant};

/// How long an attempt that depends on what it read (a batch tied to the
/// generation of its listing, a dump the kernel flagged interrupted) is
/// made again while other writers keep committing.
pub(crate) const RETRY_DEADLINE: Duration = Duration::from_secs(10);
/// The longest pause between two attempts.
const MAX_PAUSE_MS: u64 = 32;

/// The attempts of one operation: when it started, how many failed.
#[derive(Debug)]
pub(crate) struct Retry {
    started: Instant,
    attempt: u32,
}

impl Retry {
    /// The first attempt starts now.
    pub(crate) fn new() -> Retry {
        Retry {
            started: Instant::now(),
            attempt: 0,
        }
    }

    /// The attempts that failed so far.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempt
    }

    /// After a failed attempt: pauses (1 ms up to `2^attempt` ms, at most
    /// [`MAX_PAUSE_MS`], drawn so that writers that collided spread) and
    /// answers true, or answers false without pausing when the pause
    /// would end past [`RETRY_DEADLINE`].
    pub(crate) fn pause(&mut self) -> bool {
        self.attempt += 1;
        let pause = pause(self.attempt);
        if self.started.elapsed() + pause > RETRY_DEADLINE {
            return false;
        }
        std::thread::sleep(pause);
        true
    }
}

/// The pause before attempt `attempt + 1`, drawn from the clock and the
/// process id: no two processes that collided pause alike.
fn pause(attempt: u32) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let mut x = u64::from(nanos) ^ (u64::from(std::process::id()) << 32) | 1;
    // xorshift64: enough to spread pauses, no dependency.
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    let span = (1u64 << attempt.min(6)).min(MAX_PAUSE_MS);
    Duration::from_micros(1000 + x % (span * 1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_with_the_attempts_and_stay_within_their_bound() {
        for attempt in 1..10 {
            let p = pause(attempt);
            let span = (1u64 << attempt.min(6)).min(MAX_PAUSE_MS);
            assert!(p >= Duration::from_millis(1), "{attempt}: {p:?}");
            assert!(p < Duration::from_millis(1 + span), "{attempt}: {p:?}");
        }
    }
}
