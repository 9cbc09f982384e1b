"""Joins bench/conv_bench.cu's and bench/torch_conv.py's JSON into one markdown table: per
workload, cufuse's default and best variant, the PyTorch / cuDNN peers, and the ratios
(peer time / cufuse time: above 1, cufuse is faster).

  python3 bench/conv_report.py cufuse.json torch.json out.md
"""
import json
import sys


def main():
    cf = json.load(open(sys.argv[1]))
    th = json.load(open(sys.argv[2])) if len(sys.argv) > 3 else {"rows": []}
    out = sys.argv[-1]
    work = {}
    for r in cf["rows"] + th["rows"]:
        work.setdefault(r["workload"], []).append(r)
    lines = [f"device: {cf['device']}", "",
             "| workload | what | ms | TFLOP/s | variant | peer / cufuse default |",
             "|---|---|---:|---:|---|---:|"]
    for wl, rs in work.items():
        mine = next((r["ms"] for r in rs if r["what"].startswith("cufuse")), None)
        for r in rs:
            ratio = ""
            if not r["what"].startswith("cufuse") and mine:
                ratio = f"{r['ms'] / mine:.2f}"
            tf = f"{r['tflops']:.1f}" if "tflops" in r else ""
            lines.append(f"| {wl} | {r['what']} | {r['ms']:.4f} | {tf} | {r.get('variant', '')} | "
                         f"{ratio} |")
    text = "\n".join(lines) + "\n"
    open(out, "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
