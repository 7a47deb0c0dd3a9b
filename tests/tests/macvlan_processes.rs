//! Our `macvlan` binary beside Debian's, run directly as processes (no
//! libcni) through `tests::side_by_side`, the harness the VM tests of
//! ipvlan and vlan use: here it runs on this host, whose kernel has
//! macvlan, so the harness itself is proven where the others cannot run.

use serde_json::json;
use tests::side_by_side::{master_link, same_as_reference};

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn macvlan_in_bridge_mode_matches_the_reference_binary() {
    let master = format!("mvp{}", std::process::id() % 100_000);
    let _guard = master_link(&master);
    same_as_reference(
        "macvlan",
        "mvp",
        "eth0",
        &json!({"name": "proc-macvlan", "type": "macvlan", "master": master, "mtu": 1450,
                "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.217.6.0/24"}]],
                         "routes": [{"dst": "0.0.0.0/0"}]}}),
    );
}
