//! Many namespaces at once. As root, in namespaces the tests create and
//! remove. (The test kit running a plugin in-process: `tune_example.rs`.)

use cni_net::testing::TempNetns;
use cni_net::VethPair;

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
#[ignore = "needs root: scripts/test.sh runs it"]
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
                            master: None,
                        })
                        .unwrap();
                    let peer = container.socket().unwrap().link("eth0").unwrap();
                    assert_eq!(peer.name, "eth0");
                    nl.delete_link(end.index).unwrap();
                    assert!(container
                        .socket()
                        .unwrap()
                        .find_link("eth0")
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
