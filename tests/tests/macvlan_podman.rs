//! Podman 4.3.1 (Debian, CNI backend) on a network it made itself with
//! `podman network create -d macvlan --subnet`, its configuration list
//! unedited, and only our binaries on the plugin path (our `macvlan` and
//! our `host-local`): two busybox containers get their addresses on the
//! master's wire and reach each other, and after `podman rm` nothing is
//! left: no namespace, no reservation, no libcni cache entry. (The
//! ipvlan half needs a kernel with ipvlan: `tests/vm/ipvlan_podman.rs`.)
//!
//! Needs root, Podman, runc, conmon and busybox-static
//! (`scripts/install-test-deps.sh`); fails, never skips, without them.

use tests::podman_drivers::{containers_on_a_driver_network, MasterBy};

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn podman_runs_containers_on_its_own_macvlan_network_and_leaves_nothing() {
    containers_on_a_driver_network(
        "macvlan",
        MasterBy::ParentOption,
        "bridge",
        "10.215.60.0/24",
    );
}
