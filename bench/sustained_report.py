#!/usr/bin/env python3
"""Tables and a plot from cufuse_bench_gemm_sustained --json files (one per GPU).

usage: sustained_report.py OUT_PREFIX RUN.json [RUN.json ...]
Writes OUT_PREFIX.md (per run: every contender's TFLOP/s, ratio, clock and power; then one
table of ratios across runs) and OUT_PREFIX.png (ratio to cuBLAS per family, with the issue's
targets: 0.90x for SIMT and wgmma, 0.60x for mma.sync). Medians over rounds; each ratio pairs a
round with cuBLAS's reading of the same round.
"""
import json
import sys


def median(v):
    v = sorted(v)
    h = len(v) // 2
    return v[h] if len(v) % 2 else 0.5 * (v[h - 1] + v[h])


def family(name):
    return "SIMT" if "_simt_" in name else "mma.sync" if "_mma_" in name else "wgmma"


prefix, files = sys.argv[1], sys.argv[2:]
runs = [json.load(open(f)) for f in files]
lines = []
ratios = {}  # (dtype, trans, family) -> {(device, m): (tflops, cublas, ratio)}
for run in runs:
    lines.append(f"## {run['device']}: {run['seconds']:.1f} s per contender and round, "
                 f"{run['rounds']} rounds")
    lines.append("| dtype | op | shape | contender | TFLOP/s | / cuBLAS | SM MHz | W |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for k in run["keys"]:
        cub = k["contenders"][0]["tflops"]
        shape = f"{k['m']}x{k['n']}x{k['k']}"
        for c in k["contenders"]:
            r = median([x / y for x, y in zip(c["tflops"], cub)])
            lines.append(f"| {k['dtype']} | {k['trans']} | {shape} | {c['name']} | "
                         f"{median(c['tflops']):.1f} | {r:.3f} | {median(c['mhz']):.0f} | "
                         f"{median(c['watts']):.0f} |")
            if c["name"] != "cuBLAS":
                # TF32 mma.sync fed by TMA (sm90a_*_mma_*_tma) beside the cp.async tile.
                tma = "_mma_" in c["name"] and c["name"].endswith("_tma")
                op = k["trans"] + (" TMA" if tma else "")
                ratios.setdefault((k["dtype"], op, family(c["name"])), {})[
                    (run["device"], shape)] = (median(c["tflops"]), median(cub), r)
    lines.append("")

cols = sorted({col for v in ratios.values() for col in v})
lines.append("## TFLOP/s / cuBLAS across runs")
lines.append("| dtype op | family | " + " | ".join(f"{d} {s}" for d, s in cols) + " |")
lines.append("|---|---|" + "---|" * len(cols))
for (dt, tr, fam), v in ratios.items():
    cells = [f"{v[c][0]:.0f}/{v[c][1]:.0f} = {v[c][2]:.3f}" if c in v else "-" for c in cols]
    lines.append(f"| {dt} {tr} | {fam} | " + " | ".join(cells) + " |")
open(prefix + ".md", "w").write("\n".join(lines) + "\n")

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib not installed: no plot")
    sys.exit(0)

fams = ["SIMT", "mma.sync", "wgmma"]
fig, axes = plt.subplots(1, 3, figsize=(16, 4.8), sharey=True,
                         gridspec_kw={"width_ratios": [1, 3, 3]})
for ax, fam in zip(axes, fams):
    keys = [k for k in ratios if k[2] == fam]
    width = 0.8 / max(1, len(cols))
    for j, col in enumerate(cols):
        ys = [ratios[k].get(col, (0, 0, 0))[2] for k in keys]
        ax.bar([i + j * width for i in range(len(keys))], ys, width,
               label=f"{col[0].replace('NVIDIA ', '')} {col[1].split('x')[0]}^3")
    ax.axhline(0.90 if fam != "mma.sync" else 0.60, color="k", ls="--", lw=1)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(keys))])
    ax.set_xticklabels([f"{k[0]} {k[1]}" for k in keys], rotation=30)
    ax.set_title(f"{fam} (dashed: target)")
axes[0].set_ylabel("TFLOP/s / cuBLAS, held at full load")
axes[0].set_ylim(0, 1.3)
axes[-1].legend(fontsize=8, loc="upper center", ncol=2)
fig.tight_layout()
fig.savefig(prefix + ".png", dpi=110)
