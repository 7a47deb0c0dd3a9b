//! Our `ipvlan` beside Debian's reference `ipvlan`, in the VM (this
//! host's kernel has no ipvlan; `scripts/vm/run-tests.sh vm_ipvlan`): the
//! same configuration at 0.3.1, 0.4.0 and 1.0.0 (1.0.0 alone under QEMU:
//! `tests::versions`), the same result
//! (generated MACs and namespace paths normalised), the same link (kind,
//! mode, MTU, state, addresses, routes), the same CHECK verdict, and
//! nothing left after DEL.

use serde_json::json;
use tests::side_by_side::{master_link, same_as_reference};

#[test]
fn ipvlan_in_l2_mode_with_ipam_matches_the_reference() {
    let master = format!("ipm{}", std::process::id() % 100_000);
    let _guard = master_link(&master);
    same_as_reference(
        "ipvlan",
        "ipl2",
        "eth0",
        &json!({"name": "vm-ipvlan", "type": "ipvlan", "master": master,
                "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.217.3.0/24"}]],
                         "routes": [{"dst": "0.0.0.0/0"}]}}),
    );
}

#[test]
fn ipvlan_in_l3s_mode_with_an_mtu_matches_the_reference() {
    let master = format!("ips{}", std::process::id() % 100_000);
    let _guard = master_link(&master);
    same_as_reference(
        "ipvlan",
        "ipl3",
        "net1",
        &json!({"name": "vm-ipvlan3", "type": "ipvlan", "master": master, "mode": "l3s",
                "mtu": 1300,
                "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.217.4.0/24"}]]}}),
    );
}
