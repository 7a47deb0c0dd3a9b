//! `scripts/vm/run-tests.sh`, which runs the `vm_*` tests under Debian's
//! kernel (docs/vm.md), is faithful on whichever backend it picks: a test
//! binary that fails in the guest fails the run, with the binary's own
//! output and exit status shown; and where user-mode Linux cannot boot (a
//! host with AMX), the run says so and passes under QEMU instead.
//!
//! The failure is made without a failing test: an option libtest refuses
//! (`--no-such-option`, passed after `--`) makes `vm_kernel_links` exit
//! with status 101 inside the guest.

use std::os::unix::fs::PermissionsExt;
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
    // The run names the backend it chose, whichever this host allows.
    assert!(
        stdout.contains("vm: backend: "),
        "no backend named: {}",
        out.excerpts(4000)
    );
    assert_ran_in_a_guest(&stdout, &out.excerpts(4000));
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

/// On a host where user-mode Linux dies at boot (as Debian's 6.1 does on
/// CPUs with AMX), the run falls back to QEMU, says why, and the tests
/// pass there. The failing kernel is a stand-in that fails the way UML
/// does there, so this holds on every machine, AMX or not.
#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_host_where_user_mode_linux_cannot_boot_runs_the_tests_under_qemu() {
    let dir = tempfile::tempdir().unwrap();
    let fake_uml = dir.path().join("linux.uml");
    std::fs::write(
        &fake_uml,
        "#!/bin/sh\n\
         echo 'userspace - ptrace set fp regs failed, errno = 14'\n\
         echo 'Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b'\n\
         exit 134\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake_uml, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = workspace_root().join("scripts/vm/run-tests.sh");
    let out = output_of(
        Command::new(&script)
            .env_remove("CNI_VM_BACKEND")
            .env("CNI_VM_UML", &fake_uml)
            .args(["vm_kernel_links", "--", "a_vrf_is_created_and_takes_a_port"]),
        b"",
    );
    let stdout = out.stdout_str();
    let _kept = KeptFiles::named_in(&stdout);
    assert!(out.success(), "the run failed: {}", out.excerpts(6000));
    assert!(
        stdout.contains("vm: backend: QEMU, because user-mode Linux")
            && stdout.contains("ptrace set fp regs failed"),
        "the fallback and its reason are not said: {}",
        out.excerpts(4000)
    );
    assert_ran_in_a_guest(&stdout, &out.excerpts(4000));
    assert!(
        stdout.contains("test a_vrf_is_created_and_takes_a_port ... ok"),
        "{}",
        out.excerpts(4000)
    );
}

/// The binary's section names the guest's kernel, which is not this one.
fn assert_ran_in_a_guest(stdout: &str, context: &str) {
    let host_kernel = output_of(Command::new("uname").arg("-r"), b"").stdout_str();
    let guest_kernel = stdout
        .lines()
        .find_map(|l| l.strip_prefix("---- vm_kernel_links (in the guest, kernel "))
        .and_then(|rest| rest.strip_suffix(") ----"))
        .unwrap_or_else(|| panic!("no guest kernel named: {context}"));
    assert_ne!(guest_kernel, host_kernel.trim());
    assert_ne!(guest_kernel, "unknown", "{context}");
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
