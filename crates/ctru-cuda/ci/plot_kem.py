#!/usr/bin/env python3
"""Plots GPU polynomial-product throughput against batch size (the seed's Fig. 6) from the CSV of
`chainsig bench --kem ctru --csv F` or of the ctru_device_check example (ctru_gpu_mul.csv): one panel per
product (rows) and n (columns), one line per method, kernel-only solid and end to end dashed, with the
single-core CPU NTT and 1000x it as grey references. Run by hand after a device run, not in CI.
Usage: plot_kem.py results/ctru/h200_kem.csv results/ctru/h200_kem.png   (needs matplotlib)"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = list(csv.DictReader(open(sys.argv[1])))
if not rows:
    sys.exit(f"{sys.argv[1]}: no rows (was the GPU sweep run?)")
ns = sorted({int(r["n"]) for r in rows})
products = [p for p in ("mod-q", "mod-q2") if any(r["product"] == p for r in rows)]
methods = [m for m in ("cuda-schoolbook", "cuda-ntt", "tensor-core") if any(r["method"] == m for r in rows)]
fig, axes = plt.subplots(len(products), len(ns), figsize=(5 * len(ns), 4 * len(products)), squeeze=False)
for i, product in enumerate(products):
    for j, n in enumerate(ns):
        ax = axes[i][j]
        sel = [r for r in rows if r["product"] == product and int(r["n"]) == n]
        for k, method in enumerate(methods):
            pts = sorted((int(r["batch"]), float(r["kernel_products_per_s"]), float(r["end_to_end_products_per_s"]))
                         for r in sel if r["method"] == method)
            if not pts:
                continue
            colour = f"C{k}"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "-", color=colour, marker="o", ms=3,
                    label=f"{method} kernel")
            ax.plot([p[0] for p in pts], [p[2] for p in pts], "--", color=colour, marker=".", ms=3,
                    label=f"{method} end to end")
        if sel:
            cpu = 1e6 / float(sel[0]["cpu_ntt_us"])
            ax.axhline(cpu, color="grey", lw=0.8, ls=":")
            ax.text(1, cpu * 1.15, f"CPU NTT, 1 core: {cpu:,.0f}/s", fontsize=7, color="grey")
            ax.axhline(1000 * cpu, color="grey", lw=0.8, ls="-.")
            ax.text(1, 1000 * cpu * 1.15, "1000x CPU (target)", fontsize=7, color="grey")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch size")
        ax.set_ylabel("products / s")
        ax.set_title(f"n = {n}, {product}")
        ax.grid(True, alpha=0.3)
axes[0][0].legend(fontsize=7)
fig.suptitle("CTRU-Prime batch polynomial products on one H200 (chainsig-ctru-cuda)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
