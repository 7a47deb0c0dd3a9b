#!/usr/bin/env bash
# Process-level benchmark: our noop against the reference Go noop (Debian's
# golang-github-appc-cni-dev) and the physical floor (a static C program that
# reads stdin and writes one JSON line), executed interleaved A B C A B C ...
# by a small static C harness, for VERSION and for an ADD whose 1.0.0
# configuration carries runtimeConfig and a realistic prevResult, with the
# debug file set to PASSTHROUGH.
#
# usage: bench/process/run.sh [ROUNDS]   (default 550: 50 warm-up + 500;
#        under 100 rounds, none is a warm-up: CI runs it with 3 to check the
#        harness still builds and runs, not to measure)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
rounds=${1:-550}
warmup=50
[ "$rounds" -lt 100 ] && warmup=0
out=target/bench/process
mkdir -p "$out"

scripts/install-test-deps.sh >/dev/null
echo "building: harness and floors (gcc -O2 -static, musl-gcc), reference noop (Debian Go), our noop (cargo)" >&2
gcc -O2 -static -o "$out/harness" bench/process/harness.c
gcc -O2 -static -o "$out/floor" bench/process/floor.c
# The same floor on musl, the C library our static build uses: how much of
# the floor above is glibc's own static start-up.
musl-gcc -O2 -static -o "$out/floor-musl" bench/process/floor.c
# The reference noop twice: as `go build` makes it on a machine with a C
# compiler (cgo on, so dynamically linked against libc, as Debian ships its
# Go plugins: the figures issue 8 quotes), and fully static (cgo off), the
# stricter comparison for start-up.
for cgo in 1 0; do
    name=reference-noop
    [ "$cgo" = 0 ] && name=reference-noop-static
    GO111MODULE=off GOFLAGS= CGO_ENABLED=$cgo GOPATH=/usr/share/gocode GOCACHE="$root/target/go-cache" \
        go build -o "$out/$name" github.com/containernetworking/cni/plugins/test/noop
done
# Ours three ways: as deployed (static musl), static glibc, and cargo's
# default (dynamically linked glibc).
scripts/build-static-plugins.sh --quiet -p plugins-sample --bin noop >/dev/null
cp target/x86_64-unknown-linux-musl/plugin/noop "$out/noop"
LIBC=glibc scripts/build-static-plugins.sh --quiet -p plugins-sample --bin noop >/dev/null
cp target/x86_64-unknown-linux-gnu/plugin/noop "$out/noop-glibc-static"
cargo build --release --quiet -p plugins-sample --bin noop
cp target/release/noop "$out/noop-dynamic"

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
prev = {
    "cniVersion": "1.0.0",
    "interfaces": [
        {"name": "cni0", "mac": "00:11:22:33:44:55"},
        {"name": "veth3243", "mac": "55:44:33:22:11:11"},
        {"name": "eth0", "mac": "99:88:77:66:55:44", "sandbox": "/var/run/netns/blue"},
    ],
    "ips": [
        {"address": "10.1.0.5/16", "gateway": "10.1.0.1", "interface": 2},
        {"address": "2001:db8:1::5/64", "gateway": "2001:db8:1::1", "interface": 2},
    ],
    "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0", "gw": "2001:db8:1::1"}],
    "dns": {"nameservers": ["10.1.0.1", "2001:db8::53"], "domain": "example.com",
            "search": ["example.com", "svc.example.com"], "options": ["ndots:2", "timeout:1"]},
}
conf = {
    "cniVersion": "1.0.0", "name": "dbnet", "type": "noop", "debugFile": f"{out}/debug.json",
    "runtimeConfig": {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}],
                      "mac": "c2:11:22:33:44:55"},
    "prevResult": prev,
}
open(f"{out}/add.json", "w").write(json.dumps(conf))
open(f"{out}/version.json", "w").write('{"cniVersion":"1.0.0"}')
open(f"{out}/debug-template.json", "w").write('{"ReportResult":"PASSTHROUGH"}')
common = "PATH=/usr/bin:/bin\n"
open(f"{out}/add.env", "w").write(common + "CNI_COMMAND=ADD\nCNI_CONTAINERID=bench-container\n"
    "CNI_NETNS=/var/run/netns/bench-does-not-exist\nCNI_IFNAME=eth0\nCNI_PATH=/opt/cni/bin\n")
open(f"{out}/version.env", "w").write(common + "CNI_COMMAND=VERSION\n")
PY

# The order of issue 8 first (floor, reference, ours: each of ours runs
# right after a reference execution, whose after-effects it pays), then the
# extra rows.
for scenario in version add; do
    cases=()
    for bin in floor reference-noop noop reference-noop-static noop-glibc-static noop-dynamic floor-musl; do
        cases+=("$out/$bin:$out/$scenario.json:$out/$scenario.env")
    done
    "$out/harness" "$rounds" "$out/debug.json" "$out/debug-template.json" "${cases[@]}" > "$out/$scenario.samples"
done
python3 bench/process/report.py "$out" "$warmup"
