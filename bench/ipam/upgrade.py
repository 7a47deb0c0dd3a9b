"""The etcd store's upgrade from the layout before blocks, at scale: OLD
reservations of a node gone written under `ips/` of a /15 (as the
previous release wrote them), then NODES nodes at once each running ADDS
ADDs of fresh containers through ipam-etcd on one etcd member. Prints
ADD p50/p90/p99/max, the answers' codes, duplicates, old addresses
handed out, what is left under `ips/`, whether the network was marked
upgraded, and STATUS after; exits 1 on a duplicate, an old address
handed out, a failed ADD or DEL, or (after the DELs) anything but the
old reservations left.

bench/ipam/run.sh runs it after cluster.py (100,000 old keys, 16 nodes x
10 ADDs; under 100 rounds a smoke run of 3,000, 4 x 5, for CI); the
figures are in BENCHMARKS.md (issue 33).

usage: upgrade.py OUT_DIR PLUGIN OLD NODES ADDS   (UPGRADE_ERRORS=1 prints
       each failed answer on stderr; UPGRADE_DEL=1 then DELs every
       container added, the nodes at once, each with the ADD's result as
       its prevResult as libcni sends it; UPGRADE_DEL=bare without)
       e.g. python3 bench/ipam/upgrade.py target/bench/ipam \\
                target/bench/ipam/ipam-etcd 100000 16 10"""
import collections
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import threading
import time

from etcd_server import Etcd, at_once, b64, forget_hints, post, put_all

out, plugin = sys.argv[1], os.path.abspath(sys.argv[2])
old, nodes, adds = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
SUBNET = ipaddress.ip_network("10.0.0.0/15")
ROOT = "/cni-ipam/net/"
work = os.path.abspath(os.path.join(out, "upgrade-work"))
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
etcd = Etcd(work, "upgrade")


def conf(node, prev=None):
    c = {"cniVersion": "1.1.0", "name": "net", "type": "bridge",
         "ipam": {"type": "ipam-etcd", "ranges": [[{"subnet": str(SUBNET)}]],
                  "store": {"type": "etcd", "endpoints": [etcd.endpoint], "node": node}}}
    if prev:
        c["prevResult"] = json.loads(prev)
    return json.dumps(c)


def run(command, container, node, prev=None):
    env = {"PATH": "/usr/bin:/bin", "CNI_COMMAND": command, "CNI_CONTAINERID": container,
           "CNI_IFNAME": "eth0", "CNI_NETNS": "/var/run/netns/none", "CNI_PATH": "/usr/lib/cni"}
    started = time.perf_counter()
    p = subprocess.run([plugin], input=conf(node, prev), env=env, capture_output=True, text=True)
    return (time.perf_counter() - started) * 1000, p.returncode, p.stdout


def count(prefix):
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    answer = post(etcd.endpoint, "/v3/kv/range",
                  {"key": b64(prefix), "range_end": b64(end), "count_only": True})
    return int(answer.get("count", 0))


try:
    # From the range's first address on, as a node of the previous
    # release handed them out.
    first = int(SUBNET.network_address) + 1
    held = {str(ipaddress.ip_address(first + i)) for i in range(old)}
    record = json.dumps({"containerID": "old", "ifname": "eth0", "node": "gone"})
    started = time.time()
    put_all(etcd.endpoint, [(f"{ROOT}ips/{ip}", record) for ip in sorted(held)])
    print(f"{old} old reservations written in {time.time() - started:.1f} s", flush=True)
    status_before = [run("STATUS", "s", "node0")[:2] for _ in range(3)]
    results, added, lock = [], {}, threading.Lock()

    def node_loop(k):
        for i in range(adds):
            ms, rc, stdout = run("ADD", f"n{k}-c{i}", f"node{k}")
            ip = json.loads(stdout)["ips"][0]["address"].split("/")[0] if rc == 0 else None
            code = None if rc == 0 else json.loads(stdout).get("code")
            if rc and os.environ.get("UPGRADE_ERRORS"):
                print(stdout.replace("\n", " ")[:400], file=sys.stderr)
            with lock:
                results.append((ms, code, ip))
                if rc == 0:
                    added[f"n{k}-c{i}"] = stdout

    took = at_once(node_loop, nodes)
    status_after = [run("STATUS", "s", "node0")[:2] for _ in range(3)]
    dels = []
    if os.environ.get("UPGRADE_DEL"):
        # Then every node DELs what it added, at once.
        def del_loop(k):
            for i in range(adds):
                container = f"n{k}-c{i}"
                prev = added.get(container) if os.environ["UPGRADE_DEL"] != "bare" else None
                ms, rc, stdout = run("DEL", container, f"node{k}", prev)
                if rc and os.environ.get("UPGRADE_ERRORS"):
                    print(stdout.replace("\n", " ")[:400], file=sys.stderr)
                with lock:
                    dels.append((ms, rc))

        del_took = at_once(del_loop, nodes)
    ms = sorted(r[0] for r in results)
    pct = lambda p: ms[min(len(ms) - 1, int(p * len(ms)))]  # noqa: E731
    ips = [r[2] for r in results if r[2]]
    codes = collections.Counter(r[1] for r in results if r[1] is not None)
    print(f"| old | nodes x ADDs | took | ADD p50 / p90 / p99 / max | failed (code: n) "
          f"| duplicates | old handed out | left under ips/ | marked "
          f"| STATUS before: first, next / after |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {old:,} | {nodes} x {adds} | {took:.1f} s | {pct(.5):.0f} / {pct(.9):.0f} / "
          f"{pct(.99):.0f} / {ms[-1]:.0f} ms | {dict(codes) or 0} | {len(ips) - len(set(ips))} "
          f"| {sum(1 for ip in ips if ip in held)} | {count(ROOT + 'ips/'):,} "
          f"| {'yes' if count(ROOT + 'upgraded') else 'no'} "
          f"| {status_before[0][0]:.1f}, {min(s[0] for s in status_before[1:]):.1f} "
          f"/ {min(s[0] for s in status_after):.1f} ms |")
    wrong = []
    if len(ips) != len(set(ips)):
        wrong.append(f"{len(ips) - len(set(ips))} addresses handed out twice")
    if any(ip in held for ip in ips):
        wrong.append(f"{sum(1 for ip in ips if ip in held)} old addresses handed out")
    if codes:
        wrong.append(f"{sum(codes.values())} ADDs failed")
    if dels:
        dm = sorted(d[0] for d in dels)
        print(f"DEL: {len(dels)} in {del_took:.1f} s, p50 {dm[len(dm) // 2]:.0f} ms, "
              f"p99 {dm[min(len(dm) - 1, int(.99 * len(dm)))]:.0f} ms, max {dm[-1]:.0f} ms, "
              f"failed {sum(1 for d in dels if d[1])}, left under ips/ {count(ROOT + 'ips/'):,}")
        if any(d[1] for d in dels):
            wrong.append(f"{sum(1 for d in dels if d[1])} DELs failed")
        # Every old reservation still held, in one layout or the other,
        # and nothing else.
        left = count(ROOT + "ips/") + count(ROOT + "blocks/")
        if left != old:
            wrong.append(f"{left} reservations left after the DELs, not the {old} old ones")
    if wrong:
        raise SystemExit("upgrade: " + "; ".join(wrong))
finally:
    forget_hints([etcd.endpoint])
    etcd.stop()
