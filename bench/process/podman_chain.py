#!/usr/bin/env python3
"""Times Podman's default chain, ours against the reference, ADD then DEL.

Run by bench/process/podman_chain.sh inside a host namespace of the
benchmark's own; see that script. One round: for each side (the order
alternates from round to round), `cnitool add` then `cnitool del` of the
side's list into the side's container namespace, each timed from spawn to
exit (the runtime, cnitool, is the same for both sides; only the plugins
differ). Prints the medians and the ratios; with --samples FILE also every
sample, one line `side command nanoseconds`.

usage: podman_chain.py ROUNDS WARMUP CNITOOL NETCONFPATH CACHE
                       SIDE:CNI_PATH:NETWORK:NETNS ... [--samples FILE]
"""

import json
import os
import statistics
import subprocess
import sys
import time


def run(cnitool, env, command, network, netns):
    start = time.perf_counter_ns()
    out = subprocess.run([cnitool, *env["argv"], command, network, netns],
                         env=env["vars"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.perf_counter_ns() - start
    if out.returncode != 0:
        sys.exit(f"podman_chain: {command} {network} failed ({out.returncode}):\n"
                 f"{out.stdout.decode(errors='replace')[:4000]}\n"
                 f"{out.stderr.decode(errors='replace')[:4000]}")
    return elapsed


def main():
    args = sys.argv[1:]
    samples_file = None
    if "--samples" in args:
        i = args.index("--samples")
        samples_file = args[i + 1]
        del args[i:i + 2]
    if len(args) < 6:
        sys.exit(__doc__)
    rounds, warmup = int(args[0]), int(args[1])
    cnitool, netconfpath, cache = args[2], args[3], args[4]
    sides = []
    for spec in args[5:]:
        name, cni_path, network, netns = spec.split(":")
        caps = {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]}
        env = {
            "vars": {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "NETCONFPATH": netconfpath,
                     "CNI_PATH": cni_path, "CAP_ARGS": json.dumps(caps)},
            "argv": ["--cache-dir", cache, "--container-id", f"bench-{name}",
                     "--ifname", "eth0"],
        }
        sides.append((name, env, network, netns))

    times = {(s[0], c): [] for s in sides for c in ("ADD", "DEL")}
    lines = []
    for r in range(rounds):
        order = sides if r % 2 == 0 else list(reversed(sides))
        for name, env, network, netns in order:
            add = run(cnitool, env, "add", network, netns)
            delete = run(cnitool, env, "del", network, netns)
            lines.append(f"{name} ADD {add}\n{name} DEL {delete}\n")
            if r >= warmup:
                times[(name, "ADD")].append(add)
                times[(name, "DEL")].append(delete)
    if samples_file:
        with open(samples_file, "w") as f:
            f.writelines(lines)

    measured = rounds - warmup
    print(f"Podman's default chain (bridge + host-local + portmap + firewall + tuning), "
          f"{measured} rounds after {warmup} warm-up, ms per call (median, p90):")
    ref = sides[-1][0]
    for command in ("ADD", "DEL"):
        for name, _, _, _ in sides:
            t = sorted(times[(name, command)])
            med = statistics.median(t) / 1e6
            p90 = t[int(len(t) * 0.9) - 1 if len(t) >= 10 else -1] / 1e6
            ratio = med / (statistics.median(times[(ref, command)]) / 1e6)
            note = "" if name == ref else f"  ({ratio:.2f}x {ref})"
            print(f"  {command} {name:<10} {med:8.2f} {p90:8.2f}{note}")


if __name__ == "__main__":
    main()
