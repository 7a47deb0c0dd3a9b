"""The samples harness.c prints, one line per invocation (case index,
wall nanoseconds, peak RSS in KiB), read back for the reports of
bench/process/run.sh and bench/process/status.sh."""


def read(path, cases, warmup):
    """Per case index (0 .. cases-1): its wall times after the first
    `warmup` invocations of that case, and its largest peak RSS (KiB,
    warm-up included)."""
    samples = {i: [] for i in range(cases)}
    rss = {i: 0 for i in range(cases)}
    seen = {i: 0 for i in range(cases)}
    with open(path) as f:
        for line in f:
            case, ns, maxrss = (int(x) for x in line.split())
            seen[case] += 1
            rss[case] = max(rss[case], maxrss)
            if seen[case] > warmup:
                samples[case].append(ns)
    return samples, rss
