#!/usr/bin/env bash
# In-process benchmarks, side by side: our crates (criterion) and the same
# operations in the reference Go library (testing.Benchmark, Debian's
# golang-github-appc-cni-dev), on the fixtures in bench/fixtures.
#
# usage: bench/inprocess.sh [--smoke]
#   --smoke: run each benchmark once, ours and the Go program, and print no
#   table (CI checks that the harness still builds and runs; it measures
#   nothing).
#
# This machine's speed drifts by tens of percent between the phases of a
# run, so the two sides are interleaved: three rounds of (Go, ours), each
# operation's ratio taken within a round, and the table gives the median of
# the three (and their range).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
mkdir -p target/bench
scripts/install-test-deps.sh >/dev/null
rounds=3
criterion=(--warm-up-time 1 --measurement-time 3)
if [ "${1:-}" = --smoke ]; then
    rounds=1
    criterion=(--test)
fi
GO111MODULE=off GOFLAGS= CGO_ENABLED=0 GOPATH="$root/bench/go:/usr/share/gocode" \
    GOCACHE="$root/target/go-cache" go build -o target/bench/cnibench cnibench
for round in $(seq "$rounds"); do
    target/bench/cnibench bench/fixtures > "target/bench/go-$round.json"
    for bench in "cni-types types" "cni-skel dispatch"; do
        set -- $bench
        cargo bench --quiet -p "$1" --bench "$2" -- "${criterion[@]}" >/dev/null
    done
    [ "${criterion[0]}" = --test ] && break
    # criterion's directories are named after the benchmark with some
    # characters replaced; its benchmark.json has the exact name.
    python3 - "target/bench/ours-$round.json" <<'PY'
import json, os, sys
ours = {}
for d in os.listdir("target/criterion"):
    meta = os.path.join("target/criterion", d, "new/benchmark.json")
    if os.path.exists(meta):
        estimates = json.load(open(os.path.join("target/criterion", d, "new/estimates.json")))
        ours[json.load(open(meta))["full_id"]] = estimates["median"]["point_estimate"]
json.dump(ours, open(sys.argv[1], "w"), indent=2)
PY
done
if [ "${criterion[0]}" = --test ]; then
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d and all(v > 0 for v in d.values()), d' target/bench/go-1.json
    exit 0
fi
python3 - "$rounds" <<'PY'
import json, statistics, sys
rounds = range(1, int(sys.argv[1]) + 1)
go = [json.load(open(f"target/bench/go-{r}.json")) for r in rounds]
ours = [json.load(open(f"target/bench/ours-{r}.json")) for r in rounds]
fmt = lambda ns: f"{ns / 1000:.2f} µs" if ns >= 1000 else f"{ns:.0f} ns"
med = statistics.median
print("| operation | ours (median) | reference Go (median) | ours / reference (median of rounds) | range over rounds |")
print("|---|---|---|---|---|")
def row(label, name, theirs_name, go_cell):
    ratios = sorted(o[name] / g[theirs_name] for o, g in zip(ours, go))
    print(f"| {label} | {fmt(med(o[name] for o in ours))} | {go_cell} | {med(ratios):.2f}x | "
          f"{ratios[0]:.2f}x-{ratios[-1]:.2f}x |")
for name in go[0]:
    row(name, name, name, fmt(med(g[name] for g in go)))
    # Our extra variant of the same operation, if any (no Go counterpart).
    for extra in sorted(n for n in ours[0] if n.startswith(name + " (")):
        row(extra, extra, name, "")
print(f"\n{len(go)} rounds, each the Go program then ours, on the same fixtures.")
print("The reference library as packaged by Debian has no 1.1.0 result type; on its side 1.0.0 stands in for 1.1.0.")
PY
