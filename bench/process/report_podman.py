"""Summarises Podman's default chain samples (bench/process/podman.sh):
median and p90 of the chain's ADD and DEL for each case, each plugin's
median share, the ratios of ours to the reference, and issue 23's
targets."""
import sys

from chain_report import chain_table, read, targets

out, warmup = sys.argv[1], int(sys.argv[2])
labels = ["reference bridge + host-local + portmap + firewall + tuning (Go)",
          "ours, default backends (iptables)", "ours, nftables backends"]
samples = {}
read(f"{out}/samples", 0, samples, warmup)
chain_table(samples, labels, ["bridge", "portmap", "firewall", "tuning"])
print(f"\n{len(samples[(0, 0)])} timed ADD+DEL pairs per case after {warmup} warm-up rounds, "
      "the cases interleaved.")
targets(samples, [(1, 0, "ADD, default backends", 0.2), (2, 0, "ADD, nftables backends", 0.2),
                  (1, 1, "DEL, default backends", 0.3), (2, 1, "DEL, nftables backends", 0.3)])
