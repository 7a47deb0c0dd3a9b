//! `dhcp_message`: see `tests::invariants::dhcp` for the input format and
//! the invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tests::invariants::dhcp::fuzz(data));
