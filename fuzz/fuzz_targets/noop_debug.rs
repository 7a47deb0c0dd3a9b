//! `noop_debug`: see `tests::invariants::fuzz_noop_debug` for the input format and the
//! invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tests::invariants::fuzz_noop_debug(data));
