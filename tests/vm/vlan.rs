//! Our `vlan` beside Debian's reference `vlan`, in the VM (this host's
//! kernel has no 8021q; `scripts/vm/run-tests.sh vm_vlan`): the same
//! configuration at 0.3.1, 0.4.0 and 1.0.0 (1.0.0 alone under QEMU:
//! `tests::versions`), the same result (generated
//! MACs and namespace paths normalised), the same link (kind, VLAN id
//! and protocol, MTU, state, addresses, routes), the same CHECK verdict,
//! and nothing left after DEL.

use serde_json::json;
use tests::side_by_side::{master_link, same_as_reference};

#[test]
fn vlan_with_an_id_mtu_and_ipam_matches_the_reference() {
    let master = format!("vlm{}", std::process::id() % 100_000);
    let _guard = master_link(&master);
    same_as_reference(
        "vlan",
        "vlvl",
        "eth0",
        &json!({"name": "vm-vlan", "type": "vlan", "master": master, "vlanId": 100,
                "mtu": 1400,
                "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.217.1.0/24"}]],
                         "routes": [{"dst": "0.0.0.0/0"}]}}),
    );
}

#[test]
fn a_vlan_id_of_0_or_4095_changes_nothing_on_a_kernel_with_8021q() {
    let master = format!("vlz{}", std::process::id() % 100_000);
    let _guard = master_link(&master);
    let ns = tests::NetNs::create("vlz");
    for id in [0, 4095] {
        let conf = json!({"cniVersion": "1.0.0", "name": "vm-vlan", "type": "vlan",
                          "master": master, "vlanId": id, "ipam": {"type": "host-local",
                          "ranges": [[{"subnet": "10.217.2.0/24"}]]}});
        let netns = ns.path();
        let env = [
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "vlz"),
            ("CNI_NETNS", netns.as_str()),
            ("CNI_IFNAME", "eth0"),
            ("CNI_PATH", "/usr/lib/cni"),
        ];
        let bin = tests::plugin_bin_dir().join("vlan");
        let out = tests::run_plugin(&bin, &env, conf.to_string().as_bytes());
        assert!(!out.success());
        let err = tests::StdoutJson::stdout_json(&out);
        assert_eq!(
            (err["code"].as_u64(), &err["msg"]),
            (Some(7), &json!("invalid vlanId"))
        );
        assert!(ns.link("eth0").is_none(), "vlan id {id}");
    }
}
