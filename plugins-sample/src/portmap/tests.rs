//! portmap in-process: configuration errors (no root), then, as root in
//! namespaces of the tests' own, the layouts, real connections through
//! the mappings, DEL, CHECK and GC.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::time::Duration;

use cni_net::testing::TempNetns;
use cni_skel::{Outcome, TestRequest};
use cni_types::Code;
use cni_version::PluginInfo;
use serde_json::{json, Value};

use super::Portmap;

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// A configuration: one TCP mapping 8080->80 for a container at
/// 10.88.0.5/16 on eth0, iptables, with `patch`'s top-level keys on top.
fn conf(patch: Value) -> Value {
    let mut c = json!({
        "cniVersion": "1.0.0", "name": "pmtest", "type": "portmap", "backend": "iptables",
        "runtimeConfig": {"portMappings": [
            {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}
        ]},
        "prevResult": {"cniVersion": "1.0.0",
            "interfaces": [{"name": "eth0", "sandbox": "/var/run/netns/x"}],
            "ips": [{"address": "10.88.0.5/16", "interface": 0}]}
    });
    for (key, value) in patch.as_object().unwrap() {
        c[key] = value.clone();
    }
    c
}

fn mappings(list: Value) -> Value {
    json!({"runtimeConfig": {"portMappings": list}})
}

fn request(command: &str, id: &str, conf: &Value) -> TestRequest {
    TestRequest::new(command)
        .env("CNI_CONTAINERID", id)
        .env("CNI_NETNS", "/var/run/netns/x")
        .env("CNI_IFNAME", "eth0")
        .stdin(conf.to_string())
}

fn run(command: &str, id: &str, conf: &Value) -> Outcome {
    request(command, id, conf).run(&Portmap, &PluginInfo::all())
}

#[test]
fn bad_input_is_refused_naming_the_field_before_anything_changes() {
    let port = |field: &str, value: Value| {
        let mut m = json!({"hostPort": 8080, "containerPort": 80, "protocol": "tcp"});
        m[field] = value;
        mappings(json!([m]))
    };
    let many: Vec<Value> = (0..10_000)
        .map(|i| json!({"hostPort": 1 + i % 60000, "containerPort": 80, "protocol": "tcp"}))
        .collect();
    let cases = [
        (
            port("hostPort", json!(0)),
            "invalid runtimeConfig.portMappings[0].hostPort",
        ),
        (
            port("hostPort", json!(65536)),
            "invalid runtimeConfig.portMappings[0].hostPort",
        ),
        (
            port("hostPort", json!(-1)),
            "invalid runtimeConfig.portMappings[0].hostPort",
        ),
        (
            port("containerPort", json!(0)),
            "invalid runtimeConfig.portMappings[0].containerPort",
        ),
        (
            port("protocol", json!("icmp")),
            "invalid runtimeConfig.portMappings[0].protocol",
        ),
        (
            port("protocol", json!("")),
            "invalid runtimeConfig.portMappings[0].protocol",
        ),
        (
            port("hostIP", json!("not-an-ip")),
            "invalid runtimeConfig.portMappings[0].hostIP",
        ),
        (mappings(json!(many)), "invalid runtimeConfig.portMappings"),
        (json!({"markMasqBit": 32}), "invalid markMasqBit"),
        (json!({"markMasqBit": -1}), "invalid markMasqBit"),
        (
            json!({"markMasqBit": 13, "externalSetMarkChain": "KUBE-MARK-MASQ"}),
            "invalid markMasqBit",
        ),
        (
            json!({"externalSetMarkChain": "a b"}),
            "invalid externalSetMarkChain",
        ),
        (json!({"backend": "nft"}), "invalid backend"),
        (
            json!({"conditionsV4": ["-p", "tcp"]}),
            "invalid conditionsV4",
        ),
        (
            json!({"conditionsV6": ["-j", "ACCEPT"]}),
            "invalid conditionsV6",
        ),
        (
            json!({"backend": "nftables", "externalSetMarkChain": "KUBE-MARK-MASQ"}),
            "invalid externalSetMarkChain",
        ),
        (
            json!({"backend": "iptables", "conditionsV4": ["ip saddr 10.0.0.1"]}),
            "invalid conditionsV4",
        ),
    ];
    for (patch, msg) in cases {
        let out = run("ADD", "ctr-1", &conf(patch.clone()));
        let err = out.error().unwrap_or_else(|| panic!("{patch}: accepted"));
        assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG, "{patch}: {err:?}");
        assert_eq!(err.msg, msg, "{patch}: {err:?}");
    }
}

#[test]
fn add_without_a_previous_result_is_refused_as_portmap_is_chained() {
    let mut c = conf(json!({}));
    c.as_object_mut().unwrap().remove("prevResult");
    let err = run("ADD", "ctr-1", &c).error().expect("refused");
    assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG);
    assert!(err.msg.contains("chained"), "{err:?}");
}

#[test]
fn add_without_mappings_passes_the_previous_result_through_and_changes_nothing() {
    let out = run("ADD", "ctr-1", &conf(json!({"runtimeConfig": {}})));
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.json()["ips"][0]["address"], "10.88.0.5/16");
    assert_eq!(
        run("DEL", "ctr-1", &conf(json!({"runtimeConfig": {}}))).exit_code,
        0
    );
}

#[test]
fn the_container_address_is_the_first_of_each_family_on_the_sandbox_interface() {
    use super::config::container_addresses;
    let text = json!({
        "cniVersion": "1.0.0",
        "interfaces": [{"name": "veth1"}, {"name": "eth0", "sandbox": "/x"}, {"name": "eth1", "sandbox": "/x"}],
        "ips": [
            {"address": "10.0.0.9/24", "interface": 0},
            {"address": "10.0.1.9/24", "interface": 2},
            {"address": "10.88.0.5/16", "interface": 1},
            {"address": "fd00::5/64"},
            {"address": "10.88.0.6/16", "interface": 1}
        ]
    })
    .to_string();
    let result = cni_types::CniResult::parse("1.0.0", text.as_bytes())
        .unwrap()
        .to_current()
        .unwrap();
    let (v4, v6) = container_addresses(&result, "eth0");
    assert_eq!(v4.unwrap().to_string(), "10.88.0.5/16");
    assert_eq!(v6.unwrap().to_string(), "fd00::5/64");
}

// What follows needs root: namespaces of the tests' own.

/// `ip ARGS`, which must succeed.
fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `PROGRAM ARGS` inside `netns`; its stdout.
fn exec_in(netns: &TempNetns, program: &str, args: &[&str]) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", netns.name(), program])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A host with a container and a client namespace, each on a veth of
/// its own, routed through the host, in one family.
struct Node {
    host: TempNetns,
    ctr: TempNetns,
    client: TempNetns,
    ipv6: bool,
}

impl Node {
    fn new(ipv6: bool) -> Node {
        let node = Node {
            host: TempNetns::new("pm-host").unwrap(),
            ctr: TempNetns::new("pm-ctr").unwrap(),
            client: TempNetns::new("pm-cli").unwrap(),
            ipv6,
        };
        node.host.add_veth("hc0", "eth0", Some(&node.ctr)).unwrap();
        node.host
            .add_veth("hx0", "eth0", Some(&node.client))
            .unwrap();
        let (h, c, x) = (node.host.name(), node.ctr.name(), node.client.name());
        for ns in [h, c, x] {
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        for (ns, dev, addr) in [
            (h, "hc0", node.addr(1, 1)),
            (c, "eth0", node.addr(1, 2)),
            (h, "hx0", node.addr(2, 1)),
            (x, "eth0", node.addr(2, 2)),
        ] {
            let mut args = vec!["-n", ns, "addr", "add", &addr, "dev", dev];
            if ipv6 {
                args.push("nodad");
            }
            ip(&args);
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
        let family = if ipv6 { "-6" } else { "-4" };
        for (ns, gw) in [(c, node.ip(1, 1)), (x, node.ip(2, 1))] {
            ip(&[family, "-n", ns, "route", "add", "default", "via", &gw]);
        }
        let forwarding = if ipv6 {
            "net.ipv6.conf.all.forwarding"
        } else {
            "net.ipv4.ip_forward"
        };
        node.host.set_sysctl(forwarding, "1").unwrap();
        node
    }

    /// The address of host `n` on subnet `subnet`, with its prefix.
    fn addr(&self, subnet: u8, n: u8) -> String {
        let len = if self.ipv6 { 64 } else { 24 };
        format!("{}/{len}", self.ip(subnet, n))
    }

    fn ip(&self, subnet: u8, n: u8) -> String {
        if self.ipv6 {
            format!("fd00:{subnet}::{n}")
        } else {
            format!("10.200.{subnet}.{n}")
        }
    }

    fn socket(&self, subnet: u8, n: u8, port: u16) -> SocketAddr {
        SocketAddr::new(self.ip(subnet, n).parse().unwrap(), port)
    }

    /// The configuration for the container, with `patch` on top.
    fn conf(&self, backend: &str, patch: Value) -> Value {
        let mut c = conf(json!({
            "backend": backend,
            "prevResult": {"cniVersion": "1.0.0",
                "interfaces": [{"name": "eth0", "sandbox": self.ctr.path()}],
                "ips": [{"address": self.addr(1, 2), "interface": 0}]}
        }));
        for (key, value) in patch.as_object().unwrap() {
            c[key] = value.clone();
        }
        c
    }

    /// Runs a command of the plugin on the host.
    fn run(&self, command: &str, conf: &Value) -> Outcome {
        let id = self.ctr.name().to_string();
        let conf = conf.clone();
        self.host
            .run(move |_| Ok::<_, cni_net::NetError>(run(command, &id, &conf)))
            .unwrap()
    }

    /// A server in the container on `port` answering each connection
    /// with "pong"; ready once this returns (the socket listens).
    fn serve(&self, port: u16) {
        let any = if self.ipv6 { "[::]" } else { "0.0.0.0" };
        let listener = self
            .ctr
            .run(move |_| -> TestResult<TcpListener> {
                Ok(TcpListener::bind(format!("{any}:{port}"))?)
            })
            .unwrap();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let _ = stream.write_all(b"pong");
            }
        });
    }

    /// What a connection from `from` to `to` reads.
    fn fetch(from: &TempNetns, to: SocketAddr) -> TestResult<String> {
        from.run(move |_| -> TestResult<String> {
            let mut stream = TcpStream::connect_timeout(&to, Duration::from_secs(5))?;
            stream.set_read_timeout(Some(Duration::from_secs(5)))?;
            let mut text = String::new();
            stream.read_to_string(&mut text)?;
            Ok(text)
        })
    }

    /// Everything in the host's packet filter, as text.
    fn ruleset(&self, backend: &str) -> String {
        match backend {
            "nftables" => exec_in(&self.host, "nft", &["list", "ruleset"]),
            _ => {
                let save = if self.ipv6 {
                    "ip6tables-save"
                } else {
                    "iptables-save"
                };
                exec_in(&self.host, save, &["-t", "nat"])
            }
        }
    }
}

/// ADD, traffic from another namespace and from the host itself, CHECK,
/// DEL twice, nothing left.
fn mapped_traffic_reaches_the_container(backend: &str, ipv6: bool) {
    let node = Node::new(ipv6);
    node.serve(80);
    let c = node.conf(backend, json!({}));
    let out = node.run("ADD", &c);
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.json()["ips"][0]["address"], node.addr(1, 2));

    let host_address = node.socket(2, 1, 8080);
    assert_eq!(Node::fetch(&node.client, host_address).unwrap(), "pong");
    if !ipv6 {
        let localhost = "127.0.0.1:8080".parse().unwrap();
        assert_eq!(Node::fetch(&node.host, localhost).unwrap(), "pong");
        assert_eq!(
            node.host
                .sysctl("net.ipv4.conf.hc0.route_localnet")
                .unwrap(),
            "1"
        );
    }
    assert_eq!(node.run("CHECK", &c).exit_code, 0);

    let id = node.ctr.name();
    let chain = super::iptables::dnat_chain("pmtest", id);
    for _ in 0..2 {
        let out = node.run("DEL", &c);
        assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
        let left = node.ruleset(backend);
        assert!(!left.contains(id) && !left.contains(&chain), "{left}");
    }
    assert!(
        Node::fetch(&node.client, host_address).is_err(),
        "unmapped after DEL"
    );
    let check = node
        .run("CHECK", &c)
        .error()
        .expect("CHECK fails once removed");
    assert_eq!(check.code, Code::INTERNAL);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn iptables_ipv4_mapped_traffic_reaches_the_container() {
    mapped_traffic_reaches_the_container("iptables", false);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn iptables_ipv6_mapped_traffic_reaches_the_container() {
    mapped_traffic_reaches_the_container("iptables", true);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn nftables_ipv4_mapped_traffic_reaches_the_container() {
    mapped_traffic_reaches_the_container("nftables", false);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn nftables_ipv6_mapped_traffic_reaches_the_container() {
    mapped_traffic_reaches_the_container("nftables", true);
}
