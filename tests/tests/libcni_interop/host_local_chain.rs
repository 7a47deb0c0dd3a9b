//! The chain `[host-local (as a plain plugin), noop(PASSTHROUGH)]`: an
//! IPAM-style result passed through, and the addresses host-local keeps.

use serde_json::{json, Value};

use crate::differential::{add_check_del_steps, differential, snapshot};
use crate::fixtures::at_least_040;

fn host_local_chain(v: &str) {
    let obs = differential(|sb| {
        sb.write("noop.json", &json!({"ReportResult": "PASSTHROUGH"}));
        // host-local reads its settings from the `ipam` key of its own config.
        let list = sb.write(
            "hl.conflist",
            &json!({
                "cniVersion": v,
                "name": "hlnet",
                "plugins": [
                    {"type": "host-local", "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": "10.77.0.0/24"}]],
                        "dataDir": sb.path_str("ipam")
                    }},
                    {"type": "noop", "debugFile": sb.path_str("noop.json")}
                ]
            }),
        );
        // A step's snapshot and host-local's files after it.
        let snap = |report| {
            let mut s = snapshot(
                sb,
                report,
                &["noop.json"],
                "hlnet",
                "cnidriver-container",
                "eth0",
            );
            s["ipam"] = sb.files("ipam");
            s
        };
        add_check_del_steps(sb, v, &list, snap)
    });

    // host-local answers an IPAM-style result (no interfaces); libcni
    // accepts it and noop passes it through converted to the list version.
    let mut expected = json!({
        "cniVersion": v,
        "ips": [{"address": "10.77.0.2/24", "gateway": "10.77.0.1"}],
        "dns": {}
    });
    if v != "1.0.0" {
        expected["ips"][0]["version"] = json!("4");
    }
    let add = &obs["add"];
    assert_eq!(add["report"]["ok"], true, "{add}");
    assert_eq!(add["report"]["result"], expected);
    assert_eq!(add["report"]["cachedResult"], expected);
    assert_eq!(
        add["noop.json"]["CmdArgs"]["StdinJSON"]["prevResult"],
        expected
    );
    assert_eq!(
        add["ipam"]["hlnet/10.77.0.2"],
        "cnidriver-container\r\neth0"
    );
    assert_eq!(add["ipam"]["hlnet/last_reserved_ip.0"], "10.77.0.2");

    if at_least_040(v) {
        assert_eq!(obs["check"]["report"]["ok"], true, "{}", obs["check"]);
        assert_eq!(obs["check"]["noop.json"]["Command"], "CHECK");
        let del = &obs["del"];
        assert_eq!(del["report"]["ok"], true, "{del}");
        assert_eq!(del["cache"], Value::Null);
        assert!(
            del["ipam"].get("hlnet/10.77.0.2").is_none(),
            "address not released: {del}"
        );
    } else {
        assert_eq!(obs["check"]["report"]["ok"], false);
        // noop (last) crashes on DEL before host-local is reached.
        let del = &obs["del"];
        assert_eq!(del["report"]["ok"], false);
        assert_eq!(del["noop.json"]["Command"], "DEL");
        assert_eq!(
            del["ipam"]["hlnet/10.77.0.2"],
            "cnidriver-container\r\neth0"
        );
    }
}

#[test]
fn host_local_then_passthrough_0_3_1() {
    host_local_chain("0.3.1");
}

#[test]
fn host_local_then_passthrough_0_4_0() {
    host_local_chain("0.4.0");
}

#[test]
fn host_local_then_passthrough_1_0_0() {
    host_local_chain("1.0.0");
}
