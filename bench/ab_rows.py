"""Same-run A/B of two builds of one benchmark (bench/run_gpu.sh staged): rows of the JSON that
bench/mlp_bench.cu and bench/conv_bench.cu write, matched by (workload, dtype, what), the median
over the rounds of each side, and B's time over A's. Usage:
  python3 bench/ab_rows.py --a A1.json [A2.json ...] --b B1.json [B2.json ...] [--names A,B]
Prints a Markdown table (rows A or B lacks are left out and counted).
"""
import argparse
import json
import statistics


def load(paths):
    rows, device = {}, ""
    for p in paths:
        try:
            data = json.load(open(p))
        except (OSError, ValueError) as e:
            print(f"<!-- skipped {p}: {e} -->")
            continue
        device = data.get("device", device)
        for r in data["rows"]:
            key = (r["workload"], r.get("dtype", ""), r["what"])
            rows.setdefault(key, []).append((r["ms"], r.get("variant", "")))
    return rows, device


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", nargs="+", required=True)
    ap.add_argument("--b", nargs="+", required=True)
    ap.add_argument("--names", default="A,B")
    args = ap.parse_args()
    na, nb = args.names.split(",")
    a, dev = load(args.a)
    b, _ = load(args.b)
    print(f"Device: {dev}; medians over {len(args.a)} / {len(args.b)} alternating runs of each build\n")
    print(f"| workload | dtype | what | {na} ms | {nb} ms | {nb} / {na} | {na} variant | {nb} variant |")
    print("|---|---|---|---:|---:|---:|---|---|")
    ratios = []
    for key, va in a.items():
        if key not in b:
            continue
        vb = b[key]
        ma = statistics.median(x[0] for x in va)
        mb = statistics.median(x[0] for x in vb)
        ratios.append(mb / ma)
        print(f"| {key[0]} | {key[1]} | {key[2]} | {ma:.4f} | {mb:.4f} | {mb / ma:.3f} | "
              f"{va[0][1]} | {vb[0][1]} |")
    missing = len(set(a) ^ set(b))
    if ratios:
        print(f"\nGeometric mean of {nb} / {na}: "
              f"{statistics.geometric_mean(ratios):.3f} over {len(ratios)} rows"
              + (f"; {missing} rows in one build only" if missing else ""))


if __name__ == "__main__":
    main()
