"""Joins bench/conv_bench.cu's and bench/torch_conv.py's JSON into one markdown table: per
workload, cufuse's rows and the PyTorch / cuDNN peers, each peer with the ratio of its time to
the cufuse row it is compared with (above 1: cufuse is faster), then the online-tuning cost.

  python3 bench/conv_report.py cufuse.json torch.json out.md
"""
import json
import sys

# peer row -> the cufuse row it is compared with
AGAINST = {
    "cuDNN (torch eager)": "cufuse tuned",
    "torch eager conv+bias+relu": "cufuse conv+bias+relu",
    "cuDNN fp32": "cufuse fp32 exact",
    "cuDNN tf32": "cufuse tf32",
    "torch eager (cuDNN)": "cufuse fused, tuned",
    "cuDNN convs alone": "cufuse fused, tuned",
    "torch.compile": "cufuse fused, tuned",
}


def main():
    cf = json.load(open(sys.argv[1]))
    th = json.load(open(sys.argv[2])) if len(sys.argv) > 3 else {"rows": []}
    out = sys.argv[-1]
    work = {}
    tuning = []
    for r in cf["rows"] + th["rows"]:
        if r["what"] == "online tuning calls":
            tuning.append(r)
            continue
        work.setdefault(r["workload"], []).append(r)
    lines = [f"device: {cf['device']}", "",
             "| workload | what | ms | TFLOP/s | variant | peer / cufuse |",
             "|---|---|---:|---:|---|---:|"]
    for wl, rs in work.items():
        mine = {r["what"]: r["ms"] for r in rs if r["what"].startswith("cufuse")}
        for r in rs:
            ratio = ""
            against = AGAINST.get(r["what"])
            if against in mine:
                ratio = f"{r['ms'] / mine[against]:.2f} (vs {against})"
            tf = f"{r['tflops']:.1f}" if "tflops" in r else ""
            lines.append(f"| {wl} | {r['what']} | {r['ms']:.4f} | {tf} | {r.get('variant', '')} | "
                         f"{ratio} |")
    if tuning:
        lines += ["", "Online tuning from an empty database, a synchronization after every call:",
                  "", "| workload | committed to | calls | wall ms of those calls |",
                  "|---|---|---:|---:|"]
        for r in tuning:
            lines.append(f"| {r['workload']} | {r['variant']} | {int(r['ms'])} | "
                         f"{r['tflops']:.2f} |")
    text = "\n".join(lines) + "\n"
    open(out, "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
