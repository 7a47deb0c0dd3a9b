#!/usr/bin/env bash
# The etcd store at scale: ipam-etcd ADD and DEL on one node while other
# nodes hold 0, 1,000, 10,000 and 100,000 reservations, in blocks and in
# the layout before blocks, interleaved on one etcd; with the bytes etcd
# answers an ADD. Executions go through bench/process/harness.c.
#
# usage: bench/ipam/scale.sh [ROUNDS]   (default 200 rounds, the first 20
#        warm-up; under 20, a smoke run). ETCD_DATA=/dev/shm puts etcd's
#        data on tmpfs.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-200}
out=target/bench/ipam-scale
mkdir -p "$out"

scripts/install-test-deps.sh >/dev/null
echo "building: harness (gcc -O2 -static), ipam-etcd (profile plugin)" >&2
gcc -O2 -static -o "$out/harness" bench/process/harness.c
cargo build --quiet --profile plugin -p plugins-sample --bin ipam-etcd
python3 bench/ipam/scale.py "$out" target/plugin/ipam-etcd "$rounds"
