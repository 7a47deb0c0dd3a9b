//! Our `firewall` beside the reference one (Debian's
//! containernetworking-plugins 1.1.1, `/usr/lib/cni/firewall`), each run
//! as a process in a host namespace of the test holding a bridge: the
//! same iptables rules in both families for a dual-stack pod with
//! `ingressPolicy` `same-bridge` (1.1.1 has no `isolated`), and each
//! side's DEL removes every rule of the other's ADD for that pod; and the
//! isolation the reference leaves on a bridge after its last pod is not
//! inherited by a later network on that bridge. Needs root.

use std::process::Command;

use serde_json::json;
use tests::{
    ip, output_of, plugin_bin_dir, reference_plugin_dir, run_plugin_in_netns, NetNs, RawOutput,
};

const BRIDGE: &str = "br-fw";
const ADDRESSES: [&str; 2] = ["10.9.0.5", "fd00:9::5"];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Side {
    Ours,
    Reference,
}

/// A host namespace with a bridge, and where our plugin keeps its
/// records.
struct Host {
    ns: NetNs,
    data: tempfile::TempDir,
}

impl Host {
    fn new(tag: &str) -> Host {
        let ns = NetNs::create(tag);
        let out = ip(&["-n", ns.name(), "link", "add", BRIDGE, "type", "bridge"]);
        assert!(out.exit.success(), "{out:?}");
        Host {
            ns,
            data: tempfile::tempdir().unwrap(),
        }
    }

    /// `side`'s plugin run in the namespace, for the pod with
    /// `ingressPolicy` `same-bridge`.
    fn run(&self, side: Side, command: &str) -> RawOutput {
        self.run_with(side, command, "same-bridge")
    }

    /// `side`'s plugin run in the namespace, for the pod with `policy`.
    fn run_with(&self, side: Side, command: &str, policy: &str) -> RawOutput {
        let dir = match side {
            Side::Ours => plugin_bin_dir(),
            Side::Reference => reference_plugin_dir(),
        };
        let conf = json!({
            "cniVersion": "0.4.0", "name": "fw-vs", "type": "firewall",
            "backend": "iptables", "ingressPolicy": policy,
            "dataDir": self.data.path(),
            "prevResult": {"cniVersion": "0.4.0",
                "interfaces": [{"name": BRIDGE}, {"name": "veth-fw"},
                    {"name": "eth0", "sandbox": "/var/run/netns/none"}],
                "ips": [
                    {"version": "4", "address": format!("{}/24", ADDRESSES[0]), "interface": 2},
                    {"version": "6", "address": format!("{}/64", ADDRESSES[1]), "interface": 2}]}
        });
        let bin = dir.join("firewall");
        let env = [
            ("CNI_COMMAND", command),
            ("CNI_CONTAINERID", "fw-vs-reference"),
            ("CNI_NETNS", "/var/run/netns/none"),
            ("CNI_IFNAME", "eth0"),
            ("CNI_PATH", dir.to_str().unwrap()),
        ];
        let out = run_plugin_in_netns(self.ns.name(), &bin, &env, conf.to_string().as_bytes());
        assert!(
            out.exit.success(),
            "{side:?} {command}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Both families' `filter` tables as `iptables-save` prints them,
    /// without its comment lines and counters.
    fn filter(&self) -> String {
        let mut text = String::new();
        for save in ["iptables-save", "ip6tables-save"] {
            let out = output_of(
                Command::new("ip").args(["netns", "exec", self.ns.name(), save, "-t", "filter"]),
                b"",
            );
            assert!(out.exit.success(), "{save}: {out:?}");
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                if !line.starts_with('#') {
                    text.push_str(line.split(" [").next().unwrap_or(line));
                    text.push('\n');
                }
            }
        }
        text
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn ours_writes_the_references_iptables_rules_in_both_families() {
    let reference = Host::new("fw-ref");
    reference.run(Side::Reference, "ADD");
    let ours = Host::new("fw-ours");
    ours.run(Side::Ours, "ADD");
    // 1.1.1 knows only `same-bridge`; v1.9, which we follow, names the
    // rules both policies share after both.
    let ours_as_1_1_1 = ours.filter().replace(
        "(ingressPolicy: same-bridge|isolated)",
        "(ingressPolicy: same-bridge)",
    );
    assert_eq!(ours_as_1_1_1, reference.filter());
    // Each side's CHECK accepts the other's rules.
    ours.run(Side::Reference, "CHECK");
    reference.run(Side::Ours, "CHECK");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn either_del_removes_every_rule_the_others_add_made_for_the_pod() {
    for (adder, deleter) in [(Side::Reference, Side::Ours), (Side::Ours, Side::Reference)] {
        let host = Host::new("fw-cross");
        host.run(adder, "ADD");
        assert!(host.filter().contains(ADDRESSES[1]), "{}", host.filter());
        host.run(deleter, "DEL");
        let left = host.filter();
        for address in ADDRESSES {
            assert!(
                !left.contains(address),
                "{adder:?} ADD, {deleter:?} DEL:\n{left}"
            );
        }
        if deleter == Side::Ours {
            // The bridge has no container left: its isolation goes too.
            assert!(!left.contains(BRIDGE), "{left}");
        }
        // A second DEL finds nothing and succeeds.
        host.run(deleter, "DEL");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_later_open_network_on_a_bridge_does_not_inherit_the_isolation_the_reference_left() {
    let host = Host::new("fw-trap");
    // The pod's port on the bridge, as the bridge plugin leaves it.
    for args in [
        vec![
            "link",
            "add",
            "veth-fw",
            "type",
            "veth",
            "peer",
            "name",
            "veth-fw-p",
        ],
        vec!["link", "set", "veth-fw", "master", BRIDGE],
    ] {
        let out = ip(&[&["-n", host.ns.name()][..], &args].concat());
        assert!(out.exit.success(), "{args:?}: {out:?}");
    }
    host.run(Side::Reference, "ADD");
    host.run(Side::Reference, "DEL");
    assert!(host.filter().contains(BRIDGE), "the reference keeps it");
    // The next network's first pod, on the same bridge and port name.
    host.run_with(Side::Ours, "ADD", "open");
    let after = host.filter();
    assert!(!after.contains(BRIDGE), "{after}");
    assert!(after.contains(ADDRESSES[0]), "{after}");
    host.run_with(Side::Ours, "DEL", "open");
}
