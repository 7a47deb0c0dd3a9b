//! Isolation is real: in a host namespace of the test with two bridges,
//! two container namespaces on `br-a` and one on `br-b`, our `firewall`
//! (each backend) with `ingressPolicy` `open`, `same-bridge` and
//! `isolated` on every pod, then pings between the containers: what the
//! policy must drop is dropped, the rest flows. Then every pod is deleted
//! as a runtime does (the firewall's DEL, then its port goes), and new
//! pods of an `open` network on the same bridges reach each other: the
//! old policy did not outlive its pods. Needs root.

use std::process::Command;

use serde_json::json;
use tests::{ip, output_of, plugin_bin_dir, run_plugin_in_netns, NetNs};

/// A container: its namespace, host-side port, bridge and address.
struct Pod {
    ns: NetNs,
    port: String,
    bridge: &'static str,
    address: String,
}

struct Lab {
    host: NetNs,
    pods: Vec<Pod>,
    /// Where our plugin keeps its records.
    data: tempfile::TempDir,
}

fn ok(args: &[&str]) {
    let out = ip(args);
    assert!(out.exit.success(), "ip {args:?}: {out:?}");
}

impl Lab {
    /// Bridges `br-a` (10.10.1.1/24) and `br-b` (10.10.2.1/24) in a host
    /// namespace that forwards; pods a1, a2 on `br-a`, b1 on `br-b`.
    fn new(tag: &str) -> Lab {
        let mut lab = Lab::bridges(tag);
        lab.attach(tag);
        lab
    }

    fn bridges(tag: &str) -> Lab {
        let host = NetNs::create(&format!("{tag}-h"));
        let h = host.name().to_string();
        for (bridge, gateway) in [("br-a", "10.10.1.1/24"), ("br-b", "10.10.2.1/24")] {
            ok(&["-n", &h, "link", "add", bridge, "type", "bridge"]);
            ok(&["-n", &h, "addr", "add", gateway, "dev", bridge]);
            ok(&["-n", &h, "link", "set", bridge, "up"]);
        }
        let sysctl = output_of(
            Command::new("ip").args([
                "netns",
                "exec",
                &h,
                "sysctl",
                "-qw",
                "net.ipv4.ip_forward=1",
            ]),
            b"",
        );
        assert!(sysctl.exit.success(), "{sysctl:?}");
        Lab {
            host,
            pods: Vec::new(),
            data: tempfile::tempdir().unwrap(),
        }
    }

    /// Pods a1 and a2 on `br-a`, b1 on `br-b`.
    fn attach(&mut self, tag: &str) {
        let h = self.host.name().to_string();
        for (name, bridge, address, gateway) in [
            ("a1", "br-a", "10.10.1.2", "10.10.1.1"),
            ("a2", "br-a", "10.10.1.3", "10.10.1.1"),
            ("b1", "br-b", "10.10.2.2", "10.10.2.1"),
        ] {
            let ns = NetNs::create(&format!("{tag}-{name}"));
            let port = format!("v{name}");
            ok(&[
                "-n",
                &h,
                "link",
                "add",
                &port,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                ns.name(),
            ]);
            ok(&["-n", &h, "link", "set", &port, "master", bridge, "up"]);
            ok(&[
                "-n",
                ns.name(),
                "addr",
                "add",
                &format!("{address}/24"),
                "dev",
                "eth0",
            ]);
            ok(&["-n", ns.name(), "link", "set", "eth0", "up"]);
            ok(&["-n", ns.name(), "route", "add", "default", "via", gateway]);
            self.pods.push(Pod {
                ns,
                port,
                bridge,
                address: address.into(),
            });
        }
    }

    /// Deletes each pod as a runtime does: the firewall's DEL, then the
    /// bridge plugin's, which deletes the veth pair (at once: a namespace
    /// is torn down by the kernel later), then the namespace.
    fn detach(&mut self, backend: &str, policy: &str) {
        while !self.pods.is_empty() {
            let pod = self.pods.remove(0);
            self.firewall_one(&pod, "DEL", backend, policy);
            ok(&["-n", self.host.name(), "link", "del", &pod.port]);
        }
    }

    /// Whether a1 reaches a2 (same bridge), a1 reaches b1 and b1 reaches
    /// a1 (across bridges).
    fn reachability(&self) -> (bool, bool, bool) {
        (
            self.reaches(A1, A2),
            self.reaches(A1, B1),
            self.reaches(B1, A1),
        )
    }

    /// Deletes each pod's port without any DEL, as when a node loses its
    /// pods without the runtime's teardown: their rules stay behind.
    fn vanish(&mut self) {
        for pod in self.pods.drain(..) {
            ok(&["-n", self.host.name(), "link", "del", &pod.port]);
        }
    }

    /// Our firewall's `command` for every pod.
    fn firewall(&self, command: &str, backend: &str, policy: &str) {
        for pod in &self.pods {
            self.firewall_one(pod, command, backend, policy);
        }
    }

    fn firewall_one(&self, pod: &Pod, command: &str, backend: &str, policy: &str) {
        let bin = plugin_bin_dir().join("firewall");
        {
            let conf = json!({
                "cniVersion": "1.0.0", "name": "fw-iso", "type": "firewall",
                "backend": backend, "ingressPolicy": policy, "dataDir": self.data.path(),
                "prevResult": {"cniVersion": "1.0.0",
                    "interfaces": [{"name": pod.bridge}, {"name": pod.port},
                        {"name": "eth0", "sandbox": pod.ns.path()}],
                    "ips": [{"address": format!("{}/24", pod.address), "interface": 2}]}
            });
            let netns = pod.ns.path();
            let env = [
                ("CNI_COMMAND", command),
                ("CNI_CONTAINERID", pod.ns.name()),
                ("CNI_NETNS", netns.as_str()),
                ("CNI_IFNAME", "eth0"),
                ("CNI_PATH", bin.parent().unwrap().to_str().unwrap()),
            ];
            let out =
                run_plugin_in_netns(self.host.name(), &bin, &env, conf.to_string().as_bytes());
            assert!(
                out.exit.success(),
                "{command} {backend} {policy}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// Whether pod `from` gets an answer to one ping of pod `to` within a
    /// second (a dropped ping is waited for that long).
    fn reaches(&self, from: usize, to: usize) -> bool {
        let out = output_of(
            Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    self.pods[from].ns.name(),
                    "ping",
                    "-c1",
                    "-W1",
                    "-q",
                ])
                .arg(&self.pods[to].address),
            b"",
        );
        out.exit.success()
    }
}

const A1: usize = 0;
const A2: usize = 1;
const B1: usize = 2;

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn each_policy_drops_what_it_must_and_lets_the_rest_through_under_both_backends() {
    // (policy, a1 -> a2, a1 -> b1, b1 -> a1)
    let cases = [
        ("open", true, true, true),
        ("same-bridge", true, false, false),
        ("isolated", false, false, false),
    ];
    for backend in ["iptables", "nftables"] {
        for (policy, same, a_to_b, b_to_a) in cases {
            let mut lab = Lab::new("fw-iso");
            lab.firewall("ADD", backend, policy);
            lab.firewall("CHECK", backend, policy);
            let seen = lab.reachability();
            assert_eq!(seen, (same, a_to_b, b_to_a), "{backend} {policy}");
            // A later open network on the same bridges is open.
            lab.detach(backend, policy);
            lab.attach("fw-iso2");
            lab.firewall("ADD", backend, "open");
            let seen = lab.reachability();
            assert_eq!(seen, (true, true, true), "{backend} open after {policy}");
        }
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_open_network_on_a_bridge_whose_isolated_pods_went_without_del_is_open() {
    for backend in ["iptables", "nftables"] {
        let mut lab = Lab::new("fw-left");
        lab.firewall("ADD", backend, "same-bridge");
        assert!(!lab.reaches(A1, B1), "{backend}: isolated first");
        // The pods go without DEL: the isolation rules stay. The first ADD
        // on the bridges, now without ports, lets them go.
        lab.vanish();
        lab.attach("fw-left2");
        lab.firewall("ADD", backend, "open");
        let seen = lab.reachability();
        assert_eq!(
            seen,
            (true, true, true),
            "{backend}: open after the leftovers"
        );
    }
}
