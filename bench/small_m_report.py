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
          "kernel time only), cuBLAS in the same run; speed relative to cuBLAS (cuBLAS time / "
          "time). Two timings: the sweep's (every variant and cuBLAS in turn, one call each per "
          "round, medians: the heuristic's pick and the exhaustive best against cuBLAS in the "
          "sweep) and back to back (the committed variant's reruns against cuBLAS's reruns).\n")
    print("| dtype | MxNxK | cuBLAS us (sweep) | heuristic pick | us | / cuBLAS | exhaustive best "
          "| / cuBLAS | tuned choice | cuBLAS us (back to back) | / cuBLAS |")
    print("|---|---|---:|---|---:|---:|---|---:|---|---:|---:|")
    for k in data.get("keys", []):
        cb = k.get("cublas_s", 0.0)
        ex = k.get("exhaustive", {})
        # Runs before the sweep timed cuBLAS had only the back-to-back time.
        cs = ex.get("cublas_s") or cb
        hs = k.get("heuristic_s")

        def ratio(base, t):
            return f"{base / t:.3f}" if t and base else "-"

        print(f"| {k['dtype']} | {k['m']}x{k['n']}x{k['k']} | {cs * 1e6:.1f} | "
              f"{k.get('heuristic', '-')} | {hs * 1e6 if hs else 0:.1f} | {ratio(cs, hs)} | "
              f"{ex.get('best', '-')} | {ratio(cs, ex.get('best_s'))} | {k['chosen']} | "
              f"{cb * 1e6:.1f} | {ratio(cb, k['chosen_s'])} |")


if __name__ == "__main__":
    main(sys.argv[1])
