//! Bridge ports: isolation and VLANs. As root, in namespaces the tests
//! create and remove. VLANs need a kernel with bridge VLAN filtering; on
//! one without (this project's CI kernel) each call is refused naming its
//! link, and a VLAN bridge is not left half made.

use cni_net::testing::TempNetns;
use cni_net::{Netlink, Op, PortSettings, PortVlan, VethPair};

fn temp(tag: &str) -> TempNetns {
    TempNetns::new(tag).unwrap_or_else(|e| panic!("these tests need root: {e}"))
}

/// A bridge `br0` with port `port0` (its peer `port1` outside).
fn bridge_with_port(tmp: &TempNetns) -> (Netlink, u32, u32) {
    let mut nl = tmp.socket().unwrap();
    let bridge = nl.ensure_bridge("br0", None).unwrap();
    let port = tmp.add_veth("port0", "port1", None).unwrap();
    nl.set_master(port.index, Some(bridge.index)).unwrap();
    (nl, bridge.index, port.index)
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_port_is_isolated_and_released_and_a_non_port_is_refused_by_name() {
    let tmp = temp("isolate");
    let (mut nl, _, port) = bridge_with_port(&tmp);
    assert!(!nl.isolated(port).unwrap());
    nl.set_isolated(port, true).unwrap();
    assert!(nl.isolated(port).unwrap());
    nl.set_isolated(port, false).unwrap();
    assert!(!nl.isolated(port).unwrap());
    let outside = nl.link("port1").unwrap();
    let err = nl.set_isolated(outside.index, true).unwrap_err();
    assert_eq!(err.op(), Some(Op::SetIsolated));
    assert!(err.to_string().contains("\"port1\""), "{err}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_veth_made_with_a_master_is_its_port_and_one_request_sets_hairpin_isolation_and_up() {
    let tmp = temp("setport");
    let mut nl = tmp.socket().unwrap();
    let bridge = nl.ensure_bridge("br0", None).unwrap();
    let port = nl
        .add_veth(&VethPair {
            name: "port0",
            peer_name: "port1",
            peer_netns: None,
            mtu: None,
            peer_mac: None,
            master: Some(bridge.index),
        })
        .unwrap();
    let read = nl.link(port.index).unwrap();
    assert_eq!(read.master, Some(bridge.index));
    assert!(!read.up);
    let all = PortSettings {
        hairpin: Some(true),
        isolated: Some(true),
        up: true,
    };
    nl.set_port(port.index, &all).unwrap();
    assert!(nl.hairpin(port.index).unwrap());
    assert!(nl.isolated(port.index).unwrap());
    assert!(nl.link(port.index).unwrap().up);
    // What is `None` stays as it is; `up: false` leaves the flag alone.
    let only_hairpin = PortSettings {
        hairpin: Some(false),
        ..PortSettings::default()
    };
    nl.set_port(port.index, &only_hairpin).unwrap();
    assert!(!nl.hairpin(port.index).unwrap());
    assert!(nl.isolated(port.index).unwrap());
    assert!(nl.link(port.index).unwrap().up);
    // A link that is no bridge's port is refused, naming it.
    let outside = nl.link("port1").unwrap();
    let err = nl.set_port(outside.index, &all).unwrap_err();
    assert_eq!(err.op(), Some(Op::SetPort));
    assert!(err.to_string().contains("\"port1\""), "{err}");
    assert!(
        !nl.link("port1").unwrap().up,
        "nothing of a refused request applies"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn port_vlans_are_set_and_listed_or_refused_by_kernels_without_vlan_filtering() {
    let tmp = temp("vlans");
    let (mut nl, bridge, port) = bridge_with_port(&tmp);
    match nl.set_vlan_filtering(bridge, true) {
        Ok(()) => {
            assert!(nl.vlan_filtering(bridge).unwrap());
            // A new port's default: VLAN 1, native.
            assert_eq!(nl.port_vlans(port).unwrap(), vec![PortVlan::native(1)]);
            nl.delete_port_vlans(port, &[PortVlan::native(1)]).unwrap();
            nl.add_port_vlans(port, &[PortVlan::native(10)], &[(20, 22)])
                .unwrap();
            let mut want = vec![PortVlan::native(10)];
            want.extend((20..=22).map(PortVlan::tagged));
            assert_eq!(nl.port_vlans(port).unwrap(), want);
        }
        Err(err) => {
            assert_eq!(err.op(), Some(Op::SetVlanFiltering), "{err}");
            assert_eq!(err.errno(), Some(nix::errno::Errno::EOPNOTSUPP as i32));
            assert!(err.to_string().contains("\"br0\""), "{err}");
            assert!(!nl.vlan_filtering(bridge).unwrap());
            assert_eq!(nl.port_vlans(port).unwrap(), vec![]);
            // No half-made bridge: refused before it exists.
            assert!(nl.ensure_vlan_bridge("br1", None).is_err());
            assert!(nl.find_link("br1").unwrap().is_none());
        }
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_bridge_has_a_port_besides_the_named_ones_only_when_one_of_its_own_is_not_named() {
    let tmp = temp("ports");
    let (mut nl, br0, _) = bridge_with_port(&tmp);
    // Another bridge's port, and links of no bridge, never count.
    let br1 = nl.ensure_bridge("br1", None).unwrap().index;
    let other = tmp.add_veth("other0", "other1", None).unwrap();
    nl.set_master(other.index, Some(br1)).unwrap();
    let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let fresh = || tmp.socket().unwrap();
    assert!(!fresh().has_port_besides(br0, &names(&["port0"])).unwrap());
    assert!(fresh().has_port_besides(br0, &names(&[])).unwrap());
    assert!(fresh().has_port_besides(br0, &names(&["port1"])).unwrap());
    assert!(!fresh().has_port_besides(br1, &names(&["other0"])).unwrap());
    // Ports enough for the kernel's answer to span several datagrams:
    // the one port not named is found wherever it falls.
    let mut all = names(&["port0"]);
    for i in 0..40 {
        let port = tmp
            .add_veth(&format!("p{i}"), &format!("q{i}"), None)
            .unwrap();
        nl.set_master(port.index, Some(br0)).unwrap();
        all.push(format!("p{i}"));
    }
    assert!(!fresh().has_port_besides(br0, &all).unwrap());
    for unnamed in ["p0", "p20", "p39", "port0"] {
        let except: Vec<String> = all.iter().filter(|n| *n != unnamed).cloned().collect();
        assert!(fresh().has_port_besides(br0, &except).unwrap(), "{unnamed}");
    }
    // A bridge without ports.
    let empty = nl.ensure_bridge("br2", None).unwrap().index;
    assert!(!fresh().has_port_besides(empty, &[]).unwrap());
}
