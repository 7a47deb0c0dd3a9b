//! `dispatch`: see `tests::invariants::fuzz_dispatch` for the input format and the
//! invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tests::invariants::fuzz_dispatch(data));
