//! Links: each operation, and its failures naming the link. As root, in
//! namespaces the tests create and remove.

use cni_net::testing::TempNetns;
use cni_net::{LinkKind, Mac, NetError, VethPair};
use cni_types::Code;

fn temp(tag: &str) -> TempNetns {
    TempNetns::new(tag).unwrap_or_else(|e| panic!("these tests need root: {e}"))
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_veth_peer_lands_in_the_target_namespace_under_its_name() {
    let (host, container) = (temp("vhost"), temp("vcont"));
    let mut nl = host.socket().unwrap();
    let mac: Mac = "0a:58:0a:f4:00:02".parse().unwrap();
    let end = nl
        .add_veth(&VethPair {
            name: "veth-host0",
            peer_name: "eth0",
            peer_netns: Some(&container),
            mtu: Some(1400),
            peer_mac: Some(mac),
            master: None,
        })
        .unwrap();
    assert_eq!(
        (end.name.as_str(), end.mtu, end.up),
        ("veth-host0", 1400, false)
    );
    assert_eq!(end.kind, Some(LinkKind::Veth));
    assert!(nl.find_link("eth0").unwrap().is_none(), "not on this side");
    let peer = container.socket().unwrap().link("eth0").unwrap();
    assert_eq!((peer.mtu, peer.mac), (1400, Some(mac)));
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn links_change_name_state_mtu_mac_and_flags() {
    let tmp = temp("change");
    let mut nl = tmp.socket().unwrap();
    let link = tmp.add_veth("a0", "b0", None).unwrap();
    nl.rename(link.index, "renamed0").unwrap();
    assert!(nl.find_link("a0").unwrap().is_none());
    let mac: Mac = "02:00:00:00:00:42".parse().unwrap();
    nl.set_mtu(link.index, 1280).unwrap();
    nl.set_mac(link.index, mac).unwrap();
    nl.set_promisc(link.index, true).unwrap();
    nl.set_allmulti(link.index, true).unwrap();
    nl.set_up(link.index).unwrap();
    let now = nl.link("renamed0").unwrap();
    assert_eq!(now.index, link.index);
    assert_eq!((now.mtu, now.mac, now.up), (1280, Some(mac), true));
    assert!(now.promisc && now.allmulti);
    let peer = nl.link("b0").unwrap();
    nl.set_up(peer.index).unwrap();
    nl.wait_until_up(link.index, std::time::Duration::from_secs(2))
        .unwrap();
    nl.set_promisc(link.index, false).unwrap();
    nl.set_allmulti(link.index, false).unwrap();
    nl.set_down(link.index).unwrap();
    let now = nl.find_link(link.index).unwrap().unwrap();
    assert!(!now.up && !now.promisc && !now.allmulti);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn deleting_is_idempotent_only_where_asked() {
    let tmp = temp("delete");
    let mut nl = tmp.socket().unwrap();
    let link = tmp.add_veth("del0", "del1", None).unwrap();
    nl.delete_link(link.index).unwrap();
    assert!(nl.find_link("del1").unwrap().is_none(), "both ends gone");
    let err = nl.delete_link(link.index).unwrap_err();
    assert_eq!(err.errno(), Some(19), "ENODEV: {err}");
    assert!(
        err.to_string().contains(&format!("#{}", link.index)),
        "{err}"
    );
    tmp.add_veth("del0", "del1", None).unwrap();
    assert!(nl.delete_link_if_present("del0").unwrap());
    assert!(!nl.delete_link_if_present("del0").unwrap());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_missing_link_and_a_name_over_15_bytes_are_clear_errors() {
    let tmp = temp("names");
    let mut nl = tmp.socket().unwrap();
    let err = nl.link("nosuch0").unwrap_err();
    assert_eq!(err.to_string(), "link \"nosuch0\" not found");
    let long = "sixteen-bytes-xx";
    let err = tmp.add_veth(long, "p0", None).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("invalid interface name {long:?}: longer than 15 bytes")
    );
    assert_eq!(
        cni_types::Error::from(err).code,
        Code::INVALID_NETWORK_CONFIG
    );
    tmp.add_veth("taken0", "taken1", None).unwrap();
    let err = tmp.add_veth("taken0", "other1", None).unwrap_err();
    assert_eq!(err.errno(), Some(17), "EEXIST: {err}");
    assert!(err.to_string().contains("\"taken0\""), "{err}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_bridge_is_created_once_then_reused_and_takes_hairpin_ports() {
    let tmp = temp("bridge");
    let mut nl = tmp.socket().unwrap();
    let bridge = nl.ensure_bridge("br0", Some(1400)).unwrap();
    assert_eq!((bridge.kind, bridge.mtu), (Some(LinkKind::Bridge), 1400));
    assert_eq!(nl.ensure_bridge("br0", None).unwrap().index, bridge.index);
    let port = tmp.add_veth("port0", "port1", None).unwrap();
    nl.set_master(port.index, Some(bridge.index)).unwrap();
    assert_eq!(nl.link("port0").unwrap().master, Some(bridge.index));
    assert!(!nl.hairpin(port.index).unwrap());
    nl.set_hairpin(port.index, true).unwrap();
    assert!(nl.hairpin(port.index).unwrap());
    nl.set_master(port.index, None).unwrap();
    assert_eq!(nl.link("port0").unwrap().master, None);
    let err = nl.ensure_bridge("port1", None).unwrap_err();
    assert!(err.to_string().contains("\"port1\" as a bridge"), "{err}");
    let err = nl.set_hairpin(port.index, true).unwrap_err();
    assert!(err.to_string().contains("\"port0\""), "{err}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn dummy_links_are_created_or_refused_clearly_by_kernels_without_them() {
    let tmp = temp("dummy");
    match tmp.add_dummy("dummy0") {
        Ok(link) => assert_eq!(link.kind, Some(LinkKind::Dummy)),
        Err(err) => {
            // This kernel has no dummy driver (EOPNOTSUPP).
            assert_eq!(err.errno(), Some(95), "{err}");
            assert_eq!(
                err.to_string(),
                "the kernel has no dummy support: failed to create dummy link \"dummy0\""
            );
            assert!(matches!(err, NetError::NoKernelSupport { .. }));
        }
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn deleting_a_link_returns_its_global_addresses_and_none_once_gone() {
    let tmp = temp("deladdr");
    let mut nl = tmp.socket().unwrap();
    let link = tmp.add_veth("ret0", "ret1", None).unwrap();
    let (v4, v6) = (
        "10.77.6.2/24".parse().unwrap(),
        "fd00:77:6::2/64".parse().unwrap(),
    );
    nl.add_address(link.index, v4, cni_net::Dad::Skip).unwrap();
    nl.add_address(link.index, v6, cni_net::Dad::Skip).unwrap();
    // Both ends up, so the link-local address appears; it is not returned.
    nl.set_up(link.index).unwrap();
    let peer = nl.link("ret1").unwrap();
    nl.set_up(peer.index).unwrap();
    let mut returned = nl.delete_link_returning_addresses("ret0").unwrap();
    returned.sort_by_key(|n| n.to_string());
    assert_eq!(returned, vec![v4, v6]);
    assert!(nl.find_link("ret1").unwrap().is_none(), "the pair is gone");
    assert!(nl
        .delete_link_returning_addresses("ret0")
        .unwrap()
        .is_empty());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_links_name_is_read_by_its_index_in_the_threads_namespace_and_a_missing_one_is_named() {
    let ns = temp("lname");
    let made = ns.add_veth("by-index0", "by-index1", None).unwrap();
    let name = ns.run(|_| cni_net::link_name(made.index)).unwrap();
    assert_eq!(name, "by-index0");
    // Not in this (the test's) namespace, under that index or any.
    let missing = ns
        .run(|_| cni_net::link_name(made.index + 100))
        .unwrap_err();
    assert!(matches!(missing, NetError::NoSuchLink(_)), "{missing:?}");
    assert_eq!(
        missing.to_string(),
        format!("link #{} not found", made.index + 100)
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_links_mac_is_read_by_name_as_it_is_now_even_a_bridges_after_its_first_port() {
    let ns = temp("lmac");
    let mut nl = ns.socket().unwrap();
    let bridge = nl.ensure_bridge("mbr0", None).unwrap();
    let port = ns.add_veth("mport0", "mport1", None).unwrap();
    let low: Mac = "02:00:00:00:00:01".parse().unwrap();
    nl.set_mac(port.index, low).unwrap();
    nl.set_master(port.index, Some(bridge.index)).unwrap();
    // The bridge took its lowest port's MAC: the name reads it now.
    let now = ns.run(|_| cni_net::link_mac("mbr0")).unwrap();
    assert_eq!(now, nl.link("mbr0").unwrap().mac);
    assert_eq!(now, Some(low), "the bridge follows its only port");
    assert_eq!(ns.run(|_| cni_net::link_mac("mport0")).unwrap(), Some(low));
    // Loopback has no Ethernet address; a missing link is named.
    assert_eq!(ns.run(|_| cni_net::link_mac("lo")).unwrap(), None);
    let missing = ns.run(|_| cni_net::link_mac("nothere0")).unwrap_err();
    assert!(matches!(missing, NetError::NoSuchLink(_)), "{missing:?}");
    assert_eq!(missing.to_string(), "link \"nothere0\" not found");
}
