"""The etcd store's scale benchmark (bench/ipam/scale.sh): ipam-etcd ADD
and DEL of a fresh container on one node while other nodes hold 0, 1,000,
10,000 and 100,000 reservations of the network, in blocks (the layout the
store writes) and in the layout before blocks (per-address keys, read
whole while any exist), all in one interleaved run on one etcd.

usage: scale.py OUT_DIR PLUGIN ROUNDS
Prints a Markdown table; writes the raw samples to OUT_DIR/scale.samples."""
import ipaddress
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading

from etcd_server import Etcd, put_all

out, plugin, rounds = sys.argv[1], os.path.abspath(sys.argv[2]), int(sys.argv[3])
warmup = max(1, rounds // 10)
SIZES = [0, 1000, 10000, 100000]
# The layout before blocks reads every reservation on each ADD: its
# largest network is timed every SLOW_EVERY rounds only.
SLOW_EVERY = 10
SUBNET = ipaddress.ip_network("10.0.0.0/15")
work = os.path.abspath(os.path.join(out, "work"))
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
harness = os.path.join(out, "harness")
open(os.path.join(out, "debug-template.json"), "w").write("{}")


def fill_blocks(network, n):
    """n reservations of other nodes, 100 per node in two /26 blocks of
    their own (50 each), in the store's documented layout."""
    root = f"/cni-ipam/{network}/"
    pairs = []
    base = int(SUBNET.network_address)
    for node in range(n // 100):
        name = f"other-{node}"
        for half in range(2):
            net = base + 64 * (2 * node + half) + 64 * 16  # past the bench node's first blocks
            block = f"{ipaddress.ip_address(net)}-26"
            pairs.append((f"{root}owners/{block}", json.dumps({"node": name})))
            pairs.append((f"{root}nodes/{name}/blocks/{block}", ""))
            for k in range(50):
                ip = ipaddress.ip_address(net + 2 + k)
                record = {"containerID": f"fill-{node}-{half}-{k}", "ifname": "eth0", "node": name}
                pairs.append((f"{root}blocks/{block}/{ip}", json.dumps(record)))
    return pairs


def fill_old(network, n):
    """n reservations of another node in the layout before blocks."""
    root = f"/cni-ipam/{network}/"
    base = int(SUBNET.network_address) + 64 * 16
    return [(f"{root}ips/{ipaddress.ip_address(base + i)}",
             json.dumps({"containerID": f"old-{i}", "ifname": "eth0", "node": "other"}))
            for i in range(n)]


class CountingProxy:
    """A loopback TCP proxy to etcd counting the bytes etcd answers."""

    def __init__(self, target_port):
        self.target = target_port
        self.received = 0
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self.pipe, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self.pipe, args=(upstream, client, True), daemon=True).start()

    def pipe(self, src, dst, count):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if count:
                    with self.lock:
                        self.received += len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


etcd = Etcd(work, "scale")
try:
    port = int(etcd.endpoint.rsplit(":", 1)[1])
    proxy = CountingProxy(port)
    networks = []  # (label, layout, size, network name)
    for n in SIZES:
        for layout, fill in (("blocks", fill_blocks), ("old", fill_old)):
            name = f"{layout}-{n}"
            put_all(etcd.endpoint, fill(name, n))
            networks.append((f"{layout} {n}", layout, n, name))

    def conf_file(name, endpoint):
        path = f"{work}/{name}-{endpoint.rsplit(':', 1)[1]}.json"
        conf = {"cniVersion": "1.0.0", "name": name, "type": "bridge",
                "ipam": {"type": "ipam-etcd", "ranges": [[{"subnet": str(SUBNET)}]],
                         "store": {"type": "etcd", "endpoints": [endpoint], "node": "bench"}}}
        open(path, "w").write(json.dumps(conf))
        return path

    for cmd in ("ADD", "DEL"):
        open(f"{work}/{cmd}.env", "w").write(
            "PATH=/usr/bin:/bin\nCNI_PATH=/usr/lib/cni\nCNI_IFNAME=eth0\n"
            f"CNI_NETNS=/var/run/netns/bench-does-not-exist\nCNI_COMMAND={cmd}\n"
            "CNI_CONTAINERID=bench-0\n")

    def run_once(conf, cmds):
        """ns of each of cmds on conf, or None when one failed (the layout
        before blocks at 100,000 passes the store's 2 s deadline: code 11)."""
        cases = [f"{plugin}:{conf}:{work}/{cmd}.env" for cmd in cmds]
        p = subprocess.run([harness, "1", f"{work}/debug.json",
                            os.path.join(out, "debug-template.json")] + cases,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if p.returncode != 0:
            return None
        return [int(line.split()[1]) for line in p.stdout.splitlines()]

    def settle(conf):
        """DEL until it succeeds, so that the next ADD starts afresh."""
        for _ in range(5):
            if run_once(conf, ["DEL"]) is not None:
                return

    # Bytes etcd answers one ADD, through the counting proxy (untimed).
    received = {}
    for label, _, _, name in networks:
        c = conf_file(name, f"http://127.0.0.1:{proxy.port}")
        count = None
        for _ in range(3):  # the first claims the bench node's block
            before = proxy.received
            count = proxy.received - before if run_once(c, ["ADD"]) else None
            settle(c)
        received[label] = count

    # Timed: every network's ADD then DEL, networks interleaved, round by
    # round; the old layout's largest network every SLOW_EVERY rounds.
    direct = {label: conf_file(name, etcd.endpoint) for label, _, _, name in networks}
    times = {(label, cmd): [] for label, _, _, _ in networks for cmd in ("ADD", "DEL")}
    failed = {label: 0 for label, _, _, _ in networks}
    raw = []
    for r in range(rounds):
        for label, layout, n, _ in networks:
            if layout == "old" and n == SIZES[-1] and r % SLOW_EVERY:
                continue
            ns = run_once(direct[label], ["ADD", "DEL"])
            if ns is None:
                failed[label] += 1
                settle(direct[label])
                continue
            raw.append(f"{r} {label} {ns[0]} {ns[1]}")
            if r >= warmup:
                times[label, "ADD"].append(ns[0])
                times[label, "DEL"].append(ns[1])
    open(os.path.join(out, "scale.samples"), "w").write("\n".join(raw) + "\n")

    def ms(xs, q):
        if not xs:
            return float("nan")
        xs = sorted(xs)
        v = statistics.median(xs) if q == 50 else xs[min(len(xs) - 1, int(len(xs) * q / 100))]
        return v / 1e6

    where = "tmpfs" if os.environ.get("ETCD_DATA", "").startswith("/dev/shm") else "disk"
    print(f"{rounds} interleaved rounds ({warmup} warm-up); etcd's data on {where}.\n")
    print("| layout | others' reservations | ADD median | ADD p90 | DEL median | DEL p90 "
          "| bytes etcd answers an ADD | samples | failed (code 11) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, layout, n, _ in networks:
        a, d = times[label, "ADD"], times[label, "DEL"]
        got = "timeout" if received[label] is None else f"{received[label]:,}"
        print(f"| {layout} | {n:,} | {ms(a, 50):.1f} ms | {ms(a, 90):.1f} ms | {ms(d, 50):.1f} ms "
              f"| {ms(d, 90):.1f} ms | {got} | {len(a)} | {failed[label]} |")
    empty = ms(times["blocks 0", "ADD"], 50)
    print()
    print("| target (blocks) | measured | met |")
    print("|---|---|---|")
    for n in SIZES:
        m = ms(times[f"blocks {n}", "ADD"], 50)
        ok = m <= 10 and m <= 1.3 * empty
        print(f"| ADD median at {n:,} <= 10 ms and <= 1.3x the empty {empty:.1f} ms "
              f"| {m:.1f} ms ({m / empty:.2f}x) | {'yes' if ok else 'no'} |")
    # Answers carry etcd's revision, a few digits longer in a network
    # written more: 64 bytes of slack, not a growth with the network.
    grow = received[f"blocks {SIZES[-1]}"] - received["blocks 0"]
    print(f"| bytes per ADD not growing with the network (64 B slack for revisions) "
          f"| {received['blocks 0']:,} at 0, {received[f'blocks {SIZES[-1]}']:,} at {SIZES[-1]:,} "
          f"| {'yes' if grow <= 64 else 'no'} |")
finally:
    etcd.stop()
    shutil.rmtree(work, ignore_errors=True)
