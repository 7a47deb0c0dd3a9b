//! Property tests: conversions that the spec makes lossless are lossless,
//! and every result prints and parses back to itself.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cni_types::{
    CniResult, Dns, Interface, IpConfig020, IpConfig040, IpFamily, IpNetwork, Result020, Result040,
    Result100, Route, SpecVersion,
};
use proptest::prelude::*;

fn v4() -> impl Strategy<Value = IpAddr> + Clone {
    any::<u32>().prop_map(|n| IpAddr::V4(Ipv4Addr::from(n)))
}

fn v6() -> impl Strategy<Value = IpAddr> + Clone {
    // Avoid IPv4-mapped addresses: the reference treats them as IPv4.
    any::<u128>().prop_map(|n| IpAddr::V6(Ipv6Addr::from(n | (1 << 127))))
}

fn net(ip: impl Strategy<Value = IpAddr>) -> impl Strategy<Value = IpNetwork> {
    (ip, any::<u8>()).prop_map(|(ip, p)| {
        let max = if ip.is_ipv4() { 33 } else { 129 };
        IpNetwork::new(ip, p % max).unwrap()
    })
}

fn any_net() -> impl Strategy<Value = IpNetwork> {
    prop_oneof![net(v4()), net(v6())]
}

fn route(dst: impl Strategy<Value = IpNetwork>) -> impl Strategy<Value = Route> {
    (dst, proptest::option::of(v4())).prop_map(|(dst, gw)| Route::new(dst, gw))
}

fn dns() -> impl Strategy<Value = Dns> {
    let word = "[a-z0-9.:]{1,12}";
    (
        proptest::collection::vec(word, 0..3),
        proptest::option::of(word),
        proptest::collection::vec(word, 0..3),
        proptest::collection::vec(word, 0..3),
    )
        .prop_map(|(nameservers, domain, search, options)| Dns {
            nameservers,
            domain: domain.unwrap_or_default(),
            search,
            options,
        })
}

fn interface() -> impl Strategy<Value = Interface> {
    (
        "[a-z0-9]{1,15}",
        proptest::option::of("[0-9a-f:]{17}"),
        proptest::option::of("/var/run/netns/[a-z]{1,8}"),
    )
        .prop_map(|(name, mac, sandbox)| Interface {
            name,
            mac: mac.unwrap_or_default(),
            sandbox: sandbox.unwrap_or_default(),
            ..Interface::default()
        })
}

fn result040(version: SpecVersion) -> impl Strategy<Value = Result040> {
    (
        proptest::collection::vec(interface(), 0..4),
        proptest::collection::vec(
            (any_net(), proptest::option::of(0usize..4), any::<bool>()),
            0..5,
        ),
        proptest::collection::vec(route(any_net()), 0..4),
        dns(),
    )
        .prop_map(move |(interfaces, ips, routes, dns)| Result040 {
            cni_version: version.clone(),
            interfaces,
            ips: ips
                .into_iter()
                .map(|(address, interface, gw)| IpConfig040 {
                    version: Some(if address.is_ipv4() {
                        IpFamily::V4
                    } else {
                        IpFamily::V6
                    }),
                    interface,
                    address,
                    gateway: gw.then(|| address.addr()),
                })
                .collect(),
            routes,
            dns,
        })
}

fn ipconfig020(ip: impl Strategy<Value = IpAddr> + Clone) -> impl Strategy<Value = IpConfig020> {
    (
        net(ip.clone()),
        proptest::option::of(ip.clone()),
        proptest::collection::vec(route(net(ip)), 0..3),
    )
        .prop_map(|(ip, gateway, routes)| IpConfig020 {
            ip,
            gateway,
            routes,
        })
}

fn result020(version: SpecVersion) -> impl Strategy<Value = Result020> {
    (
        proptest::option::of(ipconfig020(v4())),
        proptest::option::of(ipconfig020(v6())),
        dns(),
    )
        .prop_filter("0.x results need an address", |(a, b, _)| {
            a.is_some() || b.is_some()
        })
        .prop_map(move |(ip4, ip6, dns)| Result020 {
            cni_version: version.clone(),
            ip4,
            ip6,
            dns,
        })
}

fn reparse(r: &CniResult) -> CniResult {
    CniResult::parse(&r.version().to_string(), &r.to_json()).unwrap()
}

proptest! {
    #[test]
    fn v040_through_v100_and_back_is_lossless(r in result040(SpecVersion::V0_4_0)) {
        let r = CniResult::from(r);
        let up = r.convert_to(&SpecVersion::V1_0_0).unwrap();
        prop_assert_eq!(up.convert_to(&SpecVersion::V0_4_0).unwrap(), r.clone());
        let up = r.convert_to(&SpecVersion::V1_1_0).unwrap();
        prop_assert_eq!(up.convert_to(&SpecVersion::V0_4_0).unwrap(), r);
    }

    #[test]
    fn v100_through_v110_and_back_is_lossless(r in result040(SpecVersion::V0_4_0)) {
        let r = CniResult::from(r).convert_to(&SpecVersion::V1_0_0).unwrap();
        let up = r.convert_to(&SpecVersion::V1_1_0).unwrap();
        prop_assert_eq!(up.convert_to(&SpecVersion::V1_0_0).unwrap(), r);
    }

    #[test]
    fn v020_through_every_newer_version_and_back_is_lossless(r in result020(SpecVersion::V0_2_0)) {
        let r = CniResult::from(r);
        for v in &SpecVersion::ALL[2..] {
            let there = r.convert_to(v).unwrap();
            prop_assert_eq!(there.convert_to(&SpecVersion::V0_2_0).unwrap(), r.clone(), "via {}", v);
        }
    }

    #[test]
    fn every_result_prints_and_parses_back_to_itself(r in result040(SpecVersion::V0_3_1)) {
        let r = CniResult::from(r);
        for v in &SpecVersion::ALL {
            if let Ok(there) = r.convert_to(v) {
                prop_assert_eq!(reparse(&there), there);
            }
        }
    }

    #[test]
    fn v110_fields_never_make_a_conversion_fail(
        r in result040(SpecVersion::V0_4_0), mtu in 1u32.., table in any::<u32>(), scope in any::<u32>()
    ) {
        let CniResult::V100(mut r) = CniResult::from(r).convert_to(&SpecVersion::V1_1_0).unwrap() else { unreachable!() };
        for i in &mut r.interfaces { i.mtu = Some(mtu); i.pci_id = "0000:00:01.0".into(); }
        for rt in &mut r.routes { rt.mtu = Some(mtu); rt.table = Some(table); rt.scope = Some(scope); }
        let has_ips = !r.ips.is_empty();
        let r: CniResult = Result100 { ..r }.into();
        for v in &SpecVersion::ALL {
            let converted = r.convert_to(v);
            prop_assert!(converted.is_ok() || (!has_ips && *v < SpecVersion::V0_3_0));
            if let Ok(c) = converted {
                let json = String::from_utf8(c.to_json()).unwrap();
                if *v < SpecVersion::V1_1_0 {
                    for field in ["\"mtu\"", "\"pciID\"", "\"table\"", "\"scope\""] {
                        prop_assert!(!json.contains(field), "{} in {}: {}", field, v, json);
                    }
                }
            }
        }
    }
}
