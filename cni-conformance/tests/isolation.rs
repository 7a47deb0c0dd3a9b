//! The plugin under test touches nothing of ours: it runs in a fresh
//! working directory of the run's own, removed afterwards, and with
//! `private_mounts` what it mounts stays in a mount namespace of its own.

mod common;

use std::path::PathBuf;

use cni_conformance::{run, Kind, NetnsChoice, Selection, Target};
use cni_types::SpecVersion;
use common::script;

/// The plugin at `plugin`, as an IPAM plugin in no namespace at all,
/// running VERSION-REPLY only.
fn version_reply_of(plugin: PathBuf, private_mounts: bool) -> cni_conformance::Report {
    let mut target = Target::new(plugin, Kind::Ipam);
    target.netns = NetnsChoice::Path("/nonexistent/netns".into());
    target.versions = Some(vec![SpecVersion::V1_0_0]);
    target.private_mounts = private_mounts;
    let selection = Selection {
        only: vec!["VERSION-REPLY".into()],
        ..Selection::all()
    };
    run(&target, &selection).unwrap()
}

const VERSION_REPLY: &str = r#"echo '{"cniVersion":"1.0.0","supportedVersions":["1.0.0"]}'"#;

#[test]
fn the_plugin_runs_in_a_working_directory_of_its_own_removed_after_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("cwd");
    let plugin = script(
        dir.path(),
        "records-its-cwd",
        &format!("pwd > {}\n{VERSION_REPLY}", record.display()),
    );
    let report = version_reply_of(plugin, false);
    assert_eq!(report.failed(), 0, "{}", report.text());
    let cwd = PathBuf::from(std::fs::read_to_string(&record).unwrap().trim());
    assert_ne!(cwd, std::env::current_dir().unwrap(), "ours");
    assert!(
        cwd.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("cni-conformance-cwd-")),
        "{cwd:?}"
    );
    assert!(!cwd.exists(), "{cwd:?} is left after the run");
}

/// Whether `dir` is a mount point in our mount namespace.
fn is_mount_point(dir: &std::path::Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let dir = dir.to_string_lossy();
    mounts
        .lines()
        .any(|l| l.split_whitespace().nth(4) == Some(&*dir))
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn with_private_mounts_what_the_plugin_mounts_never_reaches_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let target_dir = dir.path().join("mnt");
    std::fs::create_dir(&target_dir).unwrap();
    let record = dir.path().join("mounted");
    let plugin = script(
        dir.path(),
        "mounts",
        &format!(
            "mount -t tmpfs cnic-test {0} && touch {0}/inside && echo yes > {1}\n{VERSION_REPLY}",
            target_dir.display(),
            record.display()
        ),
    );
    let report = version_reply_of(plugin, true);
    let leaked = is_mount_point(&target_dir);
    // Each execution mounted one: take them all down before asserting.
    while is_mount_point(&target_dir)
        && nix::mount::umount2(&target_dir, nix::mount::MntFlags::MNT_DETACH).is_ok()
    {}
    assert_eq!(report.failed(), 0, "{}", report.text());
    assert_eq!(
        std::fs::read_to_string(&record).ok().as_deref(),
        Some("yes\n"),
        "the plugin mounted its tmpfs"
    );
    assert!(!leaked, "the plugin's tmpfs is mounted on the host");
    assert!(!target_dir.join("inside").exists());
}
