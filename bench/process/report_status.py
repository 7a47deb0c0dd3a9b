"""Report of bench/process/status.sh: each plugin's STATUS against our
noop's, median and p90 of the wall time from fork to exit, and peak RSS.

usage: report_status.py OUT WARMUP PLUGIN...   (reads OUT/status.samples:
case index, nanoseconds, peak RSS in KiB per line; case 0 is the noop)
"""

import os
import statistics
import sys

import harness_samples

out, warmup, plugins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
samples, rss = harness_samples.read(os.path.join(out, "status.samples"), len(plugins), warmup)
noop = statistics.median(samples[0])
print("| plugin | median | p90 | median / noop's | peak RSS |")
print("|---|---|---|---|---|")
over = []
for i, name in enumerate(plugins):
    xs = sorted(samples[i])
    med = statistics.median(xs)
    p90 = xs[max(0, int(len(xs) * 0.9) - 1)]
    if med / noop > 2:
        over.append(name)
    print(f"| {name} | {med / 1000:.0f} µs | {p90 / 1000:.0f} µs | {med / noop:.2f}x | {rss[i] / 1024:.2f} MiB |")
print(f"\n{len(samples[0])} timed STATUS calls per plugin after {warmup} warm-up rounds, interleaved;"
      " the host-local on CNI_PATH is ours, so a plugin that carries it built in runs it in-process"
      " (tests/tests/builtin_delegate.rs checks which do).")
print("The issue's target, each plugin's STATUS within 2x the noop's per execution: "
      + ("met by every plugin." if not over else "over for " + ", ".join(over) + "."))
