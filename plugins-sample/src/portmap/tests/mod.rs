//! portmap in-process: configuration errors (no root), then, as root in
//! namespaces of the tests' own: traffic through the mappings
//! (`traffic.rs`), the layouts beside the reference's (`layout.rs`),
//! conntrack and GC (`host.rs`).

mod host;
mod layout;
mod many;
mod records;
mod traffic;

use std::process::Command;

use cni_net::testing::TempNetns;
use cni_skel::{Outcome, TestRequest};
use cni_types::{Code, IpFamily};
use cni_version::PluginInfo;
use serde_json::{json, Value};

use super::Portmap;

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// A configuration: one TCP mapping 8080->80 for a container at
/// 10.88.0.5/16 on eth0, iptables, with `patch`'s top-level keys on top.
fn conf(patch: Value) -> Value {
    let mut c = json!({
        "cniVersion": "1.0.0", "name": "pmtest", "type": "portmap", "backend": "iptables",
        "runtimeConfig": {"portMappings": [
            {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}
        ]},
        "prevResult": {"cniVersion": "1.0.0",
            "interfaces": [{"name": "eth0", "sandbox": "/var/run/netns/x"}],
            "ips": [{"address": "10.88.0.5/16", "interface": 0}]}
    });
    for (key, value) in patch.as_object().unwrap() {
        c[key] = value.clone();
    }
    c
}

fn mappings(list: Value) -> Value {
    json!({"runtimeConfig": {"portMappings": list}})
}

fn request(command: &str, id: &str, conf: &Value) -> TestRequest {
    TestRequest::new(command)
        .env("CNI_CONTAINERID", id)
        .env("CNI_NETNS", "/var/run/netns/x")
        .env("CNI_IFNAME", "eth0")
        .stdin(conf.to_string())
}

fn run(command: &str, id: &str, conf: &Value) -> Outcome {
    request(command, id, conf).run(&Portmap, &PluginInfo::all())
}

#[test]
fn bad_input_is_refused_naming_the_field_before_anything_changes() {
    let port = |field: &str, value: Value| {
        let mut m = json!({"hostPort": 8080, "containerPort": 80, "protocol": "tcp"});
        m[field] = value;
        mappings(json!([m]))
    };
    let many: Vec<Value> = (0..10_000)
        .map(|i| json!({"hostPort": 1 + i % 60000, "containerPort": 80, "protocol": "tcp"}))
        .collect();
    let cases = [
        (
            port("hostPort", json!(0)),
            "invalid runtimeConfig.portMappings[0].hostPort",
        ),
        (
            port("hostPort", json!(65536)),
            "invalid runtimeConfig.portMappings[0].hostPort",
        ),
        (
            port("hostPort", json!(-1)),
            "invalid runtimeConfig.portMappings[0].hostPort",
        ),
        (
            port("containerPort", json!(0)),
            "invalid runtimeConfig.portMappings[0].containerPort",
        ),
        (
            port("protocol", json!("icmp")),
            "invalid runtimeConfig.portMappings[0].protocol",
        ),
        (
            port("protocol", json!("")),
            "invalid runtimeConfig.portMappings[0].protocol",
        ),
        (
            port("hostIP", json!("not-an-ip")),
            "invalid runtimeConfig.portMappings[0].hostIP",
        ),
        (mappings(json!(many)), "invalid runtimeConfig.portMappings"),
        (json!({"markMasqBit": 32}), "invalid markMasqBit"),
        (json!({"markMasqBit": -1}), "invalid markMasqBit"),
        (
            json!({"markMasqBit": 13, "externalSetMarkChain": "KUBE-MARK-MASQ"}),
            "invalid markMasqBit",
        ),
        (
            json!({"externalSetMarkChain": "a b"}),
            "invalid externalSetMarkChain",
        ),
        (json!({"backend": "nft"}), "invalid backend"),
        (
            json!({"conditionsV4": ["-p", "tcp"]}),
            "invalid conditionsV4",
        ),
        (
            json!({"conditionsV6": ["-j", "ACCEPT"]}),
            "invalid conditionsV6",
        ),
        (
            json!({"backend": "nftables", "externalSetMarkChain": "KUBE-MARK-MASQ"}),
            "invalid externalSetMarkChain",
        ),
        (
            json!({"backend": "iptables", "conditionsV4": ["ip saddr 10.0.0.1"]}),
            "invalid conditionsV4",
        ),
    ];
    for (patch, msg) in cases {
        let out = run("ADD", "ctr-1", &conf(patch.clone()));
        let err = out.error().unwrap_or_else(|| panic!("{patch}: accepted"));
        assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG, "{patch}: {err:?}");
        assert_eq!(err.msg, msg, "{patch}: {err:?}");
    }
}

#[test]
fn add_without_a_previous_result_is_refused_as_portmap_is_chained() {
    let mut c = conf(json!({}));
    c.as_object_mut().unwrap().remove("prevResult");
    let err = run("ADD", "ctr-1", &c).error().expect("refused");
    assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG);
    assert!(err.msg.contains("chained"), "{err:?}");
}

#[test]
fn add_without_mappings_passes_the_previous_result_through_and_changes_nothing() {
    let out = run("ADD", "ctr-1", &conf(json!({"runtimeConfig": {}})));
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.json()["ips"][0]["address"], "10.88.0.5/16");
    assert_eq!(
        run("DEL", "ctr-1", &conf(json!({"runtimeConfig": {}}))).exit_code,
        0
    );
}

#[test]
fn the_container_address_is_the_first_of_each_family_on_the_sandbox_interface() {
    use super::config::container_addresses;
    let text = json!({
        "cniVersion": "1.0.0",
        "interfaces": [{"name": "veth1"}, {"name": "eth0", "sandbox": "/x"}, {"name": "eth1", "sandbox": "/x"}],
        "ips": [
            {"address": "10.0.0.9/24", "interface": 0},
            {"address": "10.0.1.9/24", "interface": 2},
            {"address": "10.88.0.5/16", "interface": 1},
            {"address": "fd00::5/64"},
            {"address": "10.88.0.6/16", "interface": 1}
        ]
    })
    .to_string();
    let result = cni_types::CniResult::parse("1.0.0", text.as_bytes())
        .unwrap()
        .to_current()
        .unwrap();
    let (v4, v6) = container_addresses(&result, "eth0");
    assert_eq!(v4.unwrap().to_string(), "10.88.0.5/16");
    assert_eq!(v6.unwrap().to_string(), "fd00::5/64");
}

/// `ip ARGS`, which must succeed.
fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `PROGRAM ARGS` inside `netns`; its stdout.
fn exec_in(netns: &TempNetns, program: &str, args: &[&str]) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", netns.name(), program])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn run_in(netns: &TempNetns, command: &str, id: &str, conf: &Value) -> Outcome {
    let (id, conf) = (id.to_string(), conf.clone());
    netns
        .run(move |_| Ok::<_, cni_net::NetError>(run(command, &id, &conf)))
        .unwrap()
}

/// `iptables-save -t nat` without comments and counters.
fn nat_table(netns: &TempNetns, ip: IpFamily) -> Vec<String> {
    let save = match ip {
        IpFamily::V4 => "iptables-save",
        IpFamily::V6 => "ip6tables-save",
    };
    exec_in(netns, save, &["-t", "nat"])
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| line.split(" [").next().unwrap_or(line).to_string())
        .collect()
}
