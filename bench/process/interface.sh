#!/usr/bin/env bash
# Interface-plugin benchmark: our `veth` with our `ipam-file` against the
# reference `ptp` with `host-local` (Debian containernetworking-plugins),
# the same configuration (one IPv4 subnet, a default route), ADD then DEL
# into a fresh network namespace each round, interleaved ours, reference,
# ours, ... by a small static C harness (bench/process/netns_harness.c)
# that runs everything inside namespaces it creates.
#
# usage: bench/process/interface.sh [ROUNDS]   (default 220: 20 warm-up +
#        200; under 100 rounds, none is a warm-up: CI runs it with 3 to
#        check it still builds and runs, not to measure). Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-220}
warmup=20
[ "$rounds" -lt 100 ] && warmup=0
out=target/bench/interface
rm -rf "$out"
mkdir -p "$out/ours" "$out/ours-ipam" "$out/reference-ipam"

scripts/install-test-deps.sh >/dev/null
echo "building: harness (gcc -O2 -static), veth and ipam-file (static musl, as deployed)" >&2
gcc -O2 -static -o "$out/netns_harness" bench/process/netns_harness.c
scripts/build-static-plugins.sh --quiet -p plugins-sample --bin veth --bin ipam-file >/dev/null
cp target/x86_64-unknown-linux-musl/plugin/veth target/x86_64-unknown-linux-musl/plugin/ipam-file "$out/ours/"
reference=/usr/lib/cni
for bin in ptp host-local; do
    [ -x "$reference/$bin" ] || { echo "interface.sh: $reference/$bin is missing (scripts/install-test-deps.sh)" >&2; exit 1; }
done

netns="cni-rs-bench-$$"
# A namespace left by a failed run is removed; after a normal one there is none.
trap 'umount -l "/run/netns/$netns" 2>/dev/null || true; rm -f "/run/netns/$netns"' EXIT
for side in ours reference; do
    if [ "$side" = ours ]; then type=veth ipam=ipam-file dir="$(pwd)/$out/ours"; else type=ptp ipam=host-local dir=$reference; fi
    cat > "$out/$side.json" <<JSON
{"cniVersion": "1.0.0", "name": "bench", "type": "$type",
 "ipam": {"type": "$ipam", "dataDir": "$(pwd)/$out/$side-ipam",
          "ranges": [[{"subnet": "10.216.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}}
JSON
    for command in ADD DEL; do
        printf 'PATH=/usr/bin:/bin\nCNI_COMMAND=%s\nCNI_CONTAINERID=bench-container\nCNI_NETNS=/run/netns/%s\nCNI_IFNAME=eth0\nCNI_PATH=%s\n' \
            "$command" "$netns" "$dir" > "$out/$side-$command.env"
    done
done
# The IPAM plugins alone too (an IPAM plugin reads the same configuration's
# `ipam` section), so each side's total splits into interface plugin and
# IPAM.
"$out/netns_harness" "$rounds" "$netns" \
    "$out/ours/veth:$out/ours.json:$out/ours-ADD.env:$out/ours-DEL.env" \
    "$reference/ptp:$out/reference.json:$out/reference-ADD.env:$out/reference-DEL.env" \
    "$out/ours/ipam-file:$out/ours.json:$out/ours-ADD.env:$out/ours-DEL.env" \
    "$reference/host-local:$out/reference.json:$out/reference-ADD.env:$out/reference-DEL.env" \
    > "$out/samples"
python3 bench/process/report_interface.py "$out" "$warmup"
