//! The etcd store on a private three-member cluster (`tests::etcd::Cluster`):
//! sixteen nodes filling a /22 at once, then the same while the leader is
//! killed, and while a member hangs (SIGSTOP) for 10 s; and an upgrade from
//! the layout before blocks while the leader is killed. Every address is
//! read back from etcd: handed out once, to the ADD that reported it, and
//! an ADD that failed holds nothing. Plugins run in-process on threads, one
//! node name each.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cni_ipam::store::etcd::EtcdStore;
use cni_ipam::{Ipam, RANGE_EXHAUSTED};
use cni_skel::{Outcome, TestRequest};
use cni_types::Code;
use cni_version::PluginInfo;
use serde_json::{json, Value};
use tests::etcd::Cluster;
use tests::FAKE_NETNS;

const ROOT: &str = "/cni-ipam/net/";
const NODES: usize = 16;
/// Threads running ADDs at once.
const WORKERS: usize = 16;

#[allow(non_upper_case_globals)]
const IpamEtcd: Ipam<EtcdStore> = Ipam::new("ipam-etcd");

/// The configuration of `subnet` for node `node`, every member listed.
fn conf(cluster: &Cluster, node: usize, subnet: &str) -> Value {
    json!({"cniVersion": "1.1.0", "name": "net", "type": "bridge",
           "ipam": {"type": "ipam-etcd", "ranges": [[{"subnet": subnet}]],
                    "store": {"type": "etcd", "endpoints": cluster.endpoints(),
                              "node": format!("node-{node}")}}})
}

/// `command` of container `id` in-process.
fn run(command: &str, id: &str, conf: &Value) -> Outcome {
    TestRequest::new(command)
        .env("CNI_CONTAINERID", id)
        .env("CNI_IFNAME", "eth0")
        .env("CNI_NETNS", FAKE_NETNS)
        .env("CNI_PATH", "/opt/cni/bin")
        .stdin(conf.to_string())
        .run(&IpamEtcd, &PluginInfo::all())
}

/// The address an ADD returned.
fn address(out: &Outcome) -> IpAddr {
    let v = out.json();
    v["ips"][0]["address"]
        .as_str()
        .and_then(|a| a.split('/').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no address in {v}"))
}

fn code(out: &Outcome) -> Option<Code> {
    out.error().map(|e| e.code)
}

/// One ADD to run: its node and container id.
struct Job {
    node: usize,
    id: String,
}

/// `each` containers on each node, interleaved.
fn jobs(each: usize, tag: &str) -> Vec<Job> {
    (0..NODES * each)
        .map(|i| Job {
            node: i % NODES,
            id: format!("{tag}-{i:04}"),
        })
        .collect()
}

/// Runs every job's ADD on [`WORKERS`] threads while `fault` runs on this
/// one (given the count of finished ADDs): each outcome and how long it
/// took.
fn add_all(
    cluster: &Cluster,
    subnet: &str,
    jobs: &[Job],
    fault: impl FnOnce(&AtomicUsize),
) -> Vec<(Outcome, Duration)> {
    let (next, done) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let results: Vec<Mutex<Option<(Outcome, Duration)>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    let confs: Vec<Value> = (0..NODES).map(|n| conf(cluster, n, subnet)).collect();
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let started = Instant::now();
                let out = run("ADD", &job.id, &confs[job.node]);
                *results[i].lock().expect("lock") = Some((out, started.elapsed()));
                done.fetch_add(1, Ordering::Relaxed);
            });
        }
        fault(&done);
    });
    results
        .into_iter()
        .map(|m| m.into_inner().expect("lock").expect("every job ran"))
        .collect()
}

/// [`add_all`] with the leader killed once 200 ADDs are done: the
/// outcomes, and which member was killed.
fn add_all_killing_the_leader(
    cluster: &Cluster,
    subnet: &str,
    jobs: &[Job],
) -> (Vec<(Outcome, Duration)>, usize) {
    let mut killed = None;
    let outs = add_all(cluster, subnet, jobs, |done| {
        wait_for(done, 200);
        let leader = cluster.leader().expect("a leader");
        cluster.kill(leader);
        killed = Some(leader);
    });
    (outs, killed.expect("the leader was killed"))
}

/// Waits until `n` ADDs are done.
fn wait_for(done: &AtomicUsize, n: usize) {
    while done.load(Ordering::Relaxed) < n {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Every reservation in etcd (blocks and the layout before them):
/// address -> container id. An address under two keys fails.
fn reservations(cluster: &Cluster) -> BTreeMap<IpAddr, String> {
    let mut all = cluster.get_prefix(&format!("{ROOT}blocks/"));
    all.extend(cluster.get_prefix(&format!("{ROOT}ips/")));
    let mut held = BTreeMap::new();
    for (key, value) in all {
        let ip: IpAddr = key
            .rsplit('/')
            .next()
            .and_then(|ip| ip.parse().ok())
            .unwrap_or_else(|| panic!("{key} is not named by an address"));
        let v: Value = serde_json::from_str(&value).expect("a reservation");
        let id = v["containerID"].as_str().unwrap_or_default().to_owned();
        if let Some(other) = held.insert(ip, id.clone()) {
            panic!("{ip} held twice: by {other} and {id}");
        }
    }
    held
}

/// What etcd holds is exactly the successful ADDs, each at the address it
/// reported: none handed out twice, none held by a failed ADD.
fn assert_exactly_the_successes(cluster: &Cluster, jobs: &[Job], outs: &[(Outcome, Duration)]) {
    let mut want = BTreeMap::new();
    for (job, (out, _)) in jobs.iter().zip(outs) {
        if out.exit_code == 0 {
            let ip = address(out);
            if let Some(other) = want.insert(ip, job.id.clone()) {
                panic!("{ip} handed out to {other} and {}", job.id);
            }
        }
    }
    let held = reservations(cluster);
    let failed_holding: Vec<&String> = held
        .values()
        .filter(|id| !want.values().any(|w| w == *id))
        .collect();
    assert!(
        failed_holding.is_empty(),
        "failed ADDs hold addresses: {failed_holding:?}"
    );
    assert_eq!(held, want);
}

/// ADD latencies, for the log: p50, p99, max.
fn percentiles(outs: &[(Outcome, Duration)]) -> String {
    let mut took: Vec<Duration> = outs.iter().map(|o| o.1).collect();
    took.sort();
    let at = |q: f64| took[((took.len() - 1) as f64 * q) as usize];
    format!(
        "ADD p50 {:?}, p99 {:?}, max {:?}",
        at(0.5),
        at(0.99),
        at(1.0)
    )
}

/// Asserts that each failed ADD is code 11, and that no ADD took longer
/// than its deadline (`OPERATION_DEADLINE`, 15 s, and one request's 2 s).
fn assert_failures_are_code_11_and_bounded(jobs: &[Job], outs: &[(Outcome, Duration)]) {
    for (job, (out, took)) in jobs.iter().zip(outs) {
        if out.exit_code != 0 {
            assert_eq!(
                code(out),
                Some(Code::TRY_AGAIN_LATER),
                "{}: {out:?}",
                job.id
            );
        }
        assert!(*took < Duration::from_secs(17), "{} took {took:?}", job.id);
    }
}

#[test]
fn sixteen_nodes_fill_a_22_on_three_members_each_address_once_then_102_everywhere_and_a_release_is_borrowed(
) {
    let cluster = Cluster::start();
    let subnet = "10.92.0.0/22";
    // 1,021 addresses (less the gateway); 1,056 ADDs.
    let jobs = jobs(66, "fill");
    let started = Instant::now();
    let outs = add_all(&cluster, subnet, &jobs, |_| {});
    eprintln!(
        "{} ADDs, 16 nodes: {:?}, {}",
        jobs.len(),
        started.elapsed(),
        percentiles(&outs)
    );
    for (job, (out, _)) in jobs.iter().zip(&outs) {
        if out.exit_code != 0 {
            let c = code(out);
            assert!(
                c == Some(RANGE_EXHAUSTED) || c == Some(Code::TRY_AGAIN_LATER),
                "{}: {out:?}",
                job.id
            );
        }
    }
    assert_exactly_the_successes(&cluster, &jobs, &outs);
    // Whatever contention left free is taken now, node after node; then
    // every node's next ADD is code 102.
    let mut extra = 0;
    for node in 0..NODES {
        let conf = conf(&cluster, node, subnet);
        loop {
            let out = run("ADD", &format!("top-{node}-{extra}"), &conf);
            if out.exit_code != 0 {
                assert_eq!(code(&out), Some(RANGE_EXHAUSTED), "node-{node}: {out:?}");
                break;
            }
            extra += 1;
        }
    }
    let held = reservations(&cluster);
    assert_eq!(held.len(), 1021, "the /22 is full");
    // A release on one node is borrowed by another.
    let (ip, id) = held
        .iter()
        .find(|(_, id)| id.starts_with("fill-"))
        .expect("one");
    let job = jobs.iter().find(|j| j.id == *id).expect("its job");
    assert_eq!(
        run("DEL", id, &conf(&cluster, job.node, subnet)).exit_code,
        0
    );
    let other = (job.node + 5) % NODES;
    let out = run("ADD", "borrower", &conf(&cluster, other, subnet));
    assert_eq!(out.exit_code, 0, "{out:?}");
    assert_eq!(address(&out), *ip);
    assert_eq!(reservations(&cluster).len(), 1021);
}

#[test]
fn the_leader_killed_mid_run_hands_no_address_out_twice_and_every_failed_add_is_code_11_holding_nothing(
) {
    let cluster = Cluster::start();
    let subnet = "10.93.0.0/22";
    let jobs = jobs(40, "kill");
    let (outs, killed) = add_all_killing_the_leader(&cluster, subnet, &jobs);
    eprintln!("leader {killed} killed: {}", percentiles(&outs));
    assert_failures_are_code_11_and_bounded(&jobs, &outs);
    cluster.restart(killed);
    assert_exactly_the_successes(&cluster, &jobs, &outs);
    let ok = outs.iter().filter(|o| o.0.exit_code == 0).count();
    assert!(ok > jobs.len() / 2, "only {ok} ADDs succeeded");
}

#[test]
fn a_member_hung_for_ten_seconds_mid_run_hands_no_address_out_twice_and_every_failed_add_is_code_11_holding_nothing(
) {
    let cluster = Cluster::start();
    let subnet = "10.94.0.0/22";
    let jobs = jobs(40, "stop");
    // The first member listed: every ADD tries it first.
    assert!(cluster.pid(0).is_some(), "member 0 is not running");
    let outs = add_all(&cluster, subnet, &jobs, |done| {
        wait_for(done, 200);
        cluster.pause(0);
        std::thread::sleep(Duration::from_secs(10));
        cluster.resume(0);
    });
    eprintln!("member 0 stopped for 10 s: {}", percentiles(&outs));
    assert_failures_are_code_11_and_bounded(&jobs, &outs);
    assert_exactly_the_successes(&cluster, &jobs, &outs);
}

#[test]
fn sixteen_nodes_upgrading_from_the_old_layout_with_the_leader_killed_hand_out_no_address_twice_and_keep_every_old_one(
) {
    let cluster = Cluster::start();
    let subnet = "10.95.0.0/22";
    // 300 reservations of the layout before blocks, every third address,
    // of a node gone and of the nodes that now allocate.
    let old: BTreeMap<IpAddr, String> = (0..300u32)
        .map(|k| {
            let ip = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 95, 0, 2)) + 3 * k);
            (IpAddr::V4(ip), format!("old-{k:03}"))
        })
        .collect();
    let pairs: Vec<(String, String)> = old
        .iter()
        .enumerate()
        .map(|(k, (ip, id))| {
            let node = if k % 2 == 0 {
                "node-gone".to_owned()
            } else {
                format!("node-{}", k % NODES)
            };
            let value = json!({"containerID": id, "ifname": "eth0", "node": node});
            (format!("{ROOT}ips/{ip}"), value.to_string())
        })
        .collect();
    cluster.put_all(&pairs);
    let jobs = jobs(40, "upgrade");
    let (outs, killed) = add_all_killing_the_leader(&cluster, subnet, &jobs);
    eprintln!("upgrading, leader {killed} killed: {}", percentiles(&outs));
    assert_failures_are_code_11_and_bounded(&jobs, &outs);
    cluster.restart(killed);
    // Exactly the successes and the old reservations, each once, none of
    // the old handed out.
    let mut want = old.clone();
    for (job, (out, _)) in jobs.iter().zip(&outs) {
        if out.exit_code == 0 {
            let ip = address(out);
            if let Some(other) = want.insert(ip, job.id.clone()) {
                panic!("{ip} handed out to {} while held by {other}", job.id);
            }
        }
    }
    assert_eq!(reservations(&cluster), want);
    let ok = outs.iter().filter(|o| o.0.exit_code == 0).count();
    assert!(ok > jobs.len() / 2, "only {ok} ADDs succeeded");
    // Everything was moved into blocks, and the network marked upgraded
    // once an operation found nothing left to move.
    assert!(cluster.get_prefix(&format!("{ROOT}ips/")).is_empty());
    let out = run("ADD", "after", &conf(&cluster, 0, subnet));
    assert_eq!(out.exit_code, 0, "{out:?}");
    assert_eq!(cluster.get_prefix(&format!("{ROOT}upgraded")).len(), 1);
}
