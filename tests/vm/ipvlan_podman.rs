//! Podman 4.3.1 on a network it made itself with `podman network create
//! -d ipvlan --subnet`, its configuration unedited, only our binaries on
//! the plugin path (Podman 4.3.1 takes no `parent` for ipvlan, so the
//! master is the default-route interface), in the VM (this host's kernel has no ipvlan;
//! `scripts/vm/run-tests.sh vm_ipvlan_podman`): two containers reach
//! each other, and nothing is left after `podman rm`. The same scenario
//! runs for macvlan on the host (`tests/tests/macvlan_podman.rs`).

use tests::podman_drivers::{containers_on_a_driver_network, MasterBy};

#[test]
fn podman_runs_containers_on_its_own_ipvlan_network_and_leaves_nothing() {
    containers_on_a_driver_network("ipvlan", MasterBy::DefaultRoute, "l2", "10.215.61.0/24");
}
