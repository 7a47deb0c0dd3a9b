"""The IPAM benchmark (bench/ipam/run.sh): host-local, ipam-file and
ipam-etcd, interleaved, 1 and 16 concurrent, 250 reservations in the range.

usage: bench.py OUT_DIR ROUNDS
Prints a Markdown table; writes the raw samples to OUT_DIR/*.samples."""
import ipaddress
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from etcd_server import Etcd, put_all

out, rounds = sys.argv[1], int(sys.argv[2])
smoke = rounds < 100
warmup = 0 if smoke else rounds // 10
conc_rounds = 1 if smoke else 3
pairs_per_worker = 2 if smoke else 20
WORKERS = 16
SUBNET = "10.90.0.0/23"
PREFILL = 250
work = os.path.abspath(os.path.join(out, "work"))
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
harness = os.path.join(out, "harness")
open(os.path.join(out, "debug-template.json"), "w").write("{}")

# etcd on free ports with its own data directory: on the same disk as the
# file stores, or under ETCD_DATA (e.g. /dev/shm, a tmpfs: no fsync cost).
etcd_server = Etcd(work)
endpoint = etcd_server.endpoint
try:
    net = ipaddress.ip_network(SUBNET)
    prefilled = [str(net[i]) for i in range(2, 2 + PREFILL)]
    plugins = [
        ("host-local", "/usr/lib/cni/host-local", "file"),
        ("ipam-file", os.path.abspath(os.path.join(out, "ipam-file")), "file"),
        ("ipam-etcd", os.path.abspath(os.path.join(out, "ipam-etcd")), "etcd"),
    ]
    for name, _, kind in plugins:
        ipam = {"type": name, "ranges": [[{"subnet": SUBNET}]]}
        if kind == "file":
            data = f"{work}/{name}"
            os.makedirs(f"{data}/net")
            for i, ip in enumerate(prefilled):
                open(f"{data}/net/{ip}", "w").write(f"prefill-{i}\r\neth0")
            open(f"{data}/net/last_reserved_ip.0", "w").write(prefilled[-1])
            ipam["dataDir"] = data
        else:
            # Held by another node, in the /26 blocks it owns (the store's
            # layout, cni-ipam/src/store/etcd/mod.rs).
            root = "/cni-ipam/net/"
            # A dict: etcd refuses a transaction naming one key twice, and
            # a block's owner keys are the same for all its addresses.
            kv = {}
            for i, ip in enumerate(prefilled):
                block = f"{ipaddress.ip_address(int(ipaddress.ip_address(ip)) & ~63)}-26"
                record = {"containerID": f"prefill-{i}", "ifname": "eth0", "node": "other"}
                kv[f"{root}owners/{block}"] = json.dumps({"node": "other"})
                kv[f"{root}nodes/other/blocks/{block}"] = ""
                kv[f"{root}blocks/{block}/{ip}"] = json.dumps(record)
            put_all(endpoint, list(kv.items()))
            ipam["store"] = {"type": "etcd", "endpoints": [endpoint], "node": "bench"}
        conf = {"cniVersion": "1.0.0", "name": "net", "type": "bridge", "ipam": ipam}
        open(f"{work}/{name}.json", "w").write(json.dumps(conf))
        for w in range(WORKERS):
            for cmd in ("ADD", "DEL"):
                open(f"{work}/{name}-{cmd}-{w}.env", "w").write(
                    "PATH=/usr/bin:/bin\nCNI_PATH=/usr/lib/cni\nCNI_IFNAME=eth0\n"
                    "CNI_NETNS=/var/run/netns/bench-does-not-exist\n"
                    f"CNI_COMMAND={cmd}\nCNI_CONTAINERID=bench-{w}\n")

    def case(name, binary, cmd, w):
        return f"{binary}:{work}/{name}.json:{work}/{name}-{cmd}-{w}.env"

    def run_harness(n, cases):
        return subprocess.Popen([harness, str(n), f"{work}/debug.json",
                                 os.path.join(out, "debug-template.json")] + cases,
                                stdout=subprocess.PIPE, text=True)

    def samples(text):
        return [tuple(int(x) for x in line.split()) for line in text.splitlines()]

    # 1 concurrent: A-ADD A-DEL B-ADD B-DEL C-ADD C-DEL, repeated.
    cases = [case(n, b, cmd, 0) for n, b, _ in plugins for cmd in ("ADD", "DEL")]
    p = run_harness(rounds, cases)
    seq_text, _ = p.communicate()
    assert p.returncode == 0, "a sequential execution failed"
    open(os.path.join(out, "sequential.samples"), "w").write(seq_text)
    seq = {(n, cmd): [] for n, _, _ in plugins for cmd in ("ADD", "DEL")}
    pair = {n: [] for n, _, _ in plugins}
    seen = {}
    for i, ns, _ in samples(seq_text):
        name, cmd = plugins[i // 2][0], ("ADD", "DEL")[i % 2]
        seen[i] = seen.get(i, 0) + 1
        if seen[i] > warmup:
            seq[(name, cmd)].append(ns)
            if cmd == "DEL":
                pair[name].append(seq[(name, "ADD")][-1] + ns)

    # 16 concurrent: per plugin, 16 workers x pairs_per_worker ADD+DEL on
    # their own container ids; plugins interleaved round by round.
    conc = {(n, cmd): [] for n, _, _ in plugins for cmd in ("ADD", "DEL")}
    wall = {n: 0.0 for n, _, _ in plugins}
    for _ in range(conc_rounds):
        for name, binary, _ in plugins:
            started = time.perf_counter()
            procs = [run_harness(pairs_per_worker,
                                 [case(name, binary, "ADD", w), case(name, binary, "DEL", w)])
                     for w in range(WORKERS)]
            texts = [pr.communicate()[0] for pr in procs]
            wall[name] += time.perf_counter() - started
            assert all(pr.returncode == 0 for pr in procs), f"a concurrent {name} execution failed"
            for text in texts:
                for i, ns, _ in samples(text):
                    conc[(name, ("ADD", "DEL")[i])].append(ns)
    ops = conc_rounds * WORKERS * pairs_per_worker * 2

    def us(xs, q):
        xs = sorted(xs)
        if q == 50:
            return statistics.median(xs) / 1000
        return xs[min(len(xs) - 1, int(len(xs) * q / 100))] / 1000

    where = "tmpfs" if os.environ.get("ETCD_DATA", "").startswith("/dev/shm") else "disk"
    print(f"{PREFILL} reservations in {SUBNET} before the run; {len(seq['host-local', 'ADD'])} "
          f"timed ADD+DEL pairs per plugin at 1 concurrent, {ops // 2} at {WORKERS} concurrent; "
          f"etcd's data on {where}.\n")
    print("| plugin | concurrency | ADD median | ADD p90 | DEL median | DEL p90 | ADD+DEL median | throughput |")
    print("|---|---|---|---|---|---|---|---|")
    for name, _, _ in plugins:
        seq_ops = len(seq[name, "ADD"]) * 2
        seq_secs = (sum(seq[name, "ADD"]) + sum(seq[name, "DEL"])) / 1e9
        print(f"| {name} | 1 | {us(seq[name, 'ADD'], 50):.0f} µs | {us(seq[name, 'ADD'], 90):.0f} µs "
              f"| {us(seq[name, 'DEL'], 50):.0f} µs | {us(seq[name, 'DEL'], 90):.0f} µs "
              f"| {us(pair[name], 50):.0f} µs | {seq_ops / seq_secs:.0f} ops/s |")
    for name, _, _ in plugins:
        print(f"| {name} | {WORKERS} | {us(conc[name, 'ADD'], 50):.0f} µs | {us(conc[name, 'ADD'], 90):.0f} µs "
              f"| {us(conc[name, 'DEL'], 50):.0f} µs | {us(conc[name, 'DEL'], 90):.0f} µs "
              f"| | {ops / wall[name]:.0f} ops/s |")
    hl, fi = us(pair["host-local"], 50), us(pair["ipam-file"], 50)
    et = us(seq["ipam-etcd", "ADD"], 50)
    print()
    print("| target | measured | met |")
    print("|---|---|---|")
    print(f"| ipam-file ADD+DEL median <= 0.7x host-local's | {fi / hl:.2f}x | {'yes' if fi / hl <= 0.7 else 'no'} |")
    print(f"| ipam-etcd ADD median <= 10 ms (local etcd) | {et / 1000:.1f} ms | {'yes' if et <= 10000 else 'no'} |")
    sizes = {n: os.path.getsize(b) for n, b, _ in plugins}
    print()
    print("Binary sizes: " + ", ".join(f"{n} {s / 2**20:.2f} MiB" for n, s in sizes.items()))
finally:
    etcd_server.stop()
    shutil.rmtree(work, ignore_errors=True)
