//! Where the tests run: on this host, or in the VM of
//! `scripts/vm/run-tests.sh` (docs/vm.md), and how much slower that is.

/// Set by `scripts/vm/run-tests.sh` in the guest to the backend it runs
/// under (`uml` or `qemu`); absent on the host.
pub const VM_BACKEND_ENV: &str = "CNI_TEST_VM_BACKEND";

/// How much slower than this host a process runs where the tests run: 1
/// on the host and under user-mode Linux (no emulation), 15 under QEMU's
/// software emulation (code runs 15-25x slower there, docs/vm.md). Tests
/// that bound a plugin's execution (cni-conformance's per-call timeout)
/// scale their bound by it, so a slow kernel is not taken for a hung
/// plugin.
pub fn slowness() -> u32 {
    match std::env::var(VM_BACKEND_ENV).as_deref() {
        Ok("qemu") => 15,
        _ => 1,
    }
}

/// Whether the tests run under QEMU's software emulation, where a process
/// start costs tens of milliseconds and a plugin call seconds: the guest
/// tests that loop over every configuration version check the newest
/// there ([`versions`]), the whole list everywhere else.
pub fn under_emulation() -> bool {
    std::env::var(VM_BACKEND_ENV).as_deref() == Ok("qemu")
}

/// The configuration versions a side-by-side comparison runs at: 0.3.1,
/// 0.4.0 and 1.0.0 (the result formats a runtime may ask for), or 1.0.0
/// alone [`under_emulation`]. The conversions between result formats are
/// the SDK's, the same for every plugin, and checked on the host and
/// under user-mode Linux; what the guest is for, the link kinds this
/// host's kernel lacks, is the same at every version.
pub fn versions() -> &'static [&'static str] {
    const ALL: [&str; 3] = ["0.3.1", "0.4.0", "1.0.0"];
    if under_emulation() {
        &ALL[2..]
    } else {
        &ALL
    }
}
