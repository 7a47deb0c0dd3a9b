//! Macvlan, ipvlan and vlan links on a parent, and tap devices: created
//! where asked with the settings asked, or refused clearly by a kernel
//! without the kind. As root, in namespaces the tests create and remove.

use cni_net::testing::TempNetns;
use cni_net::{
    IpvlanMode, LinkKind, Mac, MacvlanMode, NetError, Sublink, SublinkKind, Tap, VlanId,
};
use serde_json::Value;

fn temp(tag: &str) -> TempNetns {
    TempNetns::new(tag).unwrap_or_else(|e| panic!("these tests need root: {e}"))
}

/// A "host" namespace with a parent link `par0` (one end of a veth pair,
/// MTU 1500), and a "container" namespace.
fn host_with_parent(tag: &str) -> (TempNetns, TempNetns, u32) {
    let host = temp(&format!("{tag}h"));
    let parent = host.add_veth("par0", "par1", None).unwrap();
    (host, temp(&format!("{tag}c")), parent.index)
}

/// `ip -d -j link show NAME` in `ns`: the kernel's view, read by another
/// tool than the one that made the link.
fn ip_details(ns: &TempNetns, name: &str) -> Value {
    ns.link_details(name).unwrap()
}

/// What every test above relies on: a link that is not there is an
/// error naming it, never another link's details.
#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn the_details_of_a_missing_link_are_an_error_naming_it() {
    let ns = temp("nolink");
    ns.add_veth("here0", "here1", None).unwrap();
    let err = ns.link_details("gone0").unwrap_err();
    assert!(err.to_string().contains("gone0"), "{err}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_macvlan_lands_in_the_target_namespace_with_its_mode_mtu_mac_and_queue() {
    let (host, container, parent) = host_with_parent("mv");
    let mac: Mac = "0a:58:0a:01:00:07".parse().unwrap();
    let kind = SublinkKind::Macvlan {
        mode: MacvlanMode::Vepa,
        bcqueuelen: Some(333),
    };
    host.socket()
        .unwrap()
        .add_sublink(&Sublink {
            name: "mv0",
            parent,
            kind,
            netns: Some(&container),
            mtu: Some(1400),
            mac: Some(mac),
        })
        .unwrap();
    assert!(host.socket().unwrap().find_link("mv0").unwrap().is_none());
    let mut inside = container.socket().unwrap();
    let link = inside.link("mv0").unwrap();
    assert_eq!(link.kind, Some(LinkKind::Macvlan));
    assert_eq!((link.mtu, link.mac, link.up), (1400, Some(mac), false));
    let got = inside.sublink_kind(link.index).unwrap();
    assert_eq!(got, Some(kind));
    let details = ip_details(&container, "mv0");
    assert_eq!(details["linkinfo"]["info_data"]["mode"], "vepa");
    let lo = inside.link("lo").unwrap().index;
    assert_eq!(inside.sublink_kind(lo).unwrap(), None);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_macvlan_on_a_parent_that_is_gone_names_the_parent() {
    let (host, container, _) = host_with_parent("mvgone");
    let err = host
        .socket()
        .unwrap()
        .add_sublink(&Sublink {
            name: "mv0",
            parent: 9999,
            kind: SublinkKind::Macvlan {
                mode: MacvlanMode::Bridge,
                bcqueuelen: None,
            },
            netns: Some(&container),
            mtu: None,
            mac: None,
        })
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to create macvlan link \"mv0\" on link #9999"
    );
    assert!(container
        .socket()
        .unwrap()
        .find_link("mv0")
        .unwrap()
        .is_none());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn ipvlan_and_vlan_links_are_made_or_refused_naming_the_missing_kernel_support() {
    let (host, container, parent) = host_with_parent("sub");
    let cases = [
        (
            "ipv0",
            SublinkKind::Ipvlan {
                mode: IpvlanMode::L3,
            },
            LinkKind::Ipvlan,
            "the kernel has no ipvlan support: failed to create ipvlan link \"ipv0\" on link \"par0\"",
        ),
        (
            "vl0",
            SublinkKind::Vlan {
                id: VlanId::new(42).unwrap(),
            },
            LinkKind::Vlan,
            "the kernel has no vlan (8021q) support: failed to create vlan link \"vl0\" on link \"par0\"",
        ),
    ];
    for (name, kind, link_kind, missing) in cases {
        let made = host.socket().unwrap().add_sublink(&Sublink {
            name,
            parent,
            kind,
            netns: Some(&container),
            mtu: None,
            mac: None,
        });
        let mut inside = container.socket().unwrap();
        match made {
            Ok(()) => {
                let link = inside.link(name).unwrap();
                assert_eq!(link.kind, Some(link_kind));
                assert_eq!(inside.sublink_kind(link.index).unwrap(), Some(kind));
            }
            Err(err) => {
                assert_eq!(err.to_string(), missing);
                assert!(matches!(err, NetError::NoKernelSupport { .. }));
                assert!(inside.find_link(name).unwrap().is_none());
            }
        }
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_tap_persists_with_its_owner_group_and_queues_and_its_name_is_never_reused() {
    let tmp = temp("tap");
    let tap = Tap {
        name: "tap0",
        multi_queue: true,
        vnet_hdr: true,
        packet_info: false,
        owner: Some(4242),
        group: Some(4343),
    };
    let link = tmp.add_tap(&tap).unwrap();
    assert_eq!((link.name.as_str(), link.up), ("tap0", false));
    assert_eq!(link.kind, Some(LinkKind::Tun));
    let data = &ip_details(&tmp, "tap0")["linkinfo"]["info_data"];
    assert_eq!(data["type"], "tap");
    assert_eq!(data["multi_queue"], true);
    assert_eq!(data["vnet_hdr"], true);
    assert_eq!(data["pi"], false);
    assert_eq!(data["persist"], true);
    assert_eq!(
        (data["user"].as_u64(), data["group"].as_u64()),
        (Some(4242), Some(4343))
    );
    let err = tmp
        .add_tap(&Tap {
            name: "tap0",
            ..Tap::default()
        })
        .unwrap_err();
    assert!(err.is_exists(), "{err}");
    assert_eq!(err.to_string(), "failed to create tap \"tap0\"");
    let again = tmp.socket().unwrap().link("tap0").unwrap();
    assert_eq!(again.index, link.index);
}
