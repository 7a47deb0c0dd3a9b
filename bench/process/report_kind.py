"""Summarises kind's chain samples (bench/process/kind.sh): median and p90
of the chain's ADD and DEL for each case, each plugin's median share, the
ratios of ours to the reference, growth with 1,000 pods' mappings
(nftables), and issue 21's targets."""
import statistics
import sys

out, warmup = sys.argv[1], int(sys.argv[2])
names = ["reference ptp + host-local + portmap (Go)", "ours, default backend (iptables)",
         "ours, nftables backend"]
GROWN = len(names)
label = names + ["ours, nftables, 1,000 pods' mappings present"]


def read(path, case_offset, into):
    seen = {}
    for line in open(path):
        case, cmd, ns, _rss, *steps = (int(x) for x in line.split())
        key = (case + case_offset, cmd)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > warmup:
            into.setdefault(key, []).append((ns, steps))


samples = {}
read(f"{out}/samples", 0, samples)
read(f"{out}/samples-grown", GROWN, samples)
median = {key: statistics.median(ns for ns, _ in xs) for key, xs in samples.items()}

print("| command | plugins | median | p90 | per plugin, in order run (medians) | / reference (median) |")
print("|---|---|---|---|---|---|")
for cmd, command in enumerate(["ADD", "DEL"]):
    plugins = ["ptp", "portmap"] if cmd == 0 else ["portmap", "ptp"]
    for case in range(len(label)):
        xs = samples[(case, cmd)]
        totals = sorted(ns for ns, _ in xs)
        p90 = totals[max(int(len(totals) * 0.9) - 1, 0)]
        steps = " + ".join(f"{name} {statistics.median(s[i] for _, s in xs) / 1e6:.1f} ms"
                           for i, name in enumerate(plugins))
        ratio = median[(case, cmd)] / median[(0, cmd)]
        print(f"| {command} | {label[case]} | {median[(case, cmd)] / 1e6:.2f} ms | {p90 / 1e6:.2f} ms | "
              f"{steps} | {ratio:.2f}x |")
print(f"\n{len(samples[(0, 0)])} timed ADD+DEL pairs per case after {warmup} warm-up rounds, "
      "the first three cases interleaved, the last in a second run.")
print("\n| target | measured | met |\n|---|---|---|")
for case, cmd, what, bound in [(1, 0, "ADD, default (iptables) backend", 0.2),
                               (2, 0, "ADD, nftables backend", 0.1),
                               (1, 1, "DEL, default (iptables) backend", 0.3),
                               (2, 1, "DEL, nftables backend", 0.3)]:
    ratio = median[(case, cmd)] / median[(0, cmd)]
    print(f"| {what} median <= {bound}x the reference | {ratio:.2f}x | {'yes' if ratio <= bound else 'no'} |")
for cmd, command in enumerate(["ADD", "DEL"]):
    ratio = median[(GROWN, cmd)] / median[(2, cmd)]
    print(f"| {command} with 1,000 pods' mappings <= 1.5x empty tables (nftables) | {ratio:.2f}x | "
          f"{'yes' if ratio <= 1.5 else 'no'} |")
