"""What the chain benchmarks' reports share (report_kind.py,
report_podman.py): reading netns_harness samples, the per-case table of a
chain's ADD and DEL, and a table of targets."""
import statistics


def read(path, case_offset, into, warmup):
    """Adds the samples of `path` after `warmup` rounds to `into`, keyed
    by (case + case_offset, 0 for ADD or 1 for DEL): (ns, step ns)."""
    seen = {}
    for line in open(path):
        case, cmd, ns, _rss, *steps = (int(x) for x in line.split())
        key = (case + case_offset, cmd)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > warmup:
            into.setdefault(key, []).append((ns, steps))


def medians(samples):
    """The median wall time of each (case, command)."""
    return {key: statistics.median(ns for ns, _ in xs) for key, xs in samples.items()}


def chain_table(samples, labels, plugins):
    """Prints each case's median, p90, each plugin's median and its ratio
    to case 0; `plugins` names the chain in ADD order (DEL reverses it)."""
    median = medians(samples)
    print("| command | plugins | median | p90 | per plugin, in order run (medians) | / reference (median) |")
    print("|---|---|---|---|---|---|")
    for cmd, command in enumerate(["ADD", "DEL"]):
        order = plugins if cmd == 0 else plugins[::-1]
        for case in range(len(labels)):
            xs = samples[(case, cmd)]
            totals = sorted(ns for ns, _ in xs)
            p90 = totals[max(int(len(totals) * 0.9) - 1, 0)]
            steps = " + ".join(f"{name} {statistics.median(s[i] for _, s in xs) / 1e6:.1f} ms"
                               for i, name in enumerate(order))
            ratio = median[(case, cmd)] / median[(0, cmd)]
            print(f"| {command} | {labels[case]} | {median[(case, cmd)] / 1e6:.2f} ms | {p90 / 1e6:.2f} ms | "
                  f"{steps} | {ratio:.2f}x |")


def targets(samples, bounds):
    """Prints the table of targets: (case, command, what, bound on the
    median's ratio to case 0's)."""
    median = medians(samples)
    print("\n| target | measured | met |\n|---|---|---|")
    for case, cmd, what, bound in bounds:
        ratio = median[(case, cmd)] / median[(0, cmd)]
        print(f"| {what} median <= {bound}x the reference | {ratio:.2f}x | {'yes' if ratio <= bound else 'no'} |")
