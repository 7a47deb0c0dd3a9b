//! nerdctl's list on our plugins, run by our runtime (`cnitool`) and by
//! the reference one (libcni): the list nerdctl writes for its bridge
//! networks (`docs/cni.md` of nerdctl: `bridge` with isGateway, ipMasq,
//! hairpinMode and `host-local`, `portmap`, `firewall` with
//! `ingressPolicy: same-bridge`, `tuning`, cniVersion 1.0.0), two such
//! networks in a host namespace of the test's own:
//! - containers on one network reach each other, the host reaches all;
//! - a container on one network cannot reach one on the other
//!   (`same-bridge`), either way;
//! - a mapped port is reachable on the bridge's address; CHECK passes;
//! - DEL leaves no rule naming a container's address or ID, no
//!   reservation, no container link.
//!
//! Needs root.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::time::Duration;

use cni_net::Netns;
use serde_json::{json, Value};
use tests::observe::{filter_rules, names_address};
use tests::sandbox::NetDirs;
use tests::{in_host_namespace, plugin_bin_dir, Driver, NetNs};

type AnyError = Box<dyn std::error::Error + Send + Sync>;

/// The plugins of nerdctl's list.
const PLUGINS: [&str; 5] = ["bridge", "host-local", "portmap", "firewall", "tuning"];

/// nerdctl's list for the network `name` on `bridge` and `subnet` (a
/// `/24` as `a.b.c.`).
fn nerdctl_list(name: &str, bridge: &str, prefix: &str, ipam_dir: &str) -> Value {
    json!({
        "cniVersion": "1.0.0", "name": name,
        "plugins": [
            {"type": "bridge", "bridge": bridge, "isGateway": true, "ipMasq": true,
             "hairpinMode": true,
             "ipam": {"type": "host-local", "dataDir": ipam_dir,
                      "routes": [{"dst": "0.0.0.0/0"}],
                      "ranges": [[{"subnet": format!("{prefix}0/24"),
                                   "gateway": format!("{prefix}1")}]]}},
            {"type": "portmap", "capabilities": {"portMappings": true}},
            {"type": "firewall", "ingressPolicy": "same-bridge"},
            {"type": "tuning"}
        ]
    })
}

/// Which runtime runs the lists.
#[derive(Clone, Copy, Debug)]
enum Via {
    Cnitool,
    Libcni,
}

/// Where the lists run: the host namespace's plugin wrappers, the lists,
/// IPAM data and the caches.
struct Sandbox {
    dirs: NetDirs,
    wrappers: tempfile::TempDir,
    libcni_cache: tempfile::TempDir,
}

/// Runs `command` of the list `net` for container `cid` in `ns` through
/// `via`, with the capability arguments `caps`: the runtime's report
/// (`{"ok": .., "result": ..}`).
fn run(
    sandbox: &Sandbox,
    via: Via,
    command: &str,
    net: &str,
    ns: &NetNs,
    cid: &str,
    caps: &Value,
) -> Value {
    let dirs = &sandbox.dirs;
    match via {
        Via::Cnitool => {
            dirs.cnitool(cid)
                .with_cap_args(caps.clone())
                .run(&[command, net, &ns.path()])
        }
        Via::Libcni => {
            let driver = Driver::new([sandbox.wrappers.path()], sandbox.libcni_cache.path())
                .with_container_id(cid)
                .with_netns(&ns.path())
                .with_cap_args(caps.clone());
            let list = dirs.conflist(net);
            match command {
                "add" => driver.add(&list),
                "check" => driver.check(&list),
                "del" => driver.del(&list),
                other => panic!("{other}"),
            }
        }
    }
}

/// `ping -c1` from `ns` to `addr`: whether it answered.
fn ping(ns: &NetNs, addr: &str) -> bool {
    tests::output_of(
        Command::new("ip").args(["netns", "exec", ns.name(), "ping", "-c1", "-W2", addr]),
        b"",
    )
    .success()
}

fn each_runtime_runs_nerdctls_list(via: Via, tag: &str, prefixes: [&str; 2]) {
    let host = NetNs::create(&format!("{tag}-host"));
    let (a1, a2, b1) = (
        NetNs::create(&format!("{tag}-a1")),
        NetNs::create(&format!("{tag}-a2")),
        NetNs::create(&format!("{tag}-b1")),
    );
    let wrappers = tempfile::tempdir().expect("a temporary directory");
    for name in PLUGINS {
        let plugin = plugin_bin_dir().join(name);
        assert!(
            plugin.is_file(),
            "our {name} is not built ({})",
            plugin.display()
        );
        in_host_namespace(wrappers.path(), &plugin, &host);
    }
    let dirs = NetDirs::new("nerdctl-", vec![wrappers.path().to_path_buf()]);
    dirs.reset(&nerdctl_list(
        "nerdctl-a",
        "nerdctl0",
        prefixes[0],
        &dirs.ipam(),
    ));
    tests::write_json(
        &dirs.conflist("nerdctl-b"),
        &nerdctl_list("nerdctl-b", "br-nerdctl-b", prefixes[1], &dirs.ipam()),
    );

    let sandbox = Sandbox {
        dirs,
        wrappers,
        libcni_cache: tempfile::tempdir().expect("a temporary directory"),
    };
    let port_caps = json!({"portMappings": [
        {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]});
    let none = json!({});
    let attachments = [
        ("nerdctl-a", &a1, "a1", &port_caps),
        ("nerdctl-a", &a2, "a2", &none),
        ("nerdctl-b", &b1, "b1", &none),
    ];
    let mut addrs = Vec::new();
    for (net, ns, cid, caps) in attachments {
        let add = run(&sandbox, via, "add", net, ns, cid, caps);
        assert_eq!(add["ok"], true, "{via:?} add {cid}: {add}");
        let addr = add["result"]["ips"][0]["address"]
            .as_str()
            .and_then(|a| a.split('/').next())
            .unwrap_or_else(|| panic!("{via:?} add {cid}: no address: {add}"))
            .to_owned();
        addrs.push(addr);
    }
    let (ip_a1, ip_a2, ip_b1) = (&addrs[0], &addrs[1], &addrs[2]);

    assert!(ping(&a1, ip_a2), "{via:?}: a1 -> a2 on one network");
    assert!(ping(&a2, ip_a1), "{via:?}: a2 -> a1 on one network");
    for addr in &addrs {
        assert!(ping(&host, addr), "{via:?}: host -> {addr}");
    }
    assert!(!ping(&a1, ip_b1), "{via:?}: a1 reached b1 across bridges");
    assert!(!ping(&b1, ip_a1), "{via:?}: b1 reached a1 across bridges");

    // The mapped port, on the bridge's address from the host.
    let listener = Netns::open(a1.path())
        .expect("open a1")
        .run(|_| -> Result<TcpListener, AnyError> { Ok(TcpListener::bind("0.0.0.0:80")?) })
        .expect("listen in a1");
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let _ = stream.write_all(b"pong");
        }
    });
    let gateway: SocketAddr = format!("{}1:8080", prefixes[0])
        .parse()
        .expect("an address");
    let fetched = Netns::open(host.path())
        .expect("open the host namespace")
        .run(|_| -> Result<String, AnyError> {
            let mut stream = TcpStream::connect_timeout(&gateway, Duration::from_secs(5))?;
            stream.set_read_timeout(Some(Duration::from_secs(5)))?;
            let mut text = String::new();
            stream.read_to_string(&mut text)?;
            Ok(text)
        })
        .unwrap_or_else(|e| panic!("{via:?}: connect to {gateway}: {e}"));
    assert_eq!(fetched, "pong", "{via:?}");

    for (net, ns, cid, caps) in attachments {
        let check = run(&sandbox, via, "check", net, ns, cid, caps);
        assert_eq!(check["ok"], true, "{via:?} check {cid}: {check}");
    }
    for (net, ns, cid, caps) in attachments {
        let del = run(&sandbox, via, "del", net, ns, cid, caps);
        assert_eq!(del["ok"], true, "{via:?} del {cid}: {del}");
        assert!(ns.link("eth0").is_none(), "{via:?}: {cid}'s eth0 left");
    }
    let rules = filter_rules(Some(host.name()));
    for (addr, (_, _, cid, _)) in addrs.iter().zip(attachments) {
        assert!(
            !names_address(&rules, addr) && !rules.contains(&format!("\"{cid}\"")),
            "{via:?}: rules still name {cid} ({addr}):\n{rules}"
        );
    }
    for net in ["nerdctl-a", "nerdctl-b"] {
        assert_eq!(sandbox.dirs.reservations(net), Vec::new(), "{via:?}: {net}");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn cnitool_runs_nerdctls_list_isolating_its_bridges_and_del_leaves_nothing() {
    each_runtime_runs_nerdctls_list(Via::Cnitool, "nd-tool", ["10.219.40.", "10.219.41."]);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn libcni_runs_nerdctls_list_isolating_its_bridges_and_del_leaves_nothing() {
    each_runtime_runs_nerdctls_list(Via::Libcni, "nd-cni", ["10.219.42.", "10.219.43."]);
}
