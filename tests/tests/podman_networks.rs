//! Podman's own networks on our plugins: the lists `podman network create`
//! writes itself (Podman 4.3.1, CNI backend), never edited: `bridge`
//! (isGateway, ipMasq, hairpinMode) with `host-local`, `portmap`,
//! `firewall` (`backend: ""`) and `tuning` at cniVersion 0.4.0; with
//! `--opt isolate=true` the firewall gets `ingressPolicy: same-bridge`.
//! What a Podman user relies on:
//! - `podman run -p HOST:80` is reachable from the host (127.0.0.1 and the
//!   host's own address) and from another namespace;
//! - two containers on one network reach each other;
//! - outbound traffic is masqueraded: the far side sees the host's address;
//! - two isolated networks cannot reach each other, the host reaches both;
//! - after `podman rm` and `podman network rm` nothing is left: no link
//!   (host end, bridge), reservation, libcni cache entry, namespace,
//!   iptables or nft rule naming the container, its address or the bridge.
//!
//! Podman names bridges `cni-podmanN`, the first number no network and no
//! host link uses; two networks made at once could get the same one, so
//! this file makes a network and starts its first container under one
//! lock. Each test has its own subnets in `10.219.0.0/16`, its own host
//! ports and its own confined Podman ([`tests::podman::Podman`]). Needs
//! root, Podman, runc, conmon, busybox-static
//! (`scripts/install-test-deps.sh`).

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use cni_net::Netns;
use serde_json::{json, Value};
use tests::observe::{filter_rules, names_address, reserved_addresses, tcp_fetch};
use tests::podman::{Container, Podman, HOST_LOCAL_DIR};
use tests::{host_link, ip, plugin_bin_dir, NetNs, StdoutJson};

type AnyError = Box<dyn std::error::Error + Send + Sync>;

/// Held while a network is made and its bridge is created (see the module
/// docs).
static BRIDGE_NAMES: Mutex<()> = Mutex::new(());

fn bridge_names() -> MutexGuard<'static, ()> {
    BRIDGE_NAMES.lock().unwrap_or_else(|p| p.into_inner())
}

/// Deletes, on drop, every nft rule (iptables-nft's too) naming one of
/// its bridges: a plugin under test that leaves some fails the test, and
/// the host is cleaned all the same.
#[derive(Default)]
struct RulesOf(Vec<String>);

impl Drop for RulesOf {
    fn drop(&mut self) {
        let out = tests::output_of(Command::new("nft").args(["-a", "list", "ruleset"]), b"");
        let (mut table, mut chain) = (String::new(), String::new());
        for line in out.stdout_str().lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["table", family, name, ..] => table = format!("{family} {name}"),
                ["chain", name, ..] => chain = (*name).to_owned(),
                _ => {}
            }
            let names_bridge = self.0.iter().any(|b| line.contains(&format!("\"{b}\"")));
            let handle = line.rsplit_once("# handle ").map(|(_, h)| h.trim());
            if let (true, Some(handle)) = (names_bridge, handle) {
                let rule = format!("delete rule {table} {chain} handle {handle}");
                let out = tests::output_of(Command::new("nft").arg(&rule), b"");
                if !out.success() {
                    eprintln!("warning: nft {rule}: {out:?}");
                }
            }
        }
    }
}

/// A Podman whose networks find our plugins.
fn podman(tag: &str) -> Podman {
    let firewall = plugin_bin_dir().join("firewall");
    assert!(
        firewall.is_file(),
        "our firewall is not built ({})",
        firewall.display()
    );
    Podman::new(tag, &[plugin_bin_dir()])
}

/// The bridge of `network`, as Podman named it in its list.
fn bridge_of(podman: &Podman, network: &str) -> String {
    podman.network_list(network)["plugins"][0]["bridge"]
        .as_str()
        .expect("Podman's list names its bridge")
        .to_owned()
}

/// Asserts that `network`'s list is the one Podman 4.3.1 writes, with the
/// firewall's `ingressPolicy` when `isolated`.
fn assert_podmans_list(podman: &Podman, network: &str, subnet: &str, isolated: bool) {
    let list = podman.network_list(network);
    assert_eq!(list["cniVersion"], "0.4.0", "{list:#}");
    let types: Vec<&str> = list["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .map(|p| p["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        types,
        ["bridge", "portmap", "firewall", "tuning"],
        "{list:#}"
    );
    let bridge = &list["plugins"][0];
    for flag in ["isGateway", "ipMasq", "hairpinMode"] {
        assert_eq!(bridge[flag], true, "{flag}: {list:#}");
    }
    assert_eq!(bridge["ipam"]["type"], "host-local", "{list:#}");
    assert_eq!(bridge["ipam"]["ranges"][0][0]["subnet"], subnet, "{list:#}");
    let firewall = &list["plugins"][2];
    assert_eq!(firewall["backend"], "", "{list:#}");
    let policy = if isolated {
        json!("same-bridge")
    } else {
        Value::Null
    };
    assert_eq!(firewall["ingressPolicy"], policy, "{list:#}");
}

/// The addresses `host-local` holds for `network`.
fn reservations(network: &str) -> Vec<String> {
    reserved_addresses(&Path::new(HOST_LOCAL_DIR).join(network))
}

/// Asserts nothing of `container` (attached to `network` at `address`)
/// is left.
fn assert_container_gone(podman: &Podman, network: &str, container: &Container, address: &str) {
    assert!(
        !container.netns_exists(),
        "namespace {:?} left",
        container.netns
    );
    assert_eq!(reservations(network), Vec::<String>::new(), "reservations");
    assert_eq!(
        podman.cache_entries(network),
        Vec::<std::path::PathBuf>::new()
    );
    let rules = filter_rules(None);
    assert!(
        !rules.contains(&container.id) && !names_address(&rules, address),
        "rules still name container {} ({address}):\n{rules}",
        container.id
    );
}

/// `podman network rm NETWORK`, then: no bridge, no rule naming it.
fn remove_network(podman: &Podman, network: &str, bridge: &str) {
    let out = podman.podman(&["network", "rm", network]);
    assert!(out.success(), "podman network rm: {out:?}");
    assert_eq!(host_link(bridge), None, "bridge {bridge} left");
    let rules = filter_rules(None);
    let named: Vec<&str> = rules
        .lines()
        .filter(|l| l.contains(&format!("{bridge} ")) || l.ends_with(bridge))
        .collect();
    assert!(named.is_empty(), "rules still name {bridge}: {named:#?}");
}

/// Runs a TCP server answering `greeting` on port 80 in `container` and
/// waits until it listens.
fn serve(podman: &Podman, container: &Container, greeting: &str) {
    let out = podman.exec_detached(container, &format!("nc -ll -p 80 -e echo {greeting}"));
    assert!(out.success(), "{out:?}");
    // LISTEN (0A) on port 80 (0050), IPv4 or IPv6.
    let ready = podman.exec(
        container,
        "for i in $(seq 100); do \
           grep -q ':0050 [0-9A-F]*:0000 0A' /proc/net/tcp /proc/net/tcp6 && exit 0; \
           sleep 0.1; done; exit 1",
    );
    assert!(ready.success(), "the server never listened: {ready:?}");
}

/// What a connection to `addr` made in `ns` (the test's own namespace when
/// `None`) reads.
fn fetch(ns: Option<&Netns>, addr: &str) -> Result<String, String> {
    match ns {
        Some(ns) => ns
            .run(|_| Ok::<_, cni_net::NetError>(tcp_fetch(addr)))
            .map_err(|e| format!("{addr}: {e}"))?,
        None => tcp_fetch(addr),
    }
}

/// The host's own address: the source of its route to the outside.
fn host_address() -> String {
    let out = ip(&["-j", "route", "get", "1.1.1.1"]);
    out.try_stdout_json()
        .ok()
        .and_then(|v| v[0]["prefsrc"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("the host has no route to the outside: {out:?}"))
}

/// A namespace of the test's own, outside every container network: a veth
/// to the host, `.1` on the host's end and `.2` inside, of `subnet` (a
/// `/30` given as its `a.b.c.` prefix and first host number).
struct Outside {
    ns: NetNs,
    host_addr: String,
    addr: String,
}

impl Outside {
    fn new(tag: &str, prefix: &str) -> Outside {
        let ns = NetNs::create(tag);
        let host_end = format!("cr{}{tag}", std::process::id() % 1_000_000);
        ns.delete_link_on_drop(&host_end);
        let (host_addr, addr) = (format!("{prefix}1"), format!("{prefix}2"));
        for args in [
            vec![
                "link",
                "add",
                &host_end,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                ns.name(),
            ],
            vec!["addr", "add", &format!("{host_addr}/30"), "dev", &host_end],
            vec!["link", "set", &host_end, "up"],
            vec![
                "-n",
                ns.name(),
                "addr",
                "add",
                &format!("{addr}/30"),
                "dev",
                "eth0",
            ],
            vec!["-n", ns.name(), "link", "set", "eth0", "up"],
            vec!["-n", ns.name(), "link", "set", "lo", "up"],
            vec![
                "-n",
                ns.name(),
                "route",
                "add",
                "default",
                "via",
                &host_addr,
            ],
        ] {
            let out = ip(&args);
            assert!(out.success(), "ip {args:?}: {out:?}");
        }
        Outside {
            ns,
            host_addr,
            addr,
        }
    }

    fn netns(&self) -> Netns {
        Netns::open(self.ns.path()).expect("open the outside namespace")
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_published_port_is_reachable_traffic_is_masqueraded_and_rm_leaves_nothing() {
    let podman = podman("pub");
    let subnet = "10.219.20.0/24";
    let port = tests::free_port();
    let publish = format!("{port}:80");
    let (net, bridge, web) = {
        let _names = bridge_names();
        let net = podman.create_network("pub", &["--subnet", subnet]);
        let web = podman.start(&net, &["-p", &publish]);
        (net.clone(), bridge_of(&podman, &net), web)
    };
    let _rules = RulesOf(vec![bridge.clone()]);
    assert_podmans_list(&podman, &net, subnet, false);
    let peer = podman.start(&net, &[]);
    let (web_ip, peer_ip) = (web.address(&net), peer.address(&net));
    assert!(web_ip.starts_with("10.219.20."), "{web:?}");
    serve(&podman, &web, "hello-from-web");

    // The published port, from the host and from another namespace.
    let outside = Outside::new("pubo", "10.219.21.");
    for addr in [
        format!("127.0.0.1:{port}"),
        format!("{}:{port}", host_address()),
    ] {
        assert_eq!(
            fetch(None, &addr).as_deref(),
            Ok("hello-from-web"),
            "{addr}"
        );
    }
    let addr = format!("{}:{port}", outside.host_addr);
    assert_eq!(
        fetch(Some(&outside.netns()), &addr).as_deref(),
        Ok("hello-from-web"),
        "from another namespace to {addr}"
    );

    // Two containers on one network reach each other.
    let ping = podman.exec(&peer, &format!("ping -c1 -W5 {web_ip}"));
    assert!(ping.success(), "peer -> web: {ping:?}");
    let ping = podman.exec(&web, &format!("ping -c1 -W5 {peer_ip}"));
    assert!(ping.success(), "web -> peer: {ping:?}");

    // Outbound traffic leaves with the host's address.
    let listener = outside
        .netns()
        .run(|_| -> Result<TcpListener, AnyError> {
            Ok(TcpListener::bind((outside.addr.as_str(), 0))?)
        })
        .expect("listen outside");
    let far_port = listener.local_addr().expect("a port").port();
    let accepted = std::thread::spawn(move || -> std::io::Result<SocketAddr> {
        let (mut stream, from) = listener.accept()?;
        stream.write_all(b"seen\n")?;
        Ok(from)
    });
    let out = podman.exec(
        &peer,
        &format!("echo hi | timeout 5 nc {} {far_port}", outside.addr),
    );
    assert!(out.success(), "peer -> outside: {out:?}");
    let from = accepted
        .join()
        .expect("the accepting thread")
        .expect("accept");
    assert_eq!(
        from.ip().to_string(),
        outside.host_addr,
        "the far side sees the host's address, not {peer_ip}"
    );

    podman.remove(&web);
    assert!(
        fetch(None, &format!("127.0.0.1:{port}")).is_err(),
        "the port is still forwarded"
    );
    assert_container_gone_but_peer(&net, &web, &web_ip);
    podman.remove(&peer);
    assert_container_gone(&podman, &net, &peer, &peer_ip);
    assert_container_gone(&podman, &net, &web, &web_ip);
    remove_network(&podman, &net, &bridge);
}

/// Like [`assert_container_gone`] while another container of the network
/// still holds its reservation.
fn assert_container_gone_but_peer(network: &str, container: &Container, address: &str) {
    assert!(
        !container.netns_exists(),
        "namespace {:?} left",
        container.netns
    );
    assert!(!reservations(network).contains(&address.to_owned()));
    let rules = filter_rules(None);
    assert!(
        !rules.contains(&container.id) && !names_address(&rules, address),
        "rules still name container {} ({address}):\n{rules}",
        container.id
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn isolated_networks_cannot_reach_each_other_while_the_host_reaches_both() {
    let podman = podman("iso");
    let (subnet_a, subnet_b) = ("10.219.22.0/24", "10.219.23.0/24");
    let isolate = ["--opt", "isolate=true", "--subnet"];
    let (net_a, net_b, a, b) = {
        let _names = bridge_names();
        let net_a = podman.create_network("isoa", &[&isolate[..], &[subnet_a]].concat());
        let a = podman.start(&net_a, &[]);
        let net_b = podman.create_network("isob", &[&isolate[..], &[subnet_b]].concat());
        let b = podman.start(&net_b, &[]);
        (net_a, net_b, a, b)
    };
    assert_podmans_list(&podman, &net_a, subnet_a, true);
    assert_podmans_list(&podman, &net_b, subnet_b, true);
    let (bridge_a, bridge_b) = (bridge_of(&podman, &net_a), bridge_of(&podman, &net_b));
    let _rules = RulesOf(vec![bridge_a.clone(), bridge_b.clone()]);
    assert_ne!(bridge_a, bridge_b);
    let (ip_a, ip_b) = (a.address(&net_a), b.address(&net_b));

    for addr in [&ip_a, &ip_b] {
        let ping = tests::output_of(Command::new("ping").args(["-c1", "-W5", addr]), b"");
        assert!(ping.success(), "host -> {addr}: {ping:?}");
    }
    let ping = podman.exec(&a, &format!("ping -c1 -W2 {ip_b}"));
    assert!(
        !ping.success(),
        "a reached b across isolated networks: {ping:?}"
    );
    let ping = podman.exec(&b, &format!("ping -c1 -W2 {ip_a}"));
    assert!(
        !ping.success(),
        "b reached a across isolated networks: {ping:?}"
    );
    // Each still reaches its own gateway (the host).
    for (c, gw) in [(&a, "10.219.22.1"), (&b, "10.219.23.1")] {
        let ping = podman.exec(c, &format!("ping -c1 -W5 {gw}"));
        assert!(ping.success(), "{} -> {gw}: {ping:?}", c.id);
    }

    podman.remove(&a);
    podman.remove(&b);
    assert_container_gone(&podman, &net_a, &a, &ip_a);
    assert_container_gone(&podman, &net_b, &b, &ip_b);
    remove_network(&podman, &net_a, &bridge_a);
    remove_network(&podman, &net_b, &bridge_b);
}
