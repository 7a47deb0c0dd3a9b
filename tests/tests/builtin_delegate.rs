//! Our `bridge` carries `host-local` built in, as every sample plugin
//! that takes an `ipam` section does (`plugins_sample::CARRIERS`): when
//! the `host-local` it finds on `CNI_PATH` is ours of the same release
//! (its binary's mark), it runs it in-process; any other file of that
//! name (a wrapper script, the reference's binary) is executed as before.
//! A copy of ours that is not executable shows which way was taken: only
//! the in-process run can use it.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{json, Value};
use tests::sandbox::NetDirs;
use tests::{plugin_bin_dir, reference_plugin_dir, NetNs};

/// `CNI_PATH` starts with a directory of the test's own holding only
/// `host-local`, then ours.
fn sandbox(tag: &str) -> (tempfile::TempDir, NetDirs) {
    let first = tempfile::Builder::new().prefix(tag).tempdir().unwrap();
    let dirs = NetDirs::new(tag, vec![first.path().to_owned(), plugin_bin_dir()]);
    (first, dirs)
}

/// Puts `bytes` in `dir/host-local` with `mode`.
fn host_local(dir: &Path, bytes: &[u8], mode: u32) {
    let path = dir.join("host-local");
    let _ = fs::remove_file(&path);
    fs::write(&path, bytes).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
}

fn list(net: &str, bridge: &str, dirs: &NetDirs) -> Value {
    json!({"cniVersion": "1.1.0", "name": net, "plugins": [
        {"type": "bridge", "bridge": bridge, "isGateway": true,
         "ipam": {"type": "host-local", "dataDir": dirs.ipam(),
                  "ranges": [[{"subnet": "10.216.7.0/24"}]]}}
    ]})
}

#[test]
fn bridge_runs_our_host_local_in_process_and_executes_any_other_file_of_that_name() {
    let (first, dirs) = sandbox("builtin-status-");
    let net = "builtin-status";
    dirs.reset(&list(net, "bi0", &dirs));
    let ours = fs::read(plugin_bin_dir().join("host-local")).unwrap();

    // Ours, not executable: only the built-in can answer.
    host_local(first.path(), &ours, 0o644);
    let status = dirs.cnitool("c1").status(net);
    assert_eq!(status["ok"], true, "{status}");

    // A wrapper script: executed (it leaves a mark), then ours runs.
    let ran = first.path().join("ran");
    let script = format!(
        "#!/bin/sh\ntouch '{}'\nexec '{}' \"$@\"\n",
        ran.display(),
        plugin_bin_dir().join("host-local").display()
    );
    host_local(first.path(), script.as_bytes(), 0o755);
    let status = dirs.cnitool("c1").status(net);
    assert_eq!(status["ok"], true, "{status}");
    assert!(ran.exists(), "the wrapper was executed");

    // Ours with its mark changed (another release): executed, and the
    // file is not executable, so the delegation fails saying so.
    let mark = cni_ipam::host_local::MARK.as_bytes();
    let at = ours
        .windows(mark.len())
        .position(|w| w == mark)
        .expect("the binary carries its mark");
    let mut other = ours.clone();
    other[at + mark.len() - 1] ^= 1;
    host_local(first.path(), &other, 0o644);
    let status = dirs.cnitool("c1").status(net);
    assert_eq!(status["ok"], false, "{status}");
    assert!(status.to_string().contains("ermission denied"), "{status}");

    // The reference's, not executable: the same.
    let reference = fs::read(reference_plugin_dir().join("host-local")).unwrap();
    host_local(first.path(), &reference, 0o644);
    let status = dirs.cnitool("c1").status(net);
    assert_eq!(status["ok"], false, "{status}");
}

/// A list of one plugin of `kind` with host-local IPAM, as its users
/// write it; a master or device that need not exist: STATUS asks only
/// the IPAM plugin.
fn one_plugin_list(net: &str, kind: &str, dirs: &NetDirs) -> Value {
    json!({"cniVersion": "1.1.0", "name": net, "plugins": [
        {"type": kind, "bridge": "bi1", "master": "nonexistent0", "device": "nonexistent0",
         "vlanId": 42,
         "ipam": {"type": "host-local", "dataDir": dirs.ipam(),
                  "ranges": [[{"subnet": "10.216.8.0/24"}]]}}
    ]})
}

#[test]
fn every_plugin_that_takes_ipam_runs_our_host_local_in_process() {
    let (first, dirs) = sandbox("builtin-carriers-");
    let ours = fs::read(plugin_bin_dir().join("host-local")).unwrap();
    // Ours, not executable: only a plugin that carries it can answer.
    host_local(first.path(), &ours, 0o644);
    for kind in plugins_sample::CARRIERS {
        let net = format!("builtin-{kind}");
        dirs.reset(&one_plugin_list(&net, kind, &dirs));
        let status = dirs.cnitool("c1").status(&net);
        assert_eq!(status["ok"], true, "{kind}: {status}");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_in_process_host_local_reserves_and_releases_in_the_reference_format() {
    let (first, dirs) = sandbox("builtin-add-");
    let net = "builtin-add";
    let br = format!("bi{}", std::process::id() % 1_000_000);
    dirs.reset(&list(net, &br, &dirs));
    let ours = fs::read(plugin_bin_dir().join("host-local")).unwrap();
    host_local(first.path(), &ours, 0o644);
    let ns = NetNs::create("builtin");
    ns.delete_link_on_drop(&br);

    let add = dirs.cnitool("c1").add(net, &ns.path());
    assert_eq!(add["ok"], true, "{add}");
    assert_eq!(add["result"]["ips"][0]["address"], "10.216.7.2/24", "{add}");
    let held = dirs.reservations(net);
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].0, "10.216.7.2", "{held:?}");
    assert!(held[0].1.starts_with("c1"), "{held:?}");

    let del = dirs.cnitool("c1").del(net, &ns.path());
    assert_eq!(del["ok"], true, "{del}");
    assert!(dirs.reservations(net).is_empty());
}
