#!/usr/bin/env python3
"""Per-variant TFLOP/s of a cufuse-tune --exhaustive --json file (median of each variant's
samples), with the ratio to cuBLAS measured in the same run.

usage: variant_table.py tune.json [SUBSTR ...]   (SUBSTR: keep variants whose name has one)
"""
import json
import sys

data = json.load(open(sys.argv[1]))
want = sys.argv[2:]
for k in data["keys"]:
    flop = 2.0 * k["m"] * k["n"] * k["k"] * k.get("batch", 1)
    print(f"{k['dtype']} {k['trans']} {k['m']}x{k['n']}x{k['k']}: cuBLAS "
          f"{k['cublas_tflops']:.1f} TFLOP/s")
    rows = []
    for name, samples in k.get("exhaustive", {}).get("samples", {}).items():
        if want and not any(w in name for w in want):
            continue
        t = sorted(samples)[len(samples) // 2]
        rows.append((flop / t / 1e12, name))
    for tf, name in sorted(rows, reverse=True):
        ratio = tf / k["cublas_tflops"] if k["cublas_tflops"] else 0.0
        print(f"  {name:48s} {tf:8.1f} {ratio:6.3f}")
