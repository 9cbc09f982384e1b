"""Table of bench/mlp_bench.cu and bench/torch_mlp.py results (same device call): per workload,
each contender's time, its ratio to cuBLAS's GEMM(s) alone, and to the GEMM(s) alone timed in
its own process (PyTorch's rows: its matmuls; the two processes' GEMMs differ by a few percent,
bench/JOURNAL.md e14). Usage:
  python3 bench/mlp_report.py cufuse.json torch.json out_prefix   (writes out_prefix.md/.json)
"""
import json
import sys


def main():
    cu = json.load(open(sys.argv[1]))
    try:
        th = json.load(open(sys.argv[2]))
    except (OSError, ValueError):
        th = {"rows": []}
    rows = cu["rows"] + th["rows"]
    order = []
    for r in rows:
        key = (r["workload"], r["dtype"])
        if key not in order:
            order.append(key)
    lines = [f"Device: {cu['device']} (cuBLAS, cufuse and PyTorch in the same device call; each "
             "process's contenders timed in turn, round after round)", "",
             "| workload | dtype | contender | ms | x cuBLAS GEMM(s) alone | "
             "x GEMM(s) alone, same process | variant |",
             "|---|---|---|---|---|---|---|"]
    for key in order:
        group = [r for r in rows if (r["workload"], r["dtype"]) == key]
        base = [r["ms"] for r in group if r["what"].startswith("cuBLAS")]
        # PyTorch's rows against its own matmuls, timed in its process (bench/torch_mlp.py)
        torch_base = [r["ms"] for r in group if r["what"].startswith("torch matmul")]
        for r in group:
            ratio = f"{r['ms'] / base[0]:.3f}" if base else ""
            own = torch_base if r["what"].startswith("torch") else base
            own_ratio = f"{r['ms'] / own[0]:.3f}" if own else ""
            lines.append(f"| {key[0]} | {key[1]} | {r['what']} | {r['ms']:.4f} | {ratio} | "
                         f"{own_ratio} | {r.get('variant', '')} |")
    text = "\n".join(lines) + "\n"
    open(sys.argv[3] + ".md", "w").write(text)
    json.dump({"device": cu["device"], "rows": rows}, open(sys.argv[3] + ".json", "w"), indent=1)
    print(text)


if __name__ == "__main__":
    main()
