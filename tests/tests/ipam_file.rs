//! `ipam-file` run as a process, as a runtime or an interface plugin runs
//! an IPAM plugin, and compared with the reference `host-local`:
//!
//! - differential: the same scenarios against both plugins, each with its
//!   own data directory, give the same results and byte-identical
//!   directories (names, contents, modes) after every step;
//! - swap: one plugin continues from the other's data directory;
//! - the 1.1.0 commands host-local lacks (GC, STATUS);
//! - concurrency: 200 ADDs as parallel processes for distinct containers,
//!   then a GC keeping half; and both plugins at once on one directory.
//!
//! Where ipam-file departs from host-local on purpose (error codes,
//! `ipRanges` replacing `ranges`), the scenarios are compared on
//! what both promise, and the departure is tested on its own.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::{json, Value};
use tests::StdoutJson;
use tests::{plugin_bin_dir, reference_plugin_dir, run_plugin, RawOutput, FAKE_NETNS};

const NETWORK: &str = "ipamnet";

fn ipam_file() -> PathBuf {
    plugin_bin_dir().join("ipam-file")
}

fn host_local() -> PathBuf {
    reference_plugin_dir().join("host-local")
}

/// One plugin with its own data directory.
struct Side {
    bin: PathBuf,
    data: tempfile::TempDir,
}

impl Side {
    fn new(bin: PathBuf) -> Side {
        let data = tempfile::Builder::new()
            .prefix("ipam-file-test-")
            .tempdir()
            .expect("creating a temporary directory");
        Side { bin, data }
    }

    fn data_dir(&self) -> &Path {
        self.data.path()
    }

    fn net_dir(&self) -> PathBuf {
        self.data_dir().join(NETWORK)
    }

    /// A configuration with this `ipam` section (dataDir filled in) and
    /// these other top-level keys.
    fn conf(&self, version: &str, ipam: &Value, extra: &Value) -> Vec<u8> {
        config(self.data_dir(), version, ipam, extra)
    }

    fn run(&self, cmd: &str, id: &str, ifname: &str, stdin: &[u8], cni_args: &str) -> RawOutput {
        invoke(&self.bin, cmd, id, ifname, stdin, cni_args)
    }

    /// `name -> (mode, content)` of every file of the network directory.
    fn snapshot(&self) -> BTreeMap<String, (u32, String)> {
        snapshot(&self.net_dir())
    }
}

fn config(data_dir: &Path, version: &str, ipam: &Value, extra: &Value) -> Vec<u8> {
    let mut ipam = ipam.clone();
    ipam["type"] = json!("host-local");
    ipam["dataDir"] = json!(data_dir);
    let mut c = json!({"cniVersion": version, "name": NETWORK, "type": "bridge", "ipam": ipam});
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        c.extend(extra.clone());
    }
    serde_json::to_vec(&c).expect("serialisable")
}

/// Runs a plugin as a runtime would.
fn invoke(
    bin: &Path,
    cmd: &str,
    id: &str,
    ifname: &str,
    stdin: &[u8],
    cni_args: &str,
) -> RawOutput {
    let mut env = vec![
        ("CNI_COMMAND", cmd),
        ("CNI_PATH", "/usr/lib/cni"),
        ("CNI_ARGS", cni_args),
    ];
    if !matches!(cmd, "GC" | "STATUS") {
        env.extend([
            ("CNI_CONTAINERID", id),
            ("CNI_IFNAME", ifname),
            ("CNI_NETNS", FAKE_NETNS),
        ]);
    }
    run_plugin(bin, &env, stdin)
}

fn snapshot(dir: &Path) -> BTreeMap<String, (u32, String)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .flatten()
        .map(|e| {
            let meta = e.metadata().expect("metadata");
            (
                e.file_name().to_string_lossy().into_owned(),
                (
                    meta.permissions().mode() & 0o7777,
                    fs::read_to_string(e.path()).unwrap_or_default(),
                ),
            )
        })
        .collect()
}

/// The reservation files of a directory: names that are addresses.
fn reservations(dir: &Path) -> BTreeMap<IpAddr, String> {
    snapshot(dir)
        .into_iter()
        .filter_map(|(name, (_, content))| Some((name.parse().ok()?, content)))
        .collect()
}

/// stdout as JSON with an empty `dns` removed (host-local prints
/// `"dns": {}` in 1.x results; our SDK omits it, as the spec's examples do).
fn result(out: &RawOutput) -> Value {
    let mut v = out.stdout_json();
    if v.get("dns").is_some_and(|d| d == &json!({})) {
        v.as_object_mut().map(|o| o.remove("dns"));
    }
    v
}

fn addresses(out: &RawOutput) -> Vec<String> {
    assert!(out.success(), "{out:?}");
    result(out)["ips"]
        .as_array()
        .map(|ips| {
            ips.iter()
                .map(|ip| ip["address"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A step of a differential scenario.
struct Step<'a> {
    cmd: &'a str,
    id: &'a str,
    cni_args: &'a str,
    /// Top-level keys added to the configuration (`args`, ...).
    extra: Value,
}

fn step<'a>(cmd: &'a str, id: &'a str) -> Step<'a> {
    Step {
        cmd,
        id,
        cni_args: "",
        extra: json!({}),
    }
}

/// Runs `steps` against host-local and ipam-file, each on its own data
/// directory, and compares every outcome (success, result) and the
/// directories after every step. Returns ipam-file's outcomes.
fn differential(version: &str, ipam: &Value, steps: &[Step]) -> Vec<RawOutput> {
    let reference = Side::new(host_local());
    let ours = Side::new(ipam_file());
    let mut outcomes = Vec::new();
    let mut hint_may_differ = false;
    for (n, s) in steps.iter().enumerate() {
        let what = format!("step {n}: {} {} {}", s.cmd, s.id, s.cni_args);
        let theirs = reference.run(
            s.cmd,
            s.id,
            "eth0",
            &reference.conf(version, ipam, &s.extra),
            s.cni_args,
        );
        let mine = ours.run(
            s.cmd,
            s.id,
            "eth0",
            &ours.conf(version, ipam, &s.extra),
            s.cni_args,
        );
        assert_eq!(
            theirs.success(),
            mine.success(),
            "{what}\nhost-local: {theirs:?}\nipam-file: {mine:?}"
        );
        if mine.success() && s.cmd == "ADD" {
            assert_eq!(result(&theirs), result(&mine), "{what}");
        } else if mine.success() {
            assert_eq!(theirs.stdout, mine.stdout, "{what}");
        }
        // host-local records in last_reserved_ip the addresses a failed ADD
        // reserved and then released; ipam-file decides before writing and
        // records nothing. After such a step only the reservations compare.
        hint_may_differ |= s.cmd == "ADD" && !mine.success();
        let (mut theirs_files, mut mine_files) = (reference.snapshot(), ours.snapshot());
        if theirs_files != mine_files && hint_may_differ {
            let hint =
                |name: &String, _: &mut (u32, String)| !name.starts_with("last_reserved_ip.");
            theirs_files.retain(hint);
            mine_files.retain(hint);
        }
        assert_eq!(theirs_files, mine_files, "{what}");
        outcomes.push(mine);
    }
    outcomes
}

#[test]
fn dual_stack_scenario_matches_host_local_step_by_step() {
    let ipam = json!({
        "ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "2001:db8:1::/64"}]],
        "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0", "gw": "2001:db8:1::1"}]
    });
    let out = differential(
        "1.0.0",
        &ipam,
        &[
            step("ADD", "c1"),
            step("ADD", "c2"),
            step("ADD", "c3"),
            step("CHECK", "c2"),
            step("DEL", "c2"),
            step("CHECK", "c2"),
            step("ADD", "c4"),
            step("ADD", "c2"),
            step("DEL", "nobody"),
            step("DEL", "c1"),
            step("DEL", "c1"),
        ],
    );
    assert_eq!(addresses(&out[0]), ["10.1.2.2/24", "2001:db8:1::2/64"]);
    // Round robin: after .4, c4 gets .5 though .3 is free again.
    assert_eq!(addresses(&out[6]), ["10.1.2.5/24", "2001:db8:1::5/64"]);
    assert_eq!(addresses(&out[7]), ["10.1.2.6/24", "2001:db8:1::6/64"]);
}

#[test]
fn single_range_form_with_gateway_and_bounds_matches_host_local_to_exhaustion() {
    let ipam = json!({
        "subnet": "10.3.0.0/28", "rangeStart": "10.3.0.4", "rangeEnd": "10.3.0.8",
        "gateway": "10.3.0.6"
    });
    let ids = ["a", "b", "c", "d", "e"];
    let mut steps: Vec<Step> = ids.iter().map(|id| step("ADD", id)).collect();
    steps.push(step("DEL", "b"));
    steps.push(step("ADD", "e"));
    steps.push(step("ADD", "f"));
    let out = differential("0.4.0", &ipam, &steps);
    let got: Vec<Vec<String>> = out[..4].iter().map(addresses).collect();
    assert_eq!(
        got,
        [
            ["10.3.0.4/28"],
            ["10.3.0.5/28"],
            ["10.3.0.7/28"],
            ["10.3.0.8/28"]
        ]
    );
    assert!(!out[4].success(), "exhausted: {:?}", out[4]);
    assert_eq!(addresses(&out[6]), ["10.3.0.5/28"]);
    assert!(!out[7].success());
    // 0.4.0 results carry the address family.
    assert_eq!(result(&out[0])["ips"][0]["version"], "4");
}

#[test]
fn multi_range_set_wraps_like_host_local() {
    let ipam = json!({"ranges": [[
        {"subnet": "10.4.0.0/29", "rangeStart": "10.4.0.5"},
        {"subnet": "10.4.1.0/29", "rangeEnd": "10.4.1.3", "gateway": "10.4.1.6"}
    ]]});
    let mut steps: Vec<Step> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|id| step("ADD", id))
        .collect();
    steps.extend([step("DEL", "a"), step("DEL", "c"), step("ADD", "f")]);
    let out = differential("0.3.1", &ipam, &steps);
    let got: Vec<String> = out[..5].iter().flat_map(addresses).collect();
    assert_eq!(
        got,
        [
            "10.4.0.5/29",
            "10.4.0.6/29",
            "10.4.1.1/29",
            "10.4.1.2/29",
            "10.4.1.3/29"
        ]
    );
    assert_eq!(result(&out[2])["ips"][0]["gateway"], "10.4.1.6");
    // After .1.3 the search wraps to the first range: .0.5 is free.
    assert_eq!(addresses(&out[7]), ["10.4.0.5/29"]);
}

#[test]
fn requested_addresses_match_host_local() {
    let ipam = json!({"ranges": [[{"subnet": "10.5.0.0/24"}], [{"subnet": "fd00:5::/120"}]]});
    let with_ips = |ips: Value| json!({"args": {"cni": {"ips": ips}}});
    let out = differential(
        "1.0.0",
        &ipam,
        &[
            Step {
                cni_args: "IgnoreUnknown=1;IP=10.5.0.77",
                ..step("ADD", "a")
            },
            Step {
                extra: with_ips(json!(["10.5.0.99/24", "fd00:5::99"])),
                ..step("ADD", "b")
            },
            step("ADD", "c"),
            // Taken, outside every range, the gateway: refused by both.
            Step {
                cni_args: "IP=10.5.0.77",
                ..step("ADD", "d")
            },
            Step {
                extra: with_ips(json!(["10.6.0.1"])),
                ..step("ADD", "d")
            },
            Step {
                extra: with_ips(json!(["10.5.0.1"])),
                ..step("ADD", "d")
            },
        ],
    );
    assert_eq!(addresses(&out[0]), ["10.5.0.77/24", "fd00:5::2/120"]);
    assert_eq!(addresses(&out[1]), ["10.5.0.99/24", "fd00:5::99/120"]);
    // The search goes on after the last reserved address of each set.
    assert_eq!(addresses(&out[2]), ["10.5.0.100/24", "fd00:5::9a/120"]);
    for (n, text) in [(3, "10.5.0.77"), (4, "10.6.0.1"), (5, "10.5.0.1")] {
        let e = out[n].stdout_json();
        assert!(e["msg"].as_str().unwrap_or_default().contains(text), "{e}");
    }
}

#[test]
fn either_plugin_takes_over_the_others_directory() {
    let shared = Side::new(host_local());
    let ipam = json!({"ranges": [[{"subnet": "10.7.0.0/24"}]]});
    let stdin = shared.conf("1.0.0", &ipam, &json!({}));
    let hl = |cmd: &str, id: &str| invoke(&host_local(), cmd, id, "eth0", &stdin, "");
    let ours = |cmd: &str, id: &str| invoke(&ipam_file(), cmd, id, "eth0", &stdin, "");

    assert_eq!(addresses(&hl("ADD", "h1")), ["10.7.0.2/24"]);
    assert_eq!(addresses(&hl("ADD", "h2")), ["10.7.0.3/24"]);
    // ipam-file continues host-local's round robin and sees its holdings.
    assert_eq!(addresses(&ours("ADD", "o1")), ["10.7.0.4/24"]);
    // host-local's reservation counts: a repeated ADD is refused.
    assert_eq!(ours("ADD", "h1").stdout_json()["code"], 104);
    assert!(ours("CHECK", "h1").success());
    assert!(ours("CHECK", "h2").success());
    assert!(ours("DEL", "h2").success());
    // And host-local sees ipam-file's.
    assert!(hl("CHECK", "o1").success());
    assert!(!hl("CHECK", "h2").success());
    assert_eq!(addresses(&hl("ADD", "h3")), ["10.7.0.5/24"]);
    assert!(hl("DEL", "o1").success());
    let left: Vec<(IpAddr, String)> = reservations(&shared.net_dir()).into_iter().collect();
    assert_eq!(
        left,
        [
            ("10.7.0.2".parse().unwrap(), "h1\r\neth0".to_owned()),
            ("10.7.0.5".parse().unwrap(), "h3\r\neth0".to_owned()),
        ]
    );
}

#[test]
fn add_check_del_gc_status_as_processes() {
    let side = Side::new(ipam_file());
    // A /29 with the gateway at .1: .2 to .6 are allocatable.
    let ipam = json!({"ranges": [[{"subnet": "10.8.0.0/29"}]], "routes": [{"dst": "10.0.0.0/8"}]});
    let stdin = side.conf("1.1.0", &ipam, &json!({}));
    let run = |cmd: &str, id: &str, ifname: &str| side.run(cmd, id, ifname, &stdin, "");

    assert!(run("STATUS", "", "").success());
    let first = run("ADD", "a", "eth0");
    assert_eq!(
        result(&first),
        json!({"cniVersion": "1.1.0", "ips": [{"address": "10.8.0.2/29", "gateway": "10.8.0.1"}],
               "routes": [{"dst": "10.0.0.0/8"}]})
    );
    // The same attachment again: refused (code 104), as host-local refuses it.
    let repeated = run("ADD", "a", "eth0");
    assert_eq!(repeated.stdout_json()["code"], 104, "{repeated:?}");
    assert!(run("CHECK", "a", "eth0").success());
    // Another interface of the same container is another attachment.
    assert_eq!(addresses(&run("ADD", "a", "net1")), ["10.8.0.3/29"]);
    assert!(run("CHECK", "a", "net1").success());
    let missing = run("CHECK", "zz", "eth0");
    assert_eq!(missing.status(), Some(1));
    let e = missing.stdout_json();
    assert!(e["code"].as_u64().is_some_and(|c| c >= 100), "{e}");
    assert!(e["msg"].as_str().unwrap_or_default().contains("zz"), "{e}");

    for id in ["b", "c", "d"] {
        assert!(run("ADD", id, "eth0").success());
    }
    let full = run("STATUS", "", "");
    assert_eq!(full.status(), Some(1));
    assert_eq!(full.stdout_json()["code"], 50, "{full:?}");
    assert!(!run("ADD", "e", "eth0").success());

    let mut gc: Value = serde_json::from_slice(&stdin).unwrap();
    gc["cni.dev/valid-attachments"] = json!([
        {"containerID": "a", "ifname": "eth0"},
        {"containerID": "c", "ifname": "eth0"}
    ]);
    let out = side.run("GC", "", "", &serde_json::to_vec(&gc).unwrap(), "");
    assert!(out.success(), "{out:?}");
    let owners: Vec<String> = reservations(&side.net_dir()).into_values().collect();
    assert_eq!(owners, ["a\r\neth0", "c\r\neth0"]);
    assert!(run("STATUS", "", "").success());
    assert!(run("DEL", "a", "eth0").success());
    assert!(run("DEL", "a", "eth0").success());
}

#[test]
fn invalid_configuration_is_code_7_and_leaves_no_trace() {
    let side = Side::new(ipam_file());
    let ipam = json!({"ranges": [[{"subnet": "10.9.0.0/24"}, {"subnet": "10.9.1.0/24", "rangeStart": "10.9.2.1"}]]});
    for cmd in ["ADD", "DEL", "CHECK"] {
        let out = side.run(cmd, "a", "eth0", &side.conf("1.1.0", &ipam, &json!({})), "");
        let e = out.stdout_json();
        assert_eq!(e["code"], 7, "{cmd}: {e}");
        assert_eq!(
            e["msg"], "invalid ipam.ranges[0][1].rangeStart",
            "{cmd}: {e}"
        );
        assert!(
            e["details"]
                .as_str()
                .unwrap_or_default()
                .contains("10.9.2.1"),
            "{e}"
        );
    }
    assert!(!side.net_dir().exists());
}

/// Runs `jobs` (plugin, container id) `parallel` at a time.
fn run_parallel(jobs: &[(PathBuf, String)], parallel: usize, stdin: &[u8]) -> Vec<RawOutput> {
    let next = AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<RawOutput>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..parallel {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((bin, id)) = jobs.get(i) else { break };
                let out = invoke(bin, "ADD", id, "eth0", stdin, "");
                *results[i].lock().unwrap() = Some(out);
            });
        }
    });
    results
        .into_iter()
        .map(|m| m.into_inner().unwrap().expect("every job ran"))
        .collect()
}

#[test]
fn two_hundred_parallel_adds_then_gc_keeping_half() {
    const N: usize = 200;
    const PARALLEL: usize = 16;
    let side = Side::new(ipam_file());
    let ipam = json!({"ranges": [[{"subnet": "10.20.0.0/24"}]]});
    let stdin = side.conf("1.1.0", &ipam, &json!({}));
    let jobs: Vec<(PathBuf, String)> = (0..N)
        .map(|i| (ipam_file(), format!("ctr-{i:03}")))
        .collect();

    let started = Instant::now();
    let outs = run_parallel(&jobs, PARALLEL, &stdin);
    let elapsed = started.elapsed();
    let got: BTreeSet<String> = outs.iter().flat_map(addresses).collect();
    assert_eq!(got.len(), N, "distinct addresses");
    let held = reservations(&side.net_dir());
    assert_eq!(held.len(), N, "reservation files");
    let files = snapshot(&side.net_dir());
    assert_eq!(
        files.len(),
        N + 2,
        "only reservations, last_reserved_ip.0 and lock: {:?}",
        files.keys()
    );
    // Every container holds exactly the address it was given.
    for ((_, id), out) in jobs.iter().zip(&outs) {
        let ip: IpAddr = addresses(out)[0]
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(held[&ip], format!("{id}\r\neth0"));
    }
    eprintln!("{N} ADDs, {PARALLEL} at a time: {elapsed:?}");

    let valid: Vec<Value> = jobs
        .iter()
        .step_by(2)
        .map(|(_, id)| json!({"containerID": id, "ifname": "eth0"}))
        .collect();
    let mut gc: Value = serde_json::from_slice(&stdin).unwrap();
    gc["cni.dev/valid-attachments"] = Value::Array(valid);
    let out = side.run("GC", "", "", &serde_json::to_vec(&gc).unwrap(), "");
    assert!(out.success(), "{out:?}");
    let kept: BTreeSet<String> = reservations(&side.net_dir()).into_values().collect();
    let want: BTreeSet<String> = jobs
        .iter()
        .step_by(2)
        .map(|(_, id)| format!("{id}\r\neth0"))
        .collect();
    assert_eq!(kept, want);
}

#[test]
fn host_local_and_ipam_file_at_once_share_the_lock() {
    const EACH: usize = 40;
    let side = Side::new(ipam_file());
    let ipam = json!({"ranges": [[{"subnet": "10.21.0.0/24"}]]});
    let stdin = side.conf("1.0.0", &ipam, &json!({}));
    let jobs: Vec<(PathBuf, String)> = (0..2 * EACH)
        .map(|i| {
            let bin = if i % 2 == 0 {
                ipam_file()
            } else {
                host_local()
            };
            (bin, format!("mixed-{i:03}"))
        })
        .collect();
    let outs = run_parallel(&jobs, 8, &stdin);
    let got: BTreeSet<String> = outs.iter().flat_map(addresses).collect();
    assert_eq!(got.len(), 2 * EACH);
    assert_eq!(reservations(&side.net_dir()).len(), 2 * EACH);
}
