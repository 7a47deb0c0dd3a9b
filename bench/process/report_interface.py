"""Summarises the interface-plugin samples: median and p90 of ADD and DEL
for each case, the ratio of ours to the reference, peak RSS, and issue
13's targets (cases 0 and 1; cases 2 and 3 are the IPAM plugins alone)."""
import statistics
import sys

out, warmup = sys.argv[1], int(sys.argv[2])
names = ["our veth + ipam-file (static musl)", "reference ptp + host-local (Go)",
         "our ipam-file alone", "reference host-local alone"]
samples = {(case, cmd): [] for case in range(len(names)) for cmd in range(2)}
rss = {key: 0 for key in samples}
seen = {key: 0 for key in samples}
for line in open(f"{out}/samples"):
    case, cmd, ns, maxrss = (int(x) for x in line.split())
    key = (case, cmd)
    seen[key] += 1
    rss[key] = max(rss[key], maxrss)
    if seen[key] > warmup:
        samples[key].append(ns)

median = {key: statistics.median(xs) for key, xs in samples.items()}
print("| command | plugins | median | p90 | ours / reference (median) | peak RSS |")
print("|---|---|---|---|---|---|")
for cmd, label in enumerate(["ADD", "DEL"]):
    for case in range(len(names)):
        xs = sorted(samples[(case, cmd)])
        p90 = xs[max(int(len(xs) * 0.9) - 1, 0)]
        against = case + 1 if case % 2 == 0 else case
        ratio = median[(case, cmd)] / median[(against, cmd)]
        print(f"| {label} | {names[case]} | {median[(case, cmd)] / 1e6:.2f} ms | {p90 / 1e6:.2f} ms | "
              f"{ratio:.2f}x | {rss[(case, cmd)] / 1024:.2f} MiB |")
print(f"\n{len(samples[(0, 0)])} timed ADD+DEL pairs per case after {warmup} warm-up rounds, interleaved.")
print("\n| target | measured | met |\n|---|---|---|")
for cmd, label, bound in [(0, "ADD", 0.4), (1, "DEL", 1.0)]:
    ratio = median[(0, cmd)] / median[(1, cmd)]
    print(f"| {label} median <= {bound}x the reference | {ratio:.2f}x | {'yes' if ratio <= bound else 'no'} |")
for cmd, label in [(0, "ADD"), (1, "DEL")]:
    ours = median[(0, cmd)] - median[(2, cmd)]
    ref = median[(1, cmd)] - median[(3, cmd)]
    print(f"| ({label}: what the interface plugin adds to its IPAM alone, medians' difference, no target) | "
          f"{ours / 1e6:.2f} ms vs {ref / 1e6:.2f} ms: {ours / ref:.2f}x | |")
