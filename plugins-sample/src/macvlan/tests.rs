//! macvlan in-process, in namespaces of the tests' own: a "host"
//! namespace the plugin runs in, holding the master (one end of a veth
//! pair, both ends up), and the containers'. IPAM is the reference
//! host-local. Root tests are marked; each cleans up by dropping its
//! namespaces.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use cni_net::testing::TempNetns;
use cni_net::{Dad, LinkKind, NetError};
use cni_skel::{Outcome, TestRequest};
use cni_types::Code;
use cni_version::PluginInfo;
use serde_json::{json, Value};

use super::*;

/// Runs `command` in-process from a thread inside `host` for `eth0` in
/// `container`, IPAM from /usr/lib/cni.
fn run(host: &TempNetns, container: &TempNetns, command: &str, conf: &Value) -> Outcome {
    run_with(host, container.request(command, "eth0"), conf)
}

fn run_with(host: &TempNetns, req: TestRequest, conf: &Value) -> Outcome {
    let req = req.env("CNI_PATH", "/usr/lib/cni").stdin(conf.to_string());
    host.run(|_| Ok::<_, NetError>(req.run(&Macvlan, &PluginInfo::all())))
        .unwrap()
}

/// A configuration on master `par0` and `subnet`, IPAM storing in `dir`.
fn conf(subnet: &str, dir: &std::path::Path) -> Value {
    json!({"cniVersion": "1.0.0", "name": "mvnet", "type": "macvlan", "master": "par0",
           "ipam": {"type": "host-local", "dataDir": dir, "ranges": [[{"subnet": subnet}]]}})
}

/// A host namespace whose link `par0` (MTU 1500, up, its peer `par1` up)
/// is the master.
fn host() -> TempNetns {
    let host = TempNetns::new("mv-host").unwrap();
    host.add_veth("par0", "par1", None).unwrap();
    let mut nl = host.socket().unwrap();
    for name in ["par0", "par1"] {
        let index = nl.link(name).unwrap().index;
        nl.set_up(index).unwrap();
    }
    host
}

fn reservations(dir: &std::path::Path) -> Vec<String> {
    cni_net::testing::held_addresses(dir, "mvnet")
}

fn io(e: std::io::Error) -> NetError {
    NetError::InvalidResult(e.to_string())
}

#[test]
fn a_mode_or_mac_that_does_not_exist_is_code_7_naming_the_field() {
    for (extra, field, detail) in [
        (
            json!({"mode": "fast"}),
            "invalid mode",
            "unknown macvlan mode \"fast\"",
        ),
        (json!({"mac": "zz"}), "invalid MAC address in mac", "\"zz\""),
    ] {
        let mut c = json!({"cniVersion": "1.0.0", "name": "n", "type": "macvlan"});
        c.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let err = TestRequest::new("ADD")
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", "/run/netns/cni-rs-macvlan-does-not-exist")
            .env("CNI_IFNAME", "eth0")
            .stdin(c.to_string())
            .run(&Macvlan, &PluginInfo::all())
            .error()
            .expect("an error");
        assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG, "{err:?}");
        assert_eq!(err.msg, field, "{err:?}");
        assert!(err.details.contains(detail), "{err:?}");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_bad_master_mtu_or_mode_is_code_7_naming_it_and_changes_nothing() {
    let host = host();
    let container = TempNetns::new("mv-cont").unwrap();
    container.add_veth("inner0", "inner1", None).unwrap();
    let ipam = tempfile::tempdir().unwrap();
    for (change, msg, detail) in [
        (
            json!({"master": "nosuch0"}),
            "invalid master",
            "link \"nosuch0\" not found in the host's namespace",
        ),
        (
            json!({"master": "inner0"}),
            "invalid master",
            "link \"inner0\" is not in the host's namespace; it is in the container's: set linkInContainer",
        ),
        (
            json!({"master": "par0", "linkInContainer": true}),
            "invalid master",
            "link \"par0\" is not in the container's namespace; it is in the host's: unset linkInContainer",
        ),
        (
            json!({"mtu": 9000}),
            "invalid mtu",
            "invalid MTU 9000, must be [0, master MTU(1500)]",
        ),
        (json!({"mode": "source"}), "invalid mode", "\"source\""),
    ] {
        let mut c = conf("10.9.40.0/24", ipam.path());
        c.as_object_mut()
            .unwrap()
            .extend(change.as_object().unwrap().clone());
        for command in ["ADD", "CHECK"] {
            let err = run(&host, &container, command, &c).error().unwrap();
            assert_eq!((err.code, err.msg.as_str()), (Code(7), msg), "{err:?}");
            assert!(err.details.contains(detail), "{command} {change}: {err:?}");
        }
    }
    let links = |ns: &TempNetns| ns.socket().unwrap().links().unwrap().len();
    assert_eq!(
        (links(&host), links(&container)),
        (3, 3),
        "lo and the pairs"
    );
    assert_eq!(reservations(ipam.path()), Vec::<String>::new());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn two_containers_on_one_master_talk_in_bridge_mode_and_del_leaves_nothing() {
    let host = host();
    let (a, b) = (
        TempNetns::new("mv-a").unwrap(),
        TempNetns::new("mv-b").unwrap(),
    );
    let ipam = tempfile::tempdir().unwrap();
    let c = conf("10.9.41.0/24", ipam.path());
    let add_a = run(&host, &a, "ADD", &c);
    assert_eq!(add_a.exit_code, 0, "{:?}", add_a.error());
    let result = add_a.json();
    let link = a.socket().unwrap().link("eth0").unwrap();
    assert_eq!(
        result,
        json!({"cniVersion": "1.0.0",
               "interfaces": [{"name": "eth0", "mac": link.mac.unwrap().to_string(),
                               "sandbox": a.path()}],
               "ips": [{"address": "10.9.41.2/24", "gateway": "10.9.41.1", "interface": 0}]})
    );
    assert_eq!(link.kind, Some(LinkKind::Macvlan));
    assert!(link.up);
    let add_b = run(&host, &b, "ADD", &c);
    assert_eq!(add_b.exit_code, 0, "{:?}", add_b.error());

    let listener = a
        .run(|_| TcpListener::bind("10.9.41.2:0").map_err(io))
        .unwrap();
    let to = listener.local_addr().unwrap();
    let mut conn = b.run(|_| TcpStream::connect(to).map_err(io)).unwrap();
    conn.write_all(b"hi").unwrap();
    let (mut seen, from) = listener.accept().unwrap();
    assert_eq!(from.ip().to_string(), "10.9.41.3");
    let mut got = [0; 2];
    seen.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"hi");

    let mut with_prev = c.clone();
    with_prev["prevResult"] = result.clone();
    let check = run(&host, &a, "CHECK", &with_prev);
    assert_eq!(check.exit_code, 0, "{:?}", check.error());
    // Without prevResult, the reference macvlan's words (code 7).
    let err = run(&host, &a, "CHECK", &c).error().unwrap();
    assert_eq!(
        (err.code, err.msg.as_str()),
        (Code::INVALID_NETWORK_CONFIG, "required prevResult missing")
    );
    with_prev["mode"] = "vepa".into();
    let err = run(&host, &a, "CHECK", &with_prev).error().unwrap();
    assert_eq!(
        err.msg,
        "container macvlan mode bridge does not match expected value: mode vepa"
    );

    for ns in [&a, &b] {
        for _ in 0..2 {
            let del = run(&host, ns, "DEL", &c);
            assert_eq!(del.exit_code, 0, "{:?}", del.error());
        }
        assert!(ns.socket().unwrap().find_link("eth0").unwrap().is_none());
    }
    assert_eq!(reservations(ipam.path()), Vec::<String>::new());
    assert_eq!(host.socket().unwrap().links().unwrap().len(), 3);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn without_master_or_ipam_the_default_route_link_carries_an_l2_link_as_asked() {
    let host = host();
    let container = TempNetns::new("mv-l2").unwrap();
    let mut nl = host.socket().unwrap();
    let par0 = nl.link("par0").unwrap();
    let gw = cni_types::Route::new("0.0.0.0/0".parse().unwrap(), "10.9.42.254".parse().ok());
    nl.add_address(par0.index, "10.9.42.1/24".parse().unwrap(), Dad::Skip)
        .unwrap();
    nl.add_route(par0.index, &gw).unwrap();
    let c = json!({"cniVersion": "0.4.0", "name": "l2", "type": "macvlan", "mode": "private",
                   "mtu": 1400, "bcqueuelen": 2000,
                   "runtimeConfig": {"mac": "0a:58:0a:09:2a:05"}});
    let req = container
        .request("ADD", "net1")
        .env("CNI_ARGS", "MAC=0a:58:0a:09:2a:06");
    let add = run_with(&host, req, &c);
    assert_eq!(add.exit_code, 0, "{:?}", add.error());
    assert_eq!(
        add.json(),
        json!({"cniVersion": "0.4.0",
               "interfaces": [{"name": "net1", "mac": "0a:58:0a:09:2a:05",
                               "sandbox": container.path()}]})
    );
    let mut inside = container.socket().unwrap();
    let link = inside.link("net1").unwrap();
    assert_eq!((link.mtu, link.up), (1400, true));
    assert_eq!(
        inside.sublink_kind(link.index).unwrap(),
        Some(SublinkKind::Macvlan {
            mode: MacvlanMode::Private,
            bcqueuelen: Some(2000)
        })
    );
    let del = run_with(&host, container.request("DEL", "net1"), &c);
    assert_eq!(del.exit_code, 0, "{:?}", del.error());
    assert!(inside.find_link("net1").unwrap().is_none());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn with_link_in_container_the_master_is_the_containers_own_link() {
    let host = TempNetns::new("mv-lic-h").unwrap();
    let container = TempNetns::new("mv-lic-c").unwrap();
    container.add_veth("uplink0", "uplink1", None).unwrap();
    let c = json!({"cniVersion": "1.0.0", "name": "lic", "type": "macvlan",
                   "master": "uplink0", "linkInContainer": true});
    let add = run(&host, &container, "ADD", &c);
    assert_eq!(add.exit_code, 0, "{:?}", add.error());
    let mut inside = container.socket().unwrap();
    let link = inside.link("eth0").unwrap();
    assert_eq!(link.parent, Some(inside.link("uplink0").unwrap().index));
    let del = run(&host, &container, "DEL", &c);
    assert_eq!(del.exit_code, 0, "{:?}", del.error());
    assert!(inside.find_link("eth0").unwrap().is_none());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_repeated_add_fails_and_leaves_the_live_attachment_alone() {
    let host = host();
    let container = TempNetns::new("mv-again").unwrap();
    let c = json!({"cniVersion": "1.0.0", "name": "again", "type": "macvlan", "master": "par0"});
    let first = run(&host, &container, "ADD", &c);
    assert_eq!(first.error(), None);
    let live = container.socket().unwrap().link("eth0").unwrap();
    let err = run(&host, &container, "ADD", &c).error().unwrap();
    assert!(err.msg.contains("rename"), "{err:?}");
    let mut inside = container.socket().unwrap();
    assert_eq!(inside.link("eth0").unwrap().index, live.index, "eth0 kept");
    assert_eq!(inside.links().unwrap().len(), 2, "lo and eth0, no leftover");
}
