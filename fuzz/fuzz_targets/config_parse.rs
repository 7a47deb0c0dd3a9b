//! `config_parse`: see `tests::invariants::fuzz_config_parse` for the input format and the
//! invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tests::invariants::fuzz_config_parse(data));
