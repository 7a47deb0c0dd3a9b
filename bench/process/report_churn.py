"""Report of bench/process/churn.sh: a Markdown table on stdout and
OUT/churn.svg, every cycle's ADD+DEL latency over the run (ours and the
reference, log scale) with a rolling p99, in hand-written SVG.

usage: report_churn.py OUT   (reads OUT/ours.json, OUT/reference.json);
exits 1 when our run recorded errors (the reference's are shown only).
"""

import json
import math
import os
import sys

COLOURS = {"reference": "#c0392b", "ours": "#2471a3"}


def pct(values, p):
    """The p-th percentile (nearest rank) of values."""
    v = sorted(values)
    return v[min(len(v) - 1, max(0, math.ceil(p / 100 * len(v)) - 1))]


def fmt(values, p):
    return f"{pct(values, p):,.1f}" if values else "-"


def svg(runs, path):
    width, height, left, top, bottom = 760, 320, 60, 30, 40
    values = [t for r in runs.values() for t in r["cycles"] if t > 0]
    if not values:
        return
    lo, hi = math.log10(min(values)), math.log10(max(values))
    hi = max(hi, lo + 1)
    count = max(len(r["cycles"]) for r in runs.values())
    x = lambda i: left + i / max(count - 1, 1) * (width - left - 20)
    y = lambda t: top + (hi - math.log10(max(t, 1e-3))) / (hi - lo) * (height - top - bottom)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="11">',
             '<text x="10" y="18" font-size="13">Churn: each cycle\'s ADD+DEL (ms, log scale) in '
             'completion order; line: p99 of the last 100</text>']
    decade = math.floor(lo)
    while decade <= hi:
        for m in (1, 2, 5):
            t = m * 10 ** decade
            if lo <= math.log10(t) <= hi:
                parts.append(f'<line x1="{left}" x2="{width - 20}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ddd"/>')
                parts.append(f'<text x="{left - 4}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
        decade += 1
    for n, (case, r) in enumerate(runs.items()):
        c = r["cycles"]
        step = max(1, len(c) // 3000)
        dots = "".join(f"M{x(i):.1f} {y(c[i]):.1f}h0" for i in range(0, len(c), step))
        parts.append(f'<path d="{dots}" stroke="{COLOURS[case]}" stroke-opacity="0.3" '
                     f'stroke-width="3" stroke-linecap="round"/>')
        points = [f"{x(i):.1f},{y(pct(c[max(0, i - 99):i + 1], 99)):.1f}"
                  for i in range(0, len(c), max(1, len(c) // 300))]
        parts.append(f'<polyline points="{" ".join(points)}" fill="none" stroke="{COLOURS[case]}"/>')
        parts.append(f'<text x="{left + 10 + 90 * n}" y="{height - 8}" fill="{COLOURS[case]}">{case}</text>')
    parts.append(f'<text x="{width - 20}" y="{height - 8}" text-anchor="end">cycle</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    out = sys.argv[1]
    runs, failed = {}, False
    for case in ("ours", "reference"):
        path = os.path.join(out, f"{case}.json")
        if os.path.exists(path):
            with open(path) as f:
                runs[case] = json.load(f)
            for e in runs[case].get("errors") or []:
                print(f"churn: {case}: {e}", file=sys.stderr)
                failed = failed or case == "ours"
    print("| case | cycles | first p50 / p99 | last p50 / p99 | last p99 / first p99 | STATUS p50 / max | GC p50 / max |")
    print("|---|---|---|---|---|---|---|")
    for case, r in runs.items():
        c = r["cycles"]
        k = min(1000, max(1, len(c) // 5))
        first, last = c[:k], c[-k:]
        ratio = pct(last, 99) / pct(first, 99) if c else float("nan")
        status = r.get("status") or []
        gc = r.get("gc") or []
        print(f"| {case} | {len(c)} | {fmt(first, 50)} / {fmt(first, 99)} | {fmt(last, 50)} / {fmt(last, 99)} "
              f"| {ratio:.2f} | {fmt(status, 50)} / {max(status, default=0):,.1f} "
              f"| {fmt(gc, 50)} / {max(gc, default=0):,.1f} |")
    svg(runs, os.path.join(out, "churn.svg"))
    print("\nms; first and last: the first and last 1,000 cycles (a fifth of a shorter run). Plot: churn.svg")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
