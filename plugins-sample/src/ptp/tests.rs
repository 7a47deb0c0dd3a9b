//! ptp in-process, in namespaces of the tests' own: a "host" namespace
//! the plugin runs in, the container's, and for traffic a "far" one
//! beyond the host. IPAM is the reference host-local. Root tests are
//! marked; each cleans up by dropping its namespaces.

use std::net::{SocketAddr, TcpListener, TcpStream};

use cni_net::testing::TempNetns;
use cni_net::NetError;
use cni_skel::{Outcome, TestRequest};
use cni_version::PluginInfo;
use serde_json::{json, Value};

use super::*;

/// Runs `command` in-process from a thread inside `host` for `eth0` in
/// `container`, IPAM from /usr/lib/cni.
fn run(host: &TempNetns, container: &TempNetns, command: &str, conf: &Value) -> Outcome {
    let req = container
        .request(command, "eth0")
        .env("CNI_PATH", "/usr/lib/cni")
        .stdin(conf.to_string());
    host.run(|_| Ok::<_, NetError>(req.run(&Ptp, &PluginInfo::all())))
        .unwrap()
}

/// A configuration on `subnets` (one range set each), IPAM storing in
/// `ipam_dir`, with a default route per family.
fn conf(subnets: &[&str], ipam_dir: &std::path::Path) -> Value {
    let ranges: Vec<Value> = subnets.iter().map(|s| json!([{"subnet": s}])).collect();
    let routes: Vec<Value> = subnets
        .iter()
        .map(|s| json!({"dst": if s.contains(':') { "::/0" } else { "0.0.0.0/0" }}))
        .collect();
    json!({"cniVersion": "1.0.0", "name": "ptpnet", "type": "ptp",
           "ipam": {"type": "host-local", "dataDir": ipam_dir, "ranges": ranges, "routes": routes}})
}

fn namespaces() -> (TempNetns, TempNetns) {
    (
        TempNetns::new("ptp-host").unwrap(),
        TempNetns::new("ptp-cont").unwrap(),
    )
}

/// `ip -j ROUTE-ARGS` in `ns`, as JSON.
fn ip_json(ns: &TempNetns, args: &[&str]) -> Value {
    let out = std::process::Command::new("ip")
        .args(["-n", ns.name(), "-j"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Routes of `family` (`-4`, `-6`) in `ns` as `ip route` words, sorted,
/// without the link-local ones.
fn routes(ns: &TempNetns, family: &str) -> Vec<String> {
    let mut out: Vec<String> = ip_json(ns, &[family, "route", "show"])
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["dst"].as_str().unwrap_or("").starts_with("fe80"))
        .map(|r| {
            let mut words = vec![r["dst"].as_str().unwrap().to_string()];
            for key in ["gateway", "scope", "prefsrc"] {
                if let Some(v) = r[key].as_str() {
                    words.push(format!("{key} {v}"));
                }
            }
            words.join(" ")
        })
        .collect();
    out.sort();
    out
}

fn reservations(dir: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir.join("ptpnet")) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n != "lock" && !n.starts_with("last_reserved_ip"))
        .collect()
}

#[test]
fn bad_configurations_are_code_7_naming_the_field() {
    for (extra, field) in [
        (json!({"mtu": 20}), "invalid mtu"),
        (
            json!({"ipMasq": true, "ipMasqBackend": "ebtables"}),
            "invalid ipMasqBackend",
        ),
        (json!({"ipam": {}}), "invalid ipam.type"),
    ] {
        let mut conf = json!({"cniVersion": "1.0.0", "name": "n", "type": "ptp",
                              "ipam": {"type": "host-local"}});
        conf.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let err = TestRequest::new("ADD")
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", "/run/netns/cni-rs-ptp-does-not-exist")
            .env("CNI_IFNAME", "eth0")
            .stdin(conf.to_string())
            .run(&Ptp, &PluginInfo::all())
            .error()
            .expect("an error");
        assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG, "{err:?}");
        assert_eq!(err.msg, field, "{err:?}");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn bad_input_changes_nothing_on_the_host() {
    let (host, container) = namespaces();
    let ipam = tempfile::tempdir().unwrap();
    let mut c = conf(&["10.9.20.0/24"], ipam.path());
    c["ipMasq"] = true.into();
    c["ipMasqBackend"] = "ebtables".into();
    let err = run(&host, &container, "ADD", &c).error().unwrap();
    assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG, "{err:?}");
    let links = |ns: &TempNetns| ns.socket().unwrap().links().unwrap().len();
    assert_eq!((links(&host), links(&container)), (1, 1), "only lo");
    assert_eq!(reservations(ipam.path()), Vec::<String>::new());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_failed_ipam_leaves_no_pair_and_a_repeated_add_keeps_the_live_pod() {
    // The pair is made while the IPAM plugin runs: whichever fails, the
    // other is undone, and a repeated ADD undoes nothing of the live pod.
    let (host, container) = namespaces();
    let ipam = tempfile::tempdir().unwrap();
    let links = |ns: &TempNetns| ns.socket().unwrap().links().unwrap().len();
    // A /31 has no address host-local hands out.
    let full = conf(&["10.9.21.0/31"], ipam.path());
    let err = run(&host, &container, "ADD", &full).error().unwrap();
    assert_ne!(err.code, Code::INVALID_NETWORK_CONFIG, "{err:?}");
    assert_eq!((links(&host), links(&container)), (1, 1), "only lo");

    let c = conf(&["10.9.21.0/24"], ipam.path());
    let add = run(&host, &container, "ADD", &c);
    assert_eq!(add.exit_code, 0, "{:?}", add.error());
    let held = reservations(ipam.path());
    let again = run(&host, &container, "ADD", &c).error().unwrap();
    assert!(again.msg.contains("duplicate allocation"), "{again:?}");
    assert_eq!((links(&host), links(&container)), (2, 2), "the pair stays");
    assert_eq!(reservations(ipam.path()), held, "the reservation stays");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn add_routes_both_families_point_to_point_check_passes_and_del_leaves_nothing() {
    let (host, container) = namespaces();
    let ipam = tempfile::tempdir().unwrap();
    let c = conf(&["10.9.21.0/24", "fd00:9:21::/64"], ipam.path());
    let add = run(&host, &container, "ADD", &c);
    assert_eq!(add.exit_code, 0, "{}", String::from_utf8_lossy(&add.stdout));
    let result = add.json();
    let host_end = result["interfaces"][0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(result["interfaces"][1]["name"], "eth0");
    assert_eq!(
        result["interfaces"][1]["sandbox"],
        container.path().display().to_string()
    );
    assert_eq!(result["ips"][0]["address"], "10.9.21.2/24");
    assert_eq!(result["ips"][0]["gateway"], "10.9.21.1");
    assert_eq!(result["ips"][0]["interface"], 1);
    assert_eq!(result["ips"][1]["address"], "fd00:9:21::2/64");

    assert_eq!(
        routes(&container, "-4"),
        [
            "10.9.21.0/24 gateway 10.9.21.1 prefsrc 10.9.21.2",
            "10.9.21.1 scope link prefsrc 10.9.21.2",
            "default gateway 10.9.21.1",
        ]
    );
    assert_eq!(
        routes(&container, "-6"),
        [
            "default gateway fd00:9:21::1",
            "fd00:9:21::/64 gateway fd00:9:21::1 prefsrc fd00:9:21::2",
            "fd00:9:21::1 prefsrc fd00:9:21::2",
        ]
    );
    assert_eq!(routes(&host, "-4"), ["10.9.21.2 scope host"]);
    // The kernel's own route for the /128 gateway address, then ours.
    assert_eq!(routes(&host, "-6"), ["fd00:9:21::1", "fd00:9:21::2"]);
    let host_addrs: Vec<String> = ip_json(&host, &["addr", "show", "dev", &host_end])[0]
        ["addr_info"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["scope"] == "global")
        .map(|a| format!("{}/{}", a["local"].as_str().unwrap(), a["prefixlen"]))
        .collect();
    assert_eq!(host_addrs, ["10.9.21.1/32", "fd00:9:21::1/128"]);

    let mut with_prev = c.clone();
    with_prev["prevResult"] = result.clone();
    let check = run(&host, &container, "CHECK", &with_prev);
    assert_eq!(check.exit_code, 0, "{:?}", check.error());

    for _ in 0..2 {
        let del = run(&host, &container, "DEL", &c);
        assert_eq!(del.exit_code, 0, "{:?}", del.error());
    }
    assert!(container
        .socket()
        .unwrap()
        .find_link("eth0")
        .unwrap()
        .is_none());
    assert!(host
        .socket()
        .unwrap()
        .find_link(host_end.as_str())
        .unwrap()
        .is_none());
    assert_eq!(reservations(ipam.path()), Vec::<String>::new());
}

/// The address a listener in `far` sees a connection from the container
/// come from: through the host, which routes between them.
fn source_seen_from_far_side(container: &TempNetns, far: &TempNetns) -> SocketAddr {
    let listener = far
        .run(|_| {
            TcpListener::bind("192.0.2.2:0").map_err(|e| NetError::InvalidResult(e.to_string()))
        })
        .unwrap();
    let to = listener.local_addr().unwrap();
    let _stream = container
        .run(|_| TcpStream::connect(to).map_err(|e| NetError::InvalidResult(e.to_string())))
        .unwrap();
    let (_accepted, from) = listener.accept().unwrap();
    from
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn with_ip_masq_the_far_side_sees_the_hosts_address_under_both_backends() {
    for (backend, subnet) in [("iptables", "10.9.22.0/24"), ("nftables", "10.9.23.0/24")] {
        let (host, container) = namespaces();
        let far = TempNetns::new("ptp-far").unwrap();
        let uplink = host.add_veth("uplink0", "uplink1", Some(&far)).unwrap();
        let mut nl = host.socket().unwrap();
        nl.add_address(
            uplink.index,
            "192.0.2.1/24".parse().unwrap(),
            cni_net::Dad::Skip,
        )
        .unwrap();
        nl.set_up(uplink.index).unwrap();
        let mut far_nl = far.socket().unwrap();
        let peer = far_nl.link("uplink1").unwrap();
        far_nl
            .add_address(
                peer.index,
                "192.0.2.2/24".parse().unwrap(),
                cni_net::Dad::Skip,
            )
            .unwrap();
        far_nl.set_up(peer.index).unwrap();
        // A way back to the containers, so unmasqueraded traffic works too.
        let back = cni_types::Route::new(
            "10.9.0.0/16".parse().unwrap(),
            Some("192.0.2.1".parse().unwrap()),
        );
        far_nl.add_route(peer.index, &back).unwrap();

        let ipam = tempfile::tempdir().unwrap();
        let mut c = conf(&[subnet], ipam.path());
        c["ipMasq"] = true.into();
        c["ipMasqBackend"] = backend.into();
        let add = run(&host, &container, "ADD", &c);
        assert_eq!(
            add.exit_code,
            0,
            "{backend}: {}",
            String::from_utf8_lossy(&add.stdout)
        );
        let from = source_seen_from_far_side(&container, &far);
        assert_eq!(from.ip().to_string(), "192.0.2.1", "{backend}");

        let mut with_prev = c.clone();
        with_prev["prevResult"] = add.json();
        let check = run(&host, &container, "CHECK", &with_prev);
        assert_eq!(check.exit_code, 0, "{backend}: {:?}", check.error());
        let del = run(&host, &container, "DEL", &c);
        assert_eq!(del.exit_code, 0, "{backend}: {:?}", del.error());
        // The rules went with DEL: CHECK's masquerading check now fails
        // (recreate the pair so only the rules are missing).
        let again = run(&host, &container, "ADD", &{
            let mut no_masq = c.clone();
            no_masq["ipMasq"] = false.into();
            no_masq
        });
        assert_eq!(again.exit_code, 0, "{backend}");
        let from = source_seen_from_far_side(&container, &far);
        let own = again.json()["ips"][0]["address"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            format!("{}/24", from.ip()),
            own,
            "{backend}: not masqueraded"
        );
        let mut with_prev = c.clone();
        with_prev["prevResult"] = again.json();
        let err = run(&host, &container, "CHECK", &with_prev).error().unwrap();
        assert!(err.msg.contains("missing"), "{backend}: {err:?}");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn del_after_the_namespace_is_gone_removes_the_masquerading_and_the_reservation() {
    let host = TempNetns::new("ptp-host").unwrap();
    let ipam = tempfile::tempdir().unwrap();
    let mut c = conf(&["10.9.24.0/24"], ipam.path());
    c["ipMasq"] = true.into();
    c["ipMasqBackend"] = "nftables".into();
    let (path, cid, address) = {
        let container = TempNetns::new("ptp-gone").unwrap();
        let add = run(&host, &container, "ADD", &c);
        assert_eq!(add.exit_code, 0, "{}", String::from_utf8_lossy(&add.stdout));
        let address: cni_types::IpNetwork = add.json()["ips"][0]["address"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        (
            container.path().to_path_buf(),
            container.name().to_string(),
            address,
        )
    };
    let req = TestRequest::new("DEL")
        .env("CNI_CONTAINERID", cid.as_str())
        .env("CNI_NETNS", path.as_path())
        .env("CNI_IFNAME", "eth0")
        .env("CNI_PATH", "/usr/lib/cni")
        .stdin(c.to_string());
    let del = host
        .run(|_| Ok::<_, NetError>(req.run(&Ptp, &PluginInfo::all())))
        .unwrap();
    assert_eq!(del.exit_code, 0, "{:?}", del.error());
    let at = masquerade::Attachment {
        network: "ptpnet",
        ifname: "eth0",
        container_id: &cid,
    };
    let nft = Some(cni_netfilter::BackendKind::Nftables);
    let left = host
        .run(|_| Ok::<_, NetError>(masquerade::check(nft, &[address], &at)))
        .unwrap();
    assert!(left.is_err(), "the rules are gone");
    assert_eq!(reservations(ipam.path()), Vec::<String>::new());
}
