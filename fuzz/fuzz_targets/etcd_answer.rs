//! `etcd_answer`: see `tests::invariants::etcd` for the input format and the
//! invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tests::invariants::etcd::fuzz(data));
