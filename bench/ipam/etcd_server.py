"""A bench etcd: Debian's etcd on free loopback ports with its own data
directory, and its v3 JSON gateway (POST, base64 keys), for
bench/ipam/bench.py and bench/ipam/scale.py."""
import base64
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(endpoint, path, body):
    req = urllib.request.Request(endpoint + path, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


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
