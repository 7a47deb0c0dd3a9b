"""Summarises kind's chain samples (bench/process/kind.sh): median and p90
of the chain's ADD and DEL for each case, each plugin's median share, the
ratios of ours to the reference, growth with 1,000 pods' mappings
(nftables, from blocks of rounds alternating with an empty node's), and
issues 21's and 30's targets."""
import glob
import sys

from chain_report import chain_table, medians, read, targets

out, warmup = sys.argv[1], int(sys.argv[2])
names = ["reference ptp + host-local + portmap (Go)", "ours, default backend (iptables)",
         "ours, nftables backend"]
EMPTY, GROWN = len(names), len(names) + 1
label = names + ["ours, nftables, empty node (growth blocks)",
                 "ours, nftables, 1,000 pods' mappings present (growth blocks)"]

samples = {}
read(f"{out}/samples", 0, samples, warmup)
# Each block starts in a new host namespace: its first rounds are warm-up
# when the run is long enough to have any.
block_warmup = 2 if warmup else 0
blocks = sorted(glob.glob(f"{out}/samples-empty.*"))
for path in blocks:
    read(path, EMPTY, samples, block_warmup)
for path in sorted(glob.glob(f"{out}/samples-grown.*")):
    read(path, GROWN, samples, block_warmup)
median = medians(samples)

chain_table(samples, label, ["ptp", "portmap"])
print(f"\n{len(samples[(0, 0)])} timed ADD+DEL pairs per case after {warmup} warm-up rounds, "
      f"the first three cases interleaved; the last two in {len(blocks)} alternating blocks "
      f"each, {len(samples[(GROWN, 0)])} pairs after {block_warmup} warm-up rounds per block.")
targets(samples, [(1, 0, "ADD, default (iptables) backend", 0.2),
                  (2, 0, "ADD, nftables backend", 0.1),
                  (1, 1, "DEL, default (iptables) backend", 0.3),
                  (2, 1, "DEL, nftables backend", 0.3)])
for cmd, command in enumerate(["ADD", "DEL"]):
    ratio = median[(GROWN, cmd)] / median[(EMPTY, cmd)]
    for bound in (1.5, 1.3):
        print(f"| {command} with 1,000 pods' mappings <= {bound}x empty tables (nftables) | "
              f"{ratio:.2f}x | {'yes' if ratio <= bound else 'no'} |")
