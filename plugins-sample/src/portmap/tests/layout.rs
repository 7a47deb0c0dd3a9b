//! The layouts beside the reference's: nftables against cni-netfilter's
//! fixture of the reference's own output, iptables against Debian's
//! reference plugin run in a namespace next to ours.

use std::io::Write;
use std::process::Command;

use cni_net::testing::TempNetns;
use cni_types::IpFamily;
use serde_json::{json, Value};

use super::{conf, exec_in, nat_table, run_in};

/// `nft -j list ruleset` in `netns` without what differs between equal
/// rulesets (metainfo, handles).
fn nft_json(netns: &TempNetns) -> Value {
    netns.nft_ruleset().unwrap()
}

/// The scenario of cni-netfilter's fixtures: ctr-1 at 10.88.0.5, tcp
/// 8080->80 and udp 192.168.1.1:5353->53.
fn fixture_conf(backend: &str) -> Value {
    conf(json!({
        "backend": backend,
        "runtimeConfig": {"portMappings": [
            {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
            {"hostPort": 5353, "containerPort": 53, "protocol": "udp", "hostIP": "192.168.1.1"}
        ]}
    }))
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn the_nftables_layout_is_the_reference_one() {
    let host = TempNetns::new("pm-nft").unwrap();
    let out = run_in(&host, "ADD", "ctr-1", &fixture_conf("nftables"));
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../cni-netfilter/tests/fixtures/portmap_nftables.json"
    );
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(nft_json(&host), fixture);
    // A second ADD of the same container adds its rules again, as the
    // reference's does; DEL removes them all, leaving the skeleton.
    assert_eq!(
        run_in(&host, "DEL", "ctr-1", &fixture_conf("nftables")).exit_code,
        0
    );
    let left = exec_in(&host, "nft", &["list", "ruleset"]);
    assert!(!left.contains("ctr-1"), "{left}");
}

/// The reference plugin (Debian's, iptables only) run as a process in
/// `netns`.
fn reference(netns: &TempNetns, command: &str, id: &str, conf: &Value) {
    let mut child = Command::new("ip")
        .args(["netns", "exec", netns.name(), "/usr/lib/cni/portmap"])
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", id)
        .env("CNI_NETNS", "/var/run/netns/x")
        .env("CNI_IFNAME", "eth0")
        .env("CNI_PATH", "/usr/lib/cni")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(conf.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "reference {command}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn the_iptables_layout_is_the_reference_plugins_and_each_dels_the_others_rules() {
    let theirs = TempNetns::new("pm-ref").unwrap();
    let ours = TempNetns::new("pm-ours").unwrap();
    let mut c = fixture_conf("iptables");
    c["runtimeConfig"]["portMappings"]
        .as_array_mut()
        .unwrap()
        .push(
            json!({"hostPort": 9090, "containerPort": 90, "protocol": "tcp", "hostIP": "fd00::1"}),
        );
    c["prevResult"]["ips"]
        .as_array_mut()
        .unwrap()
        .push(json!({"address": "fd00::5/64", "interface": 0}));
    // Debian's reference (1.1.1) predates masqAll, so it is compared in
    // the unit tests of iptables.rs only.
    for setup in [json!({}), json!({"snat": false}), json!({"markMasqBit": 5})] {
        let mut c = c.clone();
        for (key, value) in setup.as_object().unwrap() {
            c[key] = value.clone();
        }
        reference(&theirs, "ADD", "ctr-1", &c);
        let out = run_in(&ours, "ADD", "ctr-1", &c);
        assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
        for ip in IpFamily::BOTH {
            assert_eq!(nat_table(&ours, ip), nat_table(&theirs, ip), "{setup} {ip}");
        }
        // Our ADD again adds nothing; our CHECK accepts the reference's pod.
        run_in(&ours, "ADD", "ctr-1", &c);
        assert_eq!(
            nat_table(&ours, IpFamily::V4),
            nat_table(&theirs, IpFamily::V4),
            "{setup} again"
        );
        let check = run_in(&theirs, "CHECK", "ctr-1", &c);
        assert_eq!(
            check.exit_code,
            0,
            "{}",
            String::from_utf8_lossy(&check.stdout)
        );

        // Each DEL removes the other's container chain and its jumps.
        reference(&ours, "DEL", "ctr-1", &c);
        assert_eq!(run_in(&theirs, "DEL", "ctr-1", &c).exit_code, 0);
        for (netns, who) in [(&ours, "ours"), (&theirs, "theirs")] {
            for ip in IpFamily::BOTH {
                let left = nat_table(netns, ip).join("\n");
                assert!(
                    !left.contains("CNI-DN-") && !left.contains("ctr-1"),
                    "{who} {setup}: {left}"
                );
            }
        }
    }
}
