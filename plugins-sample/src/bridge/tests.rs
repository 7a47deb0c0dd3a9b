//! The bridge plugin's own tests: configurations refused before any
//! change, and (as root, in namespaces of their own) ADD, DEL and CHECK.

use cni_net::testing::TempNetns;
use cni_skel::TestRequest;
use cni_types::{Code, IpNetwork};
use cni_version::PluginInfo;

use super::*;

fn add(conf: serde_json::Value) -> Error {
    TestRequest::new("ADD")
        .env("CNI_CONTAINERID", "c1")
        .env("CNI_NETNS", "/run/netns/cni-rs-bridge-does-not-exist")
        .env("CNI_IFNAME", "eth0")
        .stdin(conf.to_string())
        .run(&Bridge, &PluginInfo::all())
        .error()
        .expect("an error")
}

#[test]
fn a_vlan_gateway_whose_link_name_would_be_too_long_is_code_7_naming_vlan() {
    let conf = serde_json::json!({"cniVersion": "1.0.0", "name": "n", "type": "bridge",
                                  "bridge": "a-long-bridge0", "vlan": 4094,
                                  "isGateway": true});
    let err = add(conf);
    assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG, "{err:?}");
    assert_eq!(err.msg, "invalid vlan", "{err:?}");
}

#[test]
fn the_layer_2_fields_are_taken_past_the_configuration() {
    for conf in [
        serde_json::json!({"vlan": 10, "preserveDefaultVlan": true}),
        serde_json::json!({"vlanTrunk": [{"id": 5}, {"minID": 10, "maxID": 20}]}),
        serde_json::json!({"macspoofchk": true, "portIsolation": true, "enabledad": true}),
        serde_json::json!({"disableContainerInterface": true}),
    ] {
        let mut full = serde_json::json!({"cniVersion": "1.0.0", "name": "n", "type": "bridge"});
        full.as_object_mut()
            .unwrap()
            .extend(conf.as_object().unwrap().clone());
        // Past the configuration: the (absent) namespace is what fails.
        let err = add(full);
        assert_eq!(err.code, Code::INVALID_NETNS, "{conf}: {err:?}");
    }
}

#[test]
fn bad_configurations_are_code_7_before_anything_changes() {
    for (conf, msg) in [
        (
            serde_json::json!({"hairpinMode": true, "promiscMode": true}),
            "hairpin",
        ),
        (
            serde_json::json!({"bridge": "a-bridge-name-too-long"}),
            "invalid bridge",
        ),
        (serde_json::json!({"mtu": 20}), "invalid mtu"),
        (
            serde_json::json!({"ipMasq": true, "ipMasqBackend": "pf"}),
            "invalid ipMasqBackend",
        ),
        (serde_json::json!({"vlan": 4095}), "invalid vlan"),
        (serde_json::json!({"vlan": -1}), "invalid vlan"),
        (
            serde_json::json!({"vlanTrunk": [{"minID": 10}]}),
            "invalid vlanTrunk",
        ),
        (
            serde_json::json!({"vlanTrunk": [{"id": 0}]}),
            "invalid vlanTrunk",
        ),
        (
            serde_json::json!({"disableContainerInterface": true,
                               "ipam": {"type": "host-local"}}),
            "disableContainerInterface",
        ),
    ] {
        let mut full = serde_json::json!({"cniVersion": "1.0.0", "name": "n", "type": "bridge"});
        full.as_object_mut()
            .unwrap()
            .extend(conf.as_object().unwrap().clone());
        let err = add(full);
        assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG, "{err:?}");
        assert!(err.msg.contains(msg), "{err:?}");
    }
}

#[test]
fn an_mtu_of_0_reads_as_unset_as_the_reference_writes_it() {
    let conf = serde_json::json!({"cniVersion": "1.0.0", "name": "n", "type": "bridge",
                                  "mtu": 0});
    // Past the configuration: the (absent) namespace is what fails.
    let err = add(conf);
    assert_eq!(err.code, Code::INVALID_NETNS, "{err:?}");
}

#[test]
fn del_of_a_configuration_add_refuses_still_succeeds() {
    let conf = serde_json::json!({"cniVersion": "1.0.0", "name": "n", "type": "bridge",
                                  "vlan": 5000, "hairpinMode": true, "promiscMode": true});
    let out = TestRequest::new("DEL")
        .env("CNI_CONTAINERID", "c1")
        .env("CNI_NETNS", "/run/netns/cni-rs-bridge-does-not-exist")
        .env("CNI_IFNAME", "eth0")
        .stdin(conf.to_string())
        .run(&Bridge, &PluginInfo::all());
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn check_passes_after_add_and_names_the_drift() {
    let ns = cni_net::testing::TempNetns::new("bridge-check").unwrap();
    let br = format!("bc{}", std::process::id() % 1_000_000);
    let conf =
        serde_json::json!({"cniVersion": "1.0.0", "name": "n", "type": "bridge", "bridge": br});
    let add = ns
        .request("ADD", "eth0")
        .stdin(conf.to_string())
        .run(&Bridge, &PluginInfo::all());
    let bridge_guard = delete_on_drop(&br);
    assert_eq!(add.exit_code, 0, "{}", String::from_utf8_lossy(&add.stdout));
    let mut with_prev = conf.clone();
    with_prev["prevResult"] = serde_json::from_slice(&add.stdout).unwrap();
    let check = || {
        ns.request("CHECK", "eth0")
            .stdin(with_prev.to_string())
            .run(&Bridge, &PluginInfo::all())
    };
    assert_eq!(check().exit_code, 0, "{:?}", check().error());
    let mut inside = ns.socket().unwrap();
    let eth0 = inside.link("eth0").unwrap();
    inside
        .set_mac(eth0.index, cni_net::Mac([2, 0x16, 0, 0, 0, 0x99]))
        .unwrap();
    let err = check().error().unwrap();
    assert!(err.msg.contains("02:16:00:00:00:99"), "{err:?}");
    drop(bridge_guard);
}

/// Runs `command` in-process from a thread inside `host` (so the
/// bridge and host ends land there) for `ifname` in `container`;
/// IPAM is the reference host-local, storing in `ipam_dir`.
fn run_between(
    host: &TempNetns,
    container: &TempNetns,
    command: &str,
    ifname: &str,
    conf: &serde_json::Value,
) -> cni_skel::Outcome {
    let req = container
        .request(command, ifname)
        .env("CNI_PATH", "/usr/lib/cni")
        .stdin(conf.to_string());
    host.run(|_| Ok::<_, cni_net::NetError>(req.run(&Bridge, &PluginInfo::all())))
        .unwrap()
}

/// A layer-3 configuration on `subnet`, IPAM storing in `ipam_dir`.
fn with_ipam(subnet: &str, ipam_dir: &std::path::Path) -> serde_json::Value {
    serde_json::json!({"cniVersion": "1.0.0", "name": "n", "type": "bridge",
        "ipam": {"type": "host-local", "dataDir": ipam_dir,
                 "ranges": [[{"subnet": subnet}]]}})
}

fn namespaces() -> (TempNetns, TempNetns) {
    let host = TempNetns::new("bridge-host").unwrap();
    (host, TempNetns::new("bridge-cont").unwrap())
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn its_sysctls_reach_an_interface_named_with_any_character_the_kernel_takes() {
    let (host, container) = namespaces();
    let ipam = tempfile::tempdir().unwrap();
    let conf = with_ipam("10.9.3.0/24", ipam.path());
    let out = run_between(&host, &container, "ADD", "a+0", &conf);
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    let arp_notify = container
        .run(|_| {
            std::fs::read_to_string("/proc/sys/net/ipv4/conf/a+0/arp_notify")
                .map_err(|e| cni_net::NetError::InvalidResult(e.to_string()))
        })
        .unwrap();
    assert_eq!(arp_notify.trim(), "1");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_second_container_whose_host_name_collides_is_attached_under_the_next() {
    let (host, container) = namespaces();
    let ipam = tempfile::tempdir().unwrap();
    let mut names = cni_net::host_veth_names(container.name(), "eth0");
    let (taken, next) = (names.next().unwrap(), names.next().unwrap());
    // Another attachment's host end, under the name this one derives.
    host.add_veth(&taken, "other-peer", None).unwrap();
    let conf = with_ipam("10.9.5.0/24", ipam.path());

    let add = run_between(&host, &container, "ADD", "eth0", &conf);
    assert_eq!(add.exit_code, 0, "{}", String::from_utf8_lossy(&add.stdout));
    assert_eq!(add.json()["interfaces"][1]["name"], next.as_str());
    let mut with_prev = conf.clone();
    with_prev["prevResult"] = add.json();
    let check = run_between(&host, &container, "CHECK", "eth0", &with_prev);
    assert_eq!(check.exit_code, 0, "{:?}", check.error());

    let del = run_between(&host, &container, "DEL", "eth0", &conf);
    assert_eq!(del.exit_code, 0, "{:?}", del.error());
    let mut nl = host.socket().unwrap();
    assert!(
        nl.find_link(next.as_str()).unwrap().is_none(),
        "ours removed"
    );
    assert!(
        nl.find_link(taken.as_str()).unwrap().is_some(),
        "the other's kept"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_gateway_subnet_another_host_link_holds_is_code_7_naming_it() {
    let (host, container) = namespaces();
    let ipam = tempfile::tempdir().unwrap();
    let other = host.add_veth("uplink0", "uplink1", None).unwrap();
    host.socket()
        .unwrap()
        .add_address(
            other.index,
            "10.9.6.5/24".parse().unwrap(),
            cni_net::Dad::Skip,
        )
        .unwrap();
    let mut conf = with_ipam("10.9.6.0/24", ipam.path());
    conf["isGateway"] = true.into();

    let err = run_between(&host, &container, "ADD", "eth0", &conf)
        .error()
        .unwrap();
    assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG, "{err:?}");
    assert!(err.msg.contains("\"uplink0\""), "{err:?}");
    // Nothing left: no container end, no port, no reservation.
    let inside = container.socket().unwrap().find_link("eth0").unwrap();
    assert!(inside.is_none());
    let ports: Vec<_> = host.socket().unwrap().links().unwrap();
    assert!(
        ports.iter().all(|l| !l.name.starts_with("veth")),
        "{ports:?}"
    );
    let reserved = std::fs::read_dir(ipam.path().join("n")).unwrap();
    let reserved: Vec<_> = reserved
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("10.9.6."))
        .collect();
    assert_eq!(reserved, Vec::<String>::new());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_failed_ipam_leaves_no_port_and_a_repeated_add_keeps_the_live_pod_and_its_masquerading() {
    // The IPAM plugin and the masquerading run while the port is made:
    // whichever fails, the other is undone; a repeated ADD undoes
    // nothing of the live pod.
    let (host, container) = namespaces();
    let ipam = tempfile::tempdir().unwrap();
    let ports = || {
        let links = host.socket().unwrap().links().unwrap();
        links.iter().filter(|l| l.name.starts_with("veth")).count()
    };
    let masquerading = || {
        host.run(|_| {
            let at = cni_netfilter::masquerade::Attachment {
                network: "n",
                ifname: "eth0",
                container_id: container.name(),
            };
            let nets: Vec<IpNetwork> = vec!["10.9.9.2/24".parse().unwrap()];
            let backend = Some(cni_netfilter::BackendKind::Nftables);
            Ok::<_, cni_net::NetError>(masquerade::check(backend, &nets, &at).is_ok())
        })
        .unwrap()
    };
    // A /31 has no address host-local hands out.
    let mut full = with_ipam("10.9.9.0/31", ipam.path());
    full["ipMasq"] = true.into();
    full["ipMasqBackend"] = "nftables".into();
    let err = run_between(&host, &container, "ADD", "eth0", &full)
        .error()
        .unwrap();
    assert_ne!(err.code, Code::INVALID_NETWORK_CONFIG, "{err:?}");
    assert_eq!(ports(), 0);
    assert!(container
        .socket()
        .unwrap()
        .find_link("eth0")
        .unwrap()
        .is_none());

    let mut conf = with_ipam("10.9.9.0/24", ipam.path());
    conf["ipMasq"] = true.into();
    conf["ipMasqBackend"] = "nftables".into();
    let add = run_between(&host, &container, "ADD", "eth0", &conf);
    assert_eq!(add.exit_code, 0, "{:?}", add.error());
    assert_eq!(add.json()["ips"][0]["address"], "10.9.9.2/24");
    assert!(masquerading());
    let again = run_between(&host, &container, "ADD", "eth0", &conf)
        .error()
        .unwrap();
    assert!(again.msg.contains("already exists"), "{again:?}");
    assert_eq!(ports(), 1, "the live port stays");
    assert!(masquerading(), "the live pod's masquerading stays");
    let held = std::fs::read_dir(ipam.path().join("n")).unwrap();
    let held = held
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n == "10.9.9.2")
        .count();
    assert_eq!(held, 1, "the live pod's reservation stays");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn ip_masq_rules_come_with_add_are_checked_and_go_with_del_under_both_backends() {
    for (backend, subnet) in [("iptables", "10.9.7.0/24"), ("nftables", "10.9.8.0/24")] {
        let (host, container) = namespaces();
        let ipam = tempfile::tempdir().unwrap();
        let mut conf = with_ipam(subnet, ipam.path());
        conf["isGateway"] = true.into();
        conf["ipMasq"] = true.into();
        conf["ipMasqBackend"] = backend.into();
        let add = run_between(&host, &container, "ADD", "eth0", &conf);
        assert_eq!(
            add.exit_code,
            0,
            "{backend}: {}",
            String::from_utf8_lossy(&add.stdout)
        );
        let address: cni_types::IpNetwork = add.json()["ips"][0]["address"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let at = masquerade::Attachment {
            network: "n",
            ifname: "eth0",
            container_id: container.name(),
        };
        let kind = Some(backend.parse().unwrap());
        let rules_there = || {
            host.run(|_| Ok::<_, cni_net::NetError>(masquerade::check(kind, &[address], &at)))
                .unwrap()
        };
        rules_there().unwrap();
        let mut with_prev = conf.clone();
        with_prev["prevResult"] = add.json();
        let check = run_between(&host, &container, "CHECK", "eth0", &with_prev);
        assert_eq!(check.exit_code, 0, "{backend}: {:?}", check.error());

        let del = run_between(&host, &container, "DEL", "eth0", &conf);
        assert_eq!(del.exit_code, 0, "{backend}: {:?}", del.error());
        assert!(rules_there().is_err(), "{backend}: DEL removed them");
    }
}

/// Deletes the host bridge `name` when dropped.
fn delete_on_drop(name: &str) -> impl Drop + '_ {
    struct Guard<'a>(&'a str);
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            if let Ok(mut nl) = Netlink::open() {
                let _ = nl.delete_link_if_present(self.0);
            }
        }
    }
    Guard(name)
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_bridge_without_a_gateway_reports_the_mac_it_took_from_its_first_port() {
    let (host, container) = namespaces();
    let ipam = tempfile::tempdir().unwrap();
    let conf = with_ipam("10.9.8.0/24", ipam.path());
    let out = run_between(&host, &container, "ADD", "eth0", &conf);
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut nl = host.socket().unwrap();
    let (bridge, port) = (
        nl.link("cni0").unwrap(),
        nl.link(result["interfaces"][1]["name"].as_str().unwrap())
            .unwrap(),
    );
    // Unpinned, the bridge took its only port's MAC as the port joined,
    // after the plugin first read it: the result says the MAC it has.
    assert_eq!(bridge.mac, port.mac);
    assert_eq!(
        result["interfaces"][0]["mac"],
        bridge.mac.unwrap().to_string()
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_gateway_bridge_keeps_its_mac_as_ports_with_lower_macs_join() {
    let (host, first) = namespaces();
    let second = TempNetns::new("bridge-cont2").unwrap();
    let ipam = tempfile::tempdir().unwrap();
    let mut conf = with_ipam("10.9.7.0/24", ipam.path());
    conf["isGateway"] = true.into();
    let out = run_between(&host, &first, "ADD", "eth0", &conf);
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bridge_mac = result["interfaces"][0]["mac"].as_str().unwrap().to_owned();
    let out = run_between(&host, &second, "ADD", "eth0", &conf);
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    // A port with the lowest MAC there can be joins: an unpinned bridge
    // would take its MAC.
    host.add_veth("low0", "low0-peer", None).unwrap();
    let mut nl = host.socket().unwrap();
    let (bridge, low) = (nl.link("cni0").unwrap(), nl.link("low0").unwrap());
    nl.set_mac(low.index, cni_net::Mac([2, 0, 0, 0, 0, 1]))
        .unwrap();
    nl.set_master(low.index, Some(bridge.index)).unwrap();
    nl.set_up(low.index).unwrap();
    let now = nl.link("cni0").unwrap().mac.unwrap().to_string();
    assert_eq!(now, bridge_mac, "the bridge's MAC followed a port's");
}
