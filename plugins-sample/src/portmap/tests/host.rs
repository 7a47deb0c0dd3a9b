//! What portmap does on the host besides its rules: stale conntrack
//! entries, and GC.

use cni_net::testing::TempNetns;
use cni_skel::TestRequest;
use cni_types::IpFamily;
use cni_version::PluginInfo;
use serde_json::{json, Value};

use super::{conf, exec_in, ip, nat_table, run_in, Portmap, TestResult};

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_stale_udp_flow_to_a_mapped_port_is_forgotten_on_add() {
    let host = TempNetns::new("pm-ct").unwrap();
    ip(&["-n", host.name(), "link", "set", "lo", "up"]);
    let udp = |port: u16| {
        conf(json!({"runtimeConfig": {"portMappings": [
            {"hostPort": port, "containerPort": 53, "protocol": "udp"}
        ]}}))
    };
    // Another pod's NAT rules make the namespace track connections.
    assert_eq!(run_in(&host, "ADD", "ctr-0", &udp(9999)).exit_code, 0);
    host.run(|_| -> TestResult {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0")?;
        socket.send_to(b"x", "127.0.0.1:5353")?;
        Ok(())
    })
    .unwrap();
    let tracked = || exec_in(&host, "cat", &["/proc/net/nf_conntrack"]);
    assert!(tracked().contains("dport=5353"), "{}", tracked());
    assert_eq!(run_in(&host, "ADD", "ctr-1", &udp(5353)).exit_code, 0);
    assert!(!tracked().contains("dport=5353"), "{}", tracked());
}

/// Runs GC in `host` for the network `pmtest`, configured with
/// `backend`, with `cni.dev/valid-attachments` set to `valid` (left out
/// when `None`).
pub(super) fn gc_in(host: &TempNetns, backend: &str, valid: Option<Value>) {
    let mut c =
        json!({"cniVersion": "1.1.0", "name": "pmtest", "type": "portmap", "backend": backend});
    if let Some(valid) = valid {
        c["cni.dev/valid-attachments"] = valid;
    }
    let out = host
        .run(move |_| {
            Ok::<_, cni_net::NetError>(
                TestRequest::new("GC")
                    .env("CNI_PATH", "/nonexistent")
                    .stdin(c.to_string())
                    .run(&Portmap, &PluginInfo::all()),
            )
        })
        .unwrap();
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn gc_removes_only_the_unlisted_attachments_of_its_network_and_nothing_without_a_list() {
    let host = TempNetns::new("pm-gc").unwrap();
    let add = |network: &str, id: &str| {
        let c = conf(json!({"name": network}));
        assert_eq!(run_in(&host, "ADD", id, &c).exit_code, 0);
    };
    add("pmtest", "ctr-a");
    add("pmtest", "ctr-b");
    add("other", "ctr-c");
    let chains = || {
        ["ctr-a", "ctr-b"].map(|id| {
            nat_table(&host, IpFamily::V4)
                .iter()
                .any(|l| l.contains(&crate::portmap::iptables::dnat_chain("pmtest", id)))
        })
    };
    gc_in(&host, "iptables", None);
    assert_eq!(chains(), [true, true], "no list: everything is kept");
    // Configured for nftables: the iptables layout is collected all the same.
    gc_in(
        &host,
        "nftables",
        Some(json!([{"containerID": "ctr-a", "ifname": "eth0"}])),
    );
    assert_eq!(chains(), [true, false]);
    let other = crate::portmap::iptables::dnat_chain("other", "ctr-c");
    assert!(
        nat_table(&host, IpFamily::V4)
            .iter()
            .any(|l| l.contains(&other)),
        "another network's pod stays"
    );
    // `null`, what libcni sends for an empty list.
    gc_in(&host, "iptables", Some(Value::Null));
    assert_eq!(chains(), [false, false]);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn gc_of_another_network_keeps_the_nftables_mappings_whose_network_it_cannot_tell() {
    let host = TempNetns::new("pm-gc-nft").unwrap();
    let elsewhere = |address: &str, port: u16| {
        conf(json!({
            "name": "elsewhere",
            "backend": "nftables",
            "runtimeConfig": {"portMappings": [
                {"hostPort": port, "containerPort": 80, "protocol": "tcp"}
            ]},
            "prevResult": {"cniVersion": "1.0.0",
                "interfaces": [{"name": "eth0", "sandbox": "/var/run/netns/x"}],
                "ips": [{"address": address, "interface": 0}]}
        }))
    };
    let pods = [
        ("ctr-a", "10.88.0.5/16", 8080),
        ("ctr-c", "fd00::7/64", 8082),
    ];
    for (id, address, port) in pods {
        assert_eq!(
            run_in(&host, "ADD", id, &elsewhere(address, port)).exit_code,
            0
        );
    }
    let ruleset = || exec_in(&host, "nft", &["list", "ruleset"]);
    let before = ruleset();
    assert!(before.contains("comment \"ctr-a\""), "{before}");
    // CRI-O's GC at start for `pmtest`, a network without a live pod.
    gc_in(&host, "nftables", Some(Value::Null));
    assert_eq!(
        ruleset(),
        before,
        "another network's pods keep their mappings"
    );
    // And their records: their DELs find their rules by handle.
    for (id, address, port) in pods {
        let recorded = host.run(move |_| {
            Ok::<_, cni_net::NetError>(cni_netfilter::nft::RuleRecord::here("elsewhere", id))
        });
        let recorded = recorded.unwrap().unwrap().read().unwrap();
        assert!(recorded.is_some_and(|r| !r.pending), "{id}'s record");
        assert_eq!(
            run_in(&host, "DEL", id, &elsewhere(address, port)).exit_code,
            0
        );
    }
    assert!(!ruleset().contains("comment \"ctr-"), "{}", ruleset());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn del_on_a_host_that_never_saw_portmap_succeeds_with_either_backend() {
    let host = TempNetns::new("pm-del").unwrap();
    for backend in ["iptables", "nftables"] {
        let c = conf(json!({"backend": backend}));
        for _ in 0..2 {
            let out = run_in(&host, "DEL", "ctr-1", &c);
            assert_eq!(
                out.exit_code,
                0,
                "{backend}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
    let left = exec_in(&host, "nft", &["list", "ruleset"]);
    assert!(
        !left.contains("cni_hostport") && !left.contains("CNI-"),
        "DEL creates nothing: {left}"
    );
}
