#!/usr/bin/env bash
# In-process benchmarks, side by side: our crates (criterion) and the same
# operations in the reference Go library (testing.Benchmark, Debian's
# golang-github-appc-cni-dev), on the fixtures in bench/fixtures.
#
# usage: bench/inprocess.sh [--smoke]
#   --smoke: run each benchmark once, ours and the Go program, and print no
#   table (CI checks that the harness still builds and runs; it measures
#   nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
mkdir -p target/bench
scripts/install-test-deps.sh >/dev/null
smoke=false
criterion=(--warm-up-time 1 --measurement-time 5)
if [ "${1:-}" = --smoke ]; then
    smoke=true
    criterion=(--test)
fi
GO111MODULE=off GOFLAGS= CGO_ENABLED=0 GOPATH="$root/bench/go:/usr/share/gocode" \
    GOCACHE="$root/target/go-cache" go build -o target/bench/cnibench cnibench
# The reference runs before and after ours, and each operation keeps its
# faster Go figure: this machine's speed drifts between phases of a run,
# and a slow Go phase must not flatter our ratios.
target/bench/cnibench bench/fixtures > target/bench/go-before.json
for bench in "cni-types types" "cni-skel dispatch"; do
    set -- $bench
    cargo bench --quiet -p "$1" --bench "$2" -- "${criterion[@]}" >/dev/null
done
target/bench/cnibench bench/fixtures > target/bench/go-after.json
python3 - <<'PY'
import json
runs = [json.load(open(f"target/bench/go-{when}.json")) for when in ("before", "after")]
assert runs[0] and all(v > 0 for run in runs for v in run.values()), runs
json.dump({name: min(run[name] for run in runs) for name in runs[0]}, open("target/bench/go.json", "w"), indent=2)
PY
if $smoke; then
    exit 0
fi
python3 - <<'PY'
import json, os
go = json.load(open("target/bench/go.json"))
# criterion's directories are named after the benchmark with some
# characters replaced; its benchmark.json has the exact name.
ours_by_name = {}
for d in os.listdir("target/criterion"):
    meta = os.path.join("target/criterion", d, "new/benchmark.json")
    if os.path.exists(meta):
        ours_by_name[json.load(open(meta))["full_id"]] = os.path.join("target/criterion", d, "new/estimates.json")
print("| operation | ours (median) | reference Go | ours / reference |")
print("|---|---|---|---|")
fmt = lambda ns: f"{ns / 1000:.2f} µs" if ns >= 1000 else f"{ns:.0f} ns"
median = lambda name: json.load(open(ours_by_name[name]))["median"]["point_estimate"]
for name, theirs in go.items():
    ours = median(name)
    print(f"| {name} | {fmt(ours)} | {fmt(theirs)} | {ours / theirs:.2f}x |")
    # Our extra variant of the same operation, if any (no Go counterpart).
    for extra in sorted(n for n in ours_by_name if n.startswith(name + " (")):
        print(f"| {extra} | {fmt(median(extra))} | | {median(extra) / theirs:.2f}x |")
print("\nThe reference library as packaged by Debian has no 1.1.0 result type; on its side 1.0.0 stands in for 1.1.0.")
print("Each Go figure is the faster of two runs, one before ours and one after.")
PY
