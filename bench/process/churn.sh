#!/usr/bin/env bash
# Churn benchmark: a node's day. PRESENT pods stay up (110, Kubernetes'
# default pods per node) while CYCLES other pods come and go, 20 in
# flight, each an ADD and a DEL of Podman's default list through Debian's
# libcni (bench/go/src/cniburst), in a fresh network namespace; meanwhile
# STATUS of every plugin of the list every 5 s and a GC of the list (the
# present pods' attachments valid) every 60 s, as containerd runs them.
# Reported: p50 / p99 of the first and of the last cycles (1,000 each, or
# a fifth of a shorter run), and their ratio; the plot (churn.svg) shows
# every cycle's latency over the run. Afterwards every pod is gone, and
# nothing may be left that no pod owns: no link but lo and the bridge, no
# rule naming a pod, no per-pod chain, no qdisc on the bridge, no
# reservation, libcni cache entry, tuning or firewall record, and no
# descriptor the runtime opened.
#
# Two cases, one after the other, each in a node namespace of its own
# (`unshare --net`): ours with the list at cniVersion 1.0.0 and its STATUS
# and GC at 1.1.0 (Debian's libcni 1.1.2 reads no 1.1.0 result, and runs
# neither: cniburst runs them as libcni 1.2 does), and the reference with
# the list as Podman writes it (0.4.0; Debian's reference 1.1.1 has
# neither STATUS nor GC).
#
# usage: bench/process/churn.sh [CYCLES [PRESENT [STATUS_EVERY GC_EVERY]]]
#        (default 10000 110 5s 60s; CI runs `churn.sh 200 20 1s 5s` to
#        check it runs and leaks nothing, not to measure). Needs root.
#        CHURN_BINS=DIR takes our plugins from DIR instead of building them;
#        CHURN_CASES=ours leaves the reference out (CI's smoke run: the
#        reference's portmap races on its chains when pods arrive together).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
cycles=${1:-10000}
present=${2:-110}
status_every=${3:-5s}
gc_every=${4:-60s}
out=target/bench/churn
rm -rf "$out"
mkdir -p "$out/ours"
scripts/install-test-deps.sh >/dev/null
GO111MODULE=off GOPATH="$root/bench/go:/usr/share/gocode" go build -o "$out/cniburst" cniburst
bins=${CHURN_BINS:-}
if [ -z "$bins" ]; then
    scripts/build-static-plugins.sh --quiet -p plugins-sample --bin bridge --bin host-local \
        --bin portmap --bin firewall --bin tuning >/dev/null
    bins=target/x86_64-unknown-linux-musl/plugin
fi
for bin in bridge host-local portmap firewall tuning; do cp "$bins/$bin" "$out/ours/"; done

cat > "$out/node.sh" <<'SH'
set -eu
ip link set lo up
"$cniburst" churn --conflist "$conflist" --cni-path "$dir" --cache-dir "$cache" --prefix "$prefix" \
    --present "$present" --cycles "$cycles" --inflight 20 \
    --status-every "$status_every" --gc-every "$gc_every" $lifecycle \
    --cap-args '{"portMappings": [{"hostPort": @PORT@, "containerPort": 80, "protocol": "tcp"}]}' > "$file"
leak() { echo "$case: $*" >> "$leaks"; }
left=$(ip -o link show | grep -v -e ': lo:' -e ': cni-podman0:' || true)
[ -z "$left" ] || leak "links left: $left"
rules=$( (nft list ruleset; iptables-save; ip6tables-save) 2>/dev/null | grep -c -e "$prefix" -e ':CNI-DN-' || true)
[ "$rules" = 0 ] || leak "$rules rules or per-pod chains left"
qdiscs=$(tc qdisc show dev cni-podman0 2>/dev/null | grep -vc noqueue || true)
[ "$qdiscs" = 0 ] || leak "$qdiscs qdiscs left on the bridge"
held=$(find "$ipam" -name '10.*' | wc -l)
[ "$held" = 0 ] || leak "$held reservations left"
cached=$(find "$cache" -type f 2>/dev/null | wc -l)
[ "$cached" = 0 ] || leak "$cached libcni cache entries left"
records=$( (find /run/cni /var/lib/cni /tmp -maxdepth 3 -name "*$prefix*"; \
    find "/var/lib/cni/firewall/$network" -type f) 2>/dev/null | wc -l)
[ "$records" = 0 ] || leak "$records record files (tuning, firewall) left"
left_ns=$(find /run/netns -name "$prefix-*" | wc -l)
[ "$left_ns" = 0 ] || leak "$left_ns namespaces left"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["fds_after"] != d["fds_before"])' "$file" \
    || leak "the runtime holds more descriptors than before"
SH

: > "$out/leaks"
for case in ${CHURN_CASES:-ours reference}; do
    version=0.4.0 dir=/usr/lib/cni lifecycle=
    [ "$case" = ours ] && version=1.0.0 dir="$root/$out/ours" lifecycle="--lifecycle 1.1.0"
    ipam="$root/$out/ipam-$case"
    # Podman names its default network "podman"; a name of this run's own
    # keeps the firewall's records (/var/lib/cni/firewall/NETWORK) apart
    # from any other user of that name.
    network="churn$$$case"
    mkdir -p "$ipam"
    cat > "$out/$case.conflist" <<JSON
{"cniVersion": "$version", "name": "$network", "plugins": [
 {"type": "bridge", "bridge": "cni-podman0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
  "ipam": {"type": "host-local", "dataDir": "$ipam", "routes": [{"dst": "0.0.0.0/0"}],
           "ranges": [[{"subnet": "10.88.0.0/16", "gateway": "10.88.0.1"}]]}},
 {"type": "portmap", "capabilities": {"portMappings": true}},
 {"type": "firewall", "backend": ""},
 {"type": "tuning"}]}
JSON
    echo "churn: $case, $present pods present, $cycles cycles" >&2
    cniburst="$root/$out/cniburst" conflist="$root/$out/$case.conflist" dir=$dir \
        cache="$root/$out/cache-$case" prefix="churn$$$case" present=$present cycles=$cycles \
        status_every=$status_every gc_every=$gc_every file="$root/$out/$case.json" \
        case=$case ipam=$ipam leaks="$root/$out/leaks" lifecycle=$lifecycle network=$network \
        unshare --net bash "$out/node.sh"
done
python3 bench/process/report_churn.py "$out" > "$out/table.md"
cat "$out/table.md"
if [ -s "$out/leaks" ]; then
    echo "churn: left behind:" >&2
    cat "$out/leaks" >&2
    exit 1
fi
