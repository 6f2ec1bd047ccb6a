#!/usr/bin/env python3
"""Plots end-to-end throughput and latency against batch size (the paper's Fig. 3) from a sweep CSV.
Usage: plot_sweep.py SWEEP.csv OUT.png [GPU]   (needs matplotlib; GPU names the card in the title,
default "H200")"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["experiment"].startswith("fig3_")]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
for exp in ("fig3_paper", "fig3_fast"):
    for k in sorted({int(r["streams"]) for r in rows}):
        pts = sorted((int(r["batch"]), float(r["e2e_per_s"]), float(r["e2e_ms"])) for r in rows
                     if r["experiment"] == exp and int(r["streams"]) == k)
        if not pts:
            continue
        style = "-" if exp == "fig3_fast" else "--"
        label = f"{exp[5:]} K={k}"
        ax1.plot([p[0] for p in pts], [p[1] / 1e6 for p in pts], style, marker="o", ms=3, label=label)
        ax2.plot([p[0] for p in pts], [p[2] for p in pts], style, marker="o", ms=3, label=label)
for ax, yl in ((ax1, "verifications / s (millions), end to end"), (ax2, "latency (ms), end to end")):
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel(yl)
    ax.grid(True, alpha=0.3)
ax2.set_yscale("log")
ax1.axhline(4.52, color="grey", lw=0.8, ls=":")
ax1.text(1024, 4.62, "paper, RTX 3080: 4.52 M/s", fontsize=8, color="grey")
ax1.legend(fontsize=7, ncol=2)
gpu = sys.argv[3] if len(sys.argv) > 3 else "H200"
fig.suptitle(f"SM2 batch verification on one {gpu} (chainsig-cuda, the paper's Fig. 3 kernels, "
             "1,048,576 fresh records)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
