//! `dbus_reply`: see `tests::invariants::dbus` for the input format and the
//! invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tests::invariants::dbus::fuzz(data));
