#!/usr/bin/env python3
"""Turns cufuse-tune --exhaustive --json output into bench/results/gemm.{md,json,png}.

usage: gemm_report.py tune.json OUT_PREFIX
Per key: the tuned variant's TFLOP/s against cuBLAS measured in the same run, and the tuning
cost of UCB (live, and replayed on the exhaustive samples) against the exhaustive sweep and
epsilon-greedy (replayed): measurements and GPU seconds until the pick stays within 3% of the
exhaustive best.
"""
import json
import sys

src, prefix = sys.argv[1], sys.argv[2]
data = json.load(open(src))
keys = data["keys"]
lines = [f"# GEMM: cufuse tuned vs cuBLAS on {data['device']} ({data['sms']} SMs)", "",
         "TFLOP/s = 2 M N K / median time of 10 runs on rotating buffers (> 2x L2). "
         "UCB = live bandit (pulls); exhaustive = every valid variant x 5 samples. "
         "Replays: 200 seeds drawing from the exhaustive samples; 'to 3%' = measurements "
         "until the pick stays within 3% of the exhaustive best.", "",
         "| dtype | op | M x N x K | variants | cufuse variant | cufuse TFLOP/s | cuBLAS TFLOP/s | "
         "ratio | UCB pulls / exhaustive | UCB regret | UCB to 3% (replay) | UCB P(<=3%) | "
         "e-greedy to 3% | e-greedy P(<=3%) | UCB s | exhaustive s |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
ok_keys = 0
for k in keys:
    ex = k.get("exhaustive", {})
    rp = k.get("replay", {})
    u, e = rp.get("ucb", {}), rp.get("egreedy", {})
    regret = ex.get("ucb_regret", float("nan"))
    frac = k["ucb_pulls"] / max(k["exhaustive_measurements"], 1)
    if regret <= 1.03 and frac <= 0.40:
        ok_keys += 1
    lines.append(
        f"| {k['dtype']}>{k['out']} | {k['trans']} | {k['m']}x{k['n']}x{k['k']} | {k['arms']} | "
        f"`{k['chosen']}` | {k['tflops']:.1f} | {k['cublas_tflops']:.1f} | "
        f"{k['tflops'] / k['cublas_tflops'] if k['cublas_tflops'] else 0:.2f} | "
        f"{k['ucb_pulls']}/{k['exhaustive_measurements']} ({100 * frac:.0f}%) | {regret:.3f} | "
        f"{u.get('pulls_to_3pct', 0):.1f} | {u.get('p_within_3pct', 0):.2f} | "
        f"{e.get('pulls_to_3pct', 0):.1f} | {e.get('p_within_3pct', 0):.2f} | "
        f"{k['ucb_seconds']:.2f} | {ex.get('seconds', 0):.2f} |")
lines += ["", f"UCB within 3% of the exhaustive best using <= 40% of its measurements: "
          f"{ok_keys}/{len(keys)} keys ({100 * ok_keys / max(len(keys), 1):.0f}%)."]

# The targets are per family (SIMT, mma.sync, wgmma): the best variant of each family,
# from the exhaustive samples (median), against cuBLAS in the same run.
def family(name):
    for f in ("_simt_", "_mma_", "_wgmma_"):
        if f in name:
            return f.strip("_")
    return "other"


fams = ["simt", "mma", "wgmma"]
lines += ["", "Best variant of each family (median of its exhaustive samples) / cuBLAS:", "",
          "| dtype | op | M x N x K | cuBLAS TFLOP/s | SIMT | mma.sync | wgmma |", "|---|---|---|---|---|---|---|"]
for k in keys:
    best = {}
    for name, samples in k.get("exhaustive", {}).get("samples", {}).items():
        t = sorted(samples)[len(samples) // 2]
        f = family(name)
        if f not in best or t < best[f]:
            best[f] = t
    flop = 2.0 * k["m"] * k["n"] * k["k"] * k.get("batch", 1)
    cells = []
    for f in fams:
        if f in best and k["cublas_tflops"]:
            tf = flop / best[f] / 1e12
            cells.append(f"{tf:.0f} ({tf / k['cublas_tflops']:.2f}x)")
        else:
            cells.append("-")
    lines.append(f"| {k['dtype']} | {k['trans']} | {k['m']}x{k['n']}x{k['k']} | "
                 f"{k['cublas_tflops']:.1f} | " + " | ".join(cells) + " |")
open(prefix + ".md", "w").write("\n".join(lines) + "\n")
json.dump(data, open(prefix + ".json", "w"), indent=1)
print("\n".join(lines))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
fig, axes = plt.subplots(1, 2, figsize=(15, 5.5))
dtypes = sorted({k["dtype"] for k in keys}, key=lambda d: ["f32", "tf32", "f16", "bf16"].index(d)
                if d in ["f32", "tf32", "f16", "bf16"] else 9)
shapes = []
for k in keys:
    s = f"{k['m']}x{k['n']}x{k['k']}"
    if s not in shapes:
        shapes.append(s)
w = 0.8 / max(len(dtypes), 1)
for i, d in enumerate(dtypes):
    r = {f"{k['m']}x{k['n']}x{k['k']}": k["tflops"] / k["cublas_tflops"]
         for k in keys if k["dtype"] == d and k["cublas_tflops"]}
    xs = [j + i * w for j, s in enumerate(shapes) if s in r]
    axes[0].bar(xs, [r[s] for s in shapes if s in r], w, label=d)
axes[0].axhline(1.0, color="k", lw=0.8)
axes[0].set_xticks([j + 0.4 - w / 2 for j in range(len(shapes))])
axes[0].set_xticklabels(shapes, rotation=35, ha="right", fontsize=8)
axes[0].set_ylabel("cufuse / cuBLAS (TFLOP/s)")
axes[0].set_title(f"Tuned cufuse vs cuBLAS, {data['device']}")
axes[0].legend()
labels = [f"{k['dtype']} {k['m']}x{k['n']}x{k['k']}" for k in keys]
x = range(len(keys))
axes[1].plot(x, [k["exhaustive_measurements"] for k in keys], "s-", label="exhaustive (5/variant)")
axes[1].plot(x, [k["ucb_pulls"] for k in keys], "o-", label="UCB, live (to commit)")
axes[1].plot(x, [k.get("replay", {}).get("egreedy", {}).get("pulls_to_3pct", 0) for k in keys],
             "^-", label="e-greedy 0.1, replay (to stay within 3%)")
axes[1].set_xticks(list(x))
axes[1].set_xticklabels(labels, rotation=60, ha="right", fontsize=6)
axes[1].set_ylabel("measurements")
axes[1].set_title("Tuning cost")
axes[1].legend()
fig.tight_layout()
fig.savefig(prefix + ".png", dpi=110)
