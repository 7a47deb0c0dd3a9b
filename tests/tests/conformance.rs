//! Every plugin of ours, and the reference plugins from Debian, through
//! `cni-conformance` with its default scenarios. Each entry names the
//! checks the plugin fails and warns about, exactly: ours fail none, and
//! every reference finding is listed, with the spec text it contradicts,
//! in cni-conformance's README. The noop, a test double, is configured
//! through its debug file as a plugin author would (its own test below),
//! and fails none either.
//!
//! Adding a plugin is one line in `SUBJECTS`. Needs root (the checker
//! makes namespaces).

use std::path::{Path, PathBuf};

use cni_conformance::{interface_result, run, Kind, NetnsChoice, Selection, Status, Target};
use cni_types::SpecVersion;
use serde_json::json;
use tests::etcd::Etcd;
use tests::{in_host_namespace, plugin_bin_dir, reference_plugin_dir, NetNs};

// The dhcp tests' peers (dnsmasq in a namespace, our daemon); this file
// uses only part of them.
#[allow(dead_code)]
#[path = "dhcp_dnsmasq/server.rs"]
mod dhcp_server;

/// Where a plugin comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// `plugins-sample`, built for the test.
    Ours,
    /// Debian's `containernetworking-plugins`.
    Reference,
}

/// A plugin and what the checker must say about it.
struct Subject {
    name: &'static str,
    from: Source,
    kind: Kind,
    /// Its own host network namespace: it puts links and addresses on
    /// the host side (bridge, ptp).
    own_host: bool,
    setup: Setup,
    fails: &'static [&'static str],
    warns: &'static [&'static str],
}

/// What a subject needs beyond the tool's defaults.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Setup {
    /// The minimal configuration for its kind.
    Minimal,
    /// A bridge `cnicbr0` that is the gateway, with `host-local`
    /// (reference) or `ipam-file` (ours).
    Bridge,
    /// `CNI_IFNAME=lo`, as runtimes call loopback.
    Loopback,
    /// Reservations in an etcd started for the run.
    Etcd,
    /// An `agent` started for the run, on a socket in the scratch
    /// directory.
    Agent,
    /// A port mapping in `runtimeConfig`, so portmap has rules to add.
    Portmap,
    /// A master link `cnicm0` (a veth end, up) in the subject's own host
    /// namespace, for macvlan.
    Master,
    /// `static`'s addresses, so it has something to hand out.
    Static,
    /// A device (a veth end) in the subject's host namespace for
    /// `host-device` to move, addresses from `static`, and a container
    /// namespace of the test's.
    HostDevice,
    /// sbr with a `table` of the operator's: the checker's interface has
    /// no addresses, so a default route through `prevResult`'s gateway
    /// could not be added.
    Sbr,
    /// dnsmasq on the other end of the namespace's `eth0`, and our DHCP
    /// daemon (tests/tests/dhcp_dnsmasq).
    Dhcp,
}

/// A peer process a subject talks to, stopped when dropped.
enum Peer {
    Etcd {
        _running: Etcd,
    },
    Agent(std::process::Child),
    /// A container namespace of the test's, removed when dropped.
    Namespace(#[allow(dead_code)] NetNs),
    Dhcp {
        _daemon: dhcp_server::Logged,
        _net: dhcp_server::DhcpNet,
    },
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Peer::Agent(child) = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts the sample `agent` on `socket` and waits until it listens.
fn start_agent(socket: &Path) -> Peer {
    let child = std::process::Command::new(plugin_bin_dir().join("agent"))
        .arg(socket)
        .spawn()
        .expect("start the agent");
    let peer = Peer::Agent(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !socket.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never listened on {}",
            socket.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    peer
}

/// The reference skel answers VERSION with its newest version and prints
/// its "about" text, exiting 0, when CNI_COMMAND is missing.
const REFERENCE_WARNS: &[&str] = &["VERSION-ECHO", "ENV-NO-COMMAND"];
/// Our skel does the latter too (run by hand, a plugin says what it is).
const OUR_WARNS: &[&str] = &["ENV-NO-COMMAND"];

#[rustfmt::skip]
const SUBJECTS: &[Subject] = &[
    Subject { name: "dns-mac", from: Source::Ours, kind: Kind::Chained, own_host: false, setup: Setup::Minimal, fails: &[], warns: OUR_WARNS },
    Subject { name: "delegator", from: Source::Ours, kind: Kind::Interface, own_host: false, setup: Setup::Minimal, fails: &[], warns: OUR_WARNS },
    Subject { name: "veth", from: Source::Ours, kind: Kind::Interface, own_host: true, setup: Setup::Minimal, fails: &[], warns: OUR_WARNS },
    Subject { name: "ipam-file", from: Source::Ours, kind: Kind::Ipam, own_host: false, setup: Setup::Minimal, fails: &[], warns: OUR_WARNS },
    Subject { name: "ipam-etcd", from: Source::Ours, kind: Kind::Ipam, own_host: false, setup: Setup::Etcd, fails: &[], warns: OUR_WARNS },
    Subject { name: "bridge", from: Source::Ours, kind: Kind::Interface, own_host: true, setup: Setup::Bridge, fails: &[], warns: OUR_WARNS },
    Subject { name: "bandwidth", from: Source::Ours, kind: Kind::Chained, own_host: false, setup: Setup::Minimal, fails: &[], warns: OUR_WARNS },
    Subject { name: "tuning", from: Source::Ours, kind: Kind::Chained, own_host: false, setup: Setup::Minimal, fails: &[], warns: OUR_WARNS },
    Subject { name: "loopback", from: Source::Ours, kind: Kind::Interface, own_host: false, setup: Setup::Loopback, fails: &[], warns: OUR_WARNS },
    Subject { name: "ptp", from: Source::Ours, kind: Kind::Interface, own_host: true, setup: Setup::Minimal, fails: &[], warns: OUR_WARNS },
    Subject { name: "host-local", from: Source::Ours, kind: Kind::Ipam, own_host: false, setup: Setup::Minimal, fails: &[], warns: OUR_WARNS },
    Subject { name: "portmap", from: Source::Ours, kind: Kind::Chained, own_host: true, setup: Setup::Portmap, fails: &[], warns: OUR_WARNS },
    Subject { name: "macvlan", from: Source::Ours, kind: Kind::Interface, own_host: true, setup: Setup::Master, fails: &[], warns: OUR_WARNS },
    Subject { name: "tap", from: Source::Ours, kind: Kind::Interface, own_host: false, setup: Setup::Minimal, fails: &[], warns: OUR_WARNS },
    Subject { name: "firewall", from: Source::Ours, kind: Kind::Chained, own_host: true, setup: Setup::Minimal, fails: &[], warns: OUR_WARNS },
    Subject { name: "agent-forward", from: Source::Ours, kind: Kind::Interface, own_host: false, setup: Setup::Agent, fails: &[], warns: OUR_WARNS },
    // static gives what it is configured with: concurrent ADDs of one
    // configuration get the address it names, which CONCURRENT-ADD does
    // not count as a conflict (the operator chose it).
    Subject { name: "static", from: Source::Ours, kind: Kind::Ipam, own_host: false, setup: Setup::Static, fails: &[], warns: OUR_WARNS },
    Subject { name: "sbr", from: Source::Ours, kind: Kind::Chained, own_host: false, setup: Setup::Sbr, fails: &[], warns: OUR_WARNS },
    // One device goes to one container: of concurrent ADDs one succeeds.
    Subject { name: "host-device", from: Source::Ours, kind: Kind::Interface, own_host: true, setup: Setup::HostDevice, fails: &[], warns: &["ENV-NO-COMMAND", "CONCURRENT-ADD"] },
    // vrf: this host's kernel has no VRF support; tests/vm/vrf.rs runs the checker on it.
    Subject { name: "dhcp", from: Source::Ours, kind: Kind::Ipam, own_host: false, setup: Setup::Dhcp, fails: &[], warns: OUR_WARNS },
    Subject { name: "host-local", from: Source::Reference, kind: Kind::Ipam, own_host: false, setup: Setup::Minimal, fails: &[], warns: REFERENCE_WARNS },
    Subject { name: "bridge", from: Source::Reference, kind: Kind::Interface, own_host: true, setup: Setup::Bridge, fails: &[], warns: REFERENCE_WARNS },
    Subject { name: "ptp", from: Source::Reference, kind: Kind::Interface, own_host: true, setup: Setup::Minimal, fails: &[], warns: REFERENCE_WARNS },
    Subject { name: "macvlan", from: Source::Reference, kind: Kind::Interface, own_host: true, setup: Setup::Master, fails: &[], warns: REFERENCE_WARNS },
    Subject { name: "tuning", from: Source::Reference, kind: Kind::Chained, own_host: false, setup: Setup::Minimal, fails: &[], warns: REFERENCE_WARNS },
    // Results of 0.1.0 to 0.4.0 in the 1.0.0 layout (README: findings).
    Subject { name: "loopback", from: Source::Reference, kind: Kind::Interface, own_host: false, setup: Setup::Loopback,
              fails: &["ADD-LAYOUT"], warns: REFERENCE_WARNS },
];

/// What differs from the subject's known findings, with the report.
fn check(subject: &Subject) -> Option<String> {
    let (dir, cni_path) = match subject.from {
        Source::Ours => {
            let ours = plugin_bin_dir();
            (ours.clone(), vec![ours, reference_plugin_dir()])
        }
        Source::Reference => (reference_plugin_dir(), vec![reference_plugin_dir()]),
    };
    let plugin = dir.join(subject.name);
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let host = subject.own_host.then(|| NetNs::create("conf-host"));
    let executable = match &host {
        Some(host) => in_host_namespace(scratch.path(), &plugin, host),
        None => plugin.clone(),
    };
    let mut target = Target::new(executable, subject.kind);
    target.cni_path = cni_path;
    if subject.from == Source::Ours && subject.kind == Kind::Interface {
        // host-local stops at 1.0.0; ours covers 1.1.0 (GC, STATUS) too.
        target.ipam = "ipam-file".into();
    }
    let _peer = match subject.setup {
        Setup::Minimal => None,
        Setup::Bridge => {
            target.config = Some(json!({
                "name": "cni-conformance", "bridge": "cnicbr0", "isGateway": true,
                "ipam": {"type": target.ipam, "subnet": cni_conformance::TEST_SUBNET,
                         "dataDir": scratch.path().join("ipam")}
            }));
            None
        }
        Setup::Loopback => {
            target.ifname = "lo".into();
            None
        }
        Setup::Etcd => {
            let etcd = Etcd::start();
            target.config = Some(json!({
                "name": "cni-conformance",
                "ipam": {"subnet": cni_conformance::TEST_SUBNET,
                         "store": {"type": "etcd", "endpoints": [etcd.endpoint()],
                                   "prefix": format!("/cni-conformance-{}", std::process::id())}}
            }));
            Some(Peer::Etcd { _running: etcd })
        }
        Setup::Portmap => {
            target.config = Some(json!({
                "name": "cni-conformance", "backend": "nftables",
                "runtimeConfig": {"portMappings": [
                    {"hostPort": 18080, "containerPort": 80, "protocol": "tcp"}
                ]}
            }));
            None
        }
        Setup::Master => {
            let host = host.as_ref().expect("macvlan has its own host namespace");
            let ns = host.name();
            for args in [
                &[
                    "-n", ns, "link", "add", "cnicm0", "type", "veth", "peer", "cnicm1",
                ][..],
                &["-n", ns, "link", "set", "cnicm0", "up"],
                &["-n", ns, "link", "set", "cnicm1", "up"],
            ] {
                let out = tests::ip(args);
                assert!(out.success(), "ip {args:?}: {out:?}");
            }
            target.config = Some(json!({
                "name": "cni-conformance", "master": "cnicm0",
                "ipam": {"type": target.ipam, "subnet": cni_conformance::TEST_SUBNET,
                         "dataDir": scratch.path().join("ipam")}
            }));
            None
        }
        Setup::Static => {
            target.config = Some(json!({
                "name": "cni-conformance",
                "ipam": {"addresses": [{"address": "10.222.0.5/24", "gateway": "10.222.0.1"}]}
            }));
            None
        }
        Setup::HostDevice => {
            let host = host
                .as_ref()
                .expect("host-device has its own host namespace");
            let made = tests::ip(&[
                "-n",
                host.name(),
                "link",
                "add",
                "cnicdev0",
                "type",
                "veth",
                "peer",
                "name",
                "cnicdev0p",
            ]);
            assert!(made.success(), "{made:?}");
            target.config = Some(json!({
                "name": "cni-conformance", "device": "cnicdev0",
                "ipam": {"type": "static", "addresses": [{"address": "10.222.1.5/24"}]}
            }));
            // A namespace of the test's: the checker's "namespace gone"
            // case would destroy the (virtual) device with its own.
            let container = NetNs::create("conf-hd");
            target.netns = NetnsChoice::Path(container.path().into());
            Some(Peer::Namespace(container))
        }
        Setup::Sbr => {
            target.config = Some(json!({"name": "cni-conformance", "table": 4242}));
            None
        }
        Setup::Agent => {
            let socket = scratch.path().join("agent.sock");
            target.config = Some(json!({"name": "cni-conformance", "socket": socket}));
            Some(start_agent(&socket))
        }
        Setup::Dhcp => {
            // eth0 and the concurrent ADDs' eth0p0..15, all facing dnsmasq.
            let names: Vec<String> = std::iter::once("eth0".to_string())
                .chain((0..16).map(|i| format!("eth0p{i}")))
                .collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let net = dhcp_server::DhcpNet::start(scratch.path(), 60, &names);
            let socket = scratch.path().join("dhcp.sock");
            let daemon = dhcp_server::start_daemon(&plugin_bin_dir().join("dhcp"), &socket);
            target.config =
                Some(json!({"name": "cni-conformance", "ipam": {"daemonSocketPath": socket}}));
            target.netns = NetnsChoice::Path(net.container.path().to_path_buf());
            Some(Peer::Dhcp {
                _daemon: daemon,
                _net: net,
            })
        }
    };
    let report = match run(&target, &Selection::all()) {
        Ok(report) => report,
        Err(e) => return Some(format!("{}: {e}", subject.name)),
    };
    let found = (report.ids(Status::Failed), report.ids(Status::Warning));
    let known = (subject.fails.to_vec(), subject.warns.to_vec());
    (found != known).then(|| {
        format!(
            "{}: (failed, warned) are {found:?}, known {known:?}\n{}",
            subject.name,
            report.text()
        )
    })
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn every_plugin_shows_exactly_its_known_findings() {
    let mismatches: Vec<String> = SUBJECTS.iter().filter_map(check).collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n\n"));
}

/// The noop test double configured as a plugin author would: a debug file
/// (named by `CNI_ARGS` `DEBUG`) that lists valid versions and reports,
/// for one version per run, the result a chained plugin gives for the
/// tool's lifecycle `prevResult`, in a namespace of the test (the
/// result's `sandbox` is `CNI_NETNS`). What is left are SHOULDs the reference
/// noop breaks too, kept for drop-in use: without stdin or with a
/// configuration it cannot read, it cannot find its debug file and exits
/// 2 (a Go panic in the reference); it prints its result for every
/// command; it gives every ADD the same result; and it writes its debug
/// file back on every call, so concurrent calls are not supported.
#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn the_noop_with_a_debug_file_passes_every_must() {
    const WARNS: &[&str] = &[
        "VERSION-NO-STDIN",
        "ENV-NO-COMMAND",
        "ENV-MALFORMED-STDIN",
        "ENV-UNSUPPORTED-VERSION-CODE",
        "OUTPUT-ERROR-OBJECT",
        "OUTPUT-VOID-EMPTY",
    ];
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let container = NetNs::create("conf-noop");
    let netns = PathBuf::from(container.path());
    let supported = ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"];
    let mut mismatches = Vec::new();
    for v in supported {
        let version = SpecVersion::parse(v).expect("a version");
        let debug = scratch.path().join(format!("debug-{v}.json"));
        // Address 10 is the lifecycle ADD's prevResult (the address a
        // chained plugin must keep).
        let result = interface_result(&version, &netns, "eth0", 10);
        let settings =
            json!({"ReportResult": result.to_string(), "ReportVersionSupport": supported});
        std::fs::write(&debug, settings.to_string()).expect("write the debug file");
        let mut target = Target::new(plugin_bin_dir().join("noop"), Kind::Chained);
        target.versions = Some(vec![version]);
        target.netns = NetnsChoice::Path(netns.clone());
        target.cni_args = vec![("DEBUG".into(), debug.display().to_string())];
        let selection = Selection {
            skip: vec!["CONCURRENT-ADD".into()],
            ..Selection::all()
        };
        let report = run(&target, &selection).unwrap_or_else(|e| panic!("{v}: {e}"));
        let found = (report.ids(Status::Failed), report.ids(Status::Warning));
        if found != (vec![], WARNS.to_vec()) {
            mismatches.push(format!(
                "{v}: (failed, warned) are {found:?}\n{}",
                report.text()
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n\n"));
}
