//! `scripts/vm/run-tests.sh`, which runs the `vm_*` tests under Debian's
//! kernel (docs/vm.md), is faithful: a test binary that fails in the guest
//! fails the run, with the binary's own output and exit status shown.
//!
//! The failure is made without a failing test: an option libtest refuses
//! (`--no-such-option`, passed after `--`) makes `vm_kernel_links` exit
//! with status 101 inside the guest.

use std::path::PathBuf;
use std::process::Command;

use tests::{output_of, workspace_root};

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_test_binary_failing_in_the_guest_fails_the_run_with_its_output() {
    let script = workspace_root().join("scripts/vm/run-tests.sh");
    let out = output_of(
        Command::new(&script).args(["vm_kernel_links", "--", "--no-such-option"]),
        b"",
    );
    let (stdout, stderr) = (out.stdout_str(), out.stderr_str());
    let _kept = KeptFiles::named_in(&stdout);
    assert!(!out.success(), "the run passed: {}", out.excerpts(4000));
    // It ran in the guest, whose kernel is not this one.
    let host_kernel = output_of(Command::new("uname").arg("-r"), b"").stdout_str();
    let guest_kernel = stdout
        .lines()
        .find_map(|l| l.strip_prefix("---- vm_kernel_links (in the guest, kernel "))
        .and_then(|rest| rest.strip_suffix(") ----"))
        .unwrap_or_else(|| panic!("no guest kernel named: {}", out.excerpts(4000)));
    assert_ne!(guest_kernel, host_kernel.trim());
    assert!(
        stdout.contains("Unrecognized option: 'no-such-option'"),
        "the binary's own output is missing: {}",
        out.excerpts(4000)
    );
    assert!(
        stdout.contains("---- vm_kernel_links: exit status 101 ----"),
        "{}",
        out.excerpts(4000)
    );
    assert!(
        stderr.contains("failed under Debian's kernel: vm_kernel_links"),
        "{}",
        out.excerpts(4000)
    );
}

/// The guest's files, which the script keeps after a failure (it names
/// them); removed when dropped, also when the test fails.
struct KeptFiles(Option<PathBuf>);

impl KeptFiles {
    fn named_in(stdout: &str) -> KeptFiles {
        KeptFiles(
            stdout
                .lines()
                .find_map(|l| l.strip_prefix("vm: the guest's files are kept in "))
                .map(PathBuf::from),
        )
    }
}

impl Drop for KeptFiles {
    fn drop(&mut self) {
        if let Some(dir) = self.0.as_ref().filter(|d| d.exists()) {
            if let Err(e) = std::fs::remove_dir_all(dir) {
                eprintln!("removing {}: {e}", dir.display());
            }
        }
    }
}
