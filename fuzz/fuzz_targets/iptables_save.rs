//! `iptables_save`: see `tests::invariants::iptables_save` for the input format and the
//! invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tests::invariants::iptables_save::fuzz(data));
