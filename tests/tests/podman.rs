//! A real container engine on networks made of our plugins: Podman 4.3.1
//! (Debian, CNI backend) runs busybox containers (`--rootfs`, no image
//! pulls) whose network comes from our plugins: `veth` + `ipam-file`;
//! `bridge` + `ipam-file` + `tuning`; `loopback`. Containers get the
//! addresses, routes, `--ip` and `--mac-address` asked for, reach each
//! other and are reached from the host (ping and TCP); an exhausted range
//! fails `podman run` with our message. Every scenario ends with nothing
//! left behind: no host link or bridge port, no reservation, no libcni
//! cache entry, no tuning backup, no namespace.
//!
//! Needs root, Podman, runc, conmon and busybox-static
//! (`scripts/install-test-deps.sh`); fails, never skips, without them.
//! Each test has its own subnet in `10.215.0.0/16` and its own confined
//! Podman ([`tests::podman::Podman`]), so tests run in parallel.

use std::fs;
use std::net::IpAddr;
use std::path::Path;

use serde_json::{json, Value};
use tests::podman::Podman;
use tests::StdoutJson;
use tests::{host_link, ip, plugin_bin_dir};

/// A Podman whose networks find our plugins.
fn podman(tag: &str) -> Podman {
    Podman::new(tag, &[plugin_bin_dir()])
}

/// `veth` + `ipam-file` on `subnet` (a `/24`), gateway `.1`, a default
/// route; `range` narrows the addresses handed out (`[start, end]`).
fn veth_network(podman: &Podman, short: &str, subnet: &str, range: Option<[&str; 2]>) -> String {
    let mut r = json!({"subnet": subnet});
    if let Some([start, end]) = range {
        r["rangeStart"] = json!(start);
        r["rangeEnd"] = json!(end);
    }
    let data = podman.data_dir().display().to_string();
    podman.add_network(
        short,
        "1.0.0",
        json!([{
            "type": "veth",
            "ipam": {"type": "ipam-file", "dataDir": data, "ranges": [[r]],
                     "routes": [{"dst": "0.0.0.0/0"}]}
        }]),
    )
}

/// The addresses `ipam-file` holds for `network`.
fn reservations(podman: &Podman, network: &str) -> Vec<String> {
    fs::read_dir(podman.data_dir().join(network))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.parse::<IpAddr>().is_ok())
        .collect()
}

/// The host end our `veth` creates for a container's `eth0`.
fn host_end(container_id: &str) -> String {
    plugins_sample::veth::host_veth_name(container_id, "eth0")
}

/// Asserts that nothing of the attachment of `container_id` to `network`
/// is left: the host end, the reservation, the cache entry.
fn assert_nothing_left(podman: &Podman, network: &str, container_id: &str) {
    assert_eq!(host_link(&host_end(container_id)), None, "host end left");
    assert_eq!(reservations(podman, network), Vec::<String>::new());
    assert_eq!(
        podman.cache_entries(network),
        Vec::<std::path::PathBuf>::new()
    );
}

/// The first `inet a.b.c.d/len` in `ip addr` output.
fn inet(text: &str) -> Option<&str> {
    text.split_whitespace().skip_while(|w| *w != "inet").nth(1)
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_container_gets_its_address_and_routes_from_our_plugins_and_rm_leaves_nothing() {
    let podman = podman("addr");
    let net = veth_network(&podman, "addr", "10.215.1.0/24", None);
    let cid = podman.data_dir().join("cid");
    let out = podman.run(
        &net,
        &["--cidfile", cid.to_str().unwrap()],
        "ip addr show eth0; echo ---; ip route; echo ---; cat /etc/resolv.conf",
    );
    assert!(out.success(), "{out:?}");
    let text = out.stdout_str();
    let mut parts = text.split("---\n");
    let (addrs, routes) = (parts.next().unwrap(), parts.next().unwrap());
    assert_eq!(inet(addrs), Some("10.215.1.2/24"), "{text}");
    assert!(
        routes
            .lines()
            .any(|l| l.starts_with("default via 10.215.1.1 dev eth0")),
        "{text}"
    );
    let id = fs::read_to_string(&cid).unwrap();
    assert_nothing_left(&podman, &net, id.trim());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn ip_is_honoured_and_the_host_reaches_the_container() {
    let podman = podman("ip");
    let net = veth_network(&podman, "ip", "10.215.2.0/24", None);
    let c = podman.start(&net, &["--ip", "10.215.2.77"]);
    assert_eq!(c.address(&net), "10.215.2.77");
    let inside = podman.exec(&c, "ip addr show eth0");
    assert_eq!(
        inet(&inside.stdout_str()),
        Some("10.215.2.77/24"),
        "{inside:?}"
    );
    assert!(c.netns_exists(), "{:?}", c.netns);
    let ping = std::process::Command::new("ping")
        .args(["-c1", "-W2", "10.215.2.77"])
        .output()
        .unwrap();
    assert!(ping.status.success(), "host -> container: {ping:?}");
    assert_eq!(reservations(&podman, &net), ["10.215.2.77"]);
    assert_eq!(podman.cache_entries(&net).len(), 1);

    podman.remove(&c);
    assert!(!c.netns_exists(), "namespace {:?} left", c.netns);
    assert_nothing_left(&podman, &net, &c.id);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_exhausted_range_fails_podman_run_with_our_message_and_leaves_nothing() {
    let podman = podman("full");
    let net = veth_network(
        &podman,
        "full",
        "10.215.3.0/24",
        Some(["10.215.3.9", "10.215.3.9"]),
    );
    let first = podman.start(&net, &[]);
    assert_eq!(first.address(&net), "10.215.3.9");

    let cid = podman.data_dir().join("cid");
    let out = podman.run(&net, &["--cidfile", cid.to_str().unwrap()], "true");
    assert!(!out.success(), "{out:?}");
    assert!(
        out.stderr_str()
            .contains("no IP addresses available in range set"),
        "{out:?}"
    );
    // The failed attachment left nothing; the first one is untouched.
    let second = fs::read_to_string(&cid).unwrap_or_default();
    if !second.trim().is_empty() {
        assert_eq!(host_link(&host_end(second.trim())), None);
    }
    assert_eq!(reservations(&podman, &net), ["10.215.3.9"]);
    assert_eq!(podman.cache_entries(&net).len(), 1);
    assert!(host_link(&host_end(&first.id)).is_some());

    podman.remove(&first);
    assert_nothing_left(&podman, &net, &first.id);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn no_podman_state_escapes_its_temporary_directory() {
    let podman = podman("conf");
    let out = podman.podman(&["info", "--format", "json"]);
    assert!(out.success(), "{out:?}");
    let info: Value = out.stdout_json();
    let graph = info["store"]["graphRoot"].as_str().unwrap_or_default();
    assert!(
        Path::new(graph).starts_with(std::env::temp_dir()),
        "storage outside the temporary directory: {graph}"
    );
    assert_eq!(info["host"]["ociRuntime"]["name"], "runc");
    assert_eq!(info["host"]["networkBackend"], "cni");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn mac_address_is_honoured_through_cni_args() {
    let podman = podman("mac");
    let net = veth_network(&podman, "mac", "10.215.4.0/24", None);
    let out = podman.run(
        &net,
        &["--mac-address", "02:15:04:00:00:07"],
        "cat /sys/class/net/eth0/address",
    );
    assert!(out.success(), "{out:?}");
    assert_eq!(out.stdout_str().trim(), "02:15:04:00:00:07");
}

/// `bridge` (gateway on the bridge) + `ipam-file` on `subnet`, then
/// `tuning` (MTU 1400, a sysctl, its backup under the data directory).
fn bridge_network(
    podman: &Podman,
    short: &str,
    bridge: &str,
    subnet: &str,
    range: Option<[&str; 2]>,
) -> String {
    let mut r = json!({"subnet": subnet});
    if let Some([start, end]) = range {
        r["rangeStart"] = json!(start);
        r["rangeEnd"] = json!(end);
    }
    let data = podman.data_dir();
    podman.add_network(
        short,
        "1.0.0",
        json!([
            {"type": "bridge", "bridge": bridge, "isGateway": true,
             "ipam": {"type": "ipam-file", "dataDir": data, "ranges": [[r]],
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "tuning", "mtu": 1400, "dataDir": data.join("tuning"),
             "sysctl": {"net.ipv4.conf.IFNAME.arp_notify": "1"}}
        ]),
    )
}

/// The ports of `bridge` on the host.
fn ports(bridge: &str) -> usize {
    let out = ip(&["-j", "link", "show", "master", bridge]);
    assert!(out.success(), "{out:?}");
    out.stdout_json().as_array().map_or(0, Vec::len)
}

/// Asserts that nothing of `network`'s attachments is left: no bridge
/// port, no reservation, no cache entry, no tuning backup.
fn assert_bridge_network_empty(podman: &Podman, network: &str, bridge: &str) {
    assert_eq!(ports(bridge), 0, "bridge ports left");
    assert_eq!(reservations(podman, network), Vec::<String>::new());
    assert_eq!(
        podman.cache_entries(network),
        Vec::<std::path::PathBuf>::new()
    );
    let backups = fs::read_dir(podman.data_dir().join("tuning")).map_or(0, |d| d.count());
    assert_eq!(backups, 0, "tuning backups left");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn bridge_ipam_and_tuning_honour_ip_and_mac_and_rm_leaves_nothing() {
    let podman = podman("brtu");
    let br = podman.host_link("tu");
    let net = bridge_network(&podman, "brtu", &br, "10.215.5.0/24", None);
    let out = podman.run(
        &net,
        &["--ip", "10.215.5.50", "--mac-address", "02:15:05:00:00:50"],
        "cat /sys/class/net/eth0/address /sys/class/net/eth0/mtu \
         /proc/sys/net/ipv4/conf/eth0/arp_notify; ip addr show eth0; ip route",
    );
    assert!(out.success(), "{out:?}");
    let text = out.stdout_str();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..3], ["02:15:05:00:00:50", "1400", "1"], "{text}");
    assert_eq!(inet(&text), Some("10.215.5.50/24"), "{text}");
    assert!(text.contains("default via 10.215.5.1 dev eth0"), "{text}");
    let bridge = host_link(&br).expect("the bridge exists");
    let addrs = bridge["addr_info"].to_string();
    assert!(
        addrs.contains("\"10.215.5.1\""),
        "gateway on the bridge: {addrs}"
    );
    assert_bridge_network_empty(&podman, &net, &br);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn two_containers_on_one_bridge_reach_each_other_and_the_host_reaches_both() {
    let podman = podman("pair");
    let br = podman.host_link("pr");
    let net = bridge_network(&podman, "pair", &br, "10.215.6.0/24", None);
    let a = podman.start(&net, &[]);
    let b = podman.start(&net, &[]);
    let (ip_a, ip_b) = (a.address(&net), b.address(&net));
    assert_eq!(ports(&br), 2);
    let served = podman.exec_detached(&a, "nc -ll -p 8080 -e echo hello-from-a");
    assert!(served.success(), "{served:?}");

    let ping = podman.exec(&b, &format!("ping -c1 -W2 {ip_a}"));
    assert!(ping.success(), "b -> a: {ping:?}");
    // Retried briefly: the server starts in the background.
    let tcp = podman.exec(
        &b,
        &format!(
            "for i in 1 2 3 4 5 6 7 8 9 10; do \
               r=$(echo hi | timeout 2 nc {ip_a} 8080) && [ -n \"$r\" ] && echo \"$r\" && exit 0; \
               sleep 0.2; done; exit 1"
        ),
    );
    assert_eq!(
        tcp.stdout_str().trim(),
        "hello-from-a",
        "b -> a over TCP: {tcp:?}"
    );
    for addr in [&ip_a, &ip_b] {
        let ping = std::process::Command::new("ping")
            .args(["-c1", "-W2", addr])
            .output()
            .unwrap();
        assert!(ping.status.success(), "host -> {addr}: {ping:?}");
    }
    let mut stream = connect(&format!("{ip_a}:8080"));
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut stream, &mut answer).unwrap();
    assert_eq!(answer.trim(), "hello-from-a", "host -> a over TCP");

    podman.remove(&a);
    podman.remove(&b);
    assert!(!a.netns_exists() && !b.netns_exists(), "namespaces left");
    assert_bridge_network_empty(&podman, &net, &br);
}

/// A TCP connection, retried briefly while the server starts.
fn connect(addr: &str) -> std::net::TcpStream {
    let addr: std::net::SocketAddr = addr.parse().unwrap();
    let mut last = None;
    for _ in 0..20 {
        match std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(2)) {
            Ok(s) => return s,
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("cannot connect to {addr}: {last:?}")
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_exhausted_bridge_range_fails_with_our_message_and_leaves_nothing() {
    let podman = podman("brfull");
    let br = podman.host_link("fu");
    let net = bridge_network(
        &podman,
        "brfull",
        &br,
        "10.215.7.0/24",
        Some(["10.215.7.9", "10.215.7.9"]),
    );
    let first = podman.start(&net, &[]);
    let out = podman.run(&net, &[], "true");
    assert!(!out.success(), "{out:?}");
    assert!(
        out.stderr_str()
            .contains("no IP addresses available in range set"),
        "{out:?}"
    );
    assert_eq!(ports(&br), 1, "the failed attachment left a port");
    assert_eq!(reservations(&podman, &net), ["10.215.7.9"]);
    assert_eq!(podman.cache_entries(&net).len(), 1);
    podman.remove(&first);
    assert_bridge_network_empty(&podman, &net, &br);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_loopback_network_runs_and_leaves_nothing() {
    let podman = podman("lo");
    let net = podman.add_network("lo", "1.0.0", json!([{"type": "loopback"}]));
    let out = podman.run(&net, &[], "ip link show lo");
    assert!(out.success(), "{out:?}");
    assert!(out.stdout_str().contains("UP"), "{out:?}");
    assert_eq!(podman.cache_entries(&net), Vec::<std::path::PathBuf>::new());
}
