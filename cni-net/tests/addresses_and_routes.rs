//! Addresses and routes, both families: add, list, delete, the 1.1.0
//! route fields, and the failures naming the object. As root, in
//! namespaces the tests create and remove.

use std::time::Duration;

use cni_net::testing::TempNetns;
use cni_net::{Dad, Link, Netlink, MAIN_TABLE};
use cni_types::{IpFamily, IpNetwork, Route};

fn net(s: &str) -> IpNetwork {
    s.parse().unwrap()
}

/// A namespace with a veth pair `eth0`/`peer0`, both up.
fn with_link(tag: &str) -> (TempNetns, Netlink, Link) {
    let tmp = TempNetns::new(tag).unwrap_or_else(|e| panic!("these tests need root: {e}"));
    let mut nl = tmp.socket().unwrap();
    let link = tmp.add_veth("eth0", "peer0", None).unwrap();
    let peer = nl.link("peer0").unwrap();
    nl.set_up(link.index).unwrap();
    nl.set_up(peer.index).unwrap();
    (tmp, nl, link)
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn addresses_of_both_families_are_added_listed_and_deleted() {
    let (_tmp, mut nl, link) = with_link("addr");
    let (v4, v6) = (net("10.77.0.2/24"), net("fd00:77::2/64"));
    nl.add_address(link.index, v4, Dad::Skip).unwrap();
    nl.add_address(link.index, v6, Dad::Skip).unwrap();
    let listed: Vec<IpNetwork> = nl
        .addresses(Some(link.index))
        .unwrap()
        .iter()
        .map(|a| a.network)
        .collect();
    assert!(listed.contains(&v4) && listed.contains(&v6), "{listed:?}");
    nl.delete_address(link.index, v4).unwrap();
    nl.delete_address(link.index, v6).unwrap();
    let left = nl.addresses(Some(link.index)).unwrap();
    assert!(
        left.iter().all(|a| a.network != v4 && a.network != v6),
        "{left:?}"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn one_familys_addresses_are_listed_of_one_link_or_of_all() {
    let (_tmp, mut nl, link) = with_link("family");
    let peer = nl.link("peer0").unwrap();
    nl.add_address(link.index, net("10.77.0.2/24"), Dad::Skip)
        .unwrap();
    nl.add_address(link.index, net("fd00:77::2/64"), Dad::Skip)
        .unwrap();
    nl.add_address(peer.index, net("10.78.0.2/24"), Dad::Skip)
        .unwrap();
    let listed = |nl: &mut Netlink, family, index| -> Vec<IpNetwork> {
        let found = nl.family_addresses(family, index).unwrap();
        found.iter().map(|a| a.network).collect()
    };
    assert_eq!(
        listed(&mut nl, IpFamily::V4, Some(link.index)),
        [net("10.77.0.2/24")]
    );
    let all_v4 = listed(&mut nl, IpFamily::V4, None);
    assert!(all_v4.contains(&net("10.78.0.2/24")), "{all_v4:?}");
    assert!(all_v4.iter().all(|a| a.is_ipv4()), "{all_v4:?}");
    let v6 = listed(&mut nl, IpFamily::V6, Some(link.index));
    assert!(v6.contains(&net("fd00:77::2/64")), "{v6:?}");
    assert!(v6.iter().all(|a| !a.is_ipv4()), "{v6:?}");
    assert_eq!(
        listed(&mut nl, IpFamily::V4, Some(peer.index)),
        [net("10.78.0.2/24")]
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn the_route_to_an_address_names_the_link_the_kernel_would_use_or_none() {
    let (tmp, mut nl, link) = with_link("route-to");
    let peer = nl.link("peer0").unwrap();
    nl.add_address(link.index, net("10.77.0.2/24"), Dad::Skip)
        .unwrap();
    nl.add_address(peer.index, net("10.78.0.2/24"), Dad::Skip)
        .unwrap();
    let host = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    assert_eq!(nl.route_to(host("10.77.0.9")).unwrap(), Some(link.index));
    assert_eq!(nl.route_to(host("10.78.0.9")).unwrap(), Some(peer.index));
    // No default route in a test's namespace: nothing leads there.
    assert_eq!(nl.route_to(host("203.0.113.7")).unwrap(), None);
    assert_eq!(nl.route_to(host("2001:db8::7")).unwrap(), None);
    // A route that says so is as none; one that forbids the lookup
    // (`prohibit`: EACCES) is an error naming the destination.
    for route in ["unreachable 10.91.0.0/16", "prohibit 10.92.0.0/16"] {
        let added = std::process::Command::new("ip")
            .args(["-n", tmp.name(), "route", "add"])
            .args(route.split(' '))
            .status()
            .unwrap();
        assert!(added.success(), "ip route add {route}");
    }
    assert_eq!(nl.route_to(host("10.91.0.1")).unwrap(), None);
    let err = nl.route_to(host("10.92.0.1")).unwrap_err();
    assert!(
        err.to_string().contains("the route to 10.92.0.1"),
        "names the destination: {err}"
    );
    assert_eq!(err.errno(), Some(13), "the kernel's EACCES: {err:?}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_address_already_present_is_an_error_naming_it_and_the_link() {
    let (_tmp, mut nl, link) = with_link("addrdup");
    nl.add_address(link.index, net("10.77.1.2/24"), Dad::Skip)
        .unwrap();
    let err = nl
        .add_address(link.index, net("10.77.1.2/24"), Dad::Skip)
        .unwrap_err();
    assert_eq!(err.errno(), Some(17), "EEXIST: {err}");
    assert_eq!(
        err.to_string(),
        "failed to add address 10.77.1.2/24 to link \"eth0\""
    );
    let err = nl
        .delete_address(link.index, net("10.77.9.9/24"))
        .unwrap_err();
    assert!(
        err.to_string().contains("10.77.9.9/24 from link \"eth0\""),
        "{err}"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn ipv6_addresses_settle_once_duplicate_detection_is_done() {
    let (_tmp, mut nl, link) = with_link("settle");
    nl.wait_until_up(link.index, Duration::from_secs(2))
        .unwrap();
    nl.add_address(link.index, net("fd00:78::2/64"), Dad::Run)
        .unwrap();
    let fresh = nl.addresses(Some(link.index)).unwrap();
    assert!(
        fresh
            .iter()
            .any(|a| a.network == net("fd00:78::2/64") && a.tentative),
        "tentative right after adding: {fresh:?}"
    );
    nl.settle_addresses(link.index, Duration::from_secs(10))
        .unwrap();
    let settled = nl.addresses(Some(link.index)).unwrap();
    assert!(settled.iter().all(|a| !a.tentative), "{settled:?}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn routes_carry_gateway_table_scope_mtu_advmss_and_priority() {
    let (_tmp, mut nl, link) = with_link("route");
    nl.add_address(link.index, net("10.77.2.2/24"), Dad::Skip)
        .unwrap();
    nl.add_address(link.index, net("fd00:79::2/64"), Dad::Skip)
        .unwrap();
    let v4 = Route {
        mtu: Some(1300),
        advmss: Some(1260),
        priority: Some(50),
        table: Some(100),
        ..Route::new(net("192.0.2.0/24"), Some("10.77.2.1".parse().unwrap()))
    };
    let v6 = Route {
        priority: Some(60),
        ..Route::new(net("2001:db8::/32"), Some("fd00:79::1".parse().unwrap()))
    };
    let on_link = Route {
        scope: Some(253),
        ..Route::new(net("198.51.100.0/24"), None)
    };
    for route in [&v4, &v6, &on_link] {
        nl.add_route(link.index, route).unwrap();
    }
    let live = nl.routes().unwrap();
    let find = |dst: &str| {
        live.iter()
            .find(|r| r.route.dst == net(dst))
            .unwrap_or_else(|| panic!("{dst} in {live:?}"))
    };
    let got = find("192.0.2.0/24");
    assert_eq!(got.oif, Some(link.index));
    assert_eq!(
        (
            got.route.gw,
            got.route.mtu,
            got.route.advmss,
            got.route.priority,
            got.route.table
        ),
        (v4.gw, Some(1300), Some(1260), Some(50), Some(100))
    );
    let got = find("2001:db8::/32");
    assert_eq!((got.route.gw, got.route.priority), (v6.gw, Some(60)));
    assert_eq!(got.route.table, Some(MAIN_TABLE));
    assert_eq!(find("198.51.100.0/24").route.scope, Some(253));

    let err = nl.add_route(link.index, &v4).unwrap_err();
    assert_eq!(err.errno(), Some(17), "EEXIST: {err}");
    assert_eq!(
        err.to_string(),
        "failed to add route 192.0.2.0/24 via 10.77.2.1 dev \"eth0\""
    );
    for route in [&v4, &v6, &on_link] {
        nl.delete_route(link.index, route).unwrap();
    }
    let live = nl.routes().unwrap();
    assert!(
        live.iter()
            .all(|r| r.route.dst != v4.dst && r.route.dst != v6.dst && r.route.dst != on_link.dst),
        "{live:?}"
    );
    let err = nl.delete_route(link.index, &v4).unwrap_err();
    assert!(err.to_string().contains("192.0.2.0/24"), "{err}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_gateway_the_link_cannot_reach_is_refused_naming_the_route() {
    let (_tmp, mut nl, link) = with_link("unreach");
    let route = Route::new(net("192.0.2.0/24"), Some("10.99.99.1".parse().unwrap()));
    let err = nl.add_route(link.index, &route).unwrap_err();
    assert_eq!(err.errno(), Some(101), "ENETUNREACH: {err}");
    assert!(err.to_string().contains("via 10.99.99.1"), "{err}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_route_added_from_a_source_carries_it_and_a_second_is_refused() {
    let (tmp, mut nl, link) = with_link("prefsrc");
    nl.add_address(link.index, net("10.77.5.2/24"), Dad::Skip)
        .unwrap();
    let route = Route::new(net("10.78.0.0/16"), Some("10.77.5.1".parse().unwrap()));
    let src = "10.77.5.2".parse().unwrap();
    nl.add_route_from(link.index, &route, src).unwrap();
    let out = std::process::Command::new("ip")
        .args(["-n", tmp.name(), "-j", "route", "show", "10.78.0.0/16"])
        .output()
        .unwrap();
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown[0]["prefsrc"], "10.77.5.2", "{shown}");
    assert_eq!(shown[0]["gateway"], "10.77.5.1", "{shown}");
    let again = nl.add_route_from(link.index, &route, src).unwrap_err();
    assert!(again.is_exists(), "{again}");
}
