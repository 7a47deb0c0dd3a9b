#!/usr/bin/env bash
# IPAM benchmark: ADD and DEL latency (median, p90) and throughput of
# ipam-file and ipam-etcd beside the reference host-local, 1 and 16
# concurrent, in one interleaved run, with 250 reservations already in a
# /23. Executions go through bench/process/harness.c (fork, exec, stdin
# pipe, wait4), as a runtime runs a plugin.
#
# usage: bench/ipam/run.sh [ROUNDS]   (default 300 sequential ADD+DEL pairs
#        per plugin, the first 30 of them warm-up, and 3 interleaved rounds
#        of 16 concurrent workers x 20 pairs; under 100, a smoke run);
#        then bench/ipam/cluster.py: the etcd store on three members, and
#        bench/ipam/upgrade.py: many nodes upgrading from the old layout.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-300}
out=target/bench/ipam
mkdir -p "$out"

scripts/install-test-deps.sh >/dev/null
echo "building: harness (gcc -O2 -static), ipam-file and ipam-etcd (static musl, profile plugin)" >&2
gcc -O2 -static -o "$out/harness" bench/process/harness.c
scripts/build-static-plugins.sh --quiet -p plugins-sample --bin ipam-file --bin ipam-etcd >/dev/null
cp target/x86_64-unknown-linux-musl/plugin/ipam-file target/x86_64-unknown-linux-musl/plugin/ipam-etcd "$out/"
python3 bench/ipam/bench.py "$out" "$rounds"
# The etcd store on a three-member cluster: 1,000 ADDs from 10 nodes,
# STATUS with 100,000 reservations (a smoke run under 100 rounds).
python3 bench/ipam/cluster.py "$out" "$out/ipam-etcd" "$([ "$rounds" -lt 100 ] && echo 1 || echo 0)"
# The upgrade from the layout before blocks, many nodes at once, then
# their DELs: 100,000 old keys and 16 nodes x 10 ADDs (a smoke run under
# 100 rounds: 3,000 old keys, more than an ADD lists whole, 4 x 5).
if [ "$rounds" -lt 100 ]; then
    UPGRADE_DEL=1 python3 bench/ipam/upgrade.py "$out" "$out/ipam-etcd" 3000 4 5
else
    UPGRADE_DEL=1 python3 bench/ipam/upgrade.py "$out" "$out/ipam-etcd" 100000 16 10
fi
