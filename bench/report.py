"""Merges the C++ and PyTorch benchmark JSON into one table (stdout, markdown), one JSON and a
PNG plot. Usage: report.py cufuse.json torch.json out_prefix"""
import json
import sys


def main():
    cf, tf, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
    c = json.load(open(cf))
    try:
        t = json.load(open(tf))
    except (OSError, ValueError):
        t = {"rows": [], "host_wall_us": {}, "torch": "not run"}
    rows = c["rows"] + t["rows"]
    copy = c["copy_gbps"]
    key = {(r["expr"], r["dtype"], r["impl"], r["n"]): r for r in rows}
    impls = ["cufuse", "hand", "chain", "cub", "torch_eager", "torch_compile"]
    lines = [f"device: {c['device']}; device-to-device copy {copy:.0f} GB/s (read+write); torch {t.get('torch')}",
             "", "GB/s (ratio of cufuse to each peer in the last columns)", "",
             "| expr | dtype | n | " + " | ".join(impls) + " | cufuse/copy | /hand | /chain | /compile |",
             "|" + "---|" * (3 + len(impls) + 4)]
    for expr in ("quickstart", "axpy", "gelu_dropout"):
        for dtype in ("fp32", "bf16"):
            ns = sorted({r["n"] for r in rows if r["expr"] == expr and r["dtype"] == dtype})
            for n in ns:
                g = {i: key.get((expr, dtype, i, n), {}).get("gbps") for i in impls}
                if g["cufuse"] is None:
                    continue
                cells = [f"{g[i]:.0f}" if g[i] else "" for i in impls]
                ratio = lambda peer: f"{g['cufuse'] / g[peer]:.2f}" if g.get(peer) else ""
                lines.append(f"| {expr} | {dtype} | 2^{n.bit_length() - 1} | " + " | ".join(cells) +
                             f" | {g['cufuse'] / copy:.2f} | {ratio('hand')} | {ratio('chain')} | {ratio('torch_compile')} |")
    h = c["host_cost_us"]
    th = t.get("host_wall_us", {})
    lines += ["", "Per call at n = 2^10, quickstart fp32, 500 back-to-back calls (us):", "",
              "| | host issue | wall per call |", "|---|---|---|",
              f"| empty kernel <<<>>> | {h['empty_kernel']['issue']:.2f} | {h['empty_kernel']['wall']:.2f} |",
              f"| hand-written kernel | {h['hand']['issue']:.2f} | {h['hand']['wall']:.2f} |",
              f"| cufuse assignment | {h['cufuse']['issue']:.2f} | {h['cufuse']['wall']:.2f} |"]
    for k in ("torch_eager", "torch_compile"):
        if k in th:
            lines.append(f"| {k} | | {th[k]:.2f} |")
    lines.append("")
    lines.append(f"cufuse issue cost / empty launch: {h['cufuse']['issue'] / h['empty_kernel']['issue']:.2f}x")
    if "torch_eager" in th:
        lines.append(f"torch eager wall / cufuse wall per call: {th['torch_eager'] / h['cufuse']['wall']:.1f}x")
    text = "\n".join(lines)
    print(text)
    open(prefix + ".md", "w").write(text + "\n")
    json.dump({"cufuse": c, "torch": t}, open(prefix + ".json", "w"), indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(2, 3, figsize=(16, 9), sharex=True)
        for col, expr in enumerate(("quickstart", "axpy", "gelu_dropout")):
            for row_i, dtype in enumerate(("fp32", "bf16")):
                ax = axes[row_i][col]
                for impl in impls:
                    pts = sorted((r["n"], r["gbps"]) for r in rows
                                 if r["expr"] == expr and r["dtype"] == dtype and r["impl"] == impl)
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=impl)
                ax.axhline(copy, color="gray", linestyle="--", label="D2D copy")
                ax.set_xscale("log", base=2)
                ax.set_title(f"{expr} {dtype}")
                ax.set_ylabel("GB/s")
                ax.set_xlabel("elements")
        axes[0][0].legend(fontsize=8)
        fig.suptitle(f"cufuse elementwise throughput on {c['device']}")
        fig.tight_layout()
        fig.savefig(prefix + ".png", dpi=90)
    except ImportError:
        print("(matplotlib missing: no plot)")


if __name__ == "__main__":
    main()
