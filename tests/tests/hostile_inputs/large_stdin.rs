//! 64 MiB of stdin, and the memory it costs: the peak RSS of each run
//! against a bound in multiples of the input.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::checks::{fails_with, succeeds};
use crate::inputs::{debug_dir, padded_conf};
use crate::process::{dns_mac, invocation, noop, run, Invocation, Run};

const MIB: usize = 1 << 20;

/// Runs a 64 MiB stdin and asserts the peak RSS stays under 4x the input
/// plus 16 MiB; prints the figure.
fn sixty_four_mib(bin: &Path, what: &str, inv: Invocation) -> Run {
    sixty_four_mib_within(bin, what, inv, 4)
}

/// Like [`sixty_four_mib`], with the bound `multiple` x the input + 16 MiB.
fn sixty_four_mib_within(bin: &Path, what: &str, inv: Invocation, multiple: u64) -> Run {
    let size = inv.stdin.len();
    let out = run(bin, &inv);
    let limit = multiple * size as u64 + 16 * MIB as u64;
    eprintln!(
        "64 MiB stdin ({what}): peak RSS {:.1} MiB = {:.2}x the input ({:?}, exit {:?})",
        out.max_rss as f64 / MIB as f64,
        out.max_rss as f64 / size as f64,
        out.elapsed,
        out.status
    );
    assert!(
        out.max_rss < limit,
        "{what}: peak RSS {} bytes exceeds {multiple} x {size} + 16 MiB",
        out.max_rss
    );
    out
}

#[test]
fn stdin_64_mib_config_memory_is_bounded() {
    let conf = padded_conf(64 * MIB, b"a");
    let out = sixty_four_mib(
        &noop(),
        "a valid config, noop ADD",
        invocation("ADD").stdin(conf),
    );
    succeeds(&out);
    assert_eq!(out.stdout, b"{}");
}

#[test]
fn stdin_64_mib_not_json_memory_is_bounded() {
    let mut garbage = vec![b'x'; 64 * MIB];
    garbage[0] = b'{';
    let out = sixty_four_mib(
        &noop(),
        "not JSON, noop ADD",
        invocation("ADD").stdin(garbage),
    );
    fails_with(&out, 6);
}

#[test]
fn stdin_64_mib_invalid_utf8_memory_is_bounded() {
    // Every invalid byte becomes U+FFFD (3 bytes) when read as the
    // reference reads it: input that is all invalid bytes triples in the
    // readable copy, which the parse then holds too; twice the usual bound.
    let mut inv = invocation("ADD").stdin(padded_conf(64 * MIB, &[0xff]));
    inv.bound = Duration::from_secs(120);
    let out = sixty_four_mib_within(&noop(), "invalid UTF-8 in a string, noop ADD", inv, 8);
    succeeds(&out);
}

#[test]
fn stdin_64_mib_with_a_debug_file_memory_is_bounded() {
    let (_dir, debug) = debug_dir(&json!({}));
    let mut inv = invocation("ADD")
        .debug(&debug)
        .stdin(padded_conf(64 * MIB, b"a"));
    inv.bound = Duration::from_secs(120);
    let out = sixty_four_mib(&noop(), "a valid config and a debug file, noop ADD", inv);
    succeeds(&out);
}

#[test]
fn stdin_64_mib_through_the_sdk_memory_is_bounded() {
    // dns-mac: the SDK reads stdin and parses the configuration itself;
    // without a prevResult the plugin then refuses (code 7).
    let out = sixty_four_mib(
        &dns_mac(),
        "a valid config, dns-mac ADD",
        invocation("ADD").stdin(padded_conf(64 * MIB, b"a")),
    );
    fails_with(&out, 7);
}
