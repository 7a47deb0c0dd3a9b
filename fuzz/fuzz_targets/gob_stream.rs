//! `gob_stream`: see `tests::invariants::gob` for the input format and the
//! invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tests::invariants::gob::fuzz(data));
