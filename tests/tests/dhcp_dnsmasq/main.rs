//! The `dhcp` plugin and its daemon against a real DHCP server (Debian's
//! dnsmasq) in a namespace the test creates: a lease with its address,
//! router and routes; renewal at T1; release on DEL; a daemon that is not
//! running; each half against the reference's other half
//! (`vs_reference`); offers that make no sense (`misbehaving`); callers
//! that have gone (`gone`).

mod gone;
mod maintenance;
mod misbehaving;
mod podman;
mod server;
mod vs_reference;

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use server::{start_daemon, DhcpNet, SERVER_IP};
use tests::{plugin_bin_dir, run_plugin, RawOutput};

/// The network configuration a macvlan network with DHCP gives its IPAM
/// plugin (the whole configuration, as the spec says).
fn conf(socket: &Path) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "cniVersion": "1.0.0", "name": "dhcpnet", "type": "macvlan", "master": "eth0",
        "ipam": {"type": "dhcp", "daemonSocketPath": socket}
    }))
    .unwrap()
}

pub(crate) fn dhcp(command: &str, net: &DhcpNet, socket: &Path) -> RawOutput {
    dhcp_on(command, net, socket, "eth0")
}

fn dhcp_on(command: &str, net: &DhcpNet, socket: &Path, ifname: &str) -> RawOutput {
    let netns = net.container.path().display().to_string();
    let id = net.container.name().to_string();
    let env = [
        ("CNI_COMMAND", command),
        ("CNI_CONTAINERID", id.as_str()),
        ("CNI_NETNS", netns.as_str()),
        ("CNI_IFNAME", ifname),
        ("CNI_PATH", "/nonexistent"),
    ];
    run_plugin(&plugin_bin_dir().join("dhcp"), &env, &conf(socket))
}

pub(crate) fn stdout_json(out: &RawOutput) -> Value {
    assert!(out.success(), "failed: {}", out.excerpts(2000));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout_str()))
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_container_leases_renews_and_releases_its_address_from_a_dhcp_server() {
    let dir = tempfile::tempdir().unwrap();
    let net = DhcpNet::start(dir.path(), 3, &["eth0"]);
    let socket = dir.path().join("dhcp.sock");
    let daemon = start_daemon(&plugin_bin_dir().join("dhcp"), &socket);

    let result = stdout_json(&dhcp("ADD", &net, &socket));
    let address = result["ips"][0]["address"]
        .as_str()
        .expect("an address")
        .to_string();
    assert!(
        address.starts_with("10.77.0.") && address.ends_with("/24"),
        "{result}"
    );
    assert_eq!(result["ips"][0]["gateway"], SERVER_IP, "{result}");
    assert_eq!(
        result["routes"],
        json!([{"dst": "0.0.0.0/0", "gw": SERVER_IP}]),
        "{result}"
    );
    let ip = address.trim_end_matches("/24");
    let client_id = format!("{}/dhcpnet/eth0", net.container.name());
    let leases = net.lease_file();
    assert!(
        leases.contains(ip),
        "dnsmasq holds no lease for {ip}: {leases}"
    );
    // The client id is the reference's, CONTAINERID/NETNAME/IFNAME with
    // type 0; dnsmasq writes it in hex.
    let hex: Vec<String> = std::iter::once(0u8)
        .chain(client_id.bytes())
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(
        leases.contains(&hex.join(":")),
        "no client id {client_id} in {leases}"
    );

    // ADD again (a runtime retrying) answers with the lease held.
    assert_eq!(stdout_json(&dhcp("ADD", &net, &socket)), result);
    assert!(dhcp("CHECK", &net, &socket).success());

    // The interface plugin puts the address on eth0; the renewal at T1
    // (3 s) is a REQUEST unicast to the server, answered with an ACK.
    net.put_on_eth0(&address);
    daemon.wait_for("renewed", Duration::from_secs(30));
    // Two ACKs for the address: the ADD's and the renewal's.
    let ack = format!("DHCPACK(br0) {ip}");
    for _ in 0..2 {
        net.dnsmasq.wait_for(&ack, Duration::from_secs(10));
    }

    // DEL releases the lease: dnsmasq logs the release and forgets it.
    assert!(dhcp("DEL", &net, &socket).success());
    net.dnsmasq
        .wait_for(&format!("DHCPRELEASE(br0) {ip}"), Duration::from_secs(10));
    let leases = net.lease_file();
    assert!(
        !leases.contains(ip),
        "the lease is still held after DEL: {leases}"
    );
    assert!(
        !dhcp("CHECK", &net, &socket).success(),
        "CHECK after DEL must fail"
    );
    // A second DEL finds nothing to release, and succeeds.
    assert!(dhcp("DEL", &net, &socket).success());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_daemon_that_is_not_running_is_an_error_naming_its_socket_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let net = DhcpNet::start(dir.path(), 60, &["eth0"]);
    let socket = dir.path().join("dhcp.sock");
    let mut daemon = start_daemon(&plugin_bin_dir().join("dhcp"), &socket);
    daemon.kill();

    for (command, code) in [("ADD", 11), ("DEL", 11), ("CHECK", 11)] {
        let out = dhcp(command, &net, &socket);
        let err = stdout_json_error(&out);
        assert_eq!(err["code"], code, "{command}: {err}");
        let msg = err["msg"].as_str().unwrap();
        assert!(
            msg.contains(&socket.display().to_string()),
            "{command}: {err}"
        );
    }
    assert_eq!(net.lease_file(), "", "a lease was taken with no daemon");
    let addresses = net.container.run(|nl| nl.addresses(None)).unwrap();
    assert!(
        addresses
            .iter()
            .all(|a| !a.network.is_ipv4() || a.network.addr().is_loopback()),
        "{addresses:?}"
    );
}

fn stdout_json_error(out: &RawOutput) -> Value {
    assert!(!out.success(), "succeeded: {}", out.stdout_str());
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.excerpts(2000)))
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn concurrent_adds_on_several_interfaces_get_one_lease_each() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["eth1", "eth2", "eth3", "eth4"];
    let net = DhcpNet::start(dir.path(), 60, &names);
    let socket = dir.path().join("dhcp.sock");
    let daemon = start_daemon(&plugin_bin_dir().join("dhcp"), &socket);
    let results: Vec<RawOutput> = std::thread::scope(|s| {
        let runs: Vec<_> = names
            .iter()
            .map(|ifname| {
                let (net, socket) = (&net, &socket);
                s.spawn(move || dhcp_on("ADD", net, socket, ifname))
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut addresses: Vec<String> = results
        .iter()
        .map(|out| {
            assert!(
                out.success(),
                "{}\ndaemon:\n{}\ndnsmasq:\n{}",
                out.excerpts(2000),
                daemon.log(),
                net.dnsmasq.log()
            );
            stdout_json(out)["ips"][0]["address"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    addresses.sort();
    addresses.dedup();
    assert_eq!(addresses.len(), names.len(), "{addresses:?}");
    for ifname in names {
        assert!(dhcp_on("DEL", &net, &socket, ifname).success());
    }
}

/// GC of the test's network with `valid` as `cni.dev/valid-attachments`
/// (absent when `None`).
fn gc(socket: &Path, valid: Option<Value>) -> RawOutput {
    let mut conf = json!({
        "cniVersion": "1.1.0", "name": "dhcpnet", "type": "macvlan",
        "ipam": {"type": "dhcp", "daemonSocketPath": socket}
    });
    if let Some(valid) = valid {
        conf["cni.dev/valid-attachments"] = valid;
    }
    let env = [("CNI_COMMAND", "GC"), ("CNI_PATH", "/nonexistent")];
    run_plugin(
        &plugin_bin_dir().join("dhcp"),
        &env,
        conf.to_string().as_bytes(),
    )
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn gc_releases_the_leases_of_attachments_not_listed_and_nothing_without_a_list() {
    let dir = tempfile::tempdir().unwrap();
    let net = DhcpNet::start(dir.path(), 60, &["eth1", "eth2"]);
    let socket = dir.path().join("dhcp.sock");
    let _daemon = start_daemon(&plugin_bin_dir().join("dhcp"), &socket);
    let leased = |ifname| {
        let out = dhcp_on("ADD", &net, &socket, ifname);
        let address = stdout_json(&out)["ips"][0]["address"]
            .as_str()
            .unwrap()
            .to_string();
        address.trim_end_matches("/24").to_string()
    };
    let (kept, stale) = (leased("eth1"), leased("eth2"));

    assert!(gc(&socket, None).success());
    assert!(
        dhcp_on("CHECK", &net, &socket, "eth2").success(),
        "GC without a list released a lease"
    );

    let valid = json!([{"containerID": net.container.name(), "ifname": "eth1"}]);
    let out = gc(&socket, Some(valid));
    assert!(out.success(), "{}", out.excerpts(2000));
    net.dnsmasq.wait_for(
        &format!("DHCPRELEASE(br0) {stale}"),
        Duration::from_secs(10),
    );
    assert!(!dhcp_on("CHECK", &net, &socket, "eth2").success());
    assert!(dhcp_on("CHECK", &net, &socket, "eth1").success());
    assert!(!net
        .dnsmasq
        .log()
        .contains(&format!("DHCPRELEASE(br0) {kept}")));
    assert!(dhcp_on("DEL", &net, &socket, "eth1").success());
}
