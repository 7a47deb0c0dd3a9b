//! Debian's kernel has the link kinds this machine's kernel lacks: inside
//! fresh namespaces of the guest, a dummy link, a vlan on a veth (carrying
//! traffic between two namespaces), an ipvlan and a vrf with a port.
//!
//! The proof that `scripts/vm/run-tests.sh` works: a `vm_*` test (see
//! tests/Cargo.toml and docs/vm.md), built on the host and run as root
//! under Debian's kernel. cni-net creates what it has a kind for (namespaces,
//! veths, dummies) and reads every link back; vlan, ipvlan and vrf links are
//! made with `ip link add` here, so the kernel is checked apart from cni-net
//! (the vlan, ipvlan and vrf plugins' own tests in tests/vm/ use cni-net).

use std::process::Command;

use cni_net::testing::TempNetns;
use cni_net::{Link, LinkKind};
use tests::output_of;

/// Runs `ip -n NS ARGS` and fails the test, with ip's stderr, when it fails.
fn ip(ns: &TempNetns, args: &[&str]) {
    let out = output_of(Command::new("ip").arg("-n").arg(ns.name()).args(args), b"");
    assert!(
        out.success(),
        "ip -n {} {} failed: {}",
        ns.name(),
        args.join(" "),
        out.excerpts(2000)
    );
}

/// The link named `name` in `ns`, as cni-net reads it from the kernel.
fn link(ns: &TempNetns, name: &str) -> Link {
    ns.socket()
        .and_then(|mut s| s.link(name))
        .unwrap_or_else(|e| panic!("link {name} in {}: {e}", ns.name()))
}

#[test]
fn cni_net_creates_a_dummy_link() {
    let ns = TempNetns::new("vm-dummy").unwrap();
    let made = ns.add_dummy("dummy0").unwrap();
    let seen = link(&ns, "dummy0");
    assert_eq!(seen.index, made.index);
    assert_eq!(seen.kind, Some(LinkKind::Dummy));
}

#[test]
fn a_vlan_on_a_veth_carries_traffic_between_two_namespaces() {
    let left = TempNetns::new("vm-vlan-l").unwrap();
    let right = TempNetns::new("vm-vlan-r").unwrap();
    let veth = left.add_veth("eth0", "eth0", Some(&right)).unwrap();
    for (ns, addr) in [(&left, "192.0.2.1/24"), (&right, "192.0.2.2/24")] {
        ip(
            ns,
            &[
                "link", "add", "link", "eth0", "name", "eth0.100", "type", "vlan", "id", "100",
            ],
        );
        ip(ns, &["addr", "add", addr, "dev", "eth0.100"]);
        ip(ns, &["link", "set", "eth0", "up"]);
        ip(ns, &["link", "set", "eth0.100", "up"]);
    }
    let vlan = link(&left, "eth0.100");
    assert_eq!(vlan.kind, Some(LinkKind::Vlan));
    assert_eq!(vlan.parent, Some(veth.index));
    let ping = output_of(
        Command::new("ip").args([
            "netns",
            "exec",
            left.name(),
            "ping",
            "-c",
            "1",
            "-W",
            "10",
            "192.0.2.2",
        ]),
        b"",
    );
    assert!(
        ping.success(),
        "ping over the vlan failed: {}",
        ping.excerpts(2000)
    );
}

#[test]
fn an_ipvlan_is_created_on_its_parent() {
    let ns = TempNetns::new("vm-ipvlan").unwrap();
    let parent = ns.add_dummy("parent0").unwrap();
    ip(
        &ns,
        &[
            "link", "add", "link", "parent0", "name", "ipvl0", "type", "ipvlan", "mode", "l2",
        ],
    );
    let ipvlan = link(&ns, "ipvl0");
    assert_eq!(ipvlan.kind, Some(LinkKind::Ipvlan));
    assert_eq!(ipvlan.parent, Some(parent.index));
}

#[test]
fn a_vrf_is_created_and_takes_a_port() {
    let ns = TempNetns::new("vm-vrf").unwrap();
    ns.add_dummy("port0").unwrap();
    ip(&ns, &["link", "add", "vrf0", "type", "vrf", "table", "100"]);
    ip(&ns, &["link", "set", "port0", "master", "vrf0"]);
    let vrf = link(&ns, "vrf0");
    assert_eq!(vrf.kind, Some(LinkKind::Other("vrf".into())));
    assert_eq!(link(&ns, "port0").master, Some(vrf.index));
}
