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
