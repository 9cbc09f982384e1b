"""Compares benchmark JSON files from a CUFUSE_EVAL_WAVES sweep: cufuse GB/s per file, and the
hand-written kernel of the first file, at each (expr, dtype, n)."""
import json
import re
import sys

runs = {}
for f in sys.argv[1:]:
    w = re.search(r"waves_(\d+)\.json", f).group(1)
    runs[w] = {(r["expr"], r["dtype"], r["n"]): r["gbps"] for r in json.load(open(f))["rows"] if r["impl"] == "cufuse"}
    hand = {(r["expr"], r["dtype"], r["n"]): r["gbps"] for r in json.load(open(f))["rows"] if r["impl"] == "hand"}
ws = sorted(runs, key=int)
print("| expr | dtype | n | " + " | ".join(f"waves={w}" for w in ws) + " | hand |")
print("|" + "---|" * (4 + len(ws)))
for k in sorted(next(iter(runs.values()))):
    print(f"| {k[0]} | {k[1]} | 2^{k[2].bit_length() - 1} | " + " | ".join(f"{runs[w][k]:.0f}" for w in ws) + f" | {hand[k]:.0f} |")
