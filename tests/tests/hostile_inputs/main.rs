//! Hostile inputs against the built `noop`, run as a process the way a
//! runtime runs it: every input gets one well-formed answer, never a panic,
//! a hang or a half-written file.
//!
//! Each case checks the exit status, that stdout is exactly one JSON
//! document or empty (a CNI error with an allowed code when the status is
//! not 0; see `tests::invariants::check_answer`), that stderr has no Rust
//! panic message, and that the process ends within [`process::BOUND`] (enforced by
//! killing it, see [`process::run`]). The peak RSS of every process is measured with
//! `wait4`; the 64 MiB stdin cases assert it stays under 4x the input plus
//! 16 MiB (8x for input that is all invalid UTF-8, which triples when read
//! as the reference reads it) and print the figure.
//!
//! The noop is the reference test double's drop-in: where the reference
//! panics ("test setup error", e.g. a configuration it cannot read while
//! `CNI_ARGS` names a debug file) it exits 2 with one line on stderr and
//! nothing on stdout. Cases that hit that path say so.
//!
//! The machinery: [`process`] (running a plugin as a runtime does, bounded
//! and measured), [`checks`] (what every answer must be), [`inputs`]
//! (configurations and debug files). The cases, by what is hostile:
//! [`nested_json`], [`large_stdin`], [`encoding`] (invalid UTF-8 and NUL
//! bytes), [`values`] (duplicate keys, numbers out of range, addresses),
//! [`large_env`], [`streams`], [`unwritable_debug_dir`].

mod checks;
mod inputs;
mod process;

mod encoding;
mod large_env;
mod large_stdin;
mod nested_json;
mod streams;
mod unwritable_debug_dir;
mod values;
