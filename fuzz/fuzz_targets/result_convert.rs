//! `result_convert`: see `tests::invariants::fuzz_result_convert` for the input format and the
//! invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tests::invariants::fuzz_result_convert(data));
