"""The etcd store on a three-member cluster (bench/ipam/run.sh runs it
after bench.py): ipam-etcd ADDs of fresh containers from 10 nodes at once
(one stream of ADDs per node), their total time and ADD p50/p99, every
address read back from etcd (zero duplicates); then STATUS of an empty
network beside one holding 100,000 reservations of 1,000 other nodes,
interleaved.

usage: cluster.py OUT_DIR PLUGIN SMOKE   (SMOKE=1: 30 ADDs, 1,000
       reservations, a few STATUS calls; for CI, nothing timed)
Prints a Markdown table."""
import base64
import ipaddress
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

from etcd_server import Cluster, at_once, b64, post, put_all

out, plugin, smoke = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3] == "1"
NODES = 10
ALLOCS = 30 if smoke else 1000
FILL = 1000 if smoke else 100_000
STATUS_ROUNDS = 5 if smoke else 200
# 1,000 allocations fit a /22 (1,021 addresses); the filled network is a
# /15 of /26 blocks, two per other node (50 reservations each).
ALLOC_SUBNET = "10.88.0.0/22"
FILL_SUBNET = ipaddress.ip_network("10.0.0.0/15")
work = os.path.abspath(os.path.join(out, "cluster-work"))
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def conf(network, subnet, node, endpoints):
    return json.dumps({"cniVersion": "1.1.0", "name": network, "type": "bridge",
                       "ipam": {"type": "ipam-etcd", "ranges": [[{"subnet": subnet}]],
                                "store": {"type": "etcd", "endpoints": endpoints,
                                          "node": node}}}).encode()


def call(command, stdin, container=""):
    env = {"CNI_COMMAND": command, "CNI_PATH": "/usr/lib/cni", "PATH": "/usr/bin:/bin"}
    if command not in ("STATUS", "GC"):
        env.update(CNI_CONTAINERID=container, CNI_IFNAME="eth0", CNI_NETNS="/var/run/netns/bench")
    started = time.perf_counter_ns()
    proc = subprocess.run([plugin], input=stdin, env=env, capture_output=True)
    return proc, time.perf_counter_ns() - started


def fill(network):
    """FILL reservations of FILL/100 other nodes, in the store's layout."""
    root = f"/cni-ipam/{network}/"
    base = int(FILL_SUBNET.network_address)
    pairs = []
    for node in range(FILL // 100):
        name = f"other-{node}"
        for half in range(2):
            net = base + 64 * (2 * node + half)
            block = f"{ipaddress.ip_address(net)}-26"
            pairs.append((f"{root}owners/{block}", json.dumps({"node": name})))
            pairs.append((f"{root}nodes/{name}/blocks/{block}", ""))
            for k in range(50):
                ip = ipaddress.ip_address(net + 2 + k)
                record = {"containerID": f"fill-{node}-{half}-{k}", "ifname": "eth0", "node": name}
                pairs.append((f"{root}blocks/{block}/{ip}", json.dumps(record)))
    return pairs


def held(endpoint, network):
    """Every reserved address of `network`, read back (keys only)."""
    prefix = f"/cni-ipam/{network}/blocks/"
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    answer = post(endpoint, "/v3/kv/range", {"key": b64(prefix), "range_end": b64(end),
                                             "keys_only": True})
    return [base64.b64decode(kv["key"]).decode().rsplit("/", 1)[1] for kv in answer.get("kvs", [])]


def pct(samples, q):
    samples = sorted(samples)
    return samples[min(len(samples) - 1, int(q * (len(samples) - 1) + 0.5))]


cluster = Cluster(work)
try:
    eps = cluster.endpoints
    # 1. ALLOCS allocations across NODES nodes at once.
    per_node = ALLOCS // NODES
    results, failures = [], []
    lock = threading.Lock()

    def stream(n):
        stdin = conf("alloc", ALLOC_SUBNET, f"node-{n}", eps)
        for k in range(per_node):
            proc, took = call("ADD", stdin, f"c-{n}-{k}")
            with lock:
                if proc.returncode == 0:
                    ip = json.loads(proc.stdout)["ips"][0]["address"].split("/")[0]
                    results.append((ip, took))
                else:
                    failures.append(proc.stdout.decode()[:300])

    total = at_once(stream, NODES)
    addresses = [ip for ip, _ in results]
    stored = held(cluster.endpoint, "alloc")
    duplicates = len(addresses) - len(set(addresses)) + len(stored) - len(set(stored))
    if failures or duplicates or sorted(stored) != sorted(addresses):
        print("\n".join(failures[:5]), file=sys.stderr)
        raise SystemExit(f"cluster allocations: {len(failures)} failed, {duplicates} duplicates, "
                         f"{len(stored)} stored for {len(addresses)} handed out")
    adds = [t / 1e6 for _, t in results]

    # 2. STATUS: an empty network beside one holding FILL reservations.
    put_all(cluster.endpoint, fill("full"))
    empty_conf = conf("empty", str(FILL_SUBNET), "node-s", eps)
    full_conf = conf("full", str(FILL_SUBNET), "node-s", eps)
    status = {"empty": [], "full": []}
    for _ in range(STATUS_ROUNDS):
        for name, stdin in (("empty", empty_conf), ("full", full_conf)):
            proc, took = call("STATUS", stdin)
            if proc.returncode != 0:
                raise SystemExit(f"STATUS of {name}: {proc.stdout.decode()[:300]}")
            status[name].append(took / 1e6)
    s_empty, s_full = statistics.median(status["empty"]), statistics.median(status["full"])

    print(f"\n### ipam-etcd on a three-member cluster{' (smoke run: nothing timed)' if smoke else ''}\n")
    print("| measure | value | target |")
    print("|---|---|---|")
    print(f"| {len(adds)} ADDs from {NODES} nodes at once, total | {total:.2f} s | <= 5 s for 1,000 |")
    print(f"| allocations per second | {len(adds) / total:.0f} | |")
    print(f"| ADD p50 / p99 | {pct(adds, 0.5):.1f} ms / {pct(adds, 0.99):.1f} ms | |")
    print(f"| duplicates (read back from etcd) | {duplicates} | 0 |")
    print(f"| STATUS median, empty network | {s_empty:.2f} ms | |")
    print(f"| STATUS median, {FILL:,} reservations | {s_full:.2f} ms ({s_full / s_empty:.2f}x empty) "
          f"| <= 10 ms and <= 1.5x |")
finally:
    cluster.stop()
