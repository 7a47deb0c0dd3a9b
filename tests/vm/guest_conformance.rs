//! `cni-conformance` in the guest, shared by the `vm_*` tests that run
//! it (included with `#[path]`): bounds scaled to the backend's slowness
//! and, under QEMU's emulation, the selection sized to what the guest is
//! for.

use cni_conformance::{Selection, Target};
use cni_types::SpecVersion;

/// Fits `target` and `selection` (of `plugin`, for the message) to the
/// guest. Everywhere, the per-call and per-run bounds grow with
/// [`tests::slowness`], so emulation is not taken for a hung plugin.
/// Under QEMU a plugin call costs seconds and a binary may take 900 s:
/// the newest version runs (ADD, CHECK, DEL, GC, STATUS: what a link
/// kind can make differ; the older result formats are the SDK's
/// conversions, checked on the host), and the cases of [`left_out`] do
/// not. User-mode Linux runs every version and case.
pub fn fit(target: &mut Target, selection: &mut Selection, plugin: &str) {
    target.timeout *= tests::slowness();
    selection.deadline *= tests::slowness();
    if !tests::under_emulation() {
        return;
    }
    target.versions = Some(vec![SpecVersion::V1_1_0]);
    selection.skip = cni_conformance::cases::all()
        .map(|c| c.id)
        .filter(|id| left_out(id))
        .map(str::to_owned)
        .collect();
    eprintln!(
        "{plugin}: under QEMU, version 1.1.0, not running {:?}",
        selection.skip
    );
}

/// The cases left out under QEMU: those of the SDK's dispatch (ENV-,
/// OUTPUT-, VERSION-), the same code for every plugin and checked on the
/// host for the others (`tests/tests/conformance.rs`), and
/// CONCURRENT-ADD, whose 16 ADDs queue for the IPAM store's lock 20
/// times longer than on a real CPU, past its 10 s deadline.
pub fn left_out(id: &str) -> bool {
    tests::under_emulation()
        && (id == "CONCURRENT-ADD"
            || ["ENV-", "OUTPUT-", "VERSION-"]
                .iter()
                .any(|p| id.starts_with(p)))
}
