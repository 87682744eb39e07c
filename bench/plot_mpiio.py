#!/usr/bin/env python3
"""Draw mpiio_bench's table as a PNG bar chart: for every pattern, galley:
beside the ufs: baseline of the same run, write and read in two panels,
MB/s on a log scale, the galley/ufs ratio above each pair.

    plot_mpiio.py TABLE.txt CHART.png [--title TEXT]

TABLE.txt is mpiio_bench's output as printed (its header lines are kept
as the chart's subtitle).  Needs matplotlib (Debian: python3-matplotlib).
"""

import argparse
import re
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
        elif line.startswith("mpiio_bench:") or line.startswith("galley target"):
            header.append(line.strip())
    return header, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table")
    ap.add_argument("png")
    ap.add_argument("--title", default="galley: beside ufs: (ROMIO on a "
                    "local directory), same run")
    a = ap.parse_args()
    with open(a.table) as f:
        header, rows = parse(f.read())
    if not rows:
        sys.exit("plot_mpiio: no table rows in %s" % a.table)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
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
