//! configure_iface puts a result into the namespace; CHECK passes on it
//! and names each kind of drift. As root, in namespaces the tests create
//! and remove.

use cni_net::testing::TempNetns;
use cni_net::{check_interface, configure_iface, Dad, Mac, NetError, Netlink};
use cni_types::{Interface, IpConfig, Result100, Route, SpecVersion};

const MAC: &str = "0a:58:0a:4e:00:02";

/// A namespace with `eth0` (its peer `peer0` up) and a result for it:
/// MTU and MAC, an address of each family with gateways, a default route
/// of each family and one with 1.1.0 fields.
fn setup(tag: &str) -> (TempNetns, Netlink, Result100) {
    let tmp = TempNetns::new(tag).unwrap_or_else(|e| panic!("these tests need root: {e}"));
    let mut nl = tmp.socket().unwrap();
    tmp.add_veth("eth0", "peer0", None).unwrap();
    let peer = nl.link("peer0").unwrap();
    nl.set_up(peer.index).unwrap();
    let link = nl.link("eth0").unwrap();
    nl.set_mac(link.index, MAC.parse().unwrap()).unwrap();
    let sandbox = tmp.path().display().to_string();
    let mut result = Result100::new(SpecVersion::V1_1_0);
    result.interfaces.push(Interface {
        mac: MAC.into(),
        mtu: Some(1400),
        sandbox,
        ..Interface::named("eth0")
    });
    for (address, gw) in [
        ("10.78.0.2/24", "10.78.0.1"),
        ("fd00:7a::2/64", "fd00:7a::1"),
    ] {
        result.ips.push(IpConfig {
            interface: Some(0),
            ..IpConfig::new(address.parse().unwrap(), Some(gw.parse().unwrap()))
        });
    }
    result.routes = vec![
        Route::new("0.0.0.0/0".parse().unwrap(), None),
        Route::new("::/0".parse().unwrap(), None),
        Route {
            table: Some(100),
            mtu: Some(1300),
            priority: Some(5),
            ..Route::new(
                "192.0.2.0/24".parse().unwrap(),
                Some("10.78.0.1".parse().unwrap()),
            )
        },
    ];
    (tmp, nl, result)
}

fn check(tmp: &TempNetns, nl: &mut Netlink, result: &Result100) -> Result<(), NetError> {
    check_interface(nl, result, "eth0", &tmp.path().display().to_string()).map(drop)
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_configured_interface_passes_check() {
    let (tmp, mut nl, result) = setup("conf");
    let link = configure_iface(&mut nl, "eth0", &result, Dad::Skip).unwrap();
    assert!(link.up);
    assert_eq!(link.mtu, 1400);
    check(&tmp, &mut nl, &result).unwrap();
    let default = nl
        .routes()
        .unwrap()
        .into_iter()
        .find(|r| r.route.dst == "0.0.0.0/0".parse().unwrap())
        .unwrap();
    assert_eq!(
        default.route.gw,
        Some("10.78.0.1".parse().unwrap()),
        "the ips gateway"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn each_kind_of_drift_fails_check_naming_it() {
    type Drift = fn(&mut Netlink, u32);
    let cases: [(&str, Drift, &str); 5] = [
        (
            "address removed",
            |nl, i| {
                nl.delete_address(i, "10.78.0.2/24".parse().unwrap())
                    .unwrap()
            },
            "address 10.78.0.2/24 is missing from \"eth0\"",
        ),
        (
            "route removed",
            |nl, i| {
                nl.delete_route(i, &Route::new("::/0".parse().unwrap(), None))
                    .unwrap()
            },
            "route to ::/0 is missing",
        ),
        (
            "route removed from its table",
            |nl, i| {
                let route = Route {
                    table: Some(100),
                    ..Route::new("192.0.2.0/24".parse().unwrap(), None)
                };
                nl.delete_route(i, &route).unwrap()
            },
            "route to 192.0.2.0/24 via 10.78.0.1 is missing",
        ),
        (
            "MTU changed",
            |nl, i| nl.set_mtu(i, 1500).unwrap(),
            "\"eth0\" has MTU 1500, the result says 1400",
        ),
        (
            "MAC changed",
            |nl, i| {
                nl.set_mac(i, "02:00:00:00:00:99".parse::<Mac>().unwrap())
                    .unwrap()
            },
            "\"eth0\" has MAC 02:00:00:00:00:99, the result says 0a:58:0a:4e:00:02",
        ),
    ];
    for (what, drift, message) in cases {
        let (tmp, mut nl, result) = setup("drift");
        let link = configure_iface(&mut nl, "eth0", &result, Dad::Skip).unwrap();
        check(&tmp, &mut nl, &result).unwrap();
        drift(&mut nl, link.index);
        let err = check(&tmp, &mut nl, &result).unwrap_err();
        assert!(matches!(err, NetError::Differs(_)), "{what}: {err:?}");
        assert_eq!(err.to_string(), message, "{what}");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_missing_interface_fails_check_and_configure_naming_it() {
    let (tmp, mut nl, mut result) = setup("missing");
    result.interfaces[0].name = "eth1".into();
    let err = configure_iface(&mut nl, "eth1", &result, Dad::Skip).unwrap_err();
    assert_eq!(err.to_string(), "link \"eth1\" not found");
    let err = check_interface(&mut nl, &result, "eth1", "").unwrap_err();
    assert_eq!(err.to_string(), "interface \"eth1\" is missing");
    let err = check(&tmp, &mut nl, &result).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the result has no interface \"eth0\""),
        "{err}"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_address_for_another_interface_is_refused_before_it_is_added() {
    let (_tmp, mut nl, mut result) = setup("index");
    result.ips[1].interface = Some(3);
    let err = configure_iface(&mut nl, "eth0", &result, Dad::Skip).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid result: ips entry fd00:7a::2/64 has interface index 3, which is not \"eth0\""
    );
}
