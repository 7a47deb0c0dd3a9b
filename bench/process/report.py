"""Summarises the harness samples: median and p90 per invocation, each as a
ratio to the floor's median in the same run, peak RSS, binary sizes."""
import os
import statistics
import sys

import harness_samples

out, warmup = sys.argv[1], int(sys.argv[2])
names = ["floor (static C)", "reference noop (Go, default build)", "our noop (static musl build)",
         "reference noop (Go, static)", "our noop (static glibc build)", "our noop (default build)",
         "floor (static C, musl)"]
binaries = ["floor", "reference-noop", "noop", "reference-noop-static", "noop-glibc-static",
            "noop-dynamic", "floor-musl"]
FLOOR, REF, OURS, REF_STATIC, FLOOR_MUSL = 0, 1, 2, 3, 6
print(f"| scenario | binary | median | p90 | median / floor | p90 / floor-median | peak RSS | size |")
print("|---|---|---|---|---|---|---|---|")
summary = {}
for scenario in ["version", "add"]:
    samples, rss = harness_samples.read(os.path.join(out, f"{scenario}.samples"), len(names), warmup)
    floor = statistics.median(samples[0])
    for i in range(len(names)):
        xs = sorted(samples[i])
        med = statistics.median(xs)
        p90 = xs[int(len(xs) * 0.9) - 1]
        size = os.path.getsize(os.path.join(out, binaries[i]))
        summary[(scenario, i)] = (med, rss[i], size)
        print(f"| {scenario.upper()} | {names[i]} | {med / 1000:.0f} µs | {p90 / 1000:.0f} µs | "
              f"{med / floor:.2f}x | {p90 / floor:.2f}x | {rss[i] / 1024:.2f} MiB | {size / 1048576:.2f} MiB |")
print(f"\n{len(samples[0])} timed invocations per binary and scenario after {warmup} warm-up rounds, interleaved.")

# Issue 8's targets, from this run.
def ratio(scenario, a, b, what):
    return summary[(scenario, a)][what] / summary[(scenario, b)][what]

print("\n| target | measured | met |\n|---|---|---|")
rows = [
    ("ADD median <= 1.3x the floor", ratio("add", OURS, FLOOR, 0), 1.3),
    ("ADD median <= 0.3x the reference noop", ratio("add", OURS, REF, 0), 0.3),
    ("ADD median <= 0.3x the reference noop (static)", ratio("add", OURS, REF_STATIC, 0), 0.3),
    ("VERSION median <= 1.2x the floor", ratio("version", OURS, FLOOR, 0), 1.2),
    ("ADD peak RSS <= 0.4x the reference noop", ratio("add", OURS, REF, 1), 0.4),
    ("ADD peak RSS <= 0.4x the reference noop (static)", ratio("add", OURS, REF_STATIC, 1), 0.4),
    ("binary <= 0.5x the reference noop", ratio("add", OURS, REF, 2), 0.5),
]
for label, value, bound in rows:
    print(f"| {label} | {value:.2f}x | {'yes' if value <= bound else 'no'} |")
# Not targets: the same ratios against the floor built on musl, the C
# library of our static build (the floor above is glibc's, as in issue 8).
for scenario in ["version", "add"]:
    print(f"| ({scenario.upper()} median against the musl floor, no target) | "
          f"{ratio(scenario, OURS, FLOOR_MUSL, 0):.2f}x | |")
