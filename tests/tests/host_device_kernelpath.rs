//! `host-device` with a `kernelpath` naming a directory of several links
//! (`/sys/devices/virtual`, whose `net` lists every virtual link) is
//! refused with code 7 naming the path and the count, and moves nothing;
//! the reference moves whichever link the directory lists first. Needs
//! root: the plugin runs in a namespace of the test (`ip netns exec`
//! mounts that namespace's `/sys`), holding a veth pair.

use serde_json::json;
use tests::{ip, plugin_bin_dir, run_plugin_in_netns, NetNs, StdoutJson};

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_kernelpath_naming_several_links_is_refused_and_moves_nothing() {
    let host = NetNs::create("hdkp-host");
    let container = NetNs::create("hdkp-ctr");
    let made = ip(&[
        "-n",
        host.name(),
        "link",
        "add",
        "kp0",
        "type",
        "veth",
        "peer",
        "name",
        "kp0p",
    ]);
    assert!(made.success(), "{made:?}");
    let conf = json!({"cniVersion": "1.0.0", "name": "hdkp", "type": "host-device",
                      "kernelpath": "/sys/devices/virtual"});
    let path = container.path();
    let out = run_plugin_in_netns(
        host.name(),
        &plugin_bin_dir().join("host-device"),
        &[
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "hdkp"),
            ("CNI_NETNS", &path),
            ("CNI_IFNAME", "net1"),
            ("CNI_PATH", "/nonexistent"),
        ],
        conf.to_string().as_bytes(),
    );
    let err = out.stdout_json();
    assert_eq!(err["code"], 7, "{err}");
    assert_eq!(err["msg"], "invalid kernelpath", "{err}");
    // lo, kp0 and kp0p.
    let details = err["details"].as_str().unwrap_or_default();
    assert!(
        details.contains("/sys/devices/virtual/net names 3 network devices"),
        "{err}"
    );
    for name in ["lo", "kp0", "kp0p"] {
        assert!(host.link(name).is_some(), "{name} left the host: {err}");
    }
    assert!(container.link("net1").is_none());
}
