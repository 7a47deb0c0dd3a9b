//! The plugin in-process over the file store: ADD, CHECK, DEL, GC and
//! STATUS, and every configuration error.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use cni_skel::{Outcome, TestRequest};
use cni_version::PluginInfo;
use serde_json::{json, Value};

use super::*;
use crate::store::file::FileStore;
use crate::{ADDRESS_NOT_ALLOCATABLE, ADDRESS_UNAVAILABLE, RANGE_EXHAUSTED};

#[allow(non_upper_case_globals)]
const IpamFile: Ipam<FileStore> = Ipam::new("ipam-file");

/// A fresh directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ipam-file-unit-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// The network directory of the `net` network.
    fn net(&self) -> PathBuf {
        self.0.join("net")
    }

    /// `name -> content` of every file of the network directory.
    fn files(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = std::fs::read_dir(self.net())
            .map(|rd| {
                rd.flatten()
                    .map(|e| {
                        (
                            e.file_name().to_string_lossy().into_owned(),
                            std::fs::read_to_string(e.path()).unwrap_or_default(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A configuration of the `net` network with this `ipam` section (the
/// data directory filled in) and these other top-level keys.
fn conf(dir: &TempDir, version: &str, ipam: Value, extra: Value) -> String {
    let mut ipam = ipam;
    ipam["type"] = json!("ipam-file");
    if ipam.get("dataDir").is_none() {
        ipam["dataDir"] = json!(dir.0);
    }
    let mut c = json!({"cniVersion": version, "name": "net", "type": "bridge", "ipam": ipam});
    if let Value::Object(extra) = extra {
        c.as_object_mut().unwrap().extend(extra);
    }
    c.to_string()
}

fn v4(dir: &TempDir) -> String {
    conf(
        dir,
        "1.1.0",
        json!({"ranges": [[{"subnet": "10.1.2.0/24"}]]}),
        json!({}),
    )
}

fn run(cmd: &str, id: &str, stdin: &str) -> Outcome {
    run_args(cmd, id, stdin, "")
}

fn run_args(cmd: &str, id: &str, stdin: &str, cni_args: &str) -> Outcome {
    let mut req = TestRequest::new(cmd)
        .env("CNI_PATH", "/usr/lib/cni")
        .stdin(stdin);
    if !matches!(cmd, "GC" | "STATUS") {
        req = req
            .env("CNI_CONTAINERID", id)
            .env("CNI_NETNS", "/var/run/netns/x")
            .env("CNI_IFNAME", "eth0");
    }
    if !cni_args.is_empty() {
        req = req.env("CNI_ARGS", cni_args);
    }
    req.run(&IpamFile, &PluginInfo::all())
}

fn ok(out: &Outcome) {
    assert_eq!(
        out.exit_code,
        0,
        "{} {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn address(out: &Outcome, i: usize) -> String {
    ok(out);
    out.json()["ips"][i]["address"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn err(out: &Outcome) -> Error {
    out.error().unwrap_or_else(|| {
        panic!(
            "expected an error, got {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn first_addresses_follow_host_local_and_files_use_its_format() {
    let dir = TempDir::new();
    let stdin = conf(
        &dir,
        "1.0.0",
        json!({"ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "2001:db8:1::/64"}]],
               "routes": [{"dst": "0.0.0.0/0"}]}),
        json!({}),
    );
    let out = run("ADD", "c1", &stdin);
    ok(&out);
    assert_eq!(
        out.json(),
        json!({"cniVersion": "1.0.0",
            "ips": [{"address": "10.1.2.2/24", "gateway": "10.1.2.1"},
                    {"address": "2001:db8:1::2/64", "gateway": "2001:db8:1::1"}],
            "routes": [{"dst": "0.0.0.0/0"}]})
    );
    assert_eq!(address(&run("ADD", "c2", &stdin), 0), "10.1.2.3/24");
    let held = |ip: &str, owner: &str| (ip.to_owned(), owner.to_owned());
    assert_eq!(
        dir.files(),
        [
            held("10.1.2.2", "c1\r\neth0"),
            held("10.1.2.3", "c2\r\neth0"),
            held("2001:db8:1::2", "c1\r\neth0"),
            held("2001:db8:1::3", "c2\r\neth0"),
            held("last_reserved_ip.0", "10.1.2.3"),
            held("last_reserved_ip.1", "2001:db8:1::3"),
            held("lock", ""),
        ]
    );
}

#[test]
fn a_repeated_add_is_refused_and_the_live_reservation_kept() {
    let dir = TempDir::new();
    let a = address(&run("ADD", "c1", &v4(&dir)), 0);
    let before = dir.files();
    let e = err(&run("ADD", "c1", &v4(&dir)));
    assert_eq!(e.code, crate::DUPLICATE_ALLOCATION, "{e:?}");
    assert!(e.msg.contains(a.trim_end_matches("/24")), "{e:?}");
    assert!(e.msg.contains("duplicate allocation"), "{e:?}");
    assert_eq!(dir.files(), before);
    ok(&run("CHECK", "c1", &v4(&dir)));
    // Another interface of the container is another attachment.
    let other = TestRequest::new("ADD")
        .env("CNI_PATH", "/usr/lib/cni")
        .env("CNI_CONTAINERID", "c1")
        .env("CNI_NETNS", "/var/run/netns/x")
        .env("CNI_IFNAME", "eth1")
        .stdin(v4(&dir).as_str())
        .run(&IpamFile, &PluginInfo::all());
    assert_eq!(address(&other, 0), "10.1.2.3/24");
}

#[test]
fn an_explicit_gateway_frees_the_first_address_and_is_never_allocated() {
    let dir = TempDir::new();
    let stdin = conf(
        &dir,
        "1.0.0",
        json!({"subnet": "10.3.0.0/29", "gateway": "10.3.0.6"}),
        json!({}),
    );
    let got: Vec<String> = (0..5)
        .map(|i| address(&run("ADD", &format!("c{i}"), &stdin), 0))
        .collect();
    assert_eq!(
        got,
        [
            "10.3.0.1/29",
            "10.3.0.2/29",
            "10.3.0.3/29",
            "10.3.0.4/29",
            "10.3.0.5/29"
        ]
    );
    let out = run("ADD", "c5", &stdin);
    assert_eq!(err(&out).code, RANGE_EXHAUSTED, "{out:?}");
}

#[test]
fn del_releases_and_succeeds_when_nothing_is_held() {
    let dir = TempDir::new();
    let stdin = v4(&dir);
    ok(&run("DEL", "c1", &stdin));
    assert!(!dir.net().exists(), "DEL created the data directory");
    address(&run("ADD", "c1", &stdin), 0);
    ok(&run("DEL", "c1", &stdin));
    ok(&run("DEL", "c1", &stdin));
    assert!(dir.files().iter().all(|(n, _)| !n.starts_with("10.")));
}

#[test]
fn check_fails_when_the_reservation_is_missing() {
    let dir = TempDir::new();
    let stdin = v4(&dir);
    let e = err(&run("CHECK", "c1", &stdin));
    assert_eq!(e.code, NOT_RESERVED);
    assert!(e.msg.contains("\"c1\""), "{e:?}");
    address(&run("ADD", "c1", &stdin), 0);
    ok(&run("CHECK", "c1", &stdin));
    ok(&run("DEL", "c1", &stdin));
    assert_eq!(err(&run("CHECK", "c1", &stdin)).code, NOT_RESERVED);
}

#[test]
fn status_is_code_50_when_a_range_set_is_exhausted() {
    let dir = TempDir::new();
    // A /30 has .1 (gateway) and .2.
    let stdin = conf(
        &dir,
        "1.1.0",
        json!({"ranges": [[{"subnet": "10.9.0.0/30"}]]}),
        json!({}),
    );
    ok(&run("STATUS", "", &stdin));
    assert_eq!(address(&run("ADD", "c1", &stdin), 0), "10.9.0.2/30");
    let e = err(&run("STATUS", "", &stdin));
    assert_eq!(e.code, Code::PLUGIN_NOT_AVAILABLE);
    assert!(e.msg.contains("10.9.0.1-10.9.0.2"), "{e:?}");
    ok(&run("DEL", "c1", &stdin));
    ok(&run("STATUS", "", &stdin));
}

#[test]
fn status_finds_a_free_address_past_the_probed_ones_and_exhaustion_after_them() {
    let dir = TempDir::new();
    // .1 is the gateway: .2 to .14 can be handed out.
    let stdin = conf(
        &dir,
        "1.1.0",
        json!({"ranges": [[{"subnet": "10.9.0.0/28"}]]}),
        json!({}),
    );
    assert_eq!(address(&run("ADD", "c0", &stdin), 0), "10.9.0.2/28");
    // More taken addresses where the search starts than STATUS probes.
    let hold = |last: u8| {
        for n in 3..=last {
            let entry = dir.net().join(format!("10.9.0.{n}"));
            std::fs::write(entry, format!("c{n}\r\neth0")).unwrap();
        }
    };
    hold(13);
    ok(&run("STATUS", "", &stdin));
    hold(14);
    let e = err(&run("STATUS", "", &stdin));
    assert_eq!(e.code, Code::PLUGIN_NOT_AVAILABLE);
    assert!(e.msg.contains("10.9.0.1-10.9.0.14"), "{e:?}");
}

#[test]
fn status_and_check_answer_at_once_while_a_writer_holds_the_lock() {
    let dir = TempDir::new();
    let stdin = conf(
        &dir,
        "1.1.0",
        json!({"ranges": [[{"subnet": "10.9.0.0/24"}]]}),
        json!({}),
    );
    address(&run("ADD", "c1", &stdin), 0);
    // Another process's ADD in the middle of its change (or stuck there).
    let file = std::fs::File::open(dir.net().join("lock")).unwrap();
    let held = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| e)
        .unwrap();
    let started = std::time::Instant::now();
    ok(&run("STATUS", "", &stdin));
    ok(&run("CHECK", "c1", &stdin));
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(2), "took {took:?}");
    drop(held);
}

#[test]
fn an_add_behind_a_stuck_lock_holder_fails_with_code_11_naming_the_lock_and_holder() {
    let dir = TempDir::new();
    let stdin = v4(&dir);
    address(&run("ADD", "c1", &stdin), 0);
    let before = dir.files();
    // Another process's ADD, stuck in the middle of its change.
    let lock = dir.net().join("lock");
    let held = nix::fcntl::Flock::lock(
        std::fs::File::open(&lock).unwrap(),
        nix::fcntl::FlockArg::LockExclusiveNonblock,
    )
    .map_err(|(_, e)| e)
    .unwrap();
    let started = std::time::Instant::now();
    let e = err(&run("ADD", "c2", &stdin));
    let waited = started.elapsed();
    drop(held);
    assert_eq!(e.code, cni_types::Code::TRY_AGAIN_LATER, "{e:?}");
    assert!(e.msg.contains(&lock.display().to_string()), "{e:?}");
    let holder = format!("held by process {}", std::process::id());
    assert!(e.msg.contains(&holder), "{e:?}");
    assert!(waited >= crate::store::file::LOCK_TIMEOUT, "{waited:?}");
    assert_eq!(dir.files(), before, "nothing changed");
    // Once the holder is gone, the same ADD goes through.
    address(&run("ADD", "c2", &stdin), 0);
}

#[test]
fn requested_addresses_args_win_over_cni_args() {
    let dir = TempDir::new();
    let with_args = conf(
        &dir,
        "1.1.0",
        json!({"ranges": [[{"subnet": "10.1.2.0/24"}]]}),
        json!({"args": {"cni": {"ips": ["10.1.2.42/24"]}}}),
    );
    let out = run_args("ADD", "c1", &with_args, "IgnoreUnknown=1;IP=10.1.2.43");
    assert_eq!(address(&out, 0), "10.1.2.42/24");
    let out = run_args("ADD", "c2", &v4(&dir), "K8S_POD_NAME=x;IP=10.1.2.43");
    assert_eq!(address(&out, 0), "10.1.2.43/24");
    // The same request again is a duplicate, refused.
    let out = run_args("ADD", "c2", &v4(&dir), "IP=10.1.2.43");
    assert_eq!(err(&out).code, crate::DUPLICATE_ALLOCATION);
}

#[test]
fn unusable_requested_addresses_are_errors_naming_them() {
    let dir = TempDir::new();
    address(&run_args("ADD", "c1", &v4(&dir), "IP=10.1.2.42"), 0);
    for (args, code, text) in [
        (
            "IP=10.1.2.42",
            ADDRESS_UNAVAILABLE,
            "10.1.2.42 (CNI_ARGS IP)",
        ),
        (
            "IP=10.9.9.9",
            ADDRESS_NOT_ALLOCATABLE,
            "10.9.9.9 (CNI_ARGS IP)",
        ),
        ("IP=10.1.2.255", ADDRESS_NOT_ALLOCATABLE, "10.1.2.255"),
        ("IP=10.1.2.1", ADDRESS_NOT_ALLOCATABLE, "gateway"),
        ("IP=2001:db8::1", ADDRESS_NOT_ALLOCATABLE, "2001:db8::1"),
        (
            "IP=nope",
            Code::INVALID_ENVIRONMENT_VARIABLES,
            "CNI_ARGS IP",
        ),
    ] {
        let e = err(&run_args("ADD", "c2", &v4(&dir), args));
        assert_eq!(e.code, code, "{args}: {e:?}");
        assert!(e.msg.contains(text), "{args}: {e:?}");
    }
    let taken = err(&run_args("ADD", "c2", &v4(&dir), "IP=10.1.2.42"));
    assert!(taken.details.contains("\"c1\""), "{taken:?}");
    let bad = conf(
        &dir,
        "1.1.0",
        json!({"ranges": [[{"subnet": "10.1.2.0/24"}]]}),
        json!({"args": {"cni": {"ips": ["10.1.2.7", "x"]}}}),
    );
    let e = err(&run("ADD", "c2", &bad));
    assert_eq!(
        (e.code, e.msg.as_str()),
        (Code::INVALID_NETWORK_CONFIG, "invalid args.cni.ips[1]")
    );
    // Nothing of c2 was written by any of these.
    assert!(dir.files().iter().all(|(_, c)| !c.starts_with("c2")));
}

#[test]
fn ip_ranges_capability_replaces_the_configured_ranges() {
    let dir = TempDir::new();
    let stdin = conf(
        &dir,
        "1.1.0",
        json!({"ranges": [[{"subnet": "10.1.2.0/24"}]]}),
        json!({"runtimeConfig": {"ipRanges": [[{"subnet": "10.77.0.0/16", "rangeStart": "10.77.3.10"}]]}}),
    );
    let out = run("ADD", "c1", &stdin);
    assert_eq!(address(&out, 0), "10.77.3.10/16");
    assert_eq!(out.json()["ips"][0]["gateway"], "10.77.0.1");
    assert_eq!(out.json()["ips"].as_array().map(Vec::len), Some(1));
}

#[test]
fn a_failed_add_writes_nothing() {
    let dir = TempDir::new();
    // Set 1 (a /30) is full once c1 holds .2; c2 must not keep set 0's.
    let stdin = conf(
        &dir,
        "1.1.0",
        json!({"ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "10.9.0.0/30"}]]}),
        json!({}),
    );
    ok(&run("ADD", "c1", &stdin));
    let before = dir.files();
    let e = err(&run("ADD", "c2", &stdin));
    assert_eq!(e.code, RANGE_EXHAUSTED);
    assert!(e.msg.contains("ipam.ranges[1]"), "{e:?}");
    assert_eq!(dir.files(), before);
}

#[test]
fn invalid_configurations_are_code_7_naming_the_field_and_touch_nothing() {
    let dir = TempDir::new();
    for (ipam, msg, value) in [
        (json!({}), "invalid ipam.ranges", "missing"),
        (json!({"ranges": []}), "invalid ipam.ranges", "missing"),
        (json!({"ranges": [[]]}), "invalid ipam.ranges[0]", "empty"),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/33"}]]}),
            "invalid ipam.ranges[0][0].subnet",
            "10.1.2.0/33",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.5/24"}]]}),
            "invalid ipam.ranges[0][0].subnet",
            "10.1.2.0",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/31"}]]}),
            "invalid ipam.ranges[0][0].subnet",
            "too small",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}, {"subnet": "10.1.3.0/24", "rangeStart": "10.1.4.1"}]]}),
            "invalid ipam.ranges[0][1].rangeStart",
            "10.1.4.1",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/24", "rangeEnd": "10.1.2.300"}]]}),
            "invalid ipam.ranges[0][0].rangeEnd",
            "10.1.2.300",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/24", "gateway": "10.1.3.1"}]]}),
            "invalid ipam.ranges[0][0].gateway",
            "10.1.3.1",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/24", "rangeStart": "10.1.2.9", "rangeEnd": "10.1.2.8"}]]}),
            "invalid ipam.ranges[0][0].rangeStart",
            "after rangeEnd",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}, {"subnet": "10.1.2.0/25"}]]}),
            "invalid ipam.ranges[0][1]",
            "overlaps ipam.ranges[0][0]",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}, {"subnet": "2001:db8::/64"}]]}),
            "invalid ipam.ranges[0][1].subnet",
            "mixed",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "10.1.0.0/16"}]]}),
            "invalid ipam.ranges[1]",
            "overlaps range set ipam.ranges[0]",
        ),
        (
            json!({"subnet": "10.1.2.0/24", "ranges": [[{"subnet": "10.1.2.128/25"}]]}),
            "invalid ipam.ranges[0]",
            "overlaps range set ipam ",
        ),
        (
            json!({"ranges": [[{"subnet": 10}]]}),
            "invalid ipam.ranges[0][0].subnet",
            "10",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "routes": [{"dst": "nope"}]}),
            "invalid ipam.routes[0]",
            "nope",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "dataDir": 5}),
            "invalid ipam.dataDir",
            "5",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "dataDir": "var/lib/cni"}),
            "invalid ipam.dataDir",
            "relative",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/24", "rangeStart": "10.1.2.0"}]]}),
            "invalid ipam.ranges[0][0].rangeStart",
            "network address of 10.1.2.0/24",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/24", "rangeEnd": "10.1.2.255"}]]}),
            "invalid ipam.ranges[0][0].rangeEnd",
            "broadcast address of 10.1.2.0/24",
        ),
        (
            json!({"ranges": [[{"subnet": "::/0", "rangeStart": "::"}]]}),
            "invalid ipam.ranges[0][0].rangeStart",
            "network address of ::/0",
        ),
        (
            json!({"ranges": [[{"subnet": "2001:db8::/64", "rangeStart": "2001:db8::"}]]}),
            "invalid ipam.ranges[0][0].rangeStart",
            "network address",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "store": {"type": "etcd", "endpoints": ["http://127.0.0.1:2379"]}}),
            "invalid ipam.store.type",
            "ipam-etcd",
        ),
        (
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "store": {"type": "consul"}}),
            "invalid ipam.store.type",
            "consul",
        ),
    ] {
        let e = err(&run(
            "ADD",
            "c1",
            &conf(&dir, "1.1.0", ipam.clone(), json!({})),
        ));
        assert_eq!(
            (e.code, e.msg.as_str()),
            (Code::INVALID_NETWORK_CONFIG, msg),
            "{ipam}: {e:?}"
        );
        assert!(e.details.contains(value), "{ipam}: {e:?}");
    }
    let bad_runtime = conf(
        &dir,
        "1.1.0",
        json!({}),
        json!({"runtimeConfig": {"ipRanges": [[{"subnet": "10.1.2.0/24", "gateway": "x"}]]}}),
    );
    let e = err(&run("ADD", "c1", &bad_runtime));
    assert_eq!(e.msg, "invalid runtimeConfig.ipRanges[0][0].gateway");
    let no_ipam = json!({"cniVersion": "1.1.0", "name": "net", "type": "x"}).to_string();
    assert_eq!(err(&run("DEL", "c1", &no_ipam)).msg, "invalid ipam");
    assert!(dir.files().is_empty(), "{:?}", dir.files());
}

#[test]
fn old_versions_allow_one_address_per_family_and_convert() {
    let dir = TempDir::new();
    let two = json!({"ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "10.1.3.0/24"}]]});
    let e = err(&run(
        "ADD",
        "c1",
        &conf(&dir, "0.2.0", two.clone(), json!({})),
    ));
    assert_eq!(e.code, Code::INVALID_NETWORK_CONFIG);
    let out = run("ADD", "c1", &conf(&dir, "0.4.0", two, json!({})));
    ok(&out);
    assert_eq!(out.json()["ips"][1]["version"], "4");
    assert_eq!(out.json()["ips"][1]["address"], "10.1.3.2/24");
}

#[test]
fn resolv_conf_becomes_the_result_dns() {
    let dir = TempDir::new();
    let resolv = dir.0.join("resolv.conf");
    std::fs::write(
        &resolv,
        "# comment\nnameserver 10.0.0.53\nnameserver 10.0.0.54\ndomain example.com\nsearch a.b c.d\noptions ndots:2\n",
    )
    .unwrap();
    let stdin = conf(
        &dir,
        "1.1.0",
        json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "resolvConf": resolv}),
        json!({}),
    );
    let out = run("ADD", "c1", &stdin);
    ok(&out);
    assert_eq!(
        out.json()["dns"],
        json!({"nameservers": ["10.0.0.53", "10.0.0.54"], "domain": "example.com",
               "search": ["a.b", "c.d"], "options": ["ndots:2"]})
    );
    let missing = conf(
        &dir,
        "1.1.0",
        json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "resolvConf": dir.0.join("nope")}),
        json!({}),
    );
    assert_eq!(err(&run("ADD", "c2", &missing)).code, Code::IO_FAILURE);
}

/// `v4(dir)` for GC, with `cni.dev/valid-attachments` set to `valid`
/// (left out when `None`).
fn gc_conf(dir: &TempDir, valid: Option<Value>) -> String {
    let mut gc: Value = serde_json::from_str(&v4(dir)).unwrap();
    if let Some(valid) = valid {
        gc["cni.dev/valid-attachments"] = valid;
    }
    gc.to_string()
}

/// c1 and c2 on eth0 (.2, .3), c1 on eth1 (.4), and an older host-local
/// reservation of container `old` (.9).
fn several_containers(dir: &TempDir) {
    let stdin = v4(dir);
    address(&run("ADD", "c1", &stdin), 0);
    address(&run("ADD", "c2", &stdin), 0);
    let eth1 = TestRequest::new("ADD")
        .env("CNI_PATH", "/usr/lib/cni")
        .env("CNI_CONTAINERID", "c1")
        .env("CNI_NETNS", "/var/run/netns/x")
        .env("CNI_IFNAME", "eth1")
        .stdin(stdin.as_str())
        .run(&IpamFile, &PluginInfo::all());
    assert_eq!(address(&eth1, 0), "10.1.2.4/24");
    std::fs::write(dir.net().join("10.1.2.9"), "old").unwrap();
}

#[test]
fn gc_without_valid_attachments_releases_nothing_and_says_so() {
    let dir = TempDir::new();
    several_containers(&dir);
    let before = dir.files();
    let out = run("GC", "", &gc_conf(&dir, None));
    ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nothing is released"), "{stderr}");
    assert_eq!(dir.files(), before);
}

/// The reservations left in the store: its entries named like addresses.
fn reserved(dir: &TempDir) -> Vec<String> {
    dir.files()
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name.parse::<std::net::IpAddr>().is_ok())
        .collect()
}

#[test]
fn gc_with_null_or_empty_valid_attachments_releases_every_reservation() {
    // `null` is what libcni sends for an empty Go slice: CRI-O's GC at
    // start for a network without a live pod.
    for valid in [json!(null), json!([])] {
        let dir = TempDir::new();
        several_containers(&dir);
        assert_eq!(reserved(&dir).len(), 4, "{valid}");
        ok(&run("GC", "", &gc_conf(&dir, Some(valid.clone()))));
        assert_eq!(reserved(&dir), Vec::<String>::new(), "{valid}");
    }
}
