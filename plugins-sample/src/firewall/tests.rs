//! firewall in-process: bad input is refused naming the field and
//! changes nothing; ADD, CHECK, DEL and GC in a namespace of the test.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use cni_net::testing::TempNetns;
use cni_skel::{Outcome, TestRequest};
use cni_version::PluginInfo;
use serde_json::{json, Value};

use super::Firewall;

/// Where this test process keeps its records: removed at exit.
fn data_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// A dual-stack pod on `br0`, patched with `patch`.
fn conf(patch: Value) -> Value {
    let mut c = json!({
        "cniVersion": "1.0.0", "name": "fwtest", "type": "firewall", "backend": "iptables",
        "dataDir": data_dir(),
        "prevResult": {"cniVersion": "1.0.0",
            "interfaces": [{"name": "br0"}, {"name": "veth0"},
                {"name": "eth0", "sandbox": "/var/run/netns/x"}],
            "ips": [{"address": "10.88.0.5/16", "interface": 2},
                {"address": "fd00:88::5/64", "interface": 2}]}
    });
    for (key, value) in patch.as_object().unwrap() {
        c[key] = value.clone();
    }
    c
}

fn run(command: &str, id: &str, conf: &Value) -> Outcome {
    TestRequest::new(command)
        .env("CNI_CONTAINERID", id)
        .env("CNI_NETNS", "/var/run/netns/x")
        .env("CNI_IFNAME", "eth0")
        .env("CNI_PATH", "/nonexistent")
        .stdin(conf.to_string())
        .run(&Firewall, &PluginInfo::all())
}

fn run_in(netns: &TempNetns, command: &str, id: &str, conf: &Value) -> Outcome {
    let (id, conf) = (id.to_string(), conf.clone());
    netns
        .run(move |_| Ok::<_, cni_net::NetError>(run(command, &id, &conf)))
        .unwrap()
}

/// Everything the namespace's packet filter holds: both iptables
/// families' filter tables (without comments and counters) and the
/// nftables ruleset.
fn ruleset(netns: &TempNetns) -> String {
    let exec = |program: &str, args: &[&str]| {
        let out = Command::new("ip")
            .args(["netns", "exec", netns.name(), program])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{program}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let mut text = String::new();
    for save in ["iptables-save", "ip6tables-save"] {
        for line in exec(save, &["-t", "filter"]).lines() {
            if !line.starts_with('#') {
                text.push_str(line.split(" [").next().unwrap_or(line));
                text.push('\n');
            }
        }
    }
    text + &exec("nft", &["list", "ruleset"])
}

#[test]
fn bad_input_is_a_clear_error_naming_the_field() {
    let cases = [
        (
            json!({"backend": "ebtables"}),
            "invalid backend",
            "\"ebtables\"",
        ),
        (
            json!({"backend": "firewalld", "ingressPolicy": "isolated"}),
            "invalid ingressPolicy",
            "not supported with backend \"firewalld\"",
        ),
        (
            json!({"iptablesAdminChainName": "MY ADMIN"}),
            "iptablesAdminChainName",
            "contains ' '",
        ),
        (
            json!({"iptablesAdminChainName": "C".repeat(29)}),
            "iptablesAdminChainName",
            "longer than 28",
        ),
        (
            json!({"iptablesAdminChainName": "DROP"}),
            "iptablesAdminChainName",
            "built-in",
        ),
        (
            json!({"ingressPolicy": "closed"}),
            "ingressPolicy",
            "\"closed\"",
        ),
        (
            json!({"firewalldZone": "a zone"}),
            "invalid firewalldZone",
            "printable",
        ),
    ];
    for (patch, msg, detail) in cases {
        let out = run("ADD", "c1", &conf(patch.clone()));
        let err = out.error().unwrap_or_else(|| panic!("{patch}: no error"));
        assert_eq!(err.code.0, 7, "{patch}: {err:?}");
        let text = format!("{} {}", err.msg, err.details);
        assert!(
            text.contains(msg) && text.contains(detail),
            "{patch}: {text}"
        );
    }
}

#[test]
fn add_and_check_need_a_previous_result_and_an_isolating_policy_needs_the_bridge() {
    let mut bare = conf(json!({}));
    bare.as_object_mut().unwrap().remove("prevResult");
    for command in ["ADD", "CHECK"] {
        let err = run(command, "c1", &bare).error().unwrap();
        assert_eq!(
            (err.code.0, err.msg.as_str()),
            (7, "missing prevResult from earlier plugin")
        );
    }
    let no_bridge = conf(json!({"ingressPolicy": "isolated", "prevResult": {
        "cniVersion": "1.0.0", "ips": [{"address": "10.88.0.5/16"}]}}));
    let err = run("ADD", "c1", &no_bridge).error().unwrap();
    assert_eq!(err.code.0, 7);
    assert!(err.details.contains("after \"bridge\""), "{err:?}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn refused_input_changes_nothing_on_the_host() {
    let host = TempNetns::new("fw-bad").unwrap();
    let before = ruleset(&host);
    for patch in [
        json!({"backend": "nope"}),
        json!({"iptablesAdminChainName": "-A"}),
        json!({"ingressPolicy": "isolated", "backend": "nftables", "iptablesAdminChainName": "ACCEPT"}),
        json!({"backend": "firewalld", "ingressPolicy": "same-bridge"}),
    ] {
        let out = run_in(&host, "ADD", "c1", &conf(patch.clone()));
        assert!(out.error().is_some(), "{patch}");
        assert_eq!(ruleset(&host), before, "{patch}");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn each_backend_adds_checks_and_deletes_and_a_second_del_succeeds() {
    for backend in ["iptables", "nftables"] {
        let host = TempNetns::new("fw-cycle").unwrap();
        let c = conf(json!({"backend": backend, "ingressPolicy": "same-bridge"}));
        let added = run_in(&host, "ADD", "c1", &c);
        assert_eq!(added.exit_code, 0, "{backend}: {:?}", added.error());
        assert_eq!(added.json()["ips"][1]["address"], "fd00:88::5/64");
        assert_eq!(run_in(&host, "CHECK", "c1", &c).exit_code, 0, "{backend}");
        let with = ruleset(&host);
        assert!(
            with.contains("10.88.0.5") && with.contains("fd00:88::5"),
            "{with}"
        );
        for _ in 0..2 {
            assert_eq!(run_in(&host, "DEL", "c1", &c).exit_code, 0, "{backend}");
        }
        let after = ruleset(&host);
        assert!(
            !after.contains("10.88.0.5") && !after.contains("br0"),
            "{backend}: {after}"
        );
        let err = run_in(&host, "CHECK", "c1", &c).error().unwrap();
        assert!(err.msg.contains("missing"), "{backend}: {err:?}");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn gc_removes_only_unlisted_attachments_and_nothing_without_a_list() {
    for backend in ["iptables", "nftables"] {
        let host = TempNetns::new("fw-gc").unwrap();
        let network = format!("fwgc-{backend}");
        let pod = |id: &str, last: u8| {
            let c = conf(json!({"name": network, "backend": backend,
                "prevResult": {"cniVersion": "1.0.0",
                "ips": [{"address": format!("10.88.0.{last}/16")}]}}));
            (id.to_string(), c)
        };
        let pods = [pod("keep", 1), pod("stale", 2)];
        for (id, c) in &pods {
            assert_eq!(run_in(&host, "ADD", id, c).exit_code, 0, "{backend}");
        }
        let gc = |valid: Option<Value>| {
            let mut c = json!({"cniVersion": "1.1.0", "name": network, "type": "firewall",
                "dataDir": data_dir()});
            if let Some(valid) = valid {
                c["cni.dev/valid-attachments"] = valid;
            }
            let out = run_in(&host, "GC", "", &c);
            assert_eq!(out.exit_code, 0, "{backend}: {:?}", out.error());
        };
        gc(None);
        assert!(
            ruleset(&host).contains("10.88.0.2"),
            "{backend}: {}",
            ruleset(&host)
        );
        gc(Some(json!([{"containerID": "keep", "ifname": "eth0"}])));
        let left = ruleset(&host);
        assert!(left.contains("10.88.0.1"), "{backend}: {left}");
        assert!(!left.contains("10.88.0.2"), "{backend}: {left}");
        // The kept pod's DEL then leaves no record behind.
        assert_eq!(run_in(&host, "DEL", "keep", &pods[0].1).exit_code, 0);
        assert!(!data_dir().join(&network).exists(), "{backend}");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn del_without_a_previous_result_removes_the_recorded_iptables_rules() {
    let host = TempNetns::new("fw-noprev").unwrap();
    let c = conf(json!({"name": "fwnoprev"}));
    assert_eq!(run_in(&host, "ADD", "c1", &c).exit_code, 0);
    let mut bare = c.clone();
    bare.as_object_mut().unwrap().remove("prevResult");
    assert_eq!(run_in(&host, "DEL", "c1", &bare).exit_code, 0);
    let left = ruleset(&host);
    assert!(
        !left.contains("10.88.0.5") && !left.contains("fd00:88::5"),
        "{left}"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn del_succeeds_when_the_requested_backend_is_unavailable() {
    let host = TempNetns::new("fw-delfwd").unwrap();
    let c = conf(json!({"backend": "firewalld"}));
    assert!(run_in(&host, "ADD", "c1", &c).error().is_some());
    let out = run_in(&host, "DEL", "c1", &c);
    assert_eq!(out.exit_code, 0, "{:?}", out.error());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_bridge_named_as_an_iptables_wildcard_is_refused_under_iptables_and_matched_whole_under_nftables(
) {
    for bridge in ["cni+", "+"] {
        let host = TempNetns::new("fw-plus").unwrap();
        let before = ruleset(&host);
        let mut c = conf(json!({"ingressPolicy": "isolated"}));
        c["prevResult"]["interfaces"][0]["name"] = json!(bridge);
        let err = run_in(&host, "ADD", "c1", &c).error().expect(bridge);
        assert_eq!(
            (err.code, err.msg.as_str()),
            (
                cni_types::Code::INVALID_NETWORK_CONFIG,
                "invalid interface name"
            ),
            "{err:?}"
        );
        assert!(err.details.contains(&format!("{bridge:?}")), "{err:?}");
        assert_eq!(ruleset(&host), before, "{bridge}: nothing written");
        assert_eq!(run_in(&host, "DEL", "c1", &c).exit_code, 0, "{bridge}");

        // nftables compares the whole name: no wildcard to fear.
        c["backend"] = json!("nftables");
        let added = run_in(&host, "ADD", "c1", &c);
        assert_eq!(added.exit_code, 0, "{bridge}: {:?}", added.error());
        let isolated = ruleset(&host);
        assert!(isolated.contains(&format!("\"{bridge}\"")), "{isolated}");
        assert_eq!(run_in(&host, "DEL", "c1", &c).exit_code, 0, "{bridge}");
    }
}

/// Under nftables only unicast packets walk the per-address accepts (a
/// multicast packet, flooded to every bridge port, is accepted by our
/// table either way), and an ADD rewrites the jump that earlier versions
/// took with every packet.
#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn nftables_forward_walks_the_per_address_accepts_with_unicast_packets_only() {
    let host = TempNetns::new("fw-unicast").unwrap();
    let earlier = "add table inet cni_plugins_firewall
add chain inet cni_plugins_firewall admin
add chain inet cni_plugins_firewall isolation_stage_1
add chain inet cni_plugins_firewall isolation_stage_2
add chain inet cni_plugins_firewall cni_forward
add chain inet cni_plugins_firewall forward { type filter hook forward priority filter; policy accept; }
add rule inet cni_plugins_firewall forward jump isolation_stage_1
add rule inet cni_plugins_firewall forward jump admin
add rule inet cni_plugins_firewall forward jump cni_forward
";
    let mut nft = Command::new("ip")
        .args(["netns", "exec", host.name(), "nft", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    nft.stdin
        .take()
        .unwrap()
        .write_all(earlier.as_bytes())
        .unwrap();
    assert!(nft.wait().unwrap().success());

    let c = conf(json!({"backend": "nftables"}));
    let added = run_in(&host, "ADD", "c1", &c);
    assert_eq!(added.exit_code, 0, "{:?}", added.error());
    let listed = ruleset(&host);
    let forward: Vec<&str> = listed
        .split("chain forward {")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    assert_eq!(
        forward,
        [
            "type filter hook forward priority filter; policy accept;",
            "jump isolation_stage_1",
            "jump admin",
            "meta pkttype host jump cni_forward",
        ],
        "{listed}"
    );
    assert!(listed.contains("ip saddr 10.88.0.5 accept"), "{listed}");
    assert_eq!(run_in(&host, "CHECK", "c1", &c).exit_code, 0);
    assert_eq!(run_in(&host, "DEL", "c1", &c).exit_code, 0);
}

/// The one record file of `network` in the test's data directory.
fn record_file(network: &str) -> std::path::PathBuf {
    let mut files: Vec<_> = std::fs::read_dir(data_dir().join(network))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.pop().unwrap()
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_add_whose_record_cannot_be_written_takes_its_rules_back() {
    let host = TempNetns::new("fw-norecord").unwrap();
    // A data directory under a regular file cannot be created.
    let file = tempfile::NamedTempFile::new().unwrap();
    let c = conf(json!({"name": "fwnorecord", "dataDir": file.path().join("records")}));
    let err = run_in(&host, "ADD", "c1", &c).error().unwrap();
    assert_eq!(err.code.0, 5, "{err:?}");
    let left = ruleset(&host);
    assert!(
        !left.contains("10.88.0.5") && !left.contains("fd00:88::5"),
        "{left}"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn del_with_a_truncated_record_removes_the_previous_results_rules() {
    let host = TempNetns::new("fw-truncated").unwrap();
    let c = conf(json!({"name": "fwtruncated"}));
    let mut bare = c.clone();
    bare.as_object_mut().unwrap().remove("prevResult");
    assert_eq!(run_in(&host, "ADD", "c1", &c).exit_code, 0);
    let record = record_file("fwtruncated");
    let text = std::fs::read(&record).unwrap();
    std::fs::write(&record, &text[..text.len() / 2]).unwrap();

    // Without a previous result the record was all there was: code 5,
    // and the record stays for the DEL that has one.
    let err = run_in(&host, "DEL", "c1", &bare).error().unwrap();
    assert_eq!(err.code.0, 5, "{err:?}");
    assert!(record.exists());

    let out = run_in(&host, "DEL", "c1", &c);
    assert_eq!(out.exit_code, 0, "{:?}", out.error());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("previous result"), "{said}");
    let left = ruleset(&host);
    assert!(
        !left.contains("10.88.0.5") && !left.contains("fd00:88::5"),
        "{left}"
    );
    assert!(!data_dir().join("fwtruncated").exists());
}
