//! `nft_netlink`: see `tests::invariants::nft` for the input format and the
//! invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tests::invariants::nft::fuzz(data));
