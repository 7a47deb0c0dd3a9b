#!/usr/bin/env bash
# STATUS benchmark: what each plugin's STATUS costs a runtime that polls
# it (containerd runs STATUS on every plugin of a 1.1.0 list every 5 s),
# against our noop's STATUS in the same run. Every plugin runs as the
# runtime runs it: forked and executed by the static C harness
# (harness.c), its configuration (cniVersion 1.1.0, as libcni sends each
# plugin of a list) on stdin, CNI_COMMAND=STATUS and CNI_PATH in the
# environment, interleaved case by case, round by round.
#
# The node is not empty: the host-local store that bridge, ptp, macvlan,
# ipvlan, vlan, tap, dummy and veth delegate to holds 1,000 reservations,
# and so does ipam-file's, so a STATUS that listed them would show. A
# plugin with IPAM runs its IPAM plugin's STATUS too: the host-local on
# CNI_PATH here is ours, so a plugin that carries it built in (all of
# these; tests/tests/builtin_delegate.rs checks it) makes one execution.
#
# Left out: dhcp (its STATUS asks its daemon; bench/process/interface.sh
# runs the daemon) and ipam-etcd (one etcd request; bench/ipam/run.sh).
#
# usage: bench/process/status.sh [ROUNDS]   (default 550: 50 warm-up +
#        500; under 100 rounds none is a warm-up: CI runs 3 to check it
#        runs). No root needed: STATUS changes nothing. Writes
#        target/bench/status/table.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
rounds=${1:-550}
warmup=50
[ "$rounds" -lt 100 ] && warmup=0
out=$root/target/bench/status
rm -rf "$out"
mkdir -p "$out/conf"

scripts/install-test-deps.sh >/dev/null
echo "building: the harness (gcc -static) and our plugins (static musl, as deployed)" >&2
gcc -O2 -static -o "$out/harness" bench/process/harness.c
plugins=(noop bridge ptp macvlan ipvlan vlan host-device tap dummy loopback vrf sbr
         host-local static portmap firewall tuning bandwidth veth ipam-file dns-mac)
selection=()
for p in "${plugins[@]}"; do selection+=(--bin "$p"); done
scripts/build-static-plugins.sh --quiet -p plugins-sample "${selection[@]}" >/dev/null
bins=$root/target/x86_64-unknown-linux-musl/plugin

# A master link for macvlan, ipvlan and vlan, and a device for host-device:
# the host's own uplink (STATUS reads it, never changes it).
uplink=$(ip -o route show default | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')
[ -n "$uplink" ] || uplink=lo

python3 - "$out" "$uplink" "$bins" <<'PY'
import ipaddress, json, os, sys
out, uplink, bins = sys.argv[1:4]
# 1,000 reservations in the reference's format (one file per address:
# container ID, then the interface) in each store.
def store(path, subnet):
    net = os.path.join(path, "statusnet")
    os.makedirs(net, exist_ok=True)
    hosts = ipaddress.ip_network(subnet).hosts()
    next(hosts)
    for i in range(1000):
        last = str(next(hosts))
        with open(os.path.join(net, last), "w") as f:
            f.write(f"{i:064x}\neth0")
    # Where the last of those ADDs left the next search's start.
    with open(os.path.join(net, "last_reserved_ip.0"), "w") as f:
        f.write(last)
    return {"dataDir": path, "ranges": [[{"subnet": subnet}]]}
host_local = store(os.path.join(out, "host-local"), "10.251.0.0/16")
ipam_file = store(os.path.join(out, "ipam-file"), "10.253.0.0/16")
ipam = {"type": "host-local", **host_local}
cases = {
    "noop": {},
    "bridge": {"bridge": "cnistat0", "isGateway": True, "ipMasq": True, "ipam": ipam},
    "ptp": {"ipMasq": True, "ipam": ipam},
    "macvlan": {"master": uplink, "ipam": ipam},
    "ipvlan": {"master": uplink, "ipam": ipam},
    "vlan": {"master": uplink, "vlanId": 42, "ipam": ipam},
    "host-device": {"device": uplink},
    "tap": {"ipam": ipam},
    "dummy": {"ipam": ipam},
    "loopback": {},
    "vrf": {"vrfname": "blue"},
    "sbr": {},
    "host-local": None,
    "static": None,
    "portmap": {"capabilities": {"portMappings": True}, "snat": True},
    "firewall": {},
    "tuning": {},
    "bandwidth": {"ingressRate": 1000000, "ingressBurst": 100000},
    "veth": {"ipam": ipam},
    "ipam-file": None,
    "dns-mac": {},
}
ipams = {"host-local": host_local, "static": {"addresses": [{"address": "10.252.0.5/24"}]},
         "ipam-file": ipam_file}
for name, extra in cases.items():
    conf = {"cniVersion": "1.1.0", "name": "statusnet"}
    if extra is None:  # an IPAM plugin, called as a main plugin calls it
        conf["ipam"] = {"type": name, **ipams[name]}
    else:
        conf.update({"type": name, **extra})
    with open(os.path.join(out, "conf", f"{name}.json"), "w") as f:
        json.dump(conf, f)
with open(os.path.join(out, "status.env"), "w") as f:
    f.write(f"PATH=/usr/bin:/bin\nCNI_COMMAND=STATUS\nCNI_PATH={bins}\n")
with open(os.path.join(out, "debug-template.json"), "w") as f:
    f.write("{}")
PY

cases=()
for p in "${plugins[@]}"; do
    cases+=("$bins/$p:$out/conf/$p.json:$out/status.env")
done
# Without a debug file the noop says so on stderr, once per run (the
# reference noop's "no debug behavior"): kept out of the way.
if ! "$out/harness" "$rounds" "$out/debug.json" "$out/debug-template.json" "${cases[@]}" \
        > "$out/status.samples" 2> "$out/stderr"; then
    grep -v 'no debug behavior' "$out/stderr" >&2
    exit 1
fi
python3 bench/process/report_status.py "$out" "$warmup" "${plugins[@]}" > "$out/table.md"
cat "$out/table.md"
