//! Many namespaces at once, and the test kit running a kernel-touching
//! plugin in-process. As root, in namespaces the tests create and remove.

use cni_net::testing::TempNetns;
use cni_net::{Mac, Netns, VethPair};
use cni_skel::{BoxError, Plugin, Reply, Request};
use cni_types::{Error, NetConf};
use cni_version::PluginInfo;

fn temp(tag: &str) -> TempNetns {
    TempNetns::new(tag).unwrap_or_else(|e| panic!("these tests need root: {e}"))
}

/// The names under /run/netns this process created.
fn our_namespaces() -> Vec<String> {
    let prefix = format!("-{}-", std::process::id());
    std::fs::read_dir("/run/netns")
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with("cni-net-par") && n.contains(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn thirty_two_veth_pairs_into_thirty_two_namespaces_in_parallel_leave_nothing() {
    let host = temp("parhost");
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..32)
            .map(|i| {
                let host = &host;
                scope.spawn(move || {
                    let container = temp("par");
                    let name = format!("h{i}");
                    let mut nl = host.socket().unwrap();
                    let end = nl
                        .add_veth(&VethPair {
                            name: &name,
                            peer_name: "eth0",
                            peer_netns: Some(&container),
                            mtu: None,
                            peer_mac: None,
                        })
                        .unwrap();
                    let peer = container.socket().unwrap().link("eth0").unwrap();
                    assert_eq!(peer.name, "eth0");
                    nl.delete_link(end.index).unwrap();
                    assert!(container
                        .socket()
                        .unwrap()
                        .link_by_name("eth0")
                        .unwrap()
                        .is_none());
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
    });
    let names: Vec<String> = host
        .socket()
        .unwrap()
        .links()
        .unwrap()
        .into_iter()
        .map(|l| l.name)
        .collect();
    assert_eq!(names, ["lo"], "no link left in the host namespace");
    drop(host);
    assert_eq!(our_namespaces(), Vec::<String>::new(), "no namespace left");
}

#[derive(serde::Deserialize)]
struct Fields {
    mac: String,
}

/// A chained plugin that sets the MAC of CNI_IFNAME, as the crate root's
/// example does.
struct SetMac;

impl Plugin for SetMac {
    type Config = NetConf<Fields>;

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let mac: Mac = req.config.plugin.mac.parse()?;
        let netns = Netns::open(req.netns.as_ref().ok_or("no netns")?)?;
        let ifname = req.ifname.clone();
        netns.run(|nl| -> Result<(), Error> {
            let link = nl.link(&ifname)?;
            Ok(nl.set_mac(link.index, mac)?)
        })?;
        Ok(Reply::Empty)
    }

    fn del(&self, _req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        Ok(Reply::Empty)
    }
}

#[test]
fn a_plugin_runs_in_process_against_a_temporary_namespace() {
    let tmp = temp("kit");
    let link = tmp.add_veth("eth0", "peer0", None).unwrap();
    let conf = r#"{"cniVersion":"1.0.0","name":"n","type":"set-mac","mac":"02:00:00:00:00:07"}"#;
    let out = tmp
        .request("ADD", "eth0")
        .stdin(conf)
        .run(&SetMac, &PluginInfo::all());
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    let now = tmp
        .socket()
        .unwrap()
        .link_by_index(link.index)
        .unwrap()
        .unwrap();
    assert_eq!(now.mac, Some("02:00:00:00:00:07".parse().unwrap()));

    let out = tmp
        .request("ADD", "eth9")
        .stdin(conf)
        .run(&SetMac, &PluginInfo::all());
    let err = out.error().unwrap();
    assert_eq!(err.msg, "link \"eth9\" not found");
}
