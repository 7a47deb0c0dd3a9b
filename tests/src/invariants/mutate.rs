//! Bounded, deterministic mutation runs on stable Rust: what `cargo test`
//! does in CI where libFuzzer (nightly) cannot run.
//!
//! Each run takes the seeds of a target, applies a few seeded random
//! mutations to one at a time (bit flips, interesting bytes, truncations,
//! deletions, insertions of the format's own tokens, duplicated chunks,
//! splices with another seed, and length fields overwritten with
//! interesting values in either byte order) and checks the target's
//! invariant on each result, within a number of runs and a wall-time cap.
//! The same seed gives the same sequence of inputs; the cap only decides
//! how far along it a slow machine gets.

use std::time::{Duration, Instant};

/// A xorshift64* generator: small, seeded, the same on every machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator started from `seed` (0 is replaced, as xorshift needs a
    /// bit set).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

/// The largest input a mutation makes.
pub const MAX_INPUT: usize = 64 * 1024;

/// Values that break length and count fields.
const INTERESTING: [u32; 22] = [
    0,
    1,
    2,
    3,
    4,
    5,
    7,
    8,
    12,
    15,
    16,
    17,
    19,
    20,
    21,
    0x7f,
    0x80,
    0xff,
    0x7fff,
    0x8000,
    0xffff,
    0xffff_ffff,
];

/// One input made from `seeds[at]` by one to four stacked mutations;
/// `tokens` are the format's own words, inserted whole.
pub fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], at: usize, tokens: &[&[u8]]) -> Vec<u8> {
    let mut data = seeds[at].clone();
    for _ in 0..1 + rng.below(4) {
        mutate_once(rng, &mut data, seeds, tokens);
    }
    data.truncate(MAX_INPUT);
    data
}

fn mutate_once(rng: &mut Rng, data: &mut Vec<u8>, seeds: &[Vec<u8>], tokens: &[&[u8]]) {
    let len = data.len();
    match rng.below(9) {
        0 if len > 0 => {
            let at = rng.below(len);
            data[at] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let at = rng.below(len);
            data[at] = match rng.below(3) {
                0 => [0, 1, 0x7f, 0x80, 0xff][rng.below(5)],
                1 => b" \"\\\n\t:-*#\0"[rng.below(10)],
                _ => rng.next_u64() as u8,
            };
        }
        2 => data.truncate(rng.below(len + 1)),
        3 if len > 0 => {
            let from = rng.below(len);
            let to = (from + 1 + rng.below(16)).min(len);
            data.drain(from..to);
        }
        4 => {
            let at = rng.below(len + 1);
            let insert: Vec<u8> = if !tokens.is_empty() && rng.below(2) == 0 {
                tokens[rng.below(tokens.len())].to_vec()
            } else {
                (0..1 + rng.below(8))
                    .map(|_| rng.next_u64() as u8)
                    .collect()
            };
            data.splice(at..at, insert);
        }
        5 if len > 0 => {
            let from = rng.below(len);
            let to = (from + 1 + rng.below(64)).min(len);
            let chunk = data[from..to].to_vec();
            let at = rng.below(len + 1);
            data.splice(at..at, chunk);
        }
        6 => {
            let other = &seeds[rng.below(seeds.len())];
            let keep = rng.below(len + 1);
            let from = rng.below(other.len() + 1);
            data.truncate(keep);
            data.extend_from_slice(&other[from..]);
        }
        7 | 8 if len >= 2 => {
            // A length or count field: 2 or 4 bytes at an aligned offset,
            // native or big-endian, set to an interesting value or to one
            // near the input's length.
            let width = if len >= 4 && rng.below(2) == 0 { 4 } else { 2 };
            let at = (rng.below(len - width + 1) / width) * width;
            let value = match rng.below(3) {
                0 => (len as u32)
                    .wrapping_add(rng.below(9) as u32)
                    .wrapping_sub(4),
                _ => INTERESTING[rng.below(INTERESTING.len())],
            };
            let big = rng.below(2) == 0;
            let bytes: Vec<u8> = match (width, big) {
                (4, false) => value.to_ne_bytes().to_vec(),
                (4, true) => value.to_be_bytes().to_vec(),
                (_, false) => (value as u16).to_ne_bytes().to_vec(),
                (_, true) => (value as u16).to_be_bytes().to_vec(),
            };
            data[at..at + width].copy_from_slice(&bytes);
        }
        _ => {
            let at = rng.below(len + 1);
            data.insert(at, rng.next_u64() as u8);
        }
    }
}

/// How long and how much a mutation run may take.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// The most inputs to run.
    pub runs: usize,
    /// The wall time after which no new input starts.
    pub wall: Duration,
    /// The longest one input may take (debug build, a busy machine).
    pub per_input: Duration,
}

impl Default for Budget {
    /// 20,000 inputs or 3 s, each under 1 s.
    fn default() -> Budget {
        Budget {
            runs: 20_000,
            wall: Duration::from_secs(3),
            per_input: Duration::from_secs(1),
        }
    }
}

/// What a mutation run did.
#[derive(Debug)]
pub struct Report {
    /// Inputs run.
    pub runs: usize,
    /// The first violations: (input, what was wrong).
    pub failures: Vec<(Vec<u8>, String)>,
}

/// Runs mutations of `seeds` through `check` within `budget`, from
/// `rng_seed`. `check` returns the violation (a panic inside it is
/// caught by the caller's `check`, see `catching_panics`); an input that
/// takes longer than `budget.per_input` is a violation too. Stops at the
/// tenth violation.
pub fn run(
    seeds: &[Vec<u8>],
    tokens: &[&[u8]],
    rng_seed: u64,
    budget: Budget,
    mut check: impl FnMut(&[u8]) -> Result<(), String>,
) -> Report {
    assert!(!seeds.is_empty(), "a mutation run needs seeds");
    let mut rng = Rng::new(rng_seed);
    let started = Instant::now();
    let mut report = Report {
        runs: 0,
        failures: Vec::new(),
    };
    while report.runs < budget.runs && started.elapsed() < budget.wall && report.failures.len() < 10
    {
        let at = report.runs % seeds.len();
        let input = mutate(&mut rng, seeds, at, tokens);
        let one = Instant::now();
        let outcome = check(&input);
        let took = one.elapsed();
        report.runs += 1;
        let outcome = outcome.and_then(|()| {
            if took > budget.per_input {
                Err(format!("took {took:?}, more than {:?}", budget.per_input))
            } else {
                Ok(())
            }
        });
        if let Err(why) = outcome {
            report.failures.push((input, why));
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_inputs() {
        let seeds = vec![b"-A POSTROUTING -j MASQUERADE".to_vec(), vec![8, 0, 1, 0]];
        let make = || {
            let mut rng = Rng::new(7);
            (0..200)
                .map(|i| mutate(&mut rng, &seeds, i % 2, &[b"--comment"]))
                .collect::<Vec<_>>()
        };
        let first = make();
        assert_eq!(first, make());
        assert!(first.iter().any(|m| m != &seeds[0] && m != &seeds[1]));
    }
}
