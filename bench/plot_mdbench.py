#!/usr/bin/env python3
"""Draw mdbench's table as a PNG bar chart: for every metadata operation,
Galley beside the local directory of the same run, operations per second
on a log scale, the galley/local ratio above each pair.

    plot_mdbench.py CHART.png OUTPUT.txt [OUTPUT.txt ...] [--title TEXT]

Each OUTPUT.txt is mdbench's (or bench/run-mdbench's) output as printed.
Given several runs, every figure is the median over the runs (the ratio
is that of the medians), and the median table is printed in mdbench's
format.  Needs matplotlib (Debian: python3-matplotlib) for the chart;
--no-chart prints the table only.
"""

import argparse
import re
import statistics
import sys

ROW = re.compile(r"^(?P<op>create|stat|open/close|remove)\s+(?P<g>[\d.]+)\s+"
                 r"(?P<l>[\d.]+)\s+[\d.]+x\s*$")
OPS = ["create", "stat", "open/close", "remove"]


def parse(text):
    """{op: (galley op/s, local op/s)} and the header lines."""
    rows, header = {}, []
    for line in text.splitlines():
        m = ROW.match(line.strip())
        if m:
            rows[m.group("op")] = (float(m.group("g")), float(m.group("l")))
        elif line.startswith(("mdbench:", "servers", "host:")):
            header.append(line.strip())
    return rows, header


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("chart")
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--title", default="mdbench: Galley beside a local directory")
    ap.add_argument("--no-chart", action="store_true")
    a = ap.parse_args()
    runs, header = [], []
    for path in a.runs:
        rows, h = parse(open(path).read())
        if rows:
            runs.append(rows)
            header = header or h
    if not runs:
        sys.exit("plot_mdbench: no mdbench table in %s" % " ".join(a.runs))
    ops = [op for op in OPS if all(op in r for r in runs)]
    med = {op: (statistics.median(r[op][0] for r in runs),
                statistics.median(r[op][1] for r in runs)) for op in ops}
    print("median of %d run(s)" % len(runs))
    print("%-12s %14s %14s %8s" % ("operation", "galley op/s", "local op/s",
                                   "ratio"))
    for op in ops:
        g, l = med[op]
        print("%-12s %14.0f %14.0f %7.3fx" % (op, g, l, g / l))
    if a.no_chart:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    xs = range(len(ops))
    w = 0.38
    ax.bar([x - w / 2 for x in xs], [med[o][0] for o in ops], w,
           label="galley", color="#2b6cb0")
    ax.bar([x + w / 2 for x in xs], [med[o][1] for o in ops], w,
           label="local directory (baseline)", color="#a0aec0")
    for x, op in zip(xs, ops):
        g, l = med[op]
        ax.text(x - w / 2, g * 1.08, "%.3gx" % (g / l), ha="center",
                fontsize=9, color="#276749" if g / l >= 0.3 else "#c53030")
    ax.set_yscale("log")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(ops)
    ax.set_ylabel("operations per second (all processes)")
    ax.legend(loc="upper left", fontsize=8)
    sub = "\n".join(header[:2]) + "; median of %d run(s)" % len(runs)
    ax.set_title(a.title + "\n" + sub, fontsize=8)
    fig.tight_layout()
    fig.savefig(a.chart, dpi=110)
    print("plot_mdbench: %d operations -> %s" % (len(ops), a.chart))


if __name__ == "__main__":
    main()
