//! A real container engine on networks made of our plugins: Podman 4.3.1
//! (Debian, CNI backend) runs busybox containers (`--rootfs`, no image
//! pulls) whose network comes from our `veth` and `ipam-file`, and every
//! scenario ends with nothing left behind: no host link, no reservation,
//! no libcni cache entry, no namespace.
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
use tests::{host_link, plugin_bin_dir};

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
