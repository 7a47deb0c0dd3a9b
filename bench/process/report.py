"""Summarises the harness samples: median and p90 per invocation, each as a
ratio to the floor's median in the same run, peak RSS, binary sizes."""
import os
import statistics
import sys

out, warmup = sys.argv[1], int(sys.argv[2])
names = ["floor (static C)", "reference noop (Go)", "our noop (static build)", "our noop (default build)"]
binaries = ["floor", "reference-noop", "noop", "noop-dynamic"]
print(f"| scenario | binary | median | p90 | median / floor | p90 / floor-median | peak RSS | size |")
print("|---|---|---|---|---|---|---|---|")
for scenario in ["version", "add"]:
    samples = {i: [] for i in range(len(names))}
    rss = {i: 0 for i in range(len(names))}
    seen = {i: 0 for i in range(len(names))}
    for line in open(os.path.join(out, f"{scenario}.samples")):
        case, ns, maxrss = (int(x) for x in line.split())
        seen[case] += 1
        rss[case] = max(rss[case], maxrss)
        if seen[case] > warmup:
            samples[case].append(ns)
    floor = statistics.median(samples[0])
    for i in range(len(names)):
        xs = sorted(samples[i])
        med = statistics.median(xs)
        p90 = xs[int(len(xs) * 0.9) - 1]
        size = os.path.getsize(os.path.join(out, binaries[i]))
        print(f"| {scenario.upper()} | {names[i]} | {med / 1000:.0f} µs | {p90 / 1000:.0f} µs | "
              f"{med / floor:.2f}x | {p90 / floor:.2f}x | {rss[i] / 1024:.2f} MiB | {size / 1048576:.2f} MiB |")
print(f"\n{len(samples[0])} timed invocations per binary and scenario after {warmup} warm-up rounds, interleaved.")
