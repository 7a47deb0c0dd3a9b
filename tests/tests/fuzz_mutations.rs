//! The fuzz targets of the parsers of untrusted bytes, run for a bounded
//! time on stable Rust: each seed (generated, the committed corpus and the
//! regressions) mutated with a fixed seed (`tests::invariants::mutate`),
//! each input checked by the target's invariant, at most 20,000 inputs or
//! 3 s per target. A violation fails the test and prints the input; it
//! then goes to `fuzz/regressions/<target>/` (see `fuzz/README.md`).
//!
//! Besides the invariant, each input must stay within a time bound (1 s)
//! and an allocation bound: the most this thread holds at once during the
//! input, counted by this binary's allocator, is at most 1 MiB plus 64
//! bytes per input byte. A parser that believes a length field and
//! reserves what it says fails here.
//!
//! For a longer hunt on one's own machine, `CNI_FUZZ_MUTATION_SECS=N`
//! runs each target for N seconds without the input count cap, and
//! `CNI_FUZZ_MUTATION_SEED=N` starts from another seed; CI sets neither.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fs;
use std::path::PathBuf;

use tests::invariants::{self, catching_panics, mutate, seeds};

/// The system allocator, counting what each thread holds.
struct Counting;

thread_local! {
    /// Bytes allocated minus bytes freed by this thread (may go negative
    /// when another thread frees what this one allocated).
    static HELD: Cell<isize> = const { Cell::new(0) };
    /// The most `HELD` reached since the last reset.
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // try_with: the allocator also runs while thread locals are torn down.
    let _ = HELD.try_with(|held| {
        let now = held.get() + delta;
        held.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is forwarded to `System` unchanged; counting touches
// only const-initialised thread locals, which never allocate.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        System.dealloc(ptr, layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most `f` held at once on this thread, in bytes, beyond what was
/// held before.
fn peak_during(f: impl FnOnce()) -> usize {
    let before = HELD.with(Cell::get);
    PEAK.with(|p| p.set(before));
    f();
    usize::try_from(PEAK.with(Cell::get) - before).unwrap_or(0)
}

/// The seeds of `target`: generated, then the corpus and the regressions.
fn all_seeds(target: &str) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = seeds(target).into_iter().map(|(_, data)| data).collect();
    let fuzz = tests::workspace_root().join("fuzz");
    for sub in ["corpus", "regressions"] {
        let Ok(entries) = fs::read_dir(fuzz.join(sub).join(target)) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        out.extend(paths.iter().filter_map(|p| fs::read(p).ok()));
    }
    out
}

/// Runs `target` for its budget from `rng_seed`; fails with the first
/// violations, their inputs in hex.
fn run(target: &str, tokens: &[&[u8]], rng_seed: u64) {
    let seeds = all_seeds(target);
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let mut budget = mutate::Budget::default();
    if let Some(secs) = env("CNI_FUZZ_MUTATION_SECS") {
        budget.wall = std::time::Duration::from_secs(secs);
        budget.runs = usize::MAX;
    }
    let rng_seed = env("CNI_FUZZ_MUTATION_SEED").map_or(rng_seed, |s| s ^ rng_seed);
    let report = mutate::run(&seeds, tokens, rng_seed, budget, |input| {
        let mut outcome = Ok(());
        let peak =
            peak_during(|| outcome = catching_panics(|| invariants::run_target(target, input)));
        outcome?;
        let bound = (1 << 20) + 64 * input.len();
        if peak > bound {
            return Err(format!("held {peak} bytes at once, more than {bound}"));
        }
        Ok(())
    });
    eprintln!(
        "{target}: {} mutated inputs from {} seeds",
        report.runs,
        seeds.len()
    );
    let failures: Vec<String> = report
        .failures
        .iter()
        .map(|(input, why)| {
            let hex: String = input.iter().map(|b| format!("{b:02x}")).collect();
            format!("{why}\n  input ({} bytes): {hex}", input.len())
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{target}: {} violations:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        report.runs >= 100,
        "{target}: only {} inputs ran",
        report.runs
    );
}

#[test]
fn nft_netlink_answers_never_panic_and_read_back_as_they_were() {
    run(
        invariants::nft::TARGET,
        &invariants::nft::TOKENS,
        0x6e66_7431,
    );
}

#[test]
fn dbus_replies_never_panic_and_decode_only_whole() {
    run(
        invariants::dbus::TARGET,
        &invariants::dbus::TOKENS,
        0x6462_7573,
    );
}

#[test]
fn iptables_save_output_never_panics_and_rules_read_back_as_saved() {
    run(
        invariants::iptables_save::TARGET,
        &invariants::iptables_save::TOKENS,
        0x6970_7473,
    );
}

#[test]
fn dhcp_messages_never_panic_and_read_back_as_they_were() {
    run(
        invariants::dhcp::TARGET,
        &invariants::dhcp::TOKENS,
        0x6468_6370,
    );
}

#[test]
fn gob_streams_never_panic_and_stay_within_their_bytes() {
    run(
        invariants::gob::TARGET,
        &invariants::gob::TOKENS,
        0x676f_6273,
    );
}

#[test]
fn etcd_answers_never_panic_and_block_names_read_back_as_written() {
    run(
        invariants::etcd::TARGET,
        &invariants::etcd::TOKENS,
        0x6574_6364,
    );
}

/// The allocation bound means something: a parser that reserves what a
/// length field says is caught.
#[test]
fn an_allocation_a_length_field_asks_for_is_counted() {
    let peak = peak_during(|| {
        let claimed = u32::from_ne_bytes([0, 0, 0x40, 0]) as usize;
        std::hint::black_box(Vec::<u8>::with_capacity(claimed));
    });
    assert!(peak >= 0x40_0000, "{peak}");
    assert!(peak_during(|| ()) < 1024);
}
