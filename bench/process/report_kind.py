"""Summarises kind's chain samples (bench/process/kind.sh): median and p90
of the chain's ADD and DEL for each case, each plugin's median share, the
ratios of ours to the reference, growth with 1,000 pods' mappings
(nftables), and issue 21's targets."""
import sys

from chain_report import chain_table, medians, read, targets

out, warmup = sys.argv[1], int(sys.argv[2])
names = ["reference ptp + host-local + portmap (Go)", "ours, default backend (iptables)",
         "ours, nftables backend"]
GROWN = len(names)
label = names + ["ours, nftables, 1,000 pods' mappings present"]

samples = {}
read(f"{out}/samples", 0, samples, warmup)
read(f"{out}/samples-grown", GROWN, samples, warmup)
median = medians(samples)

chain_table(samples, label, ["ptp", "portmap"])
print(f"\n{len(samples[(0, 0)])} timed ADD+DEL pairs per case after {warmup} warm-up rounds, "
      "the first three cases interleaved, the last in a second run.")
targets(samples, [(1, 0, "ADD, default (iptables) backend", 0.2),
                  (2, 0, "ADD, nftables backend", 0.1),
                  (1, 1, "DEL, default (iptables) backend", 0.3),
                  (2, 1, "DEL, nftables backend", 0.3)])
for cmd, command in enumerate(["ADD", "DEL"]):
    ratio = median[(GROWN, cmd)] / median[(2, cmd)]
    print(f"| {command} with 1,000 pods' mappings <= 1.5x empty tables (nftables) | {ratio:.2f}x | "
          f"{'yes' if ratio <= 1.5 else 'no'} |")
