//! The lists a kind node and a containerd host run for every pod, with
//! only our plugins on `CNI_PATH`, through our runtime (`cnitool`) and
//! through the reference runtime library (Debian's libcni, `cnidriver`),
//! on both packet filter backends, IPv4 and IPv6:
//!
//! - kind's list, as kindnet writes it: `ptp` (`ipMasq` false, `mtu`
//!   1500) with `host-local`, then `portmap` with the `portMappings`
//!   capability, cniVersion 0.3.1;
//! - containerd's default list, `10-containerd-net.conflist` as
//!   containerd's `script/setup/install-cni` writes it (and its
//!   getting-started guide shows it): `bridge` `cni0` with `isGateway`,
//!   `ipMasq` and `promiscMode`, `host-local` over `10.88.0.0/16`, then
//!   `portmap`, cniVersion 1.0.0 (its IPv4 and IPv6 ranges one at a
//!   time here, so each family's checks stand alone).
//!
//! - SPEC-1.0.0's example list, "dbnet": `bridge` with `isGateway` and
//!   `host-local`, `tuning` with the `mac` capability and a sysctl,
//!   `portmap`, cniVersion 1.0.0.
//!
//! Each runs in a host namespace of the test's own (plugins wrapped with
//! `ip netns exec`), with a client namespace routed through the host.
//! Checked: ADD; a client reaches the host port on the host's address and
//! gets the container's port; so do the host (on its own address, and on
//! 127.0.0.1 in IPv4) and the container itself (through the host port; the
//! host namespace does not pass bridged frames to iptables, see
//! `without_bridge_netfilter`); the container's outbound connection is
//! masqueraded to the host's address exactly when the list asks
//! (`ipMasq`); CHECK passes where the version has it; DEL leaves no rule
//! naming the container in either backend's tables, and a second DEL
//! succeeds. Needs root.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::time::Duration;

use cni_net::Netns;
use serde_json::{json, Value};
use tests::sandbox::NetDirs;
use tests::{in_host_namespace, ip, plugin_bin_dir, Driver, NetNs};

type AnyError = Box<dyn std::error::Error + Send + Sync>;

/// An address family's part: the host's and the client's addresses on
/// their link, the default route, forwarding.
#[derive(Clone, Copy, Debug)]
struct Family {
    host: &'static str,
    client: &'static str,
    prefix: u8,
    any: &'static str,
    default_route: &'static str,
    forwarding: &'static str,
}

const V4: Family = Family {
    host: "192.168.77.1",
    client: "192.168.77.2",
    prefix: 24,
    any: "0.0.0.0",
    default_route: "0.0.0.0/0",
    forwarding: "net.ipv4.ip_forward=1",
};

const V6: Family = Family {
    host: "fd77::1",
    client: "fd77::2",
    prefix: 64,
    any: "::",
    default_route: "::/0",
    forwarding: "net.ipv6.conf.all.forwarding=1",
};

impl Family {
    fn socket(&self, addr: &str, port: u16) -> SocketAddr {
        SocketAddr::new(addr.parse().unwrap(), port)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Via {
    Cnitool,
    Libcni,
}

/// A list: its configuration (for a data directory and a backend),
/// whether it masquerades outbound traffic, whether its version has CHECK.
struct List {
    name: &'static str,
    conf: fn(ipam_dir: &str, backend: Option<&str>, family: Family) -> Value,
    masquerades: bool,
    checks: bool,
    /// The MAC address the list's `tuning` sets from the `mac` capability.
    mac: Option<&'static str>,
}

fn portmap(backend: Option<&str>) -> Value {
    let mut p = json!({"type": "portmap", "capabilities": {"portMappings": true}});
    if let Some(backend) = backend {
        p["backend"] = json!(backend);
    }
    p
}

fn kindnet(ipam_dir: &str, backend: Option<&str>, family: Family) -> Value {
    let subnet = if family.prefix == 24 {
        "10.244.0.0/24"
    } else {
        "fd00:10:244::/64"
    };
    json!({
        "cniVersion": "0.3.1",
        "name": "kindnet",
        "plugins": [{
            "type": "ptp",
            "ipMasq": false,
            "ipam": {"type": "host-local", "dataDir": ipam_dir,
                     "routes": [{"dst": family.default_route}],
                     "ranges": [[{"subnet": subnet}]]},
            "mtu": 1500
        }, portmap(backend)]
    })
}

fn containerd_net(ipam_dir: &str, backend: Option<&str>, family: Family) -> Value {
    let subnet = if family.prefix == 24 {
        "10.88.0.0/16"
    } else {
        "2001:4860:4860::/64"
    };
    json!({
        "cniVersion": "1.0.0",
        "name": "containerd-net",
        "plugins": [{
            "type": "bridge",
            "bridge": "cni0",
            "isGateway": true,
            "ipMasq": true,
            "promiscMode": true,
            "ipam": {"type": "host-local", "dataDir": ipam_dir,
                     "ranges": [[{"subnet": subnet}]],
                     "routes": [{"dst": family.default_route}]}
        }, portmap(backend)]
    })
}

const KIND: List = List {
    name: "kindnet",
    conf: kindnet,
    masquerades: false,
    checks: false,
    mac: None,
};

const CONTAINERD: List = List {
    name: "containerd-net",
    conf: containerd_net,
    masquerades: true,
    checks: true,
    mac: None,
};

fn dbnet(ipam_dir: &str, backend: Option<&str>, family: Family) -> Value {
    let (subnet, gateway) = if family.prefix == 24 {
        ("10.1.0.0/16", "10.1.0.1")
    } else {
        ("fd00:db::/64", "fd00:db::1")
    };
    json!({
        "cniVersion": "1.0.0",
        "name": "dbnet",
        "plugins": [{
            "type": "bridge",
            "bridge": "cni0",
            "keyA": ["some more", "plugin specific", "configuration"],
            "ipam": {"type": "host-local", "dataDir": ipam_dir,
                     "subnet": subnet, "gateway": gateway,
                     "routes": [{"dst": family.default_route}]},
            "dns": {"nameservers": [gateway]},
            "isGateway": true
        }, {
            "type": "tuning",
            "capabilities": {"mac": true},
            "sysctl": {"net.core.somaxconn": "500"}
        }, portmap(backend)]
    })
}

const DBNET: List = List {
    name: "dbnet",
    conf: dbnet,
    masquerades: false,
    checks: true,
    mac: Some("c2:00:00:00:00:42"),
};

/// The host namespace as a host without `br_netfilter`: bridged frames are
/// not handed to iptables/ip6tables. With `bridge-nf-call-iptables` on (as
/// on this machine and on Kubernetes nodes) the DNAT of a container's
/// packet to its own host port happens on the bridge, and the frame must
/// leave by the port it came in: that needs the bridge's `hairpinMode`,
/// which neither bridge list sets (the kernel's rule, whoever wrote the
/// rules). The sysctls are per namespace; absent when the module is not
/// loaded, which is the same thing.
fn without_bridge_netfilter(host: &NetNs) {
    for family in ["iptables", "ip6tables"] {
        let key = format!("net.bridge.bridge-nf-call-{family}");
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        let present = exec_in(
            host,
            "sh",
            &["-c", &format!("test -e {path} && echo yes || true")],
        );
        if present.trim() == "yes" {
            exec_in(host, "sysctl", &["-qw", &format!("{key}=0")]);
        }
    }
}

fn exec_in(ns: &NetNs, program: &str, args: &[&str]) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", ns.name(), program])
        .args(args)
        .output()
        .expect("run ip netns exec");
    assert!(out.status.success(), "{program} {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Everything either backend holds in the host namespace, as text.
fn rulesets(host: &NetNs) -> String {
    let mut text = exec_in(host, "iptables-save", &[]);
    text.push_str(&exec_in(host, "nft", &["list", "ruleset"]));
    text
}

/// What a connection from `from` to `to` reads.
fn fetch(from: &str, to: SocketAddr) -> Result<String, AnyError> {
    Netns::open(from)?.run(move |_| -> Result<String, AnyError> {
        let mut stream = TcpStream::connect_timeout(&to, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        let mut text = String::new();
        stream.read_to_string(&mut text)?;
        Ok(text)
    })
}

/// A server in `ns` on `addr` that answers each connection with the
/// address it came from; listening once this returns.
fn serve_peer_address(ns: &str, addr: SocketAddr) {
    let listener = Netns::open(ns)
        .expect("open the namespace")
        .run(move |_| -> Result<TcpListener, AnyError> { Ok(TcpListener::bind(addr)?) })
        .expect("listen");
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let peer = stream.peer_addr().map(|a| a.ip().to_string());
            let _ = stream.write_all(peer.unwrap_or_default().as_bytes());
        }
    });
}

/// Runs `command` of the list through `via`, with the port mapping as
/// capability arguments.
fn run(
    dirs: &NetDirs,
    cni_path: &std::path::Path,
    via: Via,
    command: &str,
    list: &List,
    ctr: &NetNs,
    cid: &str,
) -> Value {
    let mut caps =
        json!({"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]});
    if let Some(mac) = list.mac {
        caps["mac"] = json!(mac);
    }
    match via {
        Via::Cnitool => {
            dirs.cnitool(cid)
                .with_cap_args(caps)
                .run(&[command, list.name, &ctr.path()])
        }
        Via::Libcni => {
            let cache = cni_path.with_file_name(format!("{cid}-libcni-cache"));
            let d = Driver::new(vec![cni_path.to_path_buf()], cache)
                .with_container_id(cid)
                .with_netns(&ctr.path())
                .with_cap_args(caps);
            let conflist = dirs.conflist(list.name);
            match command {
                "add" => d.add(&conflist),
                "check" => d.check(&conflist),
                "del" => d.del(&conflist),
                other => panic!("{other}"),
            }
        }
    }
}

fn a_pod_on_the_list_is_reachable_and_leaves_nothing(
    list: &List,
    via: Via,
    backend: Option<&str>,
    family: Family,
) {
    let tag = format!(
        "{}-{:?}-{}-{}",
        &list.name[..4],
        via,
        backend.unwrap_or("default"),
        family.prefix
    )
    .to_lowercase();
    let host = NetNs::create(&format!("pl-h-{tag}"));
    let ctr = NetNs::create(&format!("pl-c-{tag}"));
    let client = NetNs::create(&format!("pl-x-{tag}"));
    // The client's link to the host, routed through it.
    let (h, x) = (host.name(), client.name());
    let host_addr = format!("{}/{}", family.host, family.prefix);
    let client_addr = format!("{}/{}", family.client, family.prefix);
    for args in [
        vec![
            "link", "add", "plx0", "netns", h, "type", "veth", "peer", "name", "eth0", "netns", x,
        ],
        vec!["-n", h, "addr", "add", &host_addr, "dev", "plx0", "nodad"],
        vec!["-n", x, "addr", "add", &client_addr, "dev", "eth0", "nodad"],
        vec!["-n", h, "link", "set", "plx0", "up"],
        vec!["-n", x, "link", "set", "eth0", "up"],
        vec!["-n", h, "link", "set", "lo", "up"],
        vec![
            "-n",
            x,
            "route",
            "add",
            family.default_route,
            "via",
            family.host,
        ],
    ] {
        assert!(ip(&args).success(), "ip {args:?}");
    }
    exec_in(&host, "sysctl", &["-qw", family.forwarding]);
    without_bridge_netfilter(&host);

    let scratch = tempfile::tempdir().expect("a temporary directory");
    let wrappers = scratch.path().join("bin");
    std::fs::create_dir(&wrappers).expect("a directory for the wrappers");
    for name in ["bridge", "ptp", "host-local", "tuning", "portmap"] {
        in_host_namespace(&wrappers, &plugin_bin_dir().join(name), &host);
    }
    let dirs = NetDirs::new("pod-lists-", vec![wrappers.clone()]);
    dirs.reset(&(list.conf)(&dirs.ipam(), backend, family));
    let cid = format!("pod-lists-{}-{tag}", std::process::id());
    let case = format!("{} via {via:?}, backend {backend:?}, {family:?}", list.name);

    let add = run(&dirs, &wrappers, via, "add", list, &ctr, &cid);
    assert_eq!(add["ok"], true, "{case}: {add}");
    let address = add["result"]["ips"][0]["address"]
        .as_str()
        .expect("an address");
    let container_ip = address.split('/').next().unwrap_or_default().to_string();

    // Inbound: the client reaches the host port and gets the container's.
    serve_peer_address(&ctr.path(), family.socket(family.any, 80));
    assert_eq!(
        fetch(&client.path(), family.socket(family.host, 8080)).expect("the host port answers"),
        family.client,
        "{case}: the container sees the client"
    );
    // Outbound: the far side sees the host's address when the list
    // masquerades, the container's otherwise.
    serve_peer_address(&client.path(), family.socket(family.client, 9000));
    let seen = fetch(&ctr.path(), family.socket(family.client, 9000)).expect("the client answers");
    let expected = if list.masquerades {
        family.host
    } else {
        container_ip.as_str()
    };
    assert_eq!(seen, expected, "{case}: outbound source");
    // The host, on its own address and (IPv4) on 127.0.0.1, and the
    // container itself, through the host port.
    let mut from_host = vec![family.socket(family.host, 8080)];
    if family.prefix == 24 {
        from_host.push(family.socket("127.0.0.1", 8080));
    }
    for to in from_host {
        let answer = fetch(&host.path(), to);
        assert!(answer.is_ok(), "{case}: the host to {to}: {answer:?}");
    }
    let answer = fetch(&ctr.path(), family.socket(family.host, 8080));
    assert!(
        answer.is_ok(),
        "{case}: the container to itself: {answer:?}"
    );
    if let Some(mac) = list.mac {
        let eth0 = ctr.link("eth0").expect("eth0 in the container");
        assert_eq!(eth0["address"], mac, "{case}");
        let somaxconn = exec_in(&ctr, "sysctl", &["-n", "net.core.somaxconn"]);
        assert_eq!(somaxconn.trim(), "500", "{case}");
    }

    if list.checks {
        let check = run(&dirs, &wrappers, via, "check", list, &ctr, &cid);
        assert_eq!(check["ok"], true, "{case}: {check}");
    }
    for round in 0..2 {
        let del = run(&dirs, &wrappers, via, "del", list, &ctr, &cid);
        assert_eq!(del["ok"], true, "{case}: DEL {round}: {del}");
        let left = rulesets(&host);
        assert!(
            !left.contains(&cid) && !left.contains("CNI-DN-") && !left.contains(&container_ip),
            "{case}: after DEL {round}: {left}"
        );
    }
    assert!(ctr.link("eth0").is_none(), "{case}");
    assert!(dirs.reservations(list.name).is_empty(), "{case}");
}

fn every_driver_and_backend(list: &List) {
    for family in [V4, V6] {
        for via in [Via::Cnitool, Via::Libcni] {
            for backend in [None, Some("nftables")] {
                a_pod_on_the_list_is_reachable_and_leaves_nothing(list, via, backend, family);
            }
        }
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn kinds_list_maps_ports_without_masquerading_through_both_runtimes_and_backends() {
    every_driver_and_backend(&KIND);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn containerds_default_list_maps_ports_and_masquerades_through_both_runtimes_and_backends() {
    every_driver_and_backend(&CONTAINERD);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn the_spec_dbnet_list_maps_ports_sets_mac_and_sysctl_through_both_runtimes_and_backends() {
    every_driver_and_backend(&DBNET);
}
