#!/usr/bin/env python3
"""Markdown table of a `cufuse-tune --exhaustive --json` run on small-M GEMMs: per key, cuBLAS,
the static heuristic's pick (what an untuned call runs), the tuner's committed choice and the
exhaustive best, each as its speed relative to cuBLAS (cuBLAS time / its time; > 1 is faster).

    python3 bench/small_m_report.py small_m.json > small_m.md
"""
import json
import sys


def main(path):
    with open(path) as f:
        data = json.load(f)
    print(f"Device: {data.get('device', '?')}. cufuse-tune --exhaustive (rotating buffers > 2x L2, "
          "kernel time only), cuBLAS in the same run; speed relative to cuBLAS.\n")
    print("| dtype | MxNxK | cuBLAS us | heuristic pick | us | / cuBLAS | tuned choice | / cuBLAS "
          "| exhaustive best | / cuBLAS |")
    print("|---|---|---:|---|---:|---:|---|---:|---|---:|")
    for k in data.get("keys", []):
        cb = k.get("cublas_s", 0.0)
        ex = k.get("exhaustive", {})
        hs = k.get("heuristic_s")

        def ratio(t):
            return f"{cb / t:.3f}" if t and cb else "-"

        print(f"| {k['dtype']} | {k['m']}x{k['n']}x{k['k']} | {cb * 1e6:.1f} | "
              f"{k.get('heuristic', '-')} | {hs * 1e6 if hs else 0:.1f} | {ratio(hs)} | "
              f"{k['chosen']} | {ratio(k['chosen_s'])} | {ex.get('best', '-')} | "
              f"{ratio(ex.get('best_s'))} |")


if __name__ == "__main__":
    main(sys.argv[1])
