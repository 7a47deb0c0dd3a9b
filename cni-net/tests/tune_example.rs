//! The crate root's example plugin (`examples/tune.rs`), run in-process
//! with `TestRequest` against a temporary namespace, as root: what the
//! docs show is what works.

use cni_net::testing::TempNetns;
use cni_skel::Outcome;
use cni_types::Code;
use cni_version::PluginInfo;

#[path = "../examples/tune.rs"]
#[allow(dead_code)] // its `main`
mod tune;

fn temp() -> TempNetns {
    TempNetns::new("tune").unwrap_or_else(|e| panic!("these tests need root: {e}"))
}

/// ADD of the example plugin for `ifname` in `tmp`, chained after a
/// plugin that reported `eth0` on the host and in the container.
fn add(tmp: &TempNetns, ifname: &str, prev_result: bool) -> Outcome {
    let sandbox = tmp.path().display().to_string();
    let mut conf = serde_json::json!({
        "cniVersion": "1.0.0", "name": "n", "type": "tune",
        "mtu": 1280, "mac": "02:00:00:00:00:07",
        "prevResult": {"cniVersion": "1.0.0", "interfaces": [
            {"name": "eth0", "mac": "02:00:00:00:00:01"},
            {"name": "eth0", "mac": "02:00:00:00:00:02", "sandbox": sandbox}]}
    });
    if !prev_result {
        conf.as_object_mut().unwrap().remove("prevResult");
    }
    tmp.request("ADD", ifname)
        .stdin(conf.to_string())
        .run(&tune::Tune, &PluginInfo::all())
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn the_example_sets_mtu_and_mac_in_the_namespace_and_reports_them() {
    let tmp = temp();
    let eth0 = tmp.add_veth("eth0", "peer0", None).unwrap();
    let out = add(&tmp, "eth0", true);
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    let live = tmp
        .socket()
        .unwrap()
        .find_link(eth0.index)
        .unwrap()
        .unwrap();
    assert_eq!(
        (live.mtu, live.mac.map(|m| m.to_string())),
        (1280, Some("02:00:00:00:00:07".to_owned()))
    );
    let result = out.json();
    assert_eq!(result["interfaces"][1]["mac"], "02:00:00:00:00:07");
    assert_eq!(result["interfaces"][1]["mtu"], 1280);
    assert_eq!(
        result["interfaces"][0]["mac"], "02:00:00:00:00:01",
        "the host-side namesake is left alone"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn the_example_fails_naming_a_missing_link_and_an_absent_prev_result() {
    let tmp = temp();
    let err = add(&tmp, "eth9", true).error().unwrap();
    assert_eq!(
        (err.code, err.msg.as_str()),
        (Code::INTERNAL, "link \"eth9\" not found")
    );
    let err = add(&tmp, "eth0", false).error().unwrap();
    assert_eq!(
        (err.code, err.msg.as_str()),
        (Code::INVALID_NETWORK_CONFIG, "prevResult required")
    );
}
