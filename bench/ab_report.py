#!/usr/bin/env python3
"""Compares the A/B runs of bench/ab_gemm.sh: ab_before_<r>.json and ab_after_<r>.json
(cufuse-tune --exhaustive --json) in a logs folder. Per key and variant: the median of its
samples in each round, the best round of each tree, after / before as a TFLOP/s ratio; per key
and family, the best variant of the family in each tree.
  python3 bench/ab_report.py LOGS_DIR OUT_PREFIX   -> OUT_PREFIX.md, OUT_PREFIX.json"""
import glob
import json
import os
import statistics
import sys


def family(name):
    split = "_split" in name
    if "_wgmma_" in name:
        f = "wgmma"
    elif "_mma_" in name and name.endswith("_tma"):
        f = "mma.sync TMA"
    elif "_mma_" in name:
        f = "mma.sync cp.async"
    else:
        f = "SIMT"
    return f + (" split-K" if split else "")


def load(logs, tree):
    """{(dtype, trans, m, n, k): {variant: [median seconds per round]}}"""
    out = {}
    device = None
    for path in sorted(glob.glob(os.path.join(logs, "ab_%s_*.json" % tree))):
        doc = json.load(open(path))
        device = doc.get("device", device)
        for key in doc["keys"]:
            k = (key["dtype"], key["trans"], key["m"], key["n"], key["k"])
            samples = key.get("exhaustive", {}).get("samples", {})
            for name, s in samples.items():
                out.setdefault(k, {}).setdefault(name, []).append(statistics.median(s))
    return out, device


def main():
    logs, prefix = sys.argv[1], sys.argv[2]
    before, device = load(logs, "before")
    after, _ = load(logs, "after")
    rows, fam_rows = [], []
    for k in sorted(set(before) & set(after)):
        flop = 2.0 * k[2] * k[3] * k[4]
        best = {}
        for name in sorted(set(before[k]) & set(after[k])):
            tb, ta = min(before[k][name]), min(after[k][name])
            rows.append({"key": "%s %s %dx%dx%d" % k, "variant": name, "family": family(name),
                         "before_tflops": flop / tb * 1e-12, "after_tflops": flop / ta * 1e-12,
                         "ratio": tb / ta})
            f = family(name)
            b = best.setdefault(f, [None, 0.0, None, 0.0])
            if flop / tb > b[1]:
                b[0], b[1] = name, flop / tb
            if flop / ta > b[3]:
                b[2], b[3] = name, flop / ta
        for f, (nb, fb, na, fa) in sorted(best.items()):
            fam_rows.append({"key": "%s %s %dx%dx%d" % k, "family": f, "before": nb,
                             "before_tflops": fb * 1e-12, "after": na, "after_tflops": fa * 1e-12,
                             "ratio": fa / fb})
    missing = sorted((set(before) ^ set(after)))
    lines = ["# GEMM A/B: before / after, one call on %s" % device, "",
             "Best variant of each family per key (TFLOP/s, the better of the rounds of each "
             "tree; the trees alternated):", "",
             "| key | family | before | after | after / before |", "|---|---|---|---|---|"]
    for r in fam_rows:
        lines.append("| %s | %s | %.1f | %.1f | %.3f |" % (r["key"], r["family"],
                                                           r["before_tflops"], r["after_tflops"],
                                                           r["ratio"]))
    ratios = [r["ratio"] for r in rows]
    if ratios:
        lines += ["", "Every variant: %d; after / before min %.3f, median %.3f, max %.3f; below "
                  "0.98: %s" % (len(ratios), min(ratios), statistics.median(ratios), max(ratios),
                                ", ".join("%s %s %.3f" % (r["key"], r["variant"], r["ratio"])
                                          for r in rows if r["ratio"] < 0.98) or "none")]
    if missing:
        lines += ["", "Keys in one tree only: %s" % missing]
    text = "\n".join(lines) + "\n"
    open(prefix + ".md", "w").write(text)
    json.dump({"device": device, "families": fam_rows, "variants": rows}, open(prefix + ".json", "w"),
              indent=1)
    print(text)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
