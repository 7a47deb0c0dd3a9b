//! The etcd store's blocks on a real etcd: nodes claiming blocks at once,
//! a network of 1,000 nodes and 100,000 reservations, and a dead node's
//! blocks reclaimed. Plugins run in-process (`cni_skel::TestRequest`) on
//! threads, one node name each, as many nodes would.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;

use cni_ipam::store::etcd::{reclaim_node_of, EtcdStore};
use cni_ipam::store::{Access, Reserved, Store};
use cni_ipam::{config::IpamConfig, plan, Ipam, RANGE_EXHAUSTED};
use cni_skel::{Outcome, TestRequest};
use cni_types::{Attachment, NetConf};
use cni_version::PluginInfo;
use serde_json::{json, Value};
use tests::etcd::Etcd;
use tests::FAKE_NETNS;

const NETWORK: &str = "net";
const ROOT: &str = "/cni-ipam/net/";

#[allow(non_upper_case_globals)]
const IpamEtcd: Ipam<EtcdStore> = Ipam::new("ipam-etcd");

/// The network configuration of `subnet` for `node`, with `store` keys
/// added to the store section.
fn conf(etcd: &Etcd, node: &str, subnet: &str, store: Value) -> Value {
    let mut s = json!({"type": "etcd", "endpoints": [etcd.endpoint()], "node": node});
    for (k, v) in store.as_object().into_iter().flatten() {
        s[k] = v.clone();
    }
    json!({"cniVersion": "1.1.0", "name": NETWORK, "type": "bridge",
           "ipam": {"type": "ipam-etcd", "ranges": [[{"subnet": subnet}]], "store": s}})
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

/// What etcd holds, checked: every reservation key's address inside its
/// block and held once, every block owned once and listed in its owner's
/// index, every index entry owned by its node. Address -> block.
fn checked_layout(etcd: &Etcd) -> BTreeMap<IpAddr, String> {
    checked_layout_skipping(etcd, &[])
}

/// [`checked_layout`], leaving out the keys holding one of `skip` (keys
/// written by hand with garbage).
fn checked_layout_skipping(etcd: &Etcd, skip: &[&str]) -> BTreeMap<IpAddr, String> {
    let kept = |key: &String| !skip.iter().any(|s| key.contains(s));
    let mut held = BTreeMap::new();
    for key in etcd
        .keys(&format!("{ROOT}blocks/"))
        .into_iter()
        .filter(kept)
    {
        let rest = &key[ROOT.len() + "blocks/".len()..];
        let (block, ip) = rest.split_once('/').expect("blocks/<block>/<address>");
        let ip: IpAddr = ip.parse().expect("an address");
        let (net, len) = block.rsplit_once('-').expect("<address>-<length>");
        let (net, len): (Ipv4Addr, u32) = (net.parse().unwrap(), len.parse().unwrap());
        let IpAddr::V4(v4) = ip else { panic!("{key}") };
        let mask = u32::MAX << (32 - len);
        assert_eq!(
            u32::from(v4) & mask,
            u32::from(net),
            "{key} outside its block"
        );
        assert!(
            held.insert(ip, block.to_owned()).is_none(),
            "{ip} held twice"
        );
    }
    let owners: BTreeMap<String, String> = etcd
        .get_prefix(&format!("{ROOT}owners/"))
        .into_iter()
        .filter(|(k, _)| kept(k))
        .map(|(k, v)| {
            let node: Value = serde_json::from_str(&v).expect("an owner record");
            (
                k[ROOT.len() + "owners/".len()..].to_owned(),
                node["node"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut indexed = BTreeMap::new();
    for key in etcd.keys(&format!("{ROOT}nodes/")).into_iter().filter(kept) {
        let rest = &key[ROOT.len() + "nodes/".len()..];
        if let Some((node, block)) = rest.split_once("/blocks/") {
            assert!(
                indexed.insert(block.to_owned(), node.to_owned()).is_none(),
                "{block} in two nodes' indexes"
            );
        }
    }
    assert_eq!(owners, indexed, "owners and the nodes' indexes disagree");
    held
}

#[test]
fn sixteen_nodes_claiming_blocks_at_once_from_a_nearly_full_range_never_share_one() {
    let etcd = Etcd::start();
    // 16 blocks of /28; 12 already owned by nodes that are gone.
    let subnet = "10.95.0.0/24";
    let gone: Vec<(String, String)> = (0..12u32)
        .flat_map(|i| {
            let block = format!("10.95.0.{}-28", 16 * (i + 4));
            let node = format!("old-{i}");
            [
                (
                    format!("{ROOT}owners/{block}"),
                    json!({"node": node}).to_string(),
                ),
                (format!("{ROOT}nodes/{node}/blocks/{block}"), String::new()),
            ]
        })
        .collect();
    etcd.put_all(&gone);
    let strict = json!({"blockSize": 28, "strictBlocks": true});
    let barrier = Barrier::new(16);
    let outs: Vec<Outcome> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..16)
            .map(|n| {
                let (etcd, barrier, strict) = (&etcd, &barrier, &strict);
                s.spawn(move || {
                    let conf = conf(etcd, &format!("node-{n}"), subnet, strict.clone());
                    barrier.wait();
                    run("ADD", &format!("c{n}"), &conf)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect()
    });
    let (won, lost): (Vec<&Outcome>, Vec<&Outcome>) = outs.iter().partition(|o| o.exit_code == 0);
    assert_eq!(won.len(), 4, "four free blocks: {outs:?}");
    for out in &lost {
        let e = out.error().expect("a CNI error");
        assert_eq!(e.code, RANGE_EXHAUSTED, "{e:?}");
        assert!(e.msg.contains("no IP addresses available"), "{e:?}");
    }
    let held = checked_layout(&etcd);
    let blocks: BTreeSet<&String> = held.values().collect();
    assert_eq!(
        blocks.len(),
        4,
        "each winner in a block of its own: {held:?}"
    );
    assert_eq!(etcd.keys(&format!("{ROOT}owners/")).len(), 16);

    // Without strictBlocks, a fifth node borrows one address of a block
    // another node owns, in that block's key space.
    let out = run(
        "ADD",
        "borrower",
        &conf(&etcd, "node-b", subnet, json!({"blockSize": 28})),
    );
    assert_eq!(out.exit_code, 0, "{out:?}");
    let ip = address(&out);
    let held = checked_layout(&etcd);
    let owner_of = |block: &str| {
        etcd.get_prefix(&format!("{ROOT}owners/{block}"))
            .first()
            .map(|(_, v)| v.clone())
    };
    assert!(owner_of(&held[&ip]).is_some_and(|o| !o.contains("node-b")));
    assert_eq!(
        etcd.get_prefix(&format!("{ROOT}nodes/node-b/borrowed/{ip}"))
            .len(),
        1,
        "the borrower records it"
    );
    // Its DEL releases it and its record.
    let del = run(
        "DEL",
        "borrower",
        &conf(&etcd, "node-b", subnet, json!({"blockSize": 28})),
    );
    assert_eq!(del.exit_code, 0, "{del:?}");
    assert!(!checked_layout(&etcd).contains_key(&ip));
    assert!(etcd
        .keys(&format!("{ROOT}nodes/node-b/borrowed/"))
        .is_empty());
}

/// 1,000 nodes, 2,048 blocks of /26 in a /15, every block owned (48 nodes
/// own three, the others two) and holding 48 or 49 reservations: 100,000.
const NODES: usize = 1000;
const RESERVATIONS: usize = 100_000;
const SUBNET: &str = "10.0.0.0/15";

fn node(i: usize) -> String {
    format!("node-{i:04}")
}

/// The bulk fill, in the layout the store's module docs give: per block
/// its owner, its index entry, and its reservations from its address + 2.
fn bulk_fill(etcd: &Etcd) -> Vec<(String, Vec<u32>)> {
    let base = u32::from(Ipv4Addr::new(10, 0, 0, 0));
    let blocks = 2048usize;
    let mut pairs = Vec::with_capacity(RESERVATIONS + 2 * blocks);
    let mut per_node: Vec<(String, Vec<u32>)> = (0..NODES).map(|i| (node(i), Vec::new())).collect();
    for b in 0..blocks {
        let owner = if b < 2 * NODES { b / 2 } else { b - 2 * NODES };
        let net = base + 64 * b as u32;
        let name = format!("{}-26", Ipv4Addr::from(net));
        let n = &per_node[owner].0;
        pairs.push((
            format!("{ROOT}owners/{name}"),
            json!({"node": n}).to_string(),
        ));
        pairs.push((format!("{ROOT}nodes/{n}/blocks/{name}"), String::new()));
        let count = RESERVATIONS / blocks + usize::from(b < RESERVATIONS % blocks);
        for k in 0..count {
            let ip = Ipv4Addr::from(net + 2 + k as u32);
            let id = format!("fill-{b}-{k}");
            let record = json!({"containerID": id, "ifname": "eth0", "node": n});
            pairs.push((format!("{ROOT}blocks/{name}/{ip}"), record.to_string()));
        }
        per_node[owner].1.push(net);
    }
    etcd.put_all(&pairs);
    per_node
}

/// An ADD through the store's API, as the plugin does it; the address,
/// the bytes etcd answered and the requests made.
fn add_through_store(etcd: &Etcd, node: &str, id: &str) -> (IpAddr, u64, u64) {
    add_through_store_in(etcd, node, id, SUBNET, json!({}))
}

/// [`add_through_store`] in `subnet`, with `store` keys added to the
/// store section.
fn add_through_store_in(
    etcd: &Etcd,
    node: &str,
    id: &str,
    subnet: &str,
    store: Value,
) -> (IpAddr, u64, u64) {
    let conf = NetConf::from_value(conf(etcd, node, subnet, store)).expect("conf");
    let cfg = IpamConfig::from_conf(&conf).expect("ipam");
    let store_cfg = EtcdStore::config(IpamConfig::section(&conf).unwrap()).expect("store");
    let mut store = EtcdStore::open(NETWORK, &store_cfg, Access::Create)
        .unwrap()
        .unwrap();
    store.use_ranges(&cfg.range_sets).expect("ranges");
    let attachment = Attachment {
        container_id: id.to_owned(),
        ifname: "eth0".to_owned(),
    };
    for lost in 0..8 {
        let state = store.read(1).expect("read");
        let got = plan::plan_skipping(&cfg, &state, &attachment, &[], lost).expect("plan");
        if store.reserve(&got, &attachment).expect("reserve") == Reserved::Done {
            return (got[0].ip, store.bytes_received(), store.requests_sent());
        }
    }
    panic!("{node}/{id} kept losing on its own blocks");
}

/// STATUS through the store's API, as the plugin does it; what it found
/// and the bytes etcd answered.
fn status_through_store(etcd: &Etcd, node: &str) -> (Vec<usize>, u64) {
    let (exhausted, bytes, _) = status_through_store_in(etcd, node, SUBNET);
    (exhausted, bytes)
}

/// [`status_through_store`] in `subnet`; also the requests made.
fn status_through_store_in(etcd: &Etcd, node: &str, subnet: &str) -> (Vec<usize>, u64, u64) {
    let conf = NetConf::from_value(conf(etcd, node, subnet, json!({}))).expect("conf");
    let cfg = IpamConfig::from_conf(&conf).expect("ipam");
    let store_cfg = EtcdStore::config(IpamConfig::section(&conf).unwrap()).expect("store");
    let mut store = EtcdStore::open(NETWORK, &store_cfg, Access::Read)
        .unwrap()
        .unwrap();
    store.use_ranges(&cfg.range_sets).expect("ranges");
    let exhausted = store.exhausted_sets(&cfg.range_sets).expect("status");
    (exhausted, store.bytes_received(), store.requests_sent())
}

#[test]
fn a_thousand_nodes_and_100_000_reservations_each_add_reads_its_own_blocks_and_a_dead_nodes_come_back(
) {
    let etcd = Etcd::start();
    let per_node = bulk_fill(&etcd);
    assert_eq!(checked_layout(&etcd).len(), RESERVATIONS);
    // STATUS counts, never lists the network: one small answer.
    let (exhausted, bytes) = status_through_store(&etcd, &node(7));
    assert_eq!(exhausted, Vec::<usize>::new());
    assert!(bytes < 4 << 10, "STATUS read {bytes} bytes from etcd");

    // Every node adds one container through the normal path, 8 at a time.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<(IpAddr, u64, u64)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= NODES {
                            break mine;
                        }
                        mine.push(add_through_store(&etcd, &node(i), &format!("new-{i}")));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker"))
            .collect()
    });
    let most = results.iter().map(|r| r.1).max().unwrap_or(0);
    // Three blocks of 50 reservations are ~30 KB in etcd's JSON; the
    // network's 100,000 would be ~20 MB.
    assert!(most < 64 << 10, "an ADD read {most} bytes from etcd");
    let held = checked_layout(&etcd);
    assert_eq!(held.len(), RESERVATIONS + NODES, "no address twice");

    // node-0500 (two blocks of 49) dies; a surviving node reclaims it.
    let dead = node(500);
    let survivor = conf(&etcd, &node(501), SUBNET, json!({}));
    let done = reclaim_node_of(survivor.to_string().as_bytes(), &dead).expect("reclaim");
    assert_eq!(done.blocks, per_node[500].1.len());
    assert_eq!(
        done.reservations,
        2 * 49 + 1,
        "its fill and its one ADD: {done:?}"
    );
    assert!(etcd.keys(&format!("{ROOT}nodes/{dead}/")).is_empty());
    let held = checked_layout(&etcd);
    assert_eq!(held.len(), RESERVATIONS + NODES - done.reservations);

    // A new node (strict: no borrowing) gets every address of the dead
    // node's blocks, and then none.
    let fresh = conf(&etcd, "node-new", SUBNET, json!({"strictBlocks": true}));
    let mut got = BTreeSet::new();
    loop {
        let out = run("ADD", &format!("fresh-{}", got.len()), &fresh);
        if out.exit_code != 0 {
            assert_eq!(
                out.error().map(|e| e.code),
                Some(RANGE_EXHAUSTED),
                "{out:?}"
            );
            break;
        }
        assert!(got.insert(address(&out)), "handed out twice");
        assert!(got.len() <= 200, "more than the dead node's blocks hold");
    }
    let want: BTreeSet<IpAddr> = per_node[500]
        .1
        .iter()
        .flat_map(|net| (0..64).map(move |k| IpAddr::V4(Ipv4Addr::from(net + k))))
        .collect();
    assert_eq!(got, want, "the dead node's blocks, whole");
    assert_eq!(
        checked_layout(&etcd).len(),
        RESERVATIONS + NODES - done.reservations + want.len()
    );
    // Every block is owned now: a new node borrows, reading a few
    // blocks' counts and one block's keys, never the network's.
    let (ip, bytes, _) = add_through_store(&etcd, "node-borrower", "borrow-1");
    assert!(
        bytes < 64 << 10,
        "a borrowing ADD read {bytes} bytes from etcd"
    );
    let held = checked_layout(&etcd);
    assert_eq!(
        held.len(),
        RESERVATIONS + NODES - done.reservations + want.len() + 1
    );
    assert!(held.contains_key(&ip));
    assert_eq!(
        etcd.keys(&format!("{ROOT}nodes/node-borrower/borrowed/{ip}"))
            .len(),
        1
    );
}

/// The hint file of this test's etcd naming `block`, if any.
fn hint_naming(etcd: &Etcd, block: &str) -> Option<std::path::PathBuf> {
    let entries = std::fs::read_dir(cni_ipam::store::etcd::HINT_DIR).ok()?;
    entries.flatten().map(|e| e.path()).find(|path| {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut lines = text.lines();
        lines.next() == Some(etcd.endpoint().as_str()) && lines.any(|l| l == block)
    })
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn an_add_on_a_node_with_blocks_is_one_read_and_one_reservation() {
    let etcd = Etcd::start();
    let (first, _, claimed) = add_through_store(&etcd, "node-hinted", "c-1");
    // Its index read, the claim, the reservation at least.
    assert!(claimed >= 3, "{claimed} requests for the claiming ADD");
    let (second, _, requests) = add_through_store(&etcd, "node-hinted", "c-2");
    assert_ne!(first, second);
    assert_eq!(
        requests, 2,
        "the index with the hinted block's keys, then the reservation"
    );
    assert_eq!(checked_layout(&etcd).len(), 2);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_node_borrowing_again_reads_its_lender_with_its_index_one_read_and_one_reservation() {
    let etcd = Etcd::start();
    // Two blocks of 16: node-lends-to's and node-lender's; then
    // node-lends-to borrows. Node names of this test's own: a node's hint
    // file is named by the network's root and the node, which every test
    // here shares.
    let add = |node: &str, id: &str| {
        add_through_store_in(&etcd, node, id, "10.99.0.0/27", json!({"blockSize": 28}))
    };
    let (first, _, _) = add("node-lends-to", "a-0");
    add("node-lender", "b-0");
    let own = checked_layout(&etcd)[&first].clone();
    let mut borrowing = Vec::new();
    for k in 1..40 {
        let (ip, _, sent) = add("node-lends-to", &format!("a-{k}"));
        if checked_layout(&etcd)[&ip] != own {
            borrowing.push((ip, sent));
        }
        if borrowing.len() == 4 {
            break;
        }
    }
    let sent: Vec<u64> = borrowing.iter().map(|(_, sent)| *sent).collect();
    assert!(
        sent[0] > 2,
        "the first borrowing ADD looks for a lender: {sent:?}"
    );
    assert_eq!(
        &sent[1..],
        &[2, 2, 2],
        "then its index with the lender's keys, and the reservation"
    );
    let layout = checked_layout(&etcd);
    for (ip, _) in &borrowing {
        assert_ne!(layout[ip], own, "{ip} in node-lender's block");
        assert_eq!(
            etcd.keys(&format!("{ROOT}nodes/node-lends-to/borrowed/{ip}"))
                .len(),
            1,
            "{ip} in node-lends-to's index"
        );
    }
    let hint = hint_naming(&etcd, &own).expect("node-lends-to's hint");
    let lender = format!("lender {}", layout[&borrowing[0].0]);
    let text = std::fs::read_to_string(&hint).unwrap();
    assert!(text.lines().any(|l| l == lender), "{text}");
    // A container of node-lends-to's own block goes: the next ADD is served
    // there, and the lender is forgotten.
    let (ip, _) = layout.iter().find(|(_, b)| **b == own).expect("one");
    let key = format!("{ROOT}blocks/{own}/{ip}");
    let (_, value) = etcd.get_prefix(&key).pop().expect("its reservation");
    let record: Value = serde_json::from_str(&value).unwrap();
    let id = record["containerID"].as_str().unwrap();
    let conf_a = conf(
        &etcd,
        "node-lends-to",
        "10.99.0.0/27",
        json!({"blockSize": 28}),
    );
    let del = run("DEL", id, &conf_a);
    assert_eq!(del.exit_code, 0, "{del:?}");
    let (again, _, _) = add("node-lends-to", "a-again");
    assert_eq!(checked_layout(&etcd)[&again], own);
    let text = std::fs::read_to_string(&hint).unwrap();
    assert!(!text.contains("lender"), "{text}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_hint_naming_another_nodes_block_hands_out_none_of_its_addresses() {
    let etcd = Etcd::start();
    let (a, _, _) = add_through_store(&etcd, "node-hint-a", "a-1");
    let (b, _, _) = add_through_store(&etcd, "node-hint-b", "b-1");
    let layout = checked_layout(&etcd);
    let (block_a, block_b) = (layout[&a].clone(), layout[&b].clone());
    assert_ne!(block_a, block_b);
    // node-hint-b's hint rewritten by hand to name node-hint-a's block:
    // what the index lists decides, so node-hint-b reads its own block
    // again. (Node names of this test's own: see the lender test.)
    let hint = hint_naming(&etcd, &block_b).expect("node-hint-b's hint");
    std::fs::write(&hint, format!("{}\n{block_a}", etcd.endpoint())).unwrap();
    let mut requests = Vec::new();
    for k in 2..6 {
        let (ip, _, sent) = add_through_store(&etcd, "node-hint-b", &format!("b-{k}"));
        requests.push(sent);
        assert_eq!(
            checked_layout(&etcd)[&ip],
            block_b,
            "{ip} of node-hint-b's block"
        );
    }
    assert_eq!(requests[0], 3, "the stale hint costs one more read, once");
    assert_eq!(
        &requests[1..],
        &[2, 2, 2],
        "then the hint is node-hint-b's again"
    );
    assert_eq!(checked_layout(&etcd).len(), 6, "no address twice");
}

#[test]
fn block_keys_written_by_hand_with_garbage_are_skipped_and_named_never_fatal() {
    let etcd = Etcd::start();
    let subnet = "10.96.0.0/24";
    let conf = conf(&etcd, "node-g", subnet, json!({}));
    let first = run("ADD", "c1", &conf);
    assert_eq!(first.exit_code, 0, "{first:?}");
    let mine = checked_layout(&etcd)[&address(&first)].clone();
    // Each of these is skipped and named; none stops an ADD.
    etcd.put_all(&[
        (format!("{ROOT}nodes/node-g/blocks/garbage"), String::new()),
        (
            format!("{ROOT}nodes/node-g/borrowed/10.96.0.77"),
            "not-a-block".to_owned(),
        ),
        (format!("{ROOT}nodes/node-g/whatever"), "x".to_owned()),
        (
            format!("{ROOT}blocks/{mine}/not-an-address"),
            "x".to_owned(),
        ),
        (
            format!("{ROOT}blocks/{mine}/10.96.0.3"),
            "\u{1}not json".to_owned(),
        ),
        (format!("{ROOT}owners/10.96.0.65-26"), "x".to_owned()),
        (format!("{ROOT}owners/junk"), "x".to_owned()),
    ]);
    let second = run("ADD", "c2", &conf);
    assert_eq!(second.exit_code, 0, "{second:?}");
    let stderr = String::from_utf8_lossy(&second.stderr);
    for named in [
        "nodes/node-g/blocks/garbage",
        "nodes/node-g/borrowed/10.96.0.77",
        "nodes/node-g/whatever",
        "not-an-address",
        "10.96.0.3",
    ] {
        assert!(stderr.contains(named), "{named} not named: {stderr}");
    }
    // The foreign value's address stays taken.
    assert_ne!(address(&second), "10.96.0.3".parse::<IpAddr>().unwrap());
    // A DEL and a GC work past them, and leave them.
    let del = run("DEL", "c2", &conf);
    assert_eq!(del.exit_code, 0, "{del:?}");
    assert_eq!(
        etcd.keys(&format!("{ROOT}blocks/{mine}/10.96.0.3")).len(),
        1
    );
    // A full block makes the next ADD read the owners to claim another:
    // the hand-written ones are named there, and skipped.
    let named = (0..70).find_map(|i| {
        let out = run("ADD", &format!("fill{i}"), &conf);
        assert_eq!(out.exit_code, 0, "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        stderr.contains("owners/junk").then_some(stderr)
    });
    let named = named.expect("a second block claimed, naming owners/junk");
    assert!(named.contains("owners/10.96.0.65-26"), "{named}");
    checked_layout_skipping(
        &etcd,
        &["garbage", "junk", "10.96.0.65-26", "not-an-address"],
    );
}

/// The reservations in blocks: container id -> address.
fn reservations(etcd: &Etcd) -> BTreeMap<String, IpAddr> {
    etcd.get_prefix(&format!("{ROOT}blocks/"))
        .into_iter()
        .map(|(key, value)| {
            let v: Value = serde_json::from_str(&value).expect("a reservation");
            let ip = key.rsplit('/').next().and_then(|ip| ip.parse().ok());
            (
                v["containerID"].as_str().unwrap().to_owned(),
                ip.expect("an address"),
            )
        })
        .collect()
}

#[test]
fn etcd_killed_twice_during_claims_and_adds_loses_no_block_and_owns_none_twice() {
    let etcd = Etcd::start();
    // 64 blocks of 16; 16 nodes of 24 containers claim two blocks each.
    let subnet = "10.97.0.0/22";
    let small = json!({"blockSize": 28});
    let jobs: Vec<(String, String)> = (0..24)
        .flat_map(|k| (0..16).map(move |n| (format!("node-{n}"), format!("k{k}-n{n}"))))
        .collect();
    let (next, done) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let outs: Vec<(usize, Outcome)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    while let Some(i) =
                        Some(next.fetch_add(1, Ordering::Relaxed)).filter(|i| *i < jobs.len())
                    {
                        let (node, id) = &jobs[i];
                        mine.push((i, run("ADD", id, &conf(&etcd, node, subnet, small.clone()))));
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    mine
                })
            })
            .collect();
        // Killed once among the first claims, once among the second ones.
        for at in [40, 220] {
            while done.load(Ordering::Relaxed) < at {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            etcd.restart();
        }
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker"))
            .collect()
    });
    let failed: Vec<usize> = outs
        .iter()
        .filter(|(_, o)| o.exit_code != 0)
        .map(|(i, _)| *i)
        .collect();
    assert!(!failed.is_empty(), "etcd was killed while ADDs ran");
    for (i, out) in &outs {
        if out.exit_code != 0 {
            assert_eq!(
                out.error().map(|e| e.code.0),
                Some(11),
                "{:?}: {out:?}",
                jobs[*i]
            );
        }
    }
    // The runtime DELs each failed ADD, then adds it again.
    let mut got: BTreeMap<String, IpAddr> = outs
        .iter()
        .filter(|(_, o)| o.exit_code == 0)
        .map(|(i, o)| (jobs[*i].1.clone(), address(o)))
        .collect();
    for &i in &failed {
        let (node, id) = &jobs[i];
        let conf = conf(&etcd, node, subnet, small.clone());
        assert_eq!(run("DEL", id, &conf).exit_code, 0);
        let out = run("ADD", id, &conf);
        assert_eq!(out.exit_code, 0, "{out:?}");
        got.insert(id.clone(), address(&out));
    }
    let held = checked_layout(&etcd);
    assert_eq!(held.len(), jobs.len(), "no address twice");
    assert_eq!(reservations(&etcd), got, "exactly the successful ADDs");
    // No block is lost: a GC of each node, every container valid, leaves
    // each node only blocks holding its containers (one empty at most,
    // such as one claimed by a transaction whose answer was lost).
    for n in 0..16 {
        let node = format!("node-{n}");
        let valid: Vec<Value> = jobs
            .iter()
            .filter(|(j, _)| *j == node)
            .map(|(_, id)| json!({"containerID": id, "ifname": "eth0"}))
            .collect();
        let mut c = conf(&etcd, &node, subnet, small.clone());
        c["cni.dev/valid-attachments"] = Value::Array(valid);
        assert_eq!(run("GC", "", &c).exit_code, 0);
    }
    let held = checked_layout(&etcd);
    assert_eq!(held.len(), jobs.len(), "GC released none of the valid");
    let used: BTreeSet<&String> = held.values().collect();
    let owned = etcd.keys(&format!("{ROOT}owners/"));
    assert!(
        owned.len() <= used.len() + 16,
        "{} blocks owned, {} in use",
        owned.len(),
        used.len()
    );
}

#[test]
fn reservations_in_the_layout_before_blocks_are_honoured_and_released_by_their_own_del() {
    let etcd = Etcd::start();
    let subnet = "10.98.0.0/24";
    let conf = conf(&etcd, "node-u", subnet, json!({}));
    let old = |ip: &str, id: &str| {
        (
            format!("{ROOT}ips/{ip}"),
            json!({"containerID": id, "ifname": "eth0", "node": "node-u"}).to_string(),
        )
    };
    etcd.put_all(&[
        old("10.98.0.2", "c-old"),
        old("10.98.0.3", "c-old2"),
        old("10.98.0.4", "c-other"),
    ]);
    // A repeated ADD of an old reservation's attachment is refused (104).
    let again = run("ADD", "c-old", &conf);
    assert_eq!(again.error().map(|e| e.code.0), Some(104), "{again:?}");
    // A new ADD passes them, and is written in a block; they are moved
    // into blocks, still held by their containers.
    let new = run("ADD", "c-new", &conf);
    assert_eq!(new.exit_code, 0, "{new:?}");
    assert_eq!(address(&new), "10.98.0.5".parse::<IpAddr>().unwrap());
    assert_eq!(checked_layout(&etcd).len(), 4);
    assert!(etcd.keys(&format!("{ROOT}ips/")).is_empty());
    assert_eq!(run("CHECK", "c-old", &conf).exit_code, 0);
    // Their own DEL releases them, and their index keys.
    assert_eq!(run("DEL", "c-old", &conf).exit_code, 0);
    let left = held_by_id(&etcd);
    assert_eq!(left.len(), 3, "{left:?}");
    assert!(!left.values().any(|id| id == "c-old"), "{left:?}");
    assert!(etcd
        .keys(&format!("{ROOT}nodes/node-u/borrowed/10.98.0.2"))
        .is_empty());
}

#[test]
fn a_network_whose_old_layout_is_empty_is_marked_upgraded_and_an_old_key_written_after_is_still_never_handed_out(
) {
    let etcd = Etcd::start();
    let subnet = "10.98.2.0/24";
    let conf = conf(&etcd, "node-u", subnet, json!({}));
    let upgraded = format!("{ROOT}upgraded");
    etcd.put(
        &format!("{ROOT}ips/10.98.2.2"),
        &json!({"containerID": "c-old", "ifname": "eth0", "node": "node-u"}).to_string(),
    );
    // STATUS reads only: no mark, whatever it counts.
    assert_eq!(run("STATUS", "", &conf).exit_code, 0);
    // The first ADD moves the old reservation; the layout is not marked
    // while it held one.
    let first = run("ADD", "c-1", &conf);
    assert_eq!(address(&first), "10.98.2.3".parse::<IpAddr>().unwrap());
    assert!(etcd.keys(&upgraded).is_empty());
    // The next finds it empty and marks the network, naming itself.
    assert_eq!(run("ADD", "c-2", &conf).exit_code, 0);
    let marked = etcd.get_prefix(&upgraded);
    assert_eq!(marked.len(), 1, "{marked:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&marked[0].1).unwrap()["node"],
        "node-u"
    );
    // A node of the previous release writing the old layout afterwards
    // (not supported: its reservations are no longer listed) still never
    // gets an address handed out twice: each reservation compares the
    // address's old key.
    for k in 5..9 {
        etcd.put(
            &format!("{ROOT}ips/10.98.2.{k}"),
            &json!({"containerID": format!("late-{k}"), "ifname": "eth0", "node": "node-x"})
                .to_string(),
        );
    }
    for i in 3..6 {
        let out = run("ADD", &format!("c-{i}"), &conf);
        let ip = address(&out);
        let last = match ip {
            IpAddr::V4(v4) => v4.octets()[3],
            IpAddr::V6(_) => panic!("{ip}"),
        };
        assert!(!(5..9).contains(&last), "{ip} is held in the old layout");
    }
    let held = held_by_id(&etcd);
    assert_eq!(held.len(), 10, "{held:?}");
    // STATUS of the marked network still answers.
    assert_eq!(run("STATUS", "", &conf).exit_code, 0);
}

#[test]
fn a_wiped_network_refilled_in_the_old_layout_is_counted_again() {
    let etcd = Etcd::start();
    let subnet = "10.98.3.0/24";
    let conf = conf(&etcd, "node-u", subnet, json!({}));
    for i in 0..2 {
        assert_eq!(run("ADD", &format!("c-{i}"), &conf).exit_code, 0);
    }
    assert_eq!(etcd.keys(&format!("{ROOT}upgraded")).len(), 1);
    // The operator wipes the network and restores reservations in the
    // layout before blocks: the mark went with the rest.
    etcd.delete_prefix(ROOT);
    etcd.put(
        &format!("{ROOT}ips/10.98.3.2"),
        &json!({"containerID": "c-old", "ifname": "eth0", "node": "node-u"}).to_string(),
    );
    let again = run("ADD", "c-old", &conf);
    assert_eq!(again.error().map(|e| e.code.0), Some(104), "{again:?}");
    assert_eq!(run("DEL", "c-old", &conf).exit_code, 0);
    assert!(held_by_id(&etcd).is_empty());
}

#[test]
fn ipam_etcd_reclaim_node_as_a_command_gives_back_a_dead_nodes_blocks() {
    let etcd = Etcd::start();
    let subnet = "10.99.0.0/24";
    for (node, id) in [
        ("node-dead", "d1"),
        ("node-dead", "d2"),
        ("node-live", "l1"),
    ] {
        assert_eq!(
            run("ADD", id, &conf(&etcd, node, subnet, json!({}))).exit_code,
            0
        );
    }
    let stdin = conf(&etcd, "node-live", subnet, json!({})).to_string();
    let out = std::process::Command::new(tests::plugin_bin_dir().join("ipam-etcd"))
        .args(["reclaim-node", "node-dead"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(stdin.as_bytes())?;
            child.wait_with_output()
        })
        .expect("ipam-etcd reclaim-node");
    assert!(out.status.success(), "{out:?}");
    let done: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(done, json!({"blocks": 1, "reservations": 2}));
    let held = checked_layout(&etcd);
    assert_eq!(held.len(), 1, "node-live's stays: {held:?}");
    assert!(etcd.keys(&format!("{ROOT}nodes/node-dead/")).is_empty());
    // A node does not reclaim itself.
    let own = reclaim_node_of(stdin.as_bytes(), "node-live").unwrap_err();
    assert_eq!(own.code, cni_types::Code::INVALID_NETWORK_CONFIG, "{own:?}");
}

/// Every reservation in both layouts: address -> container id (an
/// address under two keys fails).
fn held_by_id(etcd: &Etcd) -> BTreeMap<IpAddr, String> {
    let mut all = etcd.get_prefix(&format!("{ROOT}blocks/"));
    all.extend(etcd.get_prefix(&format!("{ROOT}ips/")));
    let mut held = BTreeMap::new();
    for (key, value) in all {
        let ip: IpAddr = key.rsplit('/').next().unwrap().parse().expect("an address");
        let v: Value = serde_json::from_str(&value).expect("a reservation");
        let id = v["containerID"].as_str().unwrap().to_owned();
        assert!(held.insert(ip, id).is_none(), "{ip} held twice");
    }
    held
}

/// Whether `ip` is one of the test's addresses held before the upgrade.
fn was_old(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V4(v4) if (2..122).contains(&v4.octets()[3]) && v4.octets()[2] == 1)
}

#[test]
fn an_upgrade_with_old_layout_reservations_filling_the_first_block_allocates_around_them() {
    let etcd = Etcd::start();
    // /26 blocks: 10.98.1.2-63 (the first block, less its gateway) and
    // 10.98.1.64-121 held in the layout before blocks, by this node and
    // another; the second block is partly held.
    let subnet = "10.98.1.0/24";
    let mine = conf(&etcd, "node-u", subnet, json!({}));
    let old: Vec<(String, String)> = (2..122u32)
        .map(|k| {
            let node = if k % 2 == 0 { "node-u" } else { "node-o" };
            (
                format!("{ROOT}ips/10.98.1.{k}"),
                json!({"containerID": format!("old-{k}"), "ifname": "eth0", "node": node})
                    .to_string(),
            )
        })
        .collect();
    etcd.put_all(&old);
    // New ADDs take the free addresses, the partly held block's first.
    let mut got = BTreeSet::new();
    for i in 0..10 {
        let out = run("ADD", &format!("new-{i}"), &mine);
        assert_eq!(out.exit_code, 0, "{out:?}");
        let ip = address(&out);
        assert!(
            !was_old(ip),
            "{ip} handed out while held before the upgrade"
        );
        got.insert(ip);
    }
    let first: IpAddr = "10.98.1.122".parse().unwrap();
    assert!(
        got.contains(&first),
        "the second block's free part: {got:?}"
    );
    // The old keys were moved into the blocks' key space, each still held
    // by its container.
    assert!(etcd.keys(&format!("{ROOT}ips/")).is_empty());
    let held = held_by_id(&etcd);
    assert_eq!(held.len(), 130);
    assert_eq!(held[&"10.98.1.10".parse::<IpAddr>().unwrap()], "old-10");
    // They are released by their own DEL and GC.
    assert_eq!(run("DEL", "old-10", &mine).exit_code, 0);
    let mut gc = mine.clone();
    let valid: Vec<Value> = (0..10)
        .map(|i| json!({"containerID": format!("new-{i}"), "ifname": "eth0"}))
        .chain((2..122).map(|k| json!({"containerID": format!("old-{k}"), "ifname": "eth0"})))
        .filter(|a| a["containerID"] != "old-12")
        .collect();
    gc["cni.dev/valid-attachments"] = Value::Array(valid);
    assert_eq!(run("GC", "", &gc).exit_code, 0);
    let held = held_by_id(&etcd);
    let old_left = held.values().filter(|id| id.starts_with("old-")).count();
    assert_eq!(old_left, 118, "only old-10 and old-12 went: {held:?}");
    assert!(!held.values().any(|id| id == "old-10" || id == "old-12"));
    // Another node's old reservations stay; a node fills the network
    // around them, each address once, then gets code 102.
    let other = conf(&etcd, "node-v", subnet, json!({}));
    loop {
        let out = run("ADD", &format!("fill-{}", got.len()), &other);
        if out.exit_code != 0 {
            assert_eq!(
                out.error().map(|e| e.code),
                Some(RANGE_EXHAUSTED),
                "{out:?}"
            );
            break;
        }
        let ip = address(&out);
        assert!(got.insert(ip), "{ip} handed out twice");
        let id = held.get(&ip);
        assert!(
            id.is_none_or(|id| !id.starts_with("old-") || id == "old-10" || id == "old-12"),
            "{ip} handed out while held by {id:?}"
        );
    }
    // 253 addresses less the old layout's 118.
    assert_eq!(got.len(), 253 - 118, "{got:?}");
    assert_eq!(held_by_id(&etcd).len(), 253);
    assert_eq!(checked_layout(&etcd).len(), 253);
}

/// An old layout larger than an ADD lists whole (more than 2,000 keys):
/// here 3,000 reservations of a node gone, from a /20's first address on
/// as the previous release handed them out, so that its first 46 blocks
/// are full of them.
#[test]
fn an_old_layout_too_large_to_list_is_moved_a_window_an_add_and_none_of_it_is_handed_out() {
    const OLD: u32 = 3000;
    let etcd = Etcd::start();
    let subnet = "10.97.0.0/20";
    let first = u32::from(Ipv4Addr::new(10, 97, 0, 1));
    let old_ip = |k: u32| IpAddr::V4(Ipv4Addr::from(first + k));
    let old: Vec<(String, String)> = (0..OLD)
        .map(|k| {
            (
                format!("{ROOT}ips/{}", old_ip(k)),
                json!({"containerID": format!("old-{k}"), "ifname": "eth0", "node": "gone"})
                    .to_string(),
            )
        })
        .collect();
    etcd.put_all(&old);
    let was_old = |ip: IpAddr| (0..OLD).any(|k| old_ip(k) == ip);
    let confs = [
        conf(&etcd, "node-a", subnet, json!({})),
        conf(&etcd, "node-b", subnet, json!({})),
    ];
    // The first ADD moves a window of the old layout, not all of it.
    let out = run("ADD", "new-0", &confs[0]);
    assert_eq!(out.exit_code, 0, "{out:?}");
    assert!(!was_old(address(&out)), "{out:?}");
    let left = etcd.keys(&format!("{ROOT}ips/")).len();
    assert!(
        left < OLD as usize && OLD as usize - left <= 200,
        "{left} old keys left"
    );
    // Two nodes keep adding: no old address is handed out, none twice.
    let mut got = BTreeSet::from([address(&out)]);
    for i in 1..40 {
        let out = run("ADD", &format!("new-{i}"), &confs[i % 2]);
        assert_eq!(out.exit_code, 0, "{out:?}");
        let ip = address(&out);
        assert!(
            !was_old(ip),
            "{ip} handed out while held before the upgrade"
        );
        assert!(got.insert(ip), "{ip} handed out twice");
    }
    // Every old reservation is still held, once, by its container; the
    // old layout drained as the ADDs went (a window each while it held
    // more than an ADD lists, then the rest), and the network is marked.
    let held = held_by_id(&etcd);
    assert_eq!(held.len(), OLD as usize + 40);
    assert_eq!(held[&old_ip(2999)], "old-2999");
    assert!(etcd.keys(&format!("{ROOT}ips/")).is_empty());
    assert_eq!(etcd.keys(&format!("{ROOT}upgraded")).len(), 1);
    // No block full of old reservations was claimed: each block owned
    // holds one of the new addresses.
    let layout = checked_layout(&etcd);
    let owned = etcd.keys(&format!("{ROOT}owners/"));
    for key in &owned {
        let block = &key[ROOT.len() + "owners/".len()..];
        assert!(
            got.iter()
                .any(|ip| layout.get(ip).is_some_and(|b| b == block)),
            "{block} owned without a new address in it"
        );
    }
    assert!(owned.len() <= 4, "{owned:?}");
}

/// A network the old layout fills, with more keys than an ADD lists
/// whole: the ADD looks at every block (none claimed) and answers that no
/// address is free (code 102), not "try again".
#[test]
fn a_network_full_in_an_old_layout_too_large_to_list_answers_range_exhausted() {
    let etcd = Etcd::start();
    // 10.96.0.2-10.96.7.254: the /21's range but its gateway, 2,045 keys.
    let first = u32::from(Ipv4Addr::new(10, 96, 0, 2));
    let old: Vec<(String, String)> = (0..2045u32)
        .map(|k| {
            (
                format!("{ROOT}ips/{}", Ipv4Addr::from(first + k)),
                json!({"containerID": format!("old-{k}"), "ifname": "eth0", "node": "gone"})
                    .to_string(),
            )
        })
        .collect();
    etcd.put_all(&old);
    let conf = conf(&etcd, "node-a", "10.96.0.0/21", json!({}));
    let out = run("ADD", "new", &conf);
    assert_eq!(
        out.error().map(|e| e.code),
        Some(RANGE_EXHAUSTED),
        "{out:?}"
    );
    assert!(etcd.keys(&format!("{ROOT}owners/")).is_empty());
    assert_eq!(held_by_id(&etcd).len(), 2045);
}

/// `count` old-layout reservations of a node gone, from `first` on.
fn old_layout_from(first: Ipv4Addr, count: u32) -> Vec<(String, String)> {
    (0..count)
        .map(|k| {
            (
                format!("{ROOT}ips/{}", Ipv4Addr::from(u32::from(first) + k)),
                json!({"containerID": format!("old-{k}"), "ifname": "eth0", "node": "gone"})
                    .to_string(),
            )
        })
        .collect()
}

/// An old layout too large to list filling a range of 256 blocks: a
/// claim reads 33 of them, all full, and the ADD gives up with code 11
/// rather than read on (it cannot tell the range is full without
/// listing it), having claimed none.
#[test]
fn a_claim_that_finds_only_full_blocks_of_an_unlisted_old_layout_gives_up_with_code_11() {
    let etcd = Etcd::start();
    // 10.95.0.2-10.95.63.254: the /18's range but its gateway.
    etcd.put_all(&old_layout_from(Ipv4Addr::new(10, 95, 0, 2), 16_381));
    let out = run(
        "ADD",
        "new",
        &conf(&etcd, "node-a", "10.95.0.0/18", json!({})),
    );
    let e = out.error().unwrap_or_else(|| panic!("{out:?}"));
    assert_eq!(e.code.0, 11, "{out:?}");
    assert!(
        e.msg.contains("the 33 free blocks looked at were full"),
        "{e:?}"
    );
    assert!(etcd.keys(&format!("{ROOT}owners/")).is_empty());
    assert_eq!(held_by_id(&etcd).len(), 16_381);
}

/// Blocks of more than 1,024 addresses are not read address by address:
/// an ADD lists the old layout whole as before, and moves 200 of it.
#[test]
fn with_blocks_too_large_to_read_by_address_an_add_lists_the_old_layout_and_moves_200() {
    let etcd = Etcd::start();
    etcd.put_all(&old_layout_from(Ipv4Addr::new(10, 94, 0, 2), 3000));
    let conf = conf(&etcd, "node-a", "10.94.0.0/20", json!({"blockSize": 21}));
    let out = run("ADD", "new", &conf);
    assert_eq!(out.exit_code, 0, "{out:?}");
    assert_eq!(address(&out), "10.94.11.186".parse::<IpAddr>().unwrap());
    assert_eq!(etcd.keys(&format!("{ROOT}ips/")).len(), 2800);
    assert_eq!(held_by_id(&etcd).len(), 3001);
}

/// The network configuration `conf` with a `prevResult` naming
/// `addresses`, as libcni sends a DEL from its cache of the ADD's result.
fn with_prev_result(conf: &Value, addresses: &[&str]) -> Value {
    let mut conf = conf.clone();
    let ips: Vec<Value> = addresses.iter().map(|a| json!({"address": a})).collect();
    conf["prevResult"] = json!({"cniVersion": "1.1.0", "ips": ips});
    conf
}

/// A DEL during an upgrade too large to list finds its container's old
/// reservation at the address its `prevResult` names: released, the old
/// layout not listed (a window moved, not 2,000); another container's
/// reservation at a named address is not its and stays; without a
/// `prevResult` the DEL lists the old layout as before and still finds it.
/// CHECK finds it the same way.
#[test]
fn a_del_or_check_with_a_prev_result_finds_its_old_reservation_without_listing_a_large_old_layout()
{
    let etcd = Etcd::start();
    let mut old = old_layout_from(Ipv4Addr::new(10, 93, 0, 2), 3000);
    let mine = |ip: &str, id: &str| {
        (
            format!("{ROOT}ips/{ip}"),
            json!({"containerID": id, "ifname": "eth0", "node": "node-u"}).to_string(),
        )
    };
    old.push(mine("10.93.15.200", "c-mine"));
    old.push(mine("10.93.15.201", "c-bare"));
    etcd.put_all(&old);
    let conf = conf(&etcd, "node-u", "10.93.0.0/20", json!({}));
    // CHECK reads the address its prevResult names, and moves nothing.
    let check = run(
        "CHECK",
        "c-mine",
        &with_prev_result(&conf, &["10.93.15.200/20"]),
    );
    assert_eq!(check.exit_code, 0, "{check:?}");
    let wrong = run(
        "CHECK",
        "c-mine",
        &with_prev_result(&conf, &["10.93.0.2/20"]),
    );
    assert_ne!(wrong.exit_code, 0, "{wrong:?}");
    assert_eq!(etcd.keys(&format!("{ROOT}ips/")).len(), 3002);
    // Its prevResult also names an address held by another container.
    let del = with_prev_result(&conf, &["10.93.15.200/20", "10.93.0.2/20"]);
    let out = run("DEL", "c-mine", &del);
    assert_eq!(out.exit_code, 0, "{out:?}");
    let held = held_by_id(&etcd);
    assert_eq!(held.len(), 3001, "{out:?}");
    assert!(!held.values().any(|id| id == "c-mine"));
    assert_eq!(held[&"10.93.0.2".parse::<IpAddr>().unwrap()], "old-0");
    let left = etcd.keys(&format!("{ROOT}ips/")).len();
    assert!(left >= 3001 - 200, "{left} old keys left: listed");
    // Without a prevResult: listed, 2,000 moved, its reservation found.
    let out = run("DEL", "c-bare", &conf);
    assert_eq!(out.exit_code, 0, "{out:?}");
    let held = held_by_id(&etcd);
    assert_eq!(held.len(), 3000);
    assert!(!held.values().any(|id| id == "c-bare"));
    assert!(etcd.keys(&format!("{ROOT}ips/")).len() <= left - 2000);
}

/// While the old layout drains, STATUS reads no more than with blocks
/// alone once the old layout's size is recorded (by the first STATUS,
/// ADD, DEL or GC to count it): one request of point reads, never a
/// count of `ips/` (9-28 ms at 100,000). The record is trusted only while
/// no node of the previous release reserved since (its reservations
/// rewrite `last_reserved/`): then STATUS counts, and the next ADD, DEL or
/// GC records anew. A set that the claimed blocks and the recorded size
/// could fill is still counted exactly, and a full one is code 50 as
/// before.
#[test]
fn status_during_an_upgrade_reads_the_recorded_old_size_not_the_old_layout() {
    let etcd = Etcd::start();
    let subnet = "10.92.0.0/20";
    let last = format!("{ROOT}last_reserved/0");
    let size_key = format!("{ROOT}old_size");
    etcd.put_all(&old_layout_from(Ipv4Addr::new(10, 92, 0, 2), 3000));
    etcd.put(&last, "10.92.11.185");
    // Nothing recorded: the first STATUS counts, and records it.
    let (exhausted, _, requests) = status_through_store_in(&etcd, "node-a", subnet);
    assert!(exhausted.is_empty(), "{exhausted:?}");
    assert!(requests > 1, "{requests}");
    let recorded = etcd.get_prefix(&size_key);
    let size: Value = serde_json::from_str(&recorded[0].1).unwrap();
    assert!(size["count"].as_u64().unwrap() >= 3000, "{size}");
    assert_eq!(size["node"], "node-a");
    let (exhausted, bytes, requests) = status_through_store_in(&etcd, "node-b", subnet);
    assert_eq!((exhausted.as_slice(), requests), (&[][..], 1));
    assert!(bytes < 2 << 10, "STATUS read {bytes} bytes");
    // A node of the previous release reserves: the record is stale, and
    // STATUS counts (and leaves the record to the next ADD, DEL or GC,
    // since such nodes may keep reserving while every node polls).
    let old_release_reserves = |ip: &str| {
        etcd.put(
            &format!("{ROOT}ips/{ip}"),
            &json!({"containerID": ip, "ifname": "eth0", "node": "old"}).to_string(),
        );
        etcd.put(&last, ip);
    };
    old_release_reserves("10.92.11.186");
    for _ in 0..2 {
        let (_, _, requests) = status_through_store_in(&etcd, "node-a", subnet);
        assert!(requests > 1, "a stale record is trusted");
    }
    // An ADD (as DEL and GC) records anew.
    let conf = conf(&etcd, "node-a", subnet, json!({}));
    assert_eq!(run("ADD", "new-0", &conf).exit_code, 0);
    let (_, _, requests) = status_through_store_in(&etcd, "node-a", subnet);
    assert_eq!(requests, 1, "recorded anew by the ADD");
    // A record short of what an ADD counts (written by hand) is renewed.
    etcd.put(
        &size_key,
        &json!({"count": 5, "node": "by-hand"}).to_string(),
    );
    assert_eq!(run("ADD", "new-1", &conf).exit_code, 0);
    let size: Value = serde_json::from_str(&etcd.get_prefix(&size_key)[0].1).unwrap();
    assert!(size["count"].as_u64().unwrap() >= 3000, "{size}");
    assert_eq!(size["node"], "node-a");
    // One block the old layout fills, recorded: counted exactly, full.
    let etcd = Etcd::start();
    let full = "10.91.0.0/26";
    etcd.put_all(&old_layout_from(Ipv4Addr::new(10, 91, 0, 2), 61));
    let conf = self::conf(&etcd, "node-a", full, json!({}));
    let none_left = run("ADD", "none-left", &conf);
    assert_eq!(none_left.error().map(|e| e.code.0), Some(102));
    assert_eq!(etcd.keys(&format!("{ROOT}old_size")).len(), 1);
    let (exhausted, _, _) = status_through_store_in(&etcd, "node-a", full);
    assert_eq!(exhausted, [0]);
    // Marked once drained (the ADD moved them into the block; their
    // containers go): the record goes with the old layout.
    etcd.delete_prefix(&format!("{ROOT}ips/"));
    etcd.delete_prefix(&format!("{ROOT}blocks/"));
    assert_eq!(run("ADD", "after", &conf).exit_code, 0);
    assert_eq!(etcd.keys(&format!("{ROOT}upgraded")).len(), 1);
    assert!(etcd.keys(&format!("{ROOT}old_size")).is_empty());
}
