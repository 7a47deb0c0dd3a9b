//! Our `dhcp` beside Debian's reference `dhcp` 1.1.1, each half against
//! the other's: the reference's plugin with our daemon, our plugin with
//! the reference's daemon, ours with ours, all run by the reference
//! runtime library (libcni, via `cnidriver`) with the same configuration
//! list against the same dnsmasq, give the results the reference pair
//! gives at 0.3.1, 0.4.0 and 1.0.0 (the leased address normalised: each
//! run is a different client), the same CHECK and DEL verdicts; each lease
//! is renewed at T1 and released on DEL.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tests::{plugin_bin_dir, reference_plugin_dir, run_plugin, Driver};

use crate::server::{start_daemon, DhcpNet, Logged};

const VERSIONS: [&str; 3] = ["0.3.1", "0.4.0", "1.0.0"];

/// Which implementation plays a half.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Ours,
    Reference,
}

impl Side {
    fn bin_dir(self) -> PathBuf {
        match self {
            Side::Ours => plugin_bin_dir(),
            Side::Reference => reference_plugin_dir(),
        }
    }
}

/// The reference daemon logs nothing when it is ready: wait until its
/// socket accepts a connection.
fn start_reference_daemon(socket: &Path) -> Logged {
    let mut cmd = std::process::Command::new(reference_plugin_dir().join("dhcp"));
    cmd.arg("daemon").arg("-socketpath").arg(socket);
    let daemon = Logged::spawn(cmd);
    let end = Instant::now() + Duration::from_secs(20);
    while UnixStream::connect(socket).is_err() {
        assert!(
            Instant::now() < end,
            "the reference daemon never listened:\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    daemon
}

/// One pairing's run at one version.
struct Run<'a> {
    net: &'a DhcpNet,
    dir: &'a Path,
    plugin: Side,
    daemon: Side,
    socket: &'a Path,
    version: &'a str,
}

impl Run<'_> {
    /// ADD, (the renewal at T1 when `renew`), CHECK, DEL and DEL again of
    /// a list holding only `dhcp`; returns the normalised report once
    /// dnsmasq saw the lease released.
    fn report(&self, renew: bool) -> Value {
        let side = format!("{:?}-{:?}-{}", self.plugin, self.daemon, self.version);
        let conflist = self.dir.join(format!("{side}.conflist"));
        let list = json!({"cniVersion": self.version, "name": "dhcpnet", "plugins": [
            {"type": "dhcp", "ipam": {"type": "dhcp", "daemonSocketPath": self.socket}}]});
        std::fs::write(&conflist, list.to_string()).unwrap();
        let driver = Driver::new(
            [self.plugin.bin_dir()],
            self.dir.join(format!("cache-{side}")),
        )
        .with_container_id(&format!("{side}-{}", std::process::id()))
        .with_netns(&self.net.container.path().display().to_string());
        let mut add = driver.add(&conflist);
        assert_eq!(add["ok"], true, "{side} ADD: {add}");
        let address = add["result"]["ips"][0]["address"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(address.starts_with("10.77.0."), "{side}: {add}");
        let ip = address.trim_end_matches("/24").to_string();
        if renew {
            // The interface plugin's part; then the daemon renews at T1
            // (3 s): dnsmasq ACKs the address a second time.
            self.net.put_on_eth0(&address);
            let ack = format!("DHCPACK(br0) {ip}");
            for _ in 0..2 {
                self.net.dnsmasq.wait_for(&ack, Duration::from_secs(15));
            }
        }
        add["result"]["ips"][0]["address"] = json!("<leased>/24");
        add["cachedResult"] = Value::Null;
        let check = driver.check(&conflist);
        let del = driver.del(&conflist);
        let again = driver.del(&conflist);
        self.net
            .dnsmasq
            .wait_for(&format!("DHCPRELEASE(br0) {ip}"), Duration::from_secs(10));
        if renew {
            self.net
                .container
                .run(|nl| {
                    let eth0 = nl.link("eth0")?;
                    nl.delete_address(eth0.index, address.parse().expect("a prefix"))
                })
                .expect("address removed from eth0");
        }
        json!({"add": add["result"], "check": check["ok"], "del": del["ok"], "again": again["ok"]})
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn every_pairing_of_our_and_the_reference_halves_gives_the_references_results() {
    let dir = tempfile::tempdir().unwrap();
    let net = DhcpNet::start(dir.path(), 3, &["eth0"]);
    let ours_socket = dir.path().join("ours.sock");
    let reference_socket = dir.path().join("reference.sock");
    let ours = start_daemon(&plugin_bin_dir().join("dhcp"), &ours_socket);
    let reference = start_reference_daemon(&reference_socket);
    let socket = |daemon| match daemon {
        Side::Ours => ours_socket.as_path(),
        Side::Reference => reference_socket.as_path(),
    };
    for version in VERSIONS {
        let run = |plugin, daemon| Run {
            net: &net,
            dir: dir.path(),
            plugin,
            daemon,
            socket: socket(daemon),
            version,
        };
        // Renewals take T1: checked once per pairing, at 1.0.0.
        let renew = version == "1.0.0";
        let expected = run(Side::Reference, Side::Reference).report(renew);
        assert_eq!(
            expected["add"]["routes"],
            json!([{"dst": "0.0.0.0/0", "gw": crate::server::SERVER_IP}]),
            "at {version}: {expected}"
        );
        for (plugin, daemon) in [
            (Side::Reference, Side::Ours),
            (Side::Ours, Side::Reference),
            (Side::Ours, Side::Ours),
        ] {
            let got = run(plugin, daemon).report(renew);
            assert_eq!(
                got,
                expected,
                "{plugin:?} plugin, {daemon:?} daemon at {version}\nour daemon:\n{}\nreference daemon:\n{}",
                ours.log(),
                reference.log()
            );
        }
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn with_no_server_either_plugin_shows_the_references_no_more_tries() {
    let dir = tempfile::tempdir().unwrap();
    let mut net = DhcpNet::start(dir.path(), 60, &["eth0"]);
    net.dnsmasq.kill();
    let socket = dir.path().join("ours.sock");
    let mut cmd = std::process::Command::new(plugin_bin_dir().join("dhcp"));
    cmd.args(["daemon", "-resendtimeout", "2s", "-socketpath"])
        .arg(&socket);
    let daemon = Logged::spawn(cmd);
    daemon.wait_for("listening on", Duration::from_secs(20));
    let conf = json!({"cniVersion": "1.0.0", "name": "dhcpnet", "type": "macvlan",
        "ipam": {"type": "dhcp", "daemonSocketPath": socket}});
    let netns = net.container.path().display().to_string();
    let id = net.container.name().to_string();
    let env = [
        ("CNI_COMMAND", "ADD"),
        ("CNI_CONTAINERID", id.as_str()),
        ("CNI_NETNS", netns.as_str()),
        ("CNI_IFNAME", "eth0"),
        ("CNI_PATH", "/nonexistent"),
    ];
    for (side, code) in [(Side::Reference, 999), (Side::Ours, 11)] {
        let out = run_plugin(
            &side.bin_dir().join("dhcp"),
            &env,
            conf.to_string().as_bytes(),
        );
        assert!(!out.success(), "{side:?}: {}", out.stdout_str());
        let err: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{side:?}: {e}: {}", out.excerpts(2000)));
        assert_eq!(
            err["msg"], "error calling DHCP.Allocate: no more tries",
            "{side:?}: {err}"
        );
        assert_eq!(err["code"], code, "{side:?}: {err}");
    }
}
