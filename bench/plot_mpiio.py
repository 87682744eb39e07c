#!/usr/bin/env python3
"""Draw mpiio_bench's table as a PNG bar chart: for every pattern, galley:
beside the ufs: baseline of the same run, write and read in two panels,
MB/s on a log scale, the galley/ufs ratio above each pair.

    plot_mpiio.py CHART.png TABLE.txt [TABLE.txt ...] [--title TEXT]

Each TABLE.txt is mpiio_bench's output as printed (its header lines are
kept as the chart's subtitle).  Given several runs, every figure is the
median over the runs (the ratio is that of the medians), and the median
table is printed in mpiio_bench's format.  Needs matplotlib (Debian:
python3-matplotlib) for the chart; --no-chart prints the table only.
"""

import argparse
import os
import re
import statistics
import sys

ROW = re.compile(r"^(?P<name>.+?)\s*\|\s*(?P<gw>[\d.]+)\s+(?P<uw>[\d.]+)\s+"
                 r"(?P<rw>[\d.]+)x\s*\|\s*(?P<gr>[\d.]+)\s+(?P<ur>[\d.]+)\s+"
                 r"(?P<rr>[\d.]+)x\s*$")


def parse(text):
    """(header lines, [(label, gw, uw, gr, ur)]) from mpiio_bench output."""
    header, rows = [], []
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            label = " ".join(m.group("name").split())
            rows.append((label, float(m.group("gw")), float(m.group("uw")),
                         float(m.group("gr")), float(m.group("ur"))))
        elif line.startswith("mpiio_bench:") or line.startswith("host:"):
            header.append(line.strip())
    return header, rows


def median_rows(runs):
    """Per pattern, the median of every figure over the runs that have it
    (patterns in the order of the first run)."""
    order, cells = [], {}
    for rows in runs:
        for r in rows:
            if r[0] not in cells:
                order.append(r[0])
                cells[r[0]] = []
            cells[r[0]].append(r[1:])
    out = []
    for label in order:
        vals = cells[label]
        out.append((label,) + tuple(statistics.median(v[i] for v in vals)
                                    for i in range(4)))
    return out


def print_table(rows, nruns):
    print("median of %d run(s)" % nruns)
    for label, gw, uw, gr, ur in rows:
        print("%-34s | %9.1f %9.1f %6.2fx | %9.1f %9.1f %6.2fx" % (
            label, gw, uw, gw / uw if uw else 0, gr, ur, gr / ur if ur else 0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("png")
    ap.add_argument("tables", nargs="+")
    ap.add_argument("--title", default="galley: beside ufs: (ROMIO on a "
                    "local directory), same run")
    ap.add_argument("--no-chart", action="store_true")
    ap.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    header, runs = [], []
    for t in a.tables:
        with open(t) as f:
            h, rows = parse(f.read())
        if not rows:
            sys.exit("plot_mpiio: no table rows in %s" % t)
        header = header or h
        runs.append(rows)
    rows = median_rows(runs)
    if len(runs) > 1:
        header = header + ["median of %d runs" % len(runs)]
        if not a.quiet:
            print_table(rows, len(runs))
    if a.no_chart:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        # Debian's matplotlib belongs to Debian's python3, which another
        # python3 first on PATH (pyenv, a venv) does not see.
        deb = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(deb) and \
                os.access(deb, os.X_OK):
            os.execv(deb, [deb, os.path.abspath(__file__)] + sys.argv[1:] +
                     ["--quiet"])
        sys.exit("plot_mpiio: needs matplotlib (apt-get install "
                 "python3-matplotlib)")

    n = len(rows)
    fig, axes = plt.subplots(2, 1, figsize=(max(10, 0.9 * n), 9),
                             sharex=True)
    x = list(range(n))
    w = 0.38
    for ax, (what, gi, ui) in zip(axes, (("write", 1, 2), ("read", 3, 4))):
        g = [r[gi] for r in rows]
        u = [r[ui] for r in rows]
        ax.bar([i - w / 2 for i in x], g, w, label="galley:", color="#2b6cb0")
        ax.bar([i + w / 2 for i in x], u, w, label="ufs: (baseline)",
               color="#a0aec0")
        for i in x:
            ratio = g[i] / u[i] if u[i] > 0 else 0
            ax.annotate("%.2fx" % ratio, (i, max(g[i], u[i])),
                        textcoords="offset points", xytext=(0, 3),
                        ha="center", fontsize=8,
                        color="#22543d" if ratio >= 1 else "#9b2c2c")
        ax.set_yscale("log")
        ax.set_ylabel("%s MB/s" % what)
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
    axes[1].set_xticks(x)
    axes[1].set_xticklabels([r[0] for r in rows], rotation=40, ha="right",
                            fontsize=8)
    fig.suptitle(a.title + ("\n" + "; ".join(header) if header else ""),
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)
    print("plot_mpiio: %d patterns -> %s" % (n, a.png))


if __name__ == "__main__":
    main()
