//! Podman 4.3.1 on a network it made itself with `podman network create
//! -d ipvlan --subnet`, its configuration unedited, only our binaries on
//! the plugin path (Podman 4.3.1 takes no `parent` for ipvlan, so the
//! master is the default-route interface), in the VM (this host's kernel has no ipvlan;
//! `scripts/vm/run-tests.sh vm_ipvlan_podman`): two containers reach
//! each other, and nothing is left after `podman rm`. The same scenario
//! runs for macvlan on the host (`tests/tests/macvlan_podman.rs`).

use tests::podman_drivers::{containers_on_a_driver_network, MasterBy};

/// runc needs a cgroup hierarchy, which the guest boots without: mount
/// the unified one where runc looks, unless one is there.
fn mount_cgroups() {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    if !mounts.lines().any(|l| l.contains(" - cgroup")) {
        let out = std::process::Command::new("mount")
            .args(["-t", "cgroup2", "none", "/sys/fs/cgroup"])
            .output()
            .unwrap();
        assert!(out.status.success(), "mount cgroup2: {out:?}");
    }
}

#[test]
fn podman_runs_containers_on_its_own_ipvlan_network_and_leaves_nothing() {
    mount_cgroups();
    containers_on_a_driver_network("ipvlan", MasterBy::DefaultRoute, "l2", "10.215.61.0/24");
}
