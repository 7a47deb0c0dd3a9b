"""Report of bench/process/burst.sh: a Markdown table on stdout and, per
burst size, an SVG beside it (OUT/burst-N.svg) showing every pod's ADD and
DEL latency of ours, the reference and the kernel floor, one row each, so
the distance to the floor shows at a glance. Hand-written SVG: no plotting
library.

usage: report_burst.py OUT   (reads OUT/runs/N_LIST_CASE_ROUND.json); exits 1
when ours or the floor recorded an error (the reference's are shown only).
"""

import glob
import json
import math
import os
import statistics
import sys

CASES = ["reference", "ours", "floor"]
COLOURS = {"reference": "#c0392b", "ours": "#2471a3", "floor": "#7f8c8d"}


def pct(values, p):
    """The p-th percentile (nearest rank) of values."""
    v = sorted(values)
    return v[min(len(v) - 1, max(0, round(p / 100 * len(v) + 0.5) - 1))]


def load(out):
    """{(n, list, case): {"add": [...], "del": [...], "add_span": [...], ...,
    "rounds": {round: run}}}, and whether ours or the floor recorded an
    error."""
    runs, failed = {}, False
    for path in glob.glob(os.path.join(out, "runs", "*.json")):
        n, name, case, round_ = os.path.basename(path)[:-5].split("_")
        with open(path) as f:
            text = f.read().strip()
        if not text:
            print(f"burst: {path} is empty", file=sys.stderr)
            continue
        data = json.loads(text)
        for e in data.get("errors") or []:
            print(f"burst: {n} {name} {case}: {e}", file=sys.stderr)
            failed = failed or case != "reference"
        r = runs.setdefault((int(n), name, case),
                            {"add": [], "del": [], "add_span": [], "del_span": [], "rounds": {}})
        r["rounds"][int(round_)] = data
        r["add"] += data["add"]
        r["del"] += data["del"]
        r["add_span"].append(data["add_makespan"])
        r["del_span"].append(data["del_makespan"])
    return runs, failed


def span_ratios(ours, floor, op):
    """Ours' makespan over the floor's, round by round: the two ran
    seconds apart, so a round whose machine was slower for both (another
    tenant, the file system's state) shows as what it is, not as a ratio
    of medians taken from different rounds."""
    return [ours["rounds"][k][op + "_makespan"] / floor["rounds"][k][op + "_makespan"]
            for k in sorted(ours["rounds"]) if k in floor["rounds"]]


def convoys(ours, op):
    """p99 / p50 of each burst: a convoy is pods of one burst waiting for
    one another, so the ratio is taken within a round; pooling rounds
    would count a machine that was slower in one round as a convoy."""
    return [pct(r[op], 99) / pct(r[op], 50) for r in ours["rounds"].values() if r[op]]


def spread(values, unit):
    """The median of values, and their largest in brackets when there are
    several: "2.01x (2.10x)"."""
    if not values:
        return "-"
    median = f"{statistics.median(values):.2f}{unit}"
    return median if len(values) < 2 else f"{median} ({max(values):.2f}{unit})"


def cell(r, op):
    if r is None:
        return "-"
    v = r[op]
    return f"{pct(v, 50):,.0f} / {pct(v, 99):,.0f} / {statistics.median(r[op + '_span']):,.0f}"


def svg(runs, n, lists, path):
    """One panel per list and command: a row of dots per case, log-scaled."""
    width, row, left, top = 760, 18, 170, 30
    panels = [(name, op) for name in lists for op in ("add", "del")]
    values = [t for (m, _, _), r in runs.items() if m == n for op in ("add", "del") for t in r[op] if t > 0]
    if not values:
        return
    lo, hi = math.log10(max(min(values), 0.1)), math.log10(max(values))
    hi = max(hi, lo + 1)
    x = lambda t: left + (math.log10(max(t, 0.1)) - lo) / (hi - lo) * (width - left - 20)
    height = top + len(panels) * (len(CASES) * row + 14) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="11">',
             f'<text x="10" y="18" font-size="13">{n} pods at once: each pod\'s latency (ms, log scale); '
             f'bar: p50, tick: p99</text>']
    y = top
    for name, op in panels:
        parts.append(f'<text x="10" y="{y + row}" font-weight="bold">{name} {op.upper()}</text>')
        for case in CASES:
            r = runs.get((n, name, case))
            y += row
            parts.append(f'<text x="80" y="{y}" fill="{COLOURS[case]}">{case}</text>')
            if r is None:
                continue
            # One path of round dots (zero-length strokes) per row: the
            # same picture as a circle per pod, a tenth of the bytes.
            dots = "".join(f"M{x(t):.1f} {y - 4}h0" for t in r[op])
            parts.append(f'<path d="{dots}" stroke="{COLOURS[case]}" stroke-opacity="0.35" '
                         f'stroke-width="4" stroke-linecap="round"/>')
            for p, h in ((50, 8), (99, 5)):
                px = x(pct(r[op], p))
                parts.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{y - 4 - h}" y2="{y - 4 + h}" '
                             f'stroke="black" stroke-width="{2 if p == 50 else 1}"/>')
        y += 14
    decade = math.floor(lo)
    while decade <= hi:
        for m in (1, 2, 5):
            t = m * 10 ** decade
            if lo <= math.log10(t) <= hi:
                parts.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top}" y2="{y}" stroke="#ddd"/>')
                parts.append(f'<text x="{x(t):.1f}" y="{y + 14}" text-anchor="middle">{t:g}</text>')
        decade += 1
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    out = sys.argv[1]
    runs, failed = load(out)
    sizes = sorted({n for n, _, _ in runs})
    lists = []
    for _, name, _ in sorted(runs, key=lambda k: ["podman", "podman-nft", "kind", "containerd"].index(k[1])):
        if name not in lists:
            lists.append(name)
    print("Per pod p50 / p99 / makespan (median over rounds), ms:\n")
    print("| list | N | reference ADD | ours ADD | floor ADD | reference DEL | ours DEL | floor DEL |")
    print("|---|---|---|---|---|---|---|---|")
    for n in sizes:
        for name in lists:
            r = [runs.get((n, name, c)) for c in CASES]
            print(f"| {name} | {n} | " + " | ".join(cell(x, "add") for x in r) + " | "
                  + " | ".join(cell(x, "del") for x in r) + " |")
        svg(runs, n, lists, os.path.join(out, f"burst-{n}.svg"))
    print("\nAgainst the issue's targets (ours): makespan / the floor's and p99 / p50, each taken within a"
          " round, median over rounds (the worst round in brackets); p50 / the reference's:\n")
    print("| list | N | ADD span / floor | DEL span / floor | ADD p99 / p50 | DEL p99 / p50 | ADD p50 / ref | DEL p50 / ref |")
    print("|---|---|---|---|---|---|---|---|")
    for n in sizes:
        for name in lists:
            ours, ref, floor = (runs.get((n, name, c)) for c in ("ours", "reference", "floor"))
            if ours is None:
                continue
            span = lambda op: spread(span_ratios(ours, floor, op), "x") if floor else "-"
            convoy = lambda op: spread(convoys(ours, op), "")
            vs_ref = lambda op: f"{pct(ours[op], 50) / pct(ref[op], 50):.2f}x" if ref else "-"
            print(f"| {name} | {n} | {span('add')} | {span('del')} | {convoy('add')} | {convoy('del')} "
                  f"| {vs_ref('add')} | {vs_ref('del')} |")
    print("\nPlots: " + ", ".join(f"burst-{n}.svg" for n in sizes))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
