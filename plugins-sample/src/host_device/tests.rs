use cni_net::testing::TempNetns;
use cni_skel::{Outcome, TestRequest};
use cni_version::PluginInfo;
use serde_json::{json, Value};

use super::*;

fn conf(fields: Value) -> String {
    let mut conf = json!({"cniVersion": "1.0.0", "name": "hd", "type": "host-device"});
    conf.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    conf.to_string()
}

fn run(command: &str, ns: &TempNetns, ifname: &str, conf: &str) -> Outcome {
    ns.request(command, ifname)
        .env("CNI_PATH", "/usr/lib/cni")
        .stdin(conf)
        .run(&HostDevice, &PluginInfo::all())
}

/// A veth pair in the test's (host) namespace, `NAME` and `NAMEp`,
/// deleted on drop wherever `NAME` went: deleting the peer takes it.
struct HostPair {
    name: String,
    peer: String,
}

impl HostPair {
    fn new(tag: &str) -> HostPair {
        let name = format!("hd{tag}{}", std::process::id());
        let peer = format!("{name}p");
        let pair = HostPair { name, peer };
        let mut nl = Netlink::open().unwrap();
        nl.add_veth(&cni_net::VethPair {
            name: &pair.name,
            peer_name: &pair.peer,
            peer_netns: None,
            mtu: None,
            peer_mac: None,
            master: None,
        })
        .unwrap();
        pair
    }

    fn host_link(&self) -> Option<Link> {
        Netlink::open().unwrap().find_link(&self.name).unwrap()
    }
}

impl Drop for HostPair {
    fn drop(&mut self) {
        if let Ok(mut nl) = Netlink::open() {
            let _ = nl.delete_link_if_present(&self.peer);
            let _ = nl.delete_link_if_present(&self.name);
        }
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn add_moves_the_device_in_as_ifname_and_del_returns_it_under_its_name() {
    let pair = HostPair::new("a");
    let before = pair.host_link().unwrap();
    let ns = TempNetns::new("hd").unwrap();
    let conf = conf(json!({"device": pair.name}));

    let out = run("ADD", &ns, "net1", &conf);
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        out.json(),
        json!({"cniVersion": "1.0.0", "interfaces": [{
            "name": "net1", "mac": before.mac.unwrap().to_string(),
            "sandbox": ns.path().display().to_string()}]})
    );
    assert!(pair.host_link().is_none());
    let inside = ns.run(|nl| nl.link("net1")).unwrap();
    assert!(inside.up);
    assert_eq!(
        ns.run(|nl| nl.alias("net1")).unwrap().as_deref(),
        Some(pair.name.as_str())
    );

    let mut check = serde_json::from_str::<Value>(&conf).unwrap();
    check["prevResult"] = out.json();
    let checked = run("CHECK", &ns, "net1", &check.to_string());
    assert_eq!(
        checked.exit_code,
        0,
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );

    assert_eq!(run("DEL", &ns, "net1", &conf).exit_code, 0);
    let back = pair.host_link().expect("the device is back in the host");
    assert_eq!((back.mac, back.up), (before.mac, false));
    assert_eq!(Netlink::open().unwrap().alias(back.index).unwrap(), None);
    assert!(ns.run(|nl| nl.find_link("net1")).unwrap().is_none());
    // A repeated DEL finds nothing to return, and succeeds.
    assert_eq!(run("DEL", &ns, "net1", &conf).exit_code, 0);

    let after_del = run("CHECK", &ns, "net1", &check.to_string());
    assert!(
        after_del.error().unwrap().msg.contains("net1"),
        "{after_del:?}"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn the_device_is_found_by_mac_and_gets_ipam_addresses() {
    let pair = HostPair::new("m");
    let mac = pair.host_link().unwrap().mac.unwrap();
    let ns = TempNetns::new("hd").unwrap();
    let conf = conf(json!({
        "hwaddr": mac.to_string().to_uppercase(),
        // An IPv6 address without gateway on a link without carrier: its
        // duplicate address detection cannot finish, and nothing waits.
        "ipam": {"type": "static", "addresses": [{"address": "10.217.0.5/24", "gateway": "10.217.0.1"},
                                                  {"address": "fd00:217::5/64"}],
                 "routes": [{"dst": "10.218.0.0/16"}]},
        "dns": {"nameservers": ["10.217.0.53"]}
    }));
    let out = run("ADD", &ns, "eth0", &conf);
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    let result = out.json();
    assert_eq!(
        result["ips"],
        json!([{"interface": 0, "address": "10.217.0.5/24", "gateway": "10.217.0.1"},
               {"interface": 0, "address": "fd00:217::5/64"}])
    );
    assert_eq!(result["dns"], json!({"nameservers": ["10.217.0.53"]}));
    let addresses = ns
        .run(|nl| {
            let link = nl.link("eth0")?;
            nl.addresses(Some(link.index))
        })
        .unwrap();
    assert!(
        addresses
            .iter()
            .any(|a| a.network.to_string() == "10.217.0.5/24"),
        "{addresses:?}"
    );
    assert_eq!(run("DEL", &ns, "eth0", &conf).exit_code, 0);
    assert!(pair.host_link().is_some());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_device_already_in_a_container_is_a_clear_error_changing_nothing() {
    let pair = HostPair::new("t");
    let first = TempNetns::new("hd").unwrap();
    let second = TempNetns::new("hd").unwrap();
    let conf = conf(json!({"device": pair.name}));
    assert_eq!(run("ADD", &first, "net1", &conf).exit_code, 0);
    let err = run("ADD", &second, "net1", &conf).error().unwrap();
    assert_eq!(
        (err.code, err.msg.as_str()),
        (Code::INVALID_NETWORK_CONFIG, "invalid device")
    );
    assert!(err.details.contains(&pair.name), "{err:?}");
    assert!(first.run(|nl| nl.find_link("net1")).unwrap().is_some());
    assert!(second.run(|nl| nl.find_link("net1")).unwrap().is_none());
    assert_eq!(run("DEL", &first, "net1", &conf).exit_code, 0);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_ifname_taken_in_the_container_is_refused_before_the_device_moves() {
    let pair = HostPair::new("i");
    let ns = TempNetns::new("hd").unwrap();
    ns.add_veth("net1", "other1", None).unwrap();
    let err = run("ADD", &ns, "net1", &conf(json!({"device": pair.name})))
        .error()
        .unwrap();
    assert!(err.msg.contains("CNI_IFNAME"), "{err:?}");
    assert!(pair.host_link().is_some());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_failed_ipam_leaves_the_device_in_the_host() {
    let pair = HostPair::new("f");
    let ns = TempNetns::new("hd").unwrap();
    let conf = conf(json!({"device": pair.name, "ipam": {"type": "static"}}));
    // The reference static with no address: an empty result.
    let err = run("ADD", &ns, "net1", &conf).error().unwrap();
    assert!(err.msg.contains("missing IP config"), "{err:?}");
    assert!(pair.host_link().is_some());
    assert!(ns.run(|nl| nl.find_link("net1")).unwrap().is_none());
}

#[test]
fn bad_configuration_is_code_7_naming_the_field() {
    let cases = [
        (json!({}), "invalid device"),
        (json!({"device": "a/b"}), "invalid device"),
        (json!({"hwaddr": "00:11:22"}), "invalid hwaddr"),
        (json!({"hwaddr": "00:00:00:00:00:00"}), "invalid hwaddr"),
        (json!({"kernelpath": "/etc/passwd"}), "invalid kernelpath"),
        (
            json!({"kernelpath": "/sys/devices/../../etc"}),
            "invalid kernelpath",
        ),
        (json!({"pciBusID": "../../../etc"}), "invalid pciBusID"),
        (
            json!({"device": "x", "runtimeConfig": {"deviceID": "0000:ff:1f.7"}}),
            "invalid runtimeConfig.deviceID",
        ),
    ];
    for (fields, msg) in cases {
        crate::test_support::assert_add_refused(&HostDevice, conf(fields.clone()), &fields, msg);
    }
}

#[test]
fn del_succeeds_when_the_namespace_is_gone() {
    let out = TestRequest::del()
        .env("CNI_NETNS", "/run/netns/cni-rs-hd-does-not-exist")
        .stdin(conf(json!({"device": "eth9"})))
        .run(&HostDevice, &PluginInfo::all());
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_version_without_interfaces_in_results_is_refused_before_the_device_moves() {
    let pair = HostPair::new("v");
    let ns = TempNetns::new("hd").unwrap();
    let conf = serde_json::json!({"cniVersion": "0.2.0", "name": "hd", "type": "host-device",
                                  "device": pair.name})
    .to_string();
    let err = run("ADD", &ns, "net1", &conf).error().unwrap();
    assert_eq!(err.code, Code::INCOMPATIBLE_CNI_VERSION, "{err:?}");
    assert!(err.msg.contains("0.2.0"), "{err:?}");
    assert!(pair.host_link().is_some());
    assert!(ns.run(|nl| nl.find_link("net1")).unwrap().is_none());
}
