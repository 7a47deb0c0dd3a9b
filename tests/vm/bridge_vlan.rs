//! The bridge plugin's `vlan` and `vlanTrunk` under a kernel that filters
//! bridge frames by VLAN (`CONFIG_BRIDGE_VLAN_FILTERING`, which this
//! machine's kernel lacks): containers on one VLAN reach each other and
//! not one on another VLAN; a trunk port carries its VLANs tagged. Run by
//! `scripts/vm/run-tests.sh` under Debian's kernel, as root.

#[path = "../tests/bridge_l2/host.rs"]
mod host;

use serde_json::{json, Value};

use host::{address, containers, in_ns, interface, pings, with_prev, Host, Side};

/// `bridge -j vlan show dev PORT` in the host namespace: (vid, flags),
/// one entry per VLAN.
fn port_vlans(host: &Host, port: &str) -> Vec<(u64, Vec<String>)> {
    let out = in_ns(&host.ns, &["bridge", "-j", "vlan", "show", "dev", port]);
    let listed: Value = serde_json::from_str(&out).unwrap_or(json!([]));
    let mut vlans = Vec::new();
    for entry in listed.as_array().into_iter().flatten() {
        for v in entry["vlans"].as_array().into_iter().flatten() {
            let flags = v["flags"].as_array().into_iter().flatten();
            let flags: Vec<String> = flags.map(|f| f.as_str().unwrap().to_owned()).collect();
            let first = v["vlan"].as_u64().unwrap();
            for vid in first..=v["vlanEnd"].as_u64().unwrap_or(first) {
                vlans.push((vid, flags.clone()));
            }
        }
    }
    vlans
}

fn native(vid: u64) -> (u64, Vec<String>) {
    (vid, vec!["PVID".to_owned(), "Egress Untagged".to_owned()])
}

fn tagged(vid: u64) -> (u64, Vec<String>) {
    (vid, Vec::new())
}

#[test]
fn containers_on_vlan_10_reach_each_other_and_not_one_on_vlan_20() {
    let host = Host::new();
    let [a, b, c] = containers();
    // A bridge that exists, without VLAN filtering, with a MAC of its own
    // (else it takes the lowest port's, and CHECK of the first container
    // sees it change as the others join).
    let made = [
        "ip",
        "link",
        "add",
        "br0",
        "address",
        "02:00:00:00:0b:01",
        "type",
        "bridge",
    ];
    in_ns(&host.ns, &made);
    assert_eq!(
        in_ns(
            &host.ns,
            &["cat", "/sys/class/net/br0/bridge/vlan_filtering"]
        )
        .trim(),
        "0"
    );
    let conf = |vlan: u16| {
        json!({"cniVersion": "1.0.0", "name": "l2", "type": "bridge", "bridge": "br0",
               "vlan": vlan, "ipam": {"type": "host-local", "dataDir": host.ipam.path(),
                                     "ranges": [[{"subnet": "10.217.5.0/24"}]]}})
    };
    let ra = host.run(Side::Ours, &a, "ADD", &conf(10)).ok().clone();
    let rb = host.run(Side::Ours, &b, "ADD", &conf(10)).ok().clone();
    let rc = host.run(Side::Ours, &c, "ADD", &conf(20)).ok().clone();
    let (port, _) = interface(&ra, 1);
    assert_eq!(port_vlans(&host, &port), vec![native(10)], "VLAN 1 removed");
    let filtering = in_ns(
        &host.ns,
        &["cat", "/sys/class/net/br0/bridge/vlan_filtering"],
    );
    assert_eq!(filtering.trim(), "1", "turned on for the existing bridge");

    assert!(pings(&a, &address(&rb)), "same VLAN");
    assert!(!pings(&a, &address(&rc)), "another VLAN");
    let check = host.run(Side::Ours, &a, "CHECK", &with_prev(&conf(10), &ra));
    assert_eq!(check.code, 0, "{}", check.json);
    // The VLAN taken off the port behind the plugin's back: CHECK names it.
    in_ns(
        &host.ns,
        &["bridge", "vlan", "del", "vid", "10", "dev", &port],
    );
    let check = host.run(Side::Ours, &a, "CHECK", &with_prev(&conf(10), &ra));
    let msg = check.json["msg"].as_str().unwrap_or_default().to_owned();
    assert!(msg.contains("VLAN 10"), "{}", check.json);
    for (ns, vlan) in [(&a, 10), (&b, 10), (&c, 20)] {
        host.run(Side::Ours, ns, "DEL", &conf(vlan)).ok();
    }
}

#[test]
fn preserve_default_vlan_keeps_vlan_1_beside_the_native_one() {
    let host = Host::new();
    let [a] = containers();
    let conf = json!({"cniVersion": "1.0.0", "name": "l2", "type": "bridge", "bridge": "br0",
                      "vlan": 10, "preserveDefaultVlan": true});
    let result = host.run(Side::Ours, &a, "ADD", &conf).ok().clone();
    let (port, _) = interface(&result, 1);
    // VLAN 1 keeps the default's flags but loses PVID to VLAN 10.
    let listed = port_vlans(&host, &port);
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0].0, 1, "{listed:?}");
    assert_eq!(listed[1], native(10));
    host.run(Side::Ours, &a, "DEL", &conf).ok();
}

#[test]
fn a_trunk_port_carries_its_vlans_tagged_with_native_vlan_1() {
    let host = Host::new();
    let [a] = containers();
    let conf = json!({"cniVersion": "1.0.0", "name": "l2", "type": "bridge", "bridge": "br0",
                      "vlanTrunk": [{"id": 5}, {"minID": 100, "maxID": 102}]});
    let result = host.run(Side::Ours, &a, "ADD", &conf).ok().clone();
    let (port, _) = interface(&result, 1);
    assert_eq!(
        port_vlans(&host, &port),
        vec![native(1), tagged(5), tagged(100), tagged(101), tagged(102)]
    );
    let check = host.run(Side::Ours, &a, "CHECK", &with_prev(&conf, &result));
    assert_eq!(check.code, 0, "{}", check.json);
    host.run(Side::Ours, &a, "DEL", &conf).ok();
    assert!(
        port_vlans(&host, &port).is_empty(),
        "the port went with DEL"
    );
}

/// Debian's reference is 1.1.1, from before `preserveDefaultVlan` (1.2):
/// it keeps VLAN 1 on the port, as v1.9 does with the field true.
#[test]
fn our_vlan_ports_match_the_references_with_the_default_vlan_preserved() {
    let mut seen = Vec::new();
    for side in [Side::Reference, Side::Ours] {
        let host = Host::new();
        let [a] = containers();
        let conf = json!({"cniVersion": "1.0.0", "name": "l2", "type": "bridge",
                          "bridge": "br0", "vlan": 7, "preserveDefaultVlan": true});
        let result = host.run(side, &a, "ADD", &conf).ok().clone();
        let (port, _) = interface(&result, 1);
        let filtering = in_ns(
            &host.ns,
            &["cat", "/sys/class/net/br0/bridge/vlan_filtering"],
        );
        seen.push((port_vlans(&host, &port), filtering.trim().to_owned()));
        host.run(side, &a, "DEL", &conf).ok();
    }
    assert_eq!(seen[1], seen[0], "ours, then the reference's");
    let default = (1, vec!["Egress Untagged".to_owned()]);
    assert_eq!(seen[1], (vec![default, native(7)], "1".to_owned()));
}

#[test]
fn a_vlans_gateway_is_a_veth_of_that_vlan_its_containers_reach_and_del_leaves() {
    let host = Host::new();
    let [a, b] = containers();
    let conf = json!({"cniVersion": "1.0.0", "name": "l2", "type": "bridge", "bridge": "br0",
                      "vlan": 10, "isGateway": true,
                      "ipam": {"type": "host-local", "dataDir": host.ipam.path(),
                               "ranges": [[{"subnet": "10.217.6.0/24"}]]}});
    let ra = host.run(Side::Ours, &a, "ADD", &conf).ok().clone();
    let rb = host.run(Side::Ours, &b, "ADD", &conf).ok().clone();
    // The reference's result: bridge, port, container, then the gateway.
    let (gateway, _) = interface(&ra, 3);
    assert_eq!(gateway, "br0.10", "{ra}");
    assert_eq!(interface(&rb, 3).0, "br0.10", "one gateway for the VLAN");
    let addrs = in_ns(
        &host.ns,
        &["ip", "-o", "-4", "addr", "show", "dev", "br0.10"],
    );
    assert!(addrs.contains("10.217.6.1/24"), "{addrs}");
    let on_bridge = in_ns(&host.ns, &["ip", "-o", "-4", "addr", "show", "dev", "br0"]);
    assert_eq!(on_bridge, "", "not on the bridge");
    // Its peer is a port of VLAN 10 only.
    let links = in_ns(&host.ns, &["ip", "-o", "link", "show", "master", "br0"]);
    let ports: Vec<&str> = links
        .lines()
        .filter_map(|l| l.split(": ").nth(1)?.split('@').next())
        .collect();
    assert_eq!(ports.len(), 3, "{links}");
    for port in &ports {
        assert_eq!(port_vlans(&host, port), vec![native(10)], "{port}");
    }

    assert!(
        pings(&a, "10.217.6.1") && pings(&b, "10.217.6.1"),
        "the gateway"
    );
    assert!(pings(&a, &address(&rb)), "each other");
    let check = host.run(Side::Ours, &a, "CHECK", &with_prev(&conf, &ra));
    assert_eq!(check.code, 0, "{}", check.json);
    for ns in [&a, &b] {
        host.run(Side::Ours, ns, "DEL", &conf).ok();
    }
    let left = in_ns(&host.ns, &["ip", "-o", "link", "show", "br0.10"]);
    assert!(left.contains("br0.10"), "the VLAN's gateway stays: {left}");
}

#[test]
fn a_trunk_carries_tagged_frames_to_a_port_whose_native_vlan_they_are_in() {
    let host = Host::new();
    let [trunk, on5, on6] = containers();
    let layer2 = |fields: Value| {
        let mut conf = json!({"cniVersion": "1.0.0", "name": "l2", "type": "bridge",
                              "bridge": "br0"});
        conf.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        conf
    };
    let trunk_conf = layer2(json!({"vlanTrunk": [{"id": 5}, {"id": 6}]}));
    let conf5 = layer2(json!({"vlan": 5}));
    let conf6 = layer2(json!({"vlan": 6}));
    host.run(Side::Ours, &trunk, "ADD", &trunk_conf).ok();
    host.run(Side::Ours, &on5, "ADD", &conf5).ok();
    host.run(Side::Ours, &on6, "ADD", &conf6).ok();
    // Tagged frames: a VLAN 5 sub-interface on the trunk container's end
    // (8021q, which Debian's kernel has).
    for (ns, args) in [
        (
            &trunk,
            vec![
                "link", "add", "link", "eth0", "name", "eth0.5", "type", "vlan", "id", "5",
            ],
        ),
        (
            &trunk,
            vec!["addr", "add", "10.217.8.1/24", "dev", "eth0.5"],
        ),
        (&trunk, vec!["link", "set", "eth0.5", "up"]),
        (&on5, vec!["addr", "add", "10.217.8.5/24", "dev", "eth0"]),
        (&on6, vec!["addr", "add", "10.217.8.6/24", "dev", "eth0"]),
    ] {
        let mut cmd = vec!["ip"];
        cmd.extend(args);
        in_ns(ns, &cmd);
    }
    assert!(
        pings(&trunk, "10.217.8.5"),
        "VLAN 5 tagged on the trunk, untagged on its port"
    );
    assert!(
        !pings(&trunk, "10.217.8.6"),
        "not to VLAN 6's port, whose frames are VLAN 6"
    );
    for (ns, conf) in [(&trunk, &trunk_conf), (&on5, &conf5), (&on6, &conf6)] {
        host.run(Side::Ours, ns, "DEL", conf).ok();
    }
}
