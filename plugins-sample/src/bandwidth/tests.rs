//! In-process tests: a pod is a container namespace whose `eth0` is the
//! peer of a veth end in a host namespace of the test; the plugin runs
//! inside that host namespace. As root.

use cni_net::tc::{Handle, QdiscKind};
use cni_net::testing::TempNetns;
use cni_net::{LinkKind, NetError};
use cni_skel::{Outcome, TestRequest};
use cni_types::Code;
use cni_version::{PluginInfo, SpecVersion};
use serde_json::{json, Value};

use super::*;

/// A container with `eth0`, its peer `veth-bw` in a host namespace.
struct Pod {
    host: TempNetns,
    ctr: TempNetns,
}

const HOST_VETH: &str = "veth-bw";

impl Pod {
    fn new() -> Pod {
        let host = TempNetns::new("bw-host").unwrap_or_else(|e| panic!("needs root: {e}"));
        let ctr = TempNetns::new("bw-ctr").unwrap();
        ctr.add_veth("eth0", HOST_VETH, Some(&host)).unwrap();
        let mut nl = host.socket().unwrap();
        let veth = nl.link(HOST_VETH).unwrap();
        nl.set_up(veth.index).unwrap();
        Pod { host, ctr }
    }

    /// The configuration at 1.0.0 with `fields`, chained after a result
    /// listing both ends.
    fn conf(&self, fields: Value) -> String {
        let mut conf = json!({
            "cniVersion": "1.0.0", "name": "net1", "type": "bandwidth",
            "prevResult": {"cniVersion": "1.0.0", "interfaces": [
                {"name": HOST_VETH},
                {"name": "eth0", "sandbox": self.ctr.path()}]}
        });
        conf.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        conf.to_string()
    }

    /// Runs `command` from the host namespace.
    fn run(&self, command: &str, conf: &str) -> Outcome {
        let request = self.ctr.request(command, "eth0").stdin(conf.to_owned());
        self.host
            .run(|_| {
                Ok::<_, NetError>(
                    request.run(&Bandwidth, &PluginInfo::from_version(SpecVersion::V0_3_0)),
                )
            })
            .unwrap()
    }

    fn ifb(&self) -> String {
        ifb_name("net1", self.ctr.name())
    }

    /// What the host namespace holds: links other than `lo` and the
    /// veth, and the veth's qdiscs.
    fn host_state(&self) -> (Vec<String>, Vec<QdiscKind>) {
        let mut nl = self.host.socket().unwrap();
        let links = nl
            .links()
            .unwrap()
            .into_iter()
            .map(|l| l.name)
            .filter(|n| n != "lo" && n != HOST_VETH)
            .collect();
        let veth = nl.link(HOST_VETH).unwrap();
        let qdiscs = nl
            .qdiscs(veth.index)
            .unwrap()
            .into_iter()
            .map(|q| q.kind)
            .collect();
        (links, qdiscs)
    }
}

fn both_ways() -> Value {
    json!({"ingressRate": 8_000_000, "ingressBurst": 80_000,
           "egressRate": 16_000_000, "egressBurst": 160_000})
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn both_directions_are_shaped_as_configured_checked_and_removed_by_del() {
    let pod = Pod::new();
    let untouched = pod.host_state();
    let conf = pod.conf(both_ways());
    let add = pod.run("ADD", &conf);
    assert_eq!(add.exit_code, 0, "{add:?}");
    let result = add.json();
    let ifb = &result["interfaces"][2];
    assert_eq!(ifb["name"], pod.ifb());
    assert_eq!(ifb["mac"].as_str().unwrap().len(), 17, "{result}");

    let mut nl = pod.host.socket().unwrap();
    let veth = nl.link(HOST_VETH).unwrap();
    let qdiscs = nl.qdiscs(veth.index).unwrap();
    let root = qdiscs.iter().find(|q| q.parent == Handle::ROOT).unwrap();
    assert_eq!(root.handle, Handle::new(1, 0));
    let ingress = Shaping::read(&NetConf::from_json(conf.as_bytes()).unwrap()).unwrap();
    assert_eq!(root.kind, QdiscKind::Tbf(ingress.ingress.unwrap().params()));
    assert!(qdiscs.iter().any(|q| q.kind == QdiscKind::Ingress));
    let ifb_link = nl.link(pod.ifb()).unwrap();
    assert_eq!(ifb_link.kind, Some(LinkKind::Ifb));
    assert_eq!((ifb_link.mtu, ifb_link.up), (veth.mtu, true));
    let on_ifb = nl.qdiscs(ifb_link.index).unwrap();
    assert_eq!(
        on_ifb[0].kind,
        QdiscKind::Tbf(ingress.egress.unwrap().params())
    );

    let check = pod.run("CHECK", &conf);
    assert_eq!(check.exit_code, 0, "{check:?}");
    let del = pod.run("DEL", &conf);
    assert_eq!(del.exit_code, 0, "{del:?}");
    assert_eq!(pod.host_state(), untouched);
    let again = pod.run("DEL", &conf);
    assert_eq!(again.exit_code, 0, "{again:?}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn check_names_the_direction_whose_rate_differs() {
    let pod = Pod::new();
    assert_eq!(pod.run("ADD", &pod.conf(both_ways())).exit_code, 0);
    let mut other = both_ways();
    other["egressRate"] = json!(24_000_000);
    let check = pod.run("CHECK", &pod.conf(other));
    let err = check.error().expect("CHECK fails");
    assert!(err.msg.starts_with("egress: rate"), "{err:?}");
    pod.run("DEL", &pod.conf(both_ways()));
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_invalid_entry_is_code_7_and_changes_nothing() {
    let pod = Pod::new();
    let untouched = pod.host_state();
    for fields in [
        json!({"ingressRate": 8_000_000, "ingressBurst": 80_000, "egressRate": 8}),
        json!({"ingressRate": 8_000_000, "ingressBurst": 80_000,
               "egressRate": -8_000, "egressBurst": 80_000}),
        json!({"ingressRate": 8_000_000, "ingressBurst": 80_000,
               "egressRate": 8_000, "egressBurst": 7}),
    ] {
        let add = pod.run("ADD", &pod.conf(fields.clone()));
        let err = add.error().unwrap_or_else(|| panic!("{fields}: {add:?}"));
        assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG, "{fields}: {err:?}");
        assert!(err.msg.starts_with("invalid egress"), "{err:?}");
        assert_eq!(pod.host_state(), untouched, "{fields}");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_failed_add_removes_what_it_installed() {
    let pod = Pod::new();
    // The ifb's name is taken (by an ifb of nobody's): ADD fails after
    // the ingress tbf is in place.
    pod.host
        .socket()
        .unwrap()
        .add_ifb(&pod.ifb(), 1500)
        .unwrap();
    let before = pod.host_state();
    let add = pod.run("ADD", &pod.conf(both_ways()));
    let err = add.error().expect("ADD fails");
    assert!(err.msg.contains("create ifb link"), "{err:?}");
    assert_eq!(pod.host_state(), before);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn del_after_the_container_namespace_is_gone_removes_the_ifb() {
    let pod = Pod::new();
    let conf = pod.conf(both_ways());
    assert_eq!(pod.run("ADD", &conf).exit_code, 0);
    let request = pod
        .ctr
        .request("DEL", "eth0")
        .env("CNI_NETNS", "/run/netns/cni-bandwidth-gone")
        .stdin(conf.clone());
    let del = pod
        .host
        .run(|_| Ok::<_, NetError>(request.run(&Bandwidth, &PluginInfo::all())))
        .unwrap();
    assert_eq!(del.exit_code, 0, "{del:?}");
    assert!(pod
        .host
        .socket()
        .unwrap()
        .find_link(pod.ifb())
        .unwrap()
        .is_none());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn without_an_entry_add_returns_the_previous_result_and_changes_nothing() {
    let pod = Pod::new();
    let untouched = pod.host_state();
    let add = pod.run(
        "ADD",
        &pod.conf(json!({"ingressRate": 0, "ingressBurst": 0})),
    );
    assert_eq!(add.exit_code, 0, "{add:?}");
    assert_eq!(add.json()["interfaces"].as_array().unwrap().len(), 2);
    assert_eq!(pod.host_state(), untouched);
}

#[test]
fn without_an_entry_check_passes_without_looking_for_a_veth() {
    // No namespace: nothing is looked at.
    let conf = json!({"cniVersion": "1.0.0", "name": "net1", "type": "bandwidth",
        "prevResult": {"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "sandbox": "/x"}]}});
    let check = cni_skel::TestRequest::new("CHECK")
        .env("CNI_CONTAINERID", "c1")
        .env("CNI_NETNS", "/var/run/netns/cni-bandwidth-absent")
        .env("CNI_IFNAME", "eth0")
        .stdin(conf.to_string())
        .run(&Bandwidth, &PluginInfo::all());
    assert_eq!(check.exit_code, 0, "{check:?}");
}

#[test]
fn the_ifb_name_is_the_references() {
    // Measured with Debian's bandwidth 1.1.1: network "net1", container "c1".
    assert_eq!(ifb_name("net1", "c1"), "bwpc2d892b58e87");
    assert_eq!(ifb_name("net1", "c2").len(), 15);
}

/// Bytes per second of `bytes` sent from `from` to `to` over TCP (port
/// 5001 on `to_addr`), counted from the receiver's first byte to its
/// last, less the `burst` a full bucket lets through at once.
fn transfer_rate(
    from: &TempNetns,
    to: &TempNetns,
    to_addr: &str,
    bytes: usize,
    burst: usize,
) -> f64 {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::time::{Duration, Instant};

    type BoxError = Box<dyn std::error::Error + Send + Sync>;
    let listener = to
        .run(|_| Ok::<_, BoxError>(TcpListener::bind((to_addr, 5001))?))
        .unwrap();
    // Bound before the connection: no wait needed for it to listen.
    let mut sender = from
        .run(|_| Ok::<_, BoxError>(TcpStream::connect((to_addr, 5001))?))
        .unwrap();
    let (mut receiver, _) = listener.accept().unwrap();
    let limit = Some(Duration::from_secs(20));
    receiver.set_read_timeout(limit).unwrap();
    sender.set_write_timeout(limit).unwrap();
    let writer = std::thread::spawn(move || {
        sender.write_all(&vec![0x5a; bytes]).unwrap();
        sender.shutdown(Shutdown::Write).unwrap();
    });
    let mut buf = vec![0; 64 * 1024];
    let mut first = receiver.read(&mut buf).unwrap();
    let start = Instant::now();
    let mut total = first;
    while first > 0 {
        first = receiver.read(&mut buf).unwrap();
        total += first;
    }
    let elapsed = start.elapsed().as_secs_f64();
    writer.join().unwrap();
    assert_eq!(total, bytes);
    (bytes - burst) as f64 / elapsed
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn tcp_through_a_shaped_pod_moves_at_the_configured_rate_each_way() {
    use cni_net::Dad;

    let pod = Pod::new();
    for (ns, name, addr) in [
        (&pod.host, HOST_VETH, "10.99.0.1/24"),
        (&pod.ctr, "eth0", "10.99.0.2/24"),
    ] {
        let mut nl = ns.socket().unwrap();
        let link = nl.link(name).unwrap();
        nl.add_address(link.index, addr.parse().unwrap(), Dad::Skip)
            .unwrap();
        nl.set_up(link.index).unwrap();
    }
    // 1 MB/s in, 2 MB/s out, with 20 kB buckets; 2 s each way.
    let conf = pod.conf(json!({"ingressRate": 8_000_000, "ingressBurst": 160_000,
                               "egressRate": 16_000_000, "egressBurst": 160_000}));
    assert_eq!(pod.run("ADD", &conf).exit_code, 0);
    let ingress = transfer_rate(&pod.host, &pod.ctr, "10.99.0.2", 2_000_000, 20_000);
    let egress = transfer_rate(&pod.ctr, &pod.host, "10.99.0.1", 4_000_000, 20_000);
    pod.run("DEL", &conf);
    let within = |measured: f64, rate: f64| (measured - rate).abs() <= 0.15 * rate;
    assert!(within(ingress, 1_000_000.0), "ingress: {ingress:.0} B/s");
    assert!(within(egress, 2_000_000.0), "egress: {egress:.0} B/s");
}

/// GC of network `net1` in the pod's host namespace, with
/// `cni.dev/valid-attachments` set to `valid` (left out when `None`).
fn gc(pod: &Pod, valid: Option<Value>) -> Outcome {
    let mut conf = json!({"cniVersion": "1.1.0", "name": "net1", "type": "bandwidth"});
    if let Some(valid) = valid {
        conf["cni.dev/valid-attachments"] = valid;
    }
    let request = TestRequest::gc().stdin(conf.to_string());
    pod.host
        .run(|_| Ok::<_, NetError>(request.run(&Bandwidth, &PluginInfo::all())))
        .unwrap()
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn gc_removes_an_orphaned_ifb_and_keeps_one_a_link_still_redirects_to() {
    let pod = Pod::new();
    assert_eq!(pod.run("ADD", &pod.conf(both_ways())).exit_code, 0);
    let ifb_there = || {
        pod.host
            .socket()
            .unwrap()
            .find_link(pod.ifb())
            .unwrap()
            .is_some()
    };
    // Redirected to: maybe another network's live pod, so kept even by
    // `null` (libcni's empty list).
    assert_eq!(gc(&pod, Some(Value::Null)).exit_code, 0);
    assert!(ifb_there(), "a redirected ifb stays");

    // The pod's namespace goes without a DEL: its host end goes with it.
    let mut nl = pod.host.socket().unwrap();
    assert!(nl.delete_link_if_present(HOST_VETH).unwrap());
    for (valid, stays) in [
        (None, true),
        (
            Some(json!([{"containerID": pod.ctr.name(), "ifname": "eth0"}])),
            true,
        ),
        (Some(Value::Null), false),
    ] {
        let out = gc(&pod, valid.clone());
        assert_eq!(out.exit_code, 0, "{valid:?}: {out:?}");
        assert_eq!(ifb_there(), stays, "{valid:?}");
    }
}
