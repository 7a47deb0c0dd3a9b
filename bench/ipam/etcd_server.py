"""A bench etcd: Debian's etcd on free loopback ports with its own data
directory, and its v3 JSON gateway (POST, base64 keys), for
bench/ipam/bench.py and bench/ipam/scale.py."""
import base64
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request


_next_port = [None]


def free_port():
    """A port nothing listens on now, below the kernel's ephemeral range
    and new to this process (as tests/src/etcd.rs picks them): a port of
    that range can become an outgoing connection's source port before
    etcd binds it, and etcd then exits on "address already in use"."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral = 32768
    first = 10000
    if ephemeral < first + 1000:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    span = ephemeral - first
    if _next_port[0] is None:
        _next_port[0] = os.getpid() * 7919 % span
    for _ in range(span):
        port = first + _next_port[0] % span
        _next_port[0] += 1
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise SystemExit(f"no free port in {first}..{ephemeral}")


def post(endpoint, path, body):
    req = urllib.request.Request(endpoint + path, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


HINT_DIR = "/run/cni/ipam-etcd"


def forget_hints(endpoints):
    """Removes the node hints ipam-etcd wrote for these endpoints (their
    first line names the endpoints the hint was read from)."""
    try:
        names = os.listdir(HINT_DIR)
    except OSError:
        return
    for name in names:
        path = os.path.join(HINT_DIR, name)
        try:
            with open(path) as f:
                first = f.readline().strip()
            if any(e in endpoints for e in first.split(",")):
                os.remove(path)
        except OSError:
            pass


def b64(s):
    return base64.b64encode(s.encode()).decode()


def put_all(endpoint, pairs, per_txn=120):
    """Writes every (key, value) in transactions of per_txn puts (etcd's
    --max-txn-ops is 128)."""
    for i in range(0, len(pairs), per_txn):
        ops = [{"request_put": {"key": b64(k), "value": b64(v)}} for k, v in pairs[i:i + per_txn]]
        post(endpoint, "/v3/kv/txn", {"success": ops})


class Etcd:
    """etcd on free ports; its data under ETCD_DATA (e.g. /dev/shm, a
    tmpfs: no fsync cost) or in `work`. Stopped and removed by stop()."""

    def __init__(self, work, name="bench"):
        self.data = os.path.join(os.environ.get("ETCD_DATA") or work,
                                 f"ipam-{name}-etcd-{os.getpid()}")
        client, peer = free_port(), free_port()
        self.endpoint = f"http://127.0.0.1:{client}"
        self.proc = subprocess.Popen(
            ["/usr/bin/etcd", f"--name={name}", f"--data-dir={self.data}",
             f"--listen-client-urls={self.endpoint}", f"--advertise-client-urls={self.endpoint}",
             f"--listen-peer-urls=http://127.0.0.1:{peer}",
             f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
             f"--initial-cluster={name}=http://127.0.0.1:{peer}"],
            stdout=subprocess.DEVNULL, stderr=open(f"{work}/etcd.log", "w"))
        deadline = time.time() + 20
        while True:
            try:
                post(self.endpoint, "/v3/kv/range", {"key": b64("x")})
                return
            except OSError:
                if time.time() > deadline:
                    self.stop()
                    raise
                time.sleep(0.1)

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.data, ignore_errors=True)
        forget_hints([self.endpoint])


class Cluster:
    """A private cluster of `members` etcd members on free loopback ports,
    each with its own data directory (under ETCD_DATA or `work`).
    Stopped and removed by stop()."""

    def __init__(self, work, members=3, name="bench"):
        base = os.environ.get("ETCD_DATA") or work
        ports = [(free_port(), free_port()) for _ in range(members)]
        self.endpoints = [f"http://127.0.0.1:{c}" for c, _ in ports]
        initial = ",".join(f"{name}{i}=http://127.0.0.1:{p}" for i, (_, p) in enumerate(ports))
        self.data, self.procs = [], []
        for i, (client, peer) in enumerate(ports):
            data = os.path.join(base, f"ipam-{name}{i}-etcd-{os.getpid()}")
            self.data.append(data)
            self.procs.append(subprocess.Popen(
                ["/usr/bin/etcd", f"--name={name}{i}", f"--data-dir={data}",
                 f"--listen-client-urls=http://127.0.0.1:{client}",
                 f"--advertise-client-urls=http://127.0.0.1:{client}",
                 f"--listen-peer-urls=http://127.0.0.1:{peer}",
                 f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                 f"--initial-cluster={initial}", "--initial-cluster-state=new",
                 f"--initial-cluster-token={name}-{os.getpid()}"],
                stdout=subprocess.DEVNULL, stderr=open(f"{work}/etcd-{name}{i}.log", "w")))
        deadline = time.time() + 30
        for endpoint in self.endpoints:
            while True:
                try:
                    post(endpoint, "/v3/kv/range", {"key": b64("x")})
                    break
                except OSError:
                    if time.time() > deadline:
                        self.stop()
                        raise SystemExit(f"the etcd cluster did not start; logs in {work}")
                    time.sleep(0.05)
        self.endpoint = self.endpoints[0]

    def stop(self):
        for proc in self.procs:
            proc.kill()
            proc.wait()
        for data in self.data:
            shutil.rmtree(data, ignore_errors=True)
        forget_hints(self.endpoints)


def at_once(loop, n):
    """Runs loop(k) for k in 0..n, each in a thread of its own, all at
    once (simulated nodes); the seconds it took."""
    started = time.perf_counter()
    threads = [threading.Thread(target=loop, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started
