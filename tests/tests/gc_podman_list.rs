//! GC as a runtime sends it through libcni, over Podman's default list
//! (`bridge` with `isGateway`, `ipMasq` and `hairpinMode` over
//! `host-local`, `portmap`, `firewall`, `tuning`) with `bandwidth` added,
//! with only our plugins on `CNI_PATH`, under both masquerading and
//! port-mapping backends:
//!
//! - CRI-O's GC at start: `null` for a network without a live pod (libcni
//!   marshals the empty list so), the live pods' list for a busy one. The
//!   dead pods' namespaces are gone and the runtime's libcni cache too (a
//!   restart of the node), so the plugins' own GC is what releases: every
//!   reservation, masquerading rule, port mapping, firewall rule and
//!   firewall record and bandwidth ifb of the pods not listed goes, and
//!   the listed pod keeps all of it: libcni's CHECK passes and its
//!   published port still answers. A later `null` releases that pod too,
//!   but its ifb, which its live host end still redirects to (an ifb's
//!   name cannot say its network). Except portmap's nftables rules: their comment is the
//!   container ID alone, so no GC can tell this network's from another's
//!   (the idle network's `null` would remove every pod's mappings), and
//!   portmap's GC leaves them to DEL; under nftables they are left out of
//!   what is compared here.
//! - containerd#12130: a list whose second plugin fails its ADD and then
//!   its DEL leaks the first plugin's reservation; GC with the valid list
//!   collects it and keeps the live pod's.
//!
//! Debian's libcni (1.1.2) predates GC and results of version 1.1.0: ADD
//! and CHECK run the list at 1.0.0 through libcni, GC runs it at 1.1.0
//! through `cnidriver gc`, which does what libcni 1.2's `GCNetworkList`
//! does (see `tests/go/src/cnidriver`). Needs root.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use cni_net::Netns;
use serde_json::{json, Value};
use tests::observe::{filter_rules, names_address, reserved_addresses};
use tests::{in_host_namespace, ip, plugin_bin_dir, Driver, NetNs};

type AnyError = Box<dyn std::error::Error + Send + Sync>;

/// One of the test's networks: Podman's default list for `bridge` over
/// `subnet` (a `/24`, gateway `.1`).
struct Network {
    name: &'static str,
    bridge: &'static str,
    subnet: &'static str,
}

const BUSY: Network = Network {
    name: "podman",
    bridge: "cni-podman0",
    subnet: "10.219.88",
};

const IDLE: Network = Network {
    name: "idle",
    bridge: "cni-podman1",
    subnet: "10.219.89",
};

/// The host namespace's plugins and the test's directories.
struct Node {
    host: NetNs,
    scratch: tempfile::TempDir,
    bin: PathBuf,
}

impl Node {
    fn new(tag: &str) -> Node {
        let host = NetNs::create(&format!("gcp-h-{tag}"));
        assert!(ip(&["-n", host.name(), "link", "set", "lo", "up"]).success());
        let scratch = tempfile::tempdir().expect("a temporary directory");
        let bin = scratch.path().join("bin");
        std::fs::create_dir(&bin).expect("a directory for the wrappers");
        for name in [
            "bridge",
            "host-local",
            "portmap",
            "firewall",
            "tuning",
            "bandwidth",
        ] {
            in_host_namespace(&bin, &plugin_bin_dir().join(name), &host);
        }
        Node { host, scratch, bin }
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.scratch.path().join(name)
    }

    /// Podman's list for `net` at `version`, its masquerading and port
    /// mappings under `backend`, its state in the test's directories;
    /// `plugins` replaces the plugins after `bridge` when given.
    fn list(&self, net: &Network, version: &str, backend: &str, plugins: Option<Value>) -> PathBuf {
        let mut rest = plugins.unwrap_or_else(|| {
            json!([
                {"type": "portmap", "capabilities": {"portMappings": true}, "backend": backend},
                {"type": "firewall", "backend": "", "dataDir": self.dir("firewall")},
                {"type": "tuning"},
                {"type": "bandwidth", "capabilities": {"bandwidth": true}}
            ])
        });
        let mut plugins = vec![json!({
            "type": "bridge",
            "bridge": net.bridge,
            "isGateway": true,
            "ipMasq": true,
            "ipMasqBackend": backend,
            "hairpinMode": true,
            "ipam": {
                "type": "host-local",
                "dataDir": self.dir("ipam"),
                "routes": [{"dst": "0.0.0.0/0"}],
                "ranges": [[{"subnet": format!("{}.0/24", net.subnet), "gateway": format!("{}.1", net.subnet)}]]
            }
        })];
        plugins.append(rest.as_array_mut().expect("a list of plugins"));
        let path = self.dir(&format!(
            "{}-{version}-{}.conflist",
            net.name,
            plugins.len()
        ));
        let list = json!({"cniVersion": version, "name": net.name, "plugins": plugins});
        std::fs::write(&path, list.to_string()).expect("write the list");
        path
    }

    /// libcni over the wrappers, caching in `cache`.
    fn driver(&self, cache: &str) -> Driver {
        Driver::new([self.bin.clone()], self.dir(cache))
    }

    /// Everything both backends hold in the host namespace, without
    /// portmap's nftables tables (see the module docs).
    fn rules(&self) -> String {
        let mut skipping = false;
        let mut kept = String::new();
        for line in filter_rules(Some(self.host.name())).lines() {
            if line.starts_with("table ip cni_hostport")
                || line.starts_with("table ip6 cni_hostport")
            {
                skipping = true;
            }
            if !skipping {
                kept.push_str(line);
                kept.push('\n');
            }
            if line == "}" {
                skipping = false;
            }
        }
        kept
    }

    /// The firewall's records naming `cid`.
    fn records_of(&self, cid: &str) -> usize {
        walk(&self.dir("firewall"))
            .iter()
            .filter(|p| {
                p.to_string_lossy().contains(cid)
                    || std::fs::read_to_string(p).is_ok_and(|t| t.contains(cid))
            })
            .count()
    }

    fn reserved(&self, net: &Network) -> Vec<String> {
        reserved_addresses(&self.dir("ipam").join(net.name))
    }
}

/// The files under `dir`, at any depth.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A pod: its namespace, container id and address.
struct Pod {
    ns: NetNs,
    cid: String,
    address: String,
    host_port: u16,
}

/// ADD through libcni (cached in `cache`), publishing `host_port`.
fn add(node: &Node, list: &Path, tag: &str, host_port: u16) -> Pod {
    let ns = NetNs::create(&format!("gcp-{tag}"));
    let cid = format!("gc-podman-{}-{tag}", std::process::id());
    let out = node
        .driver("cache")
        .with_container_id(&cid)
        .with_netns(&ns.path())
        .with_cap_args(caps(host_port))
        .add(list);
    assert_eq!(out["ok"], true, "ADD {tag}: {out}");
    let address = out["result"]["ips"][0]["address"]
        .as_str()
        .and_then(|a| a.split('/').next())
        .expect("an address")
        .to_string();
    Pod {
        ns,
        cid,
        address,
        host_port,
    }
}

/// The capability arguments of a pod publishing `host_port`.
fn caps(host_port: u16) -> Value {
    json!({
        "portMappings": [{"hostPort": host_port, "containerPort": 80, "protocol": "tcp"}],
        "bandwidth": {"ingressRate": 80_000_000, "ingressBurst": 800_000,
                      "egressRate": 80_000_000, "egressBurst": 800_000}
    })
}

/// The pod dies: its namespace goes, and its host end with it. (The
/// pair is deleted first: the kernel cleans a namespace up later.)
fn kill(pod: &Pod) {
    let name = pod.ns.name();
    assert!(ip(&["-n", name, "link", "del", "eth0"]).success());
    assert!(ip(&["netns", "del", name]).success());
}

fn attachment(pod: &Pod) -> Value {
    json!({"containerID": pod.cid, "ifname": "eth0"})
}

/// What the node holds of `pod`: reservation, rules naming its address or
/// container id, firewall records.
fn held(node: &Node, net: &Network, pod: &Pod) -> Vec<&'static str> {
    let rules = node.rules();
    let mut held = Vec::new();
    if node.reserved(net).contains(&pod.address) {
        held.push("reservation");
    }
    if names_address(&rules, &pod.address) {
        held.push("rules naming its address");
    }
    if rules.contains(&pod.cid) {
        held.push("rules naming its container");
    }
    if node.records_of(&pod.cid) > 0 {
        held.push("firewall record");
    }
    let ifb = plugins_sample::bandwidth::ifb_name(net.name, &pod.cid);
    if ip(&["-n", node.host.name(), "link", "show", &ifb]).success() {
        held.push("ifb");
    }
    held
}

/// A server in the pod answering each connection with `greeting`.
fn serve(pod: &Pod, greeting: &'static str) {
    let listener = Netns::open(pod.ns.path())
        .expect("open the pod's namespace")
        .run(|_| -> Result<TcpListener, AnyError> { Ok(TcpListener::bind("0.0.0.0:80")?) })
        .expect("listen");
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let _ = stream.write_all(greeting.as_bytes());
        }
    });
}

/// What a connection from the host namespace to `to` reads.
fn fetch(node: &Node, to: SocketAddr) -> Result<String, AnyError> {
    use std::io::Read;
    Netns::open(node.host.path())?.run(move |_| -> Result<String, AnyError> {
        let mut stream = TcpStream::connect_timeout(&to, Duration::from_secs(3))?;
        stream.set_read_timeout(Some(Duration::from_secs(3)))?;
        let mut text = String::new();
        stream.read_to_string(&mut text)?;
        Ok(text)
    })
}

fn gc(node: &Node, list: &Path, valid: Value) -> Value {
    // A fresh cache: the runtime's own is gone, the plugins must collect.
    node.driver("cache-after-restart").gc(list, Some(&valid))
}

/// CRI-O's GC at start, then `null` for the busy network too.
fn gc_at_start_releases_every_unlisted_pod_completely(backend: &str) {
    let tag = &backend[..3];
    let node = Node::new(tag);
    let busy_add = node.list(&BUSY, "1.0.0", backend, None);
    let idle_add = node.list(&IDLE, "1.0.0", backend, None);
    let live = add(&node, &busy_add, &format!("{tag}-live"), 18081);
    let gone = [
        add(&node, &busy_add, &format!("{tag}-gone1"), 18082),
        add(&node, &busy_add, &format!("{tag}-gone2"), 18083),
    ];
    let idle = add(&node, &idle_add, &format!("{tag}-idle"), 18084);
    let everything = [
        "reservation",
        "rules naming its address",
        "rules naming its container",
        "ifb",
    ];
    for (net, pod) in [(&BUSY, &live), (&BUSY, &gone[0]), (&IDLE, &idle)] {
        let held = held(&node, net, pod);
        for what in everything {
            assert!(
                held.contains(&what),
                "{backend}: {} after ADD: {held:?}",
                pod.cid
            );
        }
    }

    for pod in [&gone[0], &gone[1], &idle] {
        kill(pod);
    }
    let busy_gc = node.list(&BUSY, "1.1.0", backend, None);
    let idle_gc = node.list(&IDLE, "1.1.0", backend, None);
    let out = gc(&node, &idle_gc, Value::Null);
    assert_eq!(out["ok"], true, "{backend}: {out}");
    assert_eq!(
        out["sent"][0]["cni.dev/valid-attachments"],
        Value::Null,
        "libcni sends null"
    );
    let out = gc(&node, &busy_gc, json!([attachment(&live)]));
    assert_eq!(out["ok"], true, "{backend}: {out}");

    for (net, pod) in [(&IDLE, &idle), (&BUSY, &gone[0]), (&BUSY, &gone[1])] {
        assert_eq!(
            held(&node, net, pod),
            Vec::<&str>::new(),
            "{backend}: {}",
            pod.cid
        );
    }
    let check = node
        .driver("cache")
        .with_container_id(&live.cid)
        .with_netns(&live.ns.path())
        .with_cap_args(caps(live.host_port))
        .check(&busy_add);
    assert_eq!(
        check["ok"], true,
        "{backend}: the live pod is untouched: {check}"
    );
    serve(&live, "live");
    let gateway = format!("{}.1", BUSY.subnet);
    for to in [
        SocketAddr::new(gateway.parse().unwrap(), live.host_port),
        SocketAddr::new(live.address.parse().unwrap(), 80),
    ] {
        let answer = fetch(&node, to).map_err(|e| e.to_string());
        assert_eq!(answer.as_deref(), Ok("live"), "{backend}: {to}");
    }

    let out = gc(&node, &busy_gc, Value::Null);
    assert_eq!(out["ok"], true, "{backend}: {out}");
    assert_eq!(held(&node, &BUSY, &live), ["ifb"], "{backend}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn gc_at_start_releases_every_unlisted_pod_completely_under_iptables() {
    gc_at_start_releases_every_unlisted_pod_completely("iptables");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn gc_at_start_releases_every_unlisted_pod_completely_under_nftables() {
    gc_at_start_releases_every_unlisted_pod_completely("nftables");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn gc_collects_the_reservation_a_chain_failing_add_and_del_leaked() {
    let node = Node::new("leak");
    // The second plugin is not installed: its ADD fails after bridge's,
    // and libcni's DEL, in reverse order, fails on it before bridge's.
    let failing = json!([{"type": "not-installed"}]);
    let live_list = node.list(&BUSY, "1.0.0", "iptables", Some(json!([])));
    let live = add(&node, &live_list, "leak-live", 18091);
    let leaky_add = node.list(&BUSY, "1.0.0", "iptables", Some(failing.clone()));
    let ns = NetNs::create("gcp-leak-pod");
    let cid = format!("gc-podman-{}-leaked", std::process::id());
    let driver = node
        .driver("cache")
        .with_container_id(&cid)
        .with_netns(&ns.path());
    assert_eq!(driver.add(&leaky_add)["ok"], false, "the ADD fails");
    assert_eq!(driver.del(&leaky_add)["ok"], false, "the DEL fails too");
    assert_eq!(
        node.reserved(&BUSY).len(),
        2,
        "the leak: {:?}",
        node.reserved(&BUSY)
    );

    let leaky_gc = node.list(&BUSY, "1.1.0", "iptables", Some(failing));
    let out = node
        .driver("cache")
        .gc(&leaky_gc, Some(&json!([attachment(&live)])));
    // The missing plugin's GC fails as well; bridge's ran before it.
    let error = out["error"]["text"].as_str().unwrap_or_default();
    assert!(error.contains("not-installed"), "{out}");
    assert_eq!(
        node.reserved(&BUSY),
        std::slice::from_ref(&live.address),
        "{out}"
    );
    assert!(
        names_address(&node.rules(), &live.address),
        "the live pod's masquerading stays"
    );
}
