//! What the plugin records of an invocation: its command and `CmdArgs`,
//! with the capability arguments libcni injects.

use serde_json::{json, Value};
use tests::FAKE_NETNS;

use crate::differential::{differential, snapshot};

#[test]
fn recorded_command_and_args() {
    let obs = differential(|sb| {
        let debug = sb.write(
            "debug.json",
            &json!({"ReportResult": json!({"cniVersion": "1.0.0", "ips": [{"address": "10.9.9.9/16"}]}).to_string()}),
        );
        let list = sb.write(
            "caps.conflist",
            &json!({
                "cniVersion": "1.0.0",
                "name": "capsnet",
                "plugins": [{"type": "noop", "capabilities": {"portMappings": true, "bandwidth": false}}]
            }),
        );
        let drv = sb
            .driver()
            .with_container_id("ctr-1234")
            .with_ifname("net1")
            .with_netns(FAKE_NETNS)
            .with_cni_args(&format!("DEBUG={};FOO=BAR", debug.display()))
            .with_cap_args(json!({
                "portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}],
                "bandwidth": {"ingressRate": 1}
            }));
        let files = ["debug.json"];
        json!({
            "add": snapshot(sb, drv.add(&list), &files, "capsnet", "ctr-1234", "net1"),
            "check": snapshot(sb, drv.check(&list), &files, "capsnet", "ctr-1234", "net1"),
            "del": snapshot(sb, drv.del(&list), &files, "capsnet", "ctr-1234", "net1"),
        })
    });

    let result = json!({"cniVersion": "1.0.0", "ips": [{"address": "10.9.9.9/16"}], "dns": {}});
    for step in ["add", "check", "del"] {
        let s = &obs[step];
        assert_eq!(s["report"]["ok"], true, "{step}: {s}");
        let d = &s["debug.json"];
        assert_eq!(d["Command"], step.to_uppercase());
        let a = &d["CmdArgs"];
        assert_eq!(a["ContainerID"], "ctr-1234");
        assert_eq!(a["IfName"], "net1");
        assert_eq!(a["Netns"], FAKE_NETNS);
        let args = a["Args"].as_str().expect("Args is a string");
        assert!(
            args.starts_with("DEBUG=/") && args.ends_with("/debug.json;FOO=BAR"),
            "{args}"
        );
        assert!(a["Path"].as_str().expect("Path").ends_with("/bin"), "{a}");
        // Only capabilities the plugin declares (and enables) are injected.
        let mut expected_stdin = json!({
            "cniVersion": "1.0.0",
            "name": "capsnet",
            "type": "noop",
            "capabilities": {"portMappings": true, "bandwidth": false},
            "runtimeConfig": {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]}
        });
        if step != "add" {
            expected_stdin["prevResult"] = result.clone();
        }
        assert_eq!(a["StdinJSON"], expected_stdin, "{step}");
        // The rest of the debug file is written back as read.
        assert_eq!(d["ReportError"], "");
        assert_eq!(d["ExitWithCode"], 0);
        assert_eq!(d["ReportVersionSupport"], Value::Null);
    }
    assert_eq!(obs["add"]["report"]["result"], result);
    // libcni caches args and capability args with the result.
    let cache = &obs["add"]["cache"];
    assert_eq!(cache["cniArgs"][1], json!(["FOO", "BAR"]));
    assert_eq!(
        cache["capabilityArgs"]["bandwidth"],
        json!({"ingressRate": 1})
    );
    assert_eq!(cache["result"], result);
    assert_eq!(cache["configJSON"]["name"], "capsnet");
}
