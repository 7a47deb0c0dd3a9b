//! What every input must get: one well-formed answer, never a panic.
//!
//! Shared by the fuzz targets in `fuzz/` (each is one call to a
//! `fuzz_*` function here) and by `tests/tests/fuzz_corpus_replay.rs`,
//! which replays every corpus file through the same functions, so the
//! invariants are written once.
//!
//! The invariants of a plugin's answer ([`check_answer`] for a process,
//! [`check_stdout`] in-process):
//! - no panic: for a process, nothing on stderr says `panicked at`;
//!   in-process, where the SDK turns a panic into an error, any panic
//!   counts (libFuzzer aborts on one, and [`run_target_catching`] notices
//!   one through a panic hook). In-process stderr is not searched: it only
//!   holds what the plugin wrote, which may echo the input;
//! - exit status 0: stdout is empty (commands that print nothing) or exactly
//!   one JSON document;
//! - any other status: stdout is exactly one CNI error JSON whose code is a
//!   well-known one (1-8, 11, 50, 51, 999) or a plugin's own (>= 100).
//!
//! Each `fuzz_*` function decodes one fuzz input, runs it, and panics with
//! a message naming the violated invariant (libFuzzer reports the panic as
//! a crash; the replay test reports it as a failure).
//!
//! The input formats (what the seed corpora from [`seeds`] look like):
//! - `dispatch`: `KEY=VALUE` environment entries each ended by a NUL byte,
//!   an empty entry, then stdin ([`encode_invocation`]);
//! - `result_convert`: a version, a newline, then a result's JSON;
//! - `config_parse`: a configuration's (or configuration list's) JSON;
//! - `cni_args`: a `CNI_ARGS` value;
//! - `noop_debug`: the command, NUL, the debug file, NUL, the command log,
//!   NUL, then stdin ([`encode_noop_debug`]);
//! - `nft_netlink`, `dbus_reply`, `iptables_save`, `dhcp_message`: the
//!   bytes a peer sent (a netlink datagram, a D-Bus message,
//!   `iptables-save` output, a DHCP message); their invariants live in a
//!   module each ([`nft`], [`dbus`], [`iptables_save`], [`dhcp`]).
//!
//! [`mutate`] runs the targets of the parsers of untrusted bytes for a
//! bounded time on stable Rust (`tests/tests/fuzz_mutations.rs`).
//!
//! This file holds the list of targets and the runners; the rest lives in
//! a module per idea, re-exported here: `answer` (the invariants of an
//! answer), `dispatch`, `result_convert`, `config_parse`, `cni_args` and
//! `noop_debug` (a target each, with its input format), and `seeds` (the
//! seed corpora of every target).

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

pub mod dbus;
pub mod dhcp;
pub mod etcd;
pub mod gob;
pub mod iptables_save;
pub mod mutate;
pub mod nft;

mod answer;
mod cni_args;
mod config_parse;
mod dispatch;
mod noop_debug;
mod result_convert;
mod seeds;

pub use answer::{
    check_answer, check_error_json, check_result_json, check_stdout, contains, is_allowed_code,
    one_json_document, Printed,
};
pub use cni_args::{check_cni_args, fuzz_cni_args};
pub use config_parse::fuzz_config_parse;
pub use dispatch::{decode_invocation, encode_invocation, fuzz_dispatch, Echo};
pub use noop_debug::{decode_noop_debug, encode_noop_debug, fuzz_noop_debug, NoopDebugInput};
pub use result_convert::{decode_versioned, fuzz_result_convert};
pub use seeds::seeds;

/// The fuzz targets, by name (also the corpus directory names).
pub const TARGETS: [&str; 11] = [
    "dispatch",
    "result_convert",
    "config_parse",
    "cni_args",
    "noop_debug",
    nft::TARGET,
    dbus::TARGET,
    iptables_save::TARGET,
    dhcp::TARGET,
    gob::TARGET,
    etcd::TARGET,
];

/// Runs one input through the named target's checks (see the `fuzz_*`
/// functions). Panics on a violation, or for an unknown target.
pub fn run_target(target: &str, data: &[u8]) {
    match target {
        "dispatch" => fuzz_dispatch(data),
        "result_convert" => fuzz_result_convert(data),
        "config_parse" => fuzz_config_parse(data),
        "cni_args" => fuzz_cni_args(data),
        "noop_debug" => fuzz_noop_debug(data),
        nft::TARGET => nft::fuzz(data),
        dbus::TARGET => dbus::fuzz(data),
        iptables_save::TARGET => iptables_save::fuzz(data),
        dhcp::TARGET => dhcp::fuzz(data),
        gob::TARGET => gob::fuzz(data),
        etcd::TARGET => etcd::fuzz(data),
        other => panic!("unknown fuzz target {other:?}"),
    }
}

thread_local! {
    /// A panic happened on this thread since the current run started.
    static PANICKED: Cell<bool> = const { Cell::new(false) };
    /// A run of [`run_target_catching`] is in progress on this thread.
    static IN_RUN: Cell<bool> = const { Cell::new(false) };
}

/// Runs one input like [`run_target`] and returns the violation, if any,
/// as text: a failed check, or any panic on this thread during the run,
/// even one the SDK caught and turned into an error. Panics are noticed by
/// a panic hook installed once, which keeps their messages off stderr
/// during a run and defers to the previous hook otherwise.
pub fn run_target_catching(target: &str, data: &[u8]) -> Result<(), String> {
    catching_panics(|| run_target(target, data)).map_err(|e| format!("{target}: {e}"))
}

/// Runs `f` and returns the message of any panic on this thread during
/// it, even one caught inside (see [`run_target_catching`]).
pub fn catching_panics(f: impl FnOnce()) -> Result<(), String> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.with(|p| p.set(true));
            if !IN_RUN.with(Cell::get) {
                previous(info);
            }
        }));
    });
    PANICKED.with(|p| p.set(false));
    IN_RUN.with(|r| r.set(true));
    let outcome = catch_unwind(AssertUnwindSafe(f));
    IN_RUN.with(|r| r.set(false));
    match outcome {
        Err(payload) => Err(payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "panic with a non-string payload".to_owned())),
        Ok(()) if PANICKED.with(Cell::get) => {
            Err("a panic was caught during the run (the SDK reported it as an error)".into())
        }
        Ok(()) => Ok(()),
    }
}

/// Panics with the violated invariant `why` of `target`, showing the
/// input (as libFuzzer and the replay test report it).
fn fail(target: &str, data: &[u8], why: impl std::fmt::Display) -> ! {
    panic!(
        "{target}: invariant violated: {why}\ninput ({} bytes): {:?}",
        data.len(),
        String::from_utf8_lossy(&data[..data.len().min(2000)])
    )
}
