//! `ipam-etcd` as a process against a real etcd (tests/src/etcd.rs): many
//! nodes allocating from one range, GC scoped to its node, etcd killed and
//! restarted in the middle of a run, plugins killed in the middle of ADDs.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tests::etcd::Etcd;
use tests::StdoutJson;
use tests::{plugin_bin_dir, run_plugin, RawOutput, FAKE_NETNS};

const NETWORK: &str = "net";
const IPS: &str = "/cni-ipam/net/ips/";
/// Where reservations are kept in blocks.
const BLOCKS: &str = "/cni-ipam/net/blocks/";

fn ipam_etcd() -> PathBuf {
    plugin_bin_dir().join("ipam-etcd")
}

/// The configuration of `subnet` on etcd, as node `node`; `valid` as
/// `cni.dev/valid-attachments` unless `None`.
fn conf(etcd: &Etcd, node: &str, subnet: &str, valid: Option<Value>) -> Vec<u8> {
    let mut c = json!({"cniVersion": "1.1.0", "name": NETWORK, "type": "bridge",
        "ipam": {"type": "ipam-etcd", "ranges": [[{"subnet": subnet}]],
                 "store": {"type": "etcd", "endpoints": [etcd.endpoint()], "node": node}}});
    if let Some(valid) = valid {
        c["cni.dev/valid-attachments"] = valid;
    }
    serde_json::to_vec(&c).expect("serialisable")
}

fn env<'a>(cmd: &'a str, id: &'a str) -> Vec<(&'a str, &'a str)> {
    let mut env = vec![("CNI_COMMAND", cmd), ("CNI_PATH", "/usr/lib/cni")];
    if !matches!(cmd, "GC" | "STATUS") {
        env.extend([
            ("CNI_CONTAINERID", id),
            ("CNI_IFNAME", "eth0"),
            ("CNI_NETNS", FAKE_NETNS),
        ]);
    }
    env
}

/// One attachment: the node it runs on and its container id.
#[derive(Clone, Debug)]
struct Job {
    node: String,
    id: String,
}

/// `nodes` nodes with `each` containers each, interleaved.
fn jobs(nodes: usize, each: usize, tag: &str) -> Vec<Job> {
    (0..nodes * each)
        .map(|i| Job {
            node: format!("node-{}", i % nodes),
            id: format!("{tag}-{i:03}"),
        })
        .collect()
}

/// Runs ADD for every job, `parallel` processes at a time; `done` counts
/// finished ones.
fn add_all(
    etcd: &Etcd,
    subnet: &str,
    jobs: &[Job],
    parallel: usize,
    done: &AtomicUsize,
) -> Vec<RawOutput> {
    add_all_holding(etcd, subnet, jobs, parallel, done, &AtomicBool::new(false))
}

/// [`add_all`], starting no new ADD while `hold` is set (as a runtime backs
/// off after code 11).
fn add_all_holding(
    etcd: &Etcd,
    subnet: &str,
    jobs: &[Job],
    parallel: usize,
    done: &AtomicUsize,
    hold: &AtomicBool,
) -> Vec<RawOutput> {
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<RawOutput>>> = jobs.iter().map(|_| Mutex::new(None)).collect();
    let bin = ipam_etcd();
    std::thread::scope(|s| {
        for _ in 0..parallel {
            s.spawn(|| loop {
                while hold.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let stdin = conf(etcd, &job.node, subnet, None);
                let out = run_plugin(&bin, &env("ADD", &job.id), &stdin);
                *results[i].lock().expect("lock") = Some(out);
                done.fetch_add(1, Ordering::Relaxed);
            });
        }
    });
    results
        .into_iter()
        .map(|m| m.into_inner().expect("lock").expect("every job ran"))
        .collect()
}

/// The address an ADD returned.
fn address(out: &RawOutput) -> IpAddr {
    let v = out.stdout_json();
    let text = v["ips"][0]["address"].as_str().unwrap_or_default();
    text.split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {out:?}"))
}

/// The reservations in etcd, in blocks and in the layout before them:
/// address -> (container id, node).
fn reservations(etcd: &Etcd) -> BTreeMap<IpAddr, (String, String)> {
    let mut all = etcd.get_prefix(BLOCKS);
    all.extend(etcd.get_prefix(IPS));
    all.into_iter()
        .map(|(key, value)| {
            let ip: IpAddr = key
                .rsplit('/')
                .next()
                .and_then(|ip| ip.parse().ok())
                .expect("key named by an address");
            let v: Value = serde_json::from_str(&value).expect("a JSON reservation");
            assert_eq!(v["ifname"], "eth0", "{key}: {value}");
            let field = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
            (ip, (field("containerID"), field("node")))
        })
        .collect()
}

/// Reservations equal the successful ADDs: same attachment, same address.
fn assert_store_matches(etcd: &Etcd, jobs: &[Job], outs: &[RawOutput]) {
    let want: BTreeMap<IpAddr, (String, String)> = jobs
        .iter()
        .zip(outs)
        .filter(|(_, out)| out.success())
        .map(|(job, out)| (address(out), (job.id.clone(), job.node.clone())))
        .collect();
    assert_eq!(
        want.len(),
        outs.iter().filter(|o| o.success()).count(),
        "an address was handed out twice"
    );
    assert_eq!(reservations(etcd), want);
}

#[test]
fn four_nodes_allocating_from_one_range_never_share_an_address_and_gc_stays_on_its_node() {
    let etcd = Etcd::start();
    let subnet = "10.80.0.0/23";
    let jobs = jobs(4, 125, "ctr");
    let started = Instant::now();
    let outs = add_all(&etcd, subnet, &jobs, 16, &AtomicUsize::new(0));
    eprintln!(
        "500 ADDs from 4 nodes, 16 at a time: {:?}",
        started.elapsed()
    );
    for (job, out) in jobs.iter().zip(&outs) {
        assert!(out.success(), "{job:?}: {out:?}");
    }
    let distinct: BTreeSet<IpAddr> = outs.iter().map(address).collect();
    assert_eq!(distinct.len(), 500);
    assert_store_matches(&etcd, &jobs, &outs);

    // GC on node-0 with an empty list: node-0's reservations go, and no
    // other node's.
    let gc = run_plugin(
        &ipam_etcd(),
        &env("GC", ""),
        &conf(&etcd, "node-0", subnet, Some(json!([]))),
    );
    assert!(gc.success(), "{gc:?}");
    let after = reservations(&etcd);
    assert_eq!(after.len(), 375, "only node-0's 125 are released");
    assert!(after.values().all(|(_, node)| node != "node-0"));
    // GC on node-1 listing half of node-1's containers and none of the
    // other nodes': only node-1's unlisted half goes.
    let listed: Vec<&Job> = jobs
        .iter()
        .enumerate()
        .filter(|(i, j)| j.node == "node-1" && i % 8 == 1)
        .map(|(_, j)| j)
        .collect();
    let valid: Vec<Value> = listed
        .iter()
        .map(|j| json!({"containerID": j.id, "ifname": "eth0"}))
        .collect();
    let gc = run_plugin(
        &ipam_etcd(),
        &env("GC", ""),
        &conf(&etcd, "node-1", subnet, Some(Value::Array(valid))),
    );
    assert!(gc.success(), "{gc:?}");
    let kept = reservations(&etcd);
    let node1: BTreeSet<&String> = kept
        .values()
        .filter(|(_, n)| n == "node-1")
        .map(|(id, _)| id)
        .collect();
    assert_eq!(node1, listed.iter().map(|j| &j.id).collect());
    assert_eq!(
        kept.len(),
        250 + listed.len(),
        "node-2 and node-3 untouched"
    );
    // Without a list, GC releases nothing and says so.
    let gc = run_plugin(
        &ipam_etcd(),
        &env("GC", ""),
        &conf(&etcd, "node-2", subnet, None),
    );
    assert!(gc.stderr_str().contains("nothing is released"), "{gc:?}");
    assert_eq!(reservations(&etcd), kept);
}

#[test]
fn etcd_killed_mid_run_fails_adds_with_code_11_and_once_restarted_the_rest_complete() {
    let etcd = Etcd::start();
    let subnet = "10.81.0.0/24";
    let jobs = jobs(4, 40, "outage");
    let done = AtomicUsize::new(0);
    let pid = etcd.pid().expect("etcd is running");
    let outs = std::thread::scope(|s| {
        let runner = s.spawn(|| add_all(&etcd, subnet, &jobs, 16, &done));
        while done.load(Ordering::Relaxed) < 40 {
            std::thread::sleep(Duration::from_millis(2));
        }
        // Killed by pid while the ADDs keep running; reaped below.
        // SAFETY: a plain kill(2) of the etcd this test started.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(pid, libc::SIGKILL)
        };
        runner.join().expect("runner")
    });
    etcd.stop();
    let failed: Vec<usize> = (0..jobs.len()).filter(|&i| !outs[i].success()).collect();
    assert!(!failed.is_empty(), "etcd was killed before the run ended");
    for &i in &failed {
        let e = outs[i].stdout_json();
        assert_eq!(e["code"], 11, "{:?}: {e}", jobs[i]);
        assert!(
            e["msg"]
                .as_str()
                .unwrap_or_default()
                .contains(&etcd.endpoint()),
            "{e}"
        );
    }
    // While it is down, STATUS says so, naming the endpoint.
    let status = run_plugin(
        &ipam_etcd(),
        &env("STATUS", ""),
        &conf(&etcd, "node-0", subnet, None),
    );
    assert_eq!(status.stdout_json()["code"], 50, "{status:?}");
    assert!(status.stdout_str().contains(&etcd.endpoint()), "{status:?}");

    etcd.restart();
    // Every reservation belongs to an ADD that succeeded with that address,
    // or to one whose answer was lost when etcd died (it reported code 11,
    // though etcd had applied it).
    let succeeded: BTreeMap<String, IpAddr> = jobs
        .iter()
        .zip(&outs)
        .filter(|(_, o)| o.success())
        .map(|(j, o)| (j.id.clone(), address(o)))
        .collect();
    for (ip, (id, _)) in reservations(&etcd) {
        match succeeded.get(&id) {
            Some(got) => assert_eq!(*got, ip, "{id}"),
            None => eprintln!("{id}: answered code 11, applied by etcd before it died"),
        }
    }
    // "A delete must still be executed even if the add fails" (SPEC-1.0.0,
    // lifecycle): after the runtime's DELs, the store holds exactly the
    // successful results.
    for &i in &failed {
        let stdin = conf(&etcd, &jobs[i].node, subnet, None);
        let out = run_plugin(&ipam_etcd(), &env("DEL", &jobs[i].id), &stdin);
        assert!(out.success(), "DEL {:?}: {out:?}", jobs[i]);
    }
    assert_store_matches(&etcd, &jobs, &outs);
    // The rest complete; a retried ADD gets what it may hold already.
    let retry_jobs: Vec<Job> = failed.iter().map(|&i| jobs[i].clone()).collect();
    let retried = add_all(&etcd, subnet, &retry_jobs, 16, &AtomicUsize::new(0));
    let mut all = outs;
    for (&i, out) in failed.iter().zip(retried) {
        assert!(out.success(), "{:?}: {out:?}", jobs[i]);
        all[i] = out;
    }
    assert_store_matches(&etcd, &jobs, &all);
    assert_eq!(reservations(&etcd).len(), jobs.len());
}

#[test]
fn etcd_restarted_in_the_middle_of_a_run_hands_no_address_out_twice_releases_none_valid_and_leaks_none(
) {
    let etcd = Etcd::start();
    let subnet = "10.86.0.0/24";
    let jobs = jobs(4, 40, "bounce");
    let (done, hold) = (AtomicUsize::new(0), AtomicBool::new(false));
    let mut restarted_at = 0;
    let outs = std::thread::scope(|s| {
        let runner = s.spawn(|| add_all_holding(&etcd, subnet, &jobs, 16, &done, &hold));
        let wait_for = |n: usize| {
            while done.load(Ordering::Relaxed) < n {
                std::thread::sleep(Duration::from_millis(2));
            }
        };
        wait_for(40);
        // Killed with ADDs in flight; sixteen more run into the outage.
        etcd.stop();
        wait_for(56);
        // Back on the same data while the run goes on; the runtime holds
        // new ADDs only while etcd starts.
        hold.store(true, Ordering::Relaxed);
        etcd.restart();
        restarted_at = done.load(Ordering::Relaxed);
        hold.store(false, Ordering::Relaxed);
        runner.join().expect("runner")
    });
    let failed: Vec<usize> = (0..jobs.len()).filter(|&i| !outs[i].success()).collect();
    assert!(!failed.is_empty(), "no ADD ran into the outage");
    for &i in &failed {
        assert_eq!(
            outs[i].stdout_json()["code"],
            11,
            "{:?}: {:?}",
            jobs[i],
            outs[i]
        );
    }
    // At most 16 ADDs were under way when the restart returned: every one
    // started after it completes.
    let after = restarted_at + 16;
    assert!(after < jobs.len(), "the run ended before etcd was back");
    for i in after..jobs.len() {
        assert!(
            outs[i].success(),
            "{:?} after the restart: {:?}",
            jobs[i],
            outs[i]
        );
    }
    // The runtime's DEL after each failed ADD, then the store is exactly
    // the successful results: none handed out twice, none leaked.
    for &i in &failed {
        let stdin = conf(&etcd, &jobs[i].node, subnet, None);
        let out = run_plugin(&ipam_etcd(), &env("DEL", &jobs[i].id), &stdin);
        assert!(out.success(), "DEL {:?}: {out:?}", jobs[i]);
    }
    assert_store_matches(&etcd, &jobs, &outs);
    // GC on each node listing exactly its successful attachments releases
    // none of them.
    let before = reservations(&etcd);
    for node in 0..4 {
        let node = format!("node-{node}");
        let valid: Vec<Value> = jobs
            .iter()
            .zip(&outs)
            .filter(|(j, o)| j.node == node && o.success())
            .map(|(j, _)| json!({"containerID": j.id, "ifname": "eth0"}))
            .collect();
        let gc = run_plugin(
            &ipam_etcd(),
            &env("GC", ""),
            &conf(&etcd, &node, subnet, Some(Value::Array(valid))),
        );
        assert!(gc.success(), "{gc:?}");
    }
    assert_eq!(
        reservations(&etcd),
        before,
        "GC released a valid reservation"
    );
    // Every DEL then leaves nothing behind.
    for (job, _) in jobs.iter().zip(&outs).filter(|(_, o)| o.success()) {
        let stdin = conf(&etcd, &job.node, subnet, None);
        assert!(run_plugin(&ipam_etcd(), &env("DEL", &job.id), &stdin).success());
    }
    assert!(reservations(&etcd).is_empty());
}

#[test]
fn plugins_killed_at_random_points_of_add_leave_nothing_a_del_cannot_clean() {
    let etcd = Etcd::start();
    let subnet = "10.82.0.0/16";
    let bin = ipam_etcd();
    let stdin = conf(&etcd, "node-k", subnet, None);
    let mut ids = Vec::new();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..100 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let delay = Duration::from_micros(state % 8000);
        let id = format!("killed-{i:03}");
        let mut child = Command::new(&bin)
            .env_clear()
            .envs(env("ADD", &id))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting ipam-etcd");
        {
            use std::io::Write;
            let mut pipe = child.stdin.take().expect("stdin");
            let _ = pipe.write_all(&stdin);
        }
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        ids.push(id);
        if i % 10 == 9 {
            // The next ADD works: nothing half-written is in its way.
            let id = format!("alive-{i:03}");
            let out = run_plugin(&bin, &env("ADD", &id), &stdin);
            assert!(out.success(), "{out:?}");
            ids.push(id);
        }
    }
    let held = reservations(&etcd);
    assert!(held.len() >= 10, "the live ADDs hold addresses: {held:?}");
    for (ip, (id, node)) in &held {
        assert!(ids.contains(id) && node == "node-k", "{ip}: {id} on {node}");
    }
    let owners: BTreeSet<&String> = held.values().map(|(id, _)| id).collect();
    assert_eq!(owners.len(), held.len(), "one address per attachment");
    for id in &ids {
        let out = run_plugin(&bin, &env("DEL", id), &stdin);
        assert!(out.success(), "DEL {id}: {out:?}");
    }
    assert!(reservations(&etcd).is_empty());
}

#[test]
fn status_is_code_50_when_the_range_is_exhausted_and_a_foreign_value_is_skipped() {
    let etcd = Etcd::start();
    let subnet = "10.83.0.0/29"; // .2 to .6 after the gateway .1
    let bin = ipam_etcd();
    let stdin = conf(&etcd, "node-s", subnet, None);
    etcd.put(&format!("{IPS}10.83.0.2"), "not json");
    for i in 0..4 {
        let out = run_plugin(&bin, &env("ADD", &format!("s{i}")), &stdin);
        assert!(out.success(), "{out:?}");
        assert!(out.stderr_str().contains("10.83.0.2"), "{out:?}");
    }
    let status = run_plugin(&bin, &env("STATUS", ""), &stdin);
    assert_eq!(status.stdout_json()["code"], 50, "{status:?}");
    let full = run_plugin(&bin, &env("ADD", "s9"), &stdin);
    assert_eq!(full.stdout_json()["code"], 102, "{full:?}");
    // GC with an empty list releases this node's four, never the foreign
    // value.
    let gc = run_plugin(
        &bin,
        &env("GC", ""),
        &conf(&etcd, "node-s", subnet, Some(json!([]))),
    );
    assert!(gc.success(), "{gc:?}");
    let left: Vec<(String, String)> = etcd.get_prefix(IPS);
    assert_eq!(left, [(format!("{IPS}10.83.0.2"), "not json".to_owned())]);
    assert!(run_plugin(&bin, &env("STATUS", ""), &stdin).success());
}

#[test]
fn status_of_a_network_still_in_the_old_layout_is_code_50_only_when_its_keys_fill_it() {
    let etcd = Etcd::start();
    let bin = ipam_etcd();
    let old = |net: &str, hosts: std::ops::Range<u32>| -> Vec<(String, String)> {
        hosts
            .map(|k| {
                let value = json!({"containerID": format!("old-{k}"), "ifname": "eth0",
                                   "node": "node-gone"});
                (format!("{IPS}{net}.{k}"), value.to_string())
            })
            .collect()
    };
    // One /26 block, .2 to .62 after the gateway: one free address left,
    // then none.
    etcd.put_all(&old("10.86.0", 2..62));
    let one_block = conf(&etcd, "node-t", "10.86.0.0/26", None);
    let status = run_plugin(&bin, &env("STATUS", ""), &one_block);
    assert!(status.success(), "one address is free: {status:?}");
    // A node of the previous release takes the last one (and rewrites
    // its last reserved address, as it did with each reservation).
    etcd.put_all(&old("10.86.0", 62..63));
    etcd.put("/cni-ipam/net/last_reserved/0", "10.86.0.62");
    let status = run_plugin(&bin, &env("STATUS", ""), &one_block);
    assert_eq!(status.stdout_json()["code"], 50, "{status:?}");
    // Two blocks, the first full: the second has room.
    let two_blocks = conf(&etcd, "node-t", "10.86.0.0/25", None);
    assert!(run_plugin(&bin, &env("STATUS", ""), &two_blocks).success());
    // STATUS wrote nothing but the old layout's size, for the polls to
    // come: the old layout is as it was, unmarked.
    assert_eq!(etcd.get_prefix(IPS).len(), 61);
    assert!(etcd.keys("/cni-ipam/net/upgraded").is_empty());
    assert_eq!(etcd.keys("/cni-ipam/net/old_size").len(), 1);
}

#[test]
fn a_hung_etcd_is_code_11_within_the_documented_two_seconds_and_nothing_is_written() {
    let etcd = Etcd::start();
    let bin = ipam_etcd();
    let stdin = conf(&etcd, "node-h", "10.85.0.0/24", None);
    let pid = etcd.pid().expect("etcd is running");
    // SAFETY: plain kill(2)s of the etcd this test started.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(pid, libc::SIGSTOP)
    };
    let started = Instant::now();
    let out = run_plugin(&bin, &env("ADD", "hung"), &stdin);
    let took = started.elapsed();
    let status = run_plugin(&bin, &env("STATUS", ""), &stdin);
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(pid, libc::SIGCONT)
    };
    assert_eq!(out.stdout_json()["code"], 11, "{out:?}");
    assert!(
        took < Duration::from_millis(3500),
        "REQUEST_TIMEOUT is 2 s for the one endpoint, took {took:?}"
    );
    assert_eq!(status.stdout_json()["code"], 50, "{status:?}");
    assert!(status.stdout_str().contains(&etcd.endpoint()), "{status:?}");
    // The hung request reached etcd, but only the read: nothing written.
    assert!(reservations(&etcd).is_empty());
    let again = run_plugin(&bin, &env("ADD", "hung"), &stdin);
    assert!(again.success(), "{again:?}");
}
