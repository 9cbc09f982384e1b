"""Merges a C++ benchmark's JSON (bench/shapes_bench.cu, bench/reduce_bench.cu) and its PyTorch
peers' (bench/torch_shapes.py, bench/torch_reduce.py) into one table (markdown), one JSON and a
bar plot of GB/s relative to the copy of the same run.
Usage: shapes_report.py cufuse.json torch.json out_prefix [title]"""
import json
import sys


def main():
    cf, tf, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
    c = json.load(open(cf))
    try:
        t = json.load(open(tf))
    except (OSError, ValueError):
        t = {"rows": []}
    copy = c["copy_gbps"]
    peers = {(r["workload"], r["dtype"], r["impl"]): r["gbps"] for r in t["rows"]}
    copy_launch = c.get("copy_launch_gbps")
    lines = [f"Device: {c['device']}; device-to-device copy in the same run: {copy:.0f} GB/s "
             f"(torch copy_: {t.get('copy_gbps', float('nan')):.0f} GB/s).",
             "Times are the device's alone: CUDA events around each call while a spin kernel holds "
             "the stream, so the host's launch is not counted (its cost is the last line). "
             "\"/ copy, launch incl.\": both timed around one call on an idle device instead.", "",
             "| workload | dtype | cufuse GB/s | / copy | / copy, launch incl. | torch eager GB/s "
             "| torch.compile GB/s | / eager | / compile | check |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    merged = []
    for r in c["rows"]:
        e = peers.get((r["workload"], r["dtype"], "torch_eager"))
        k = peers.get((r["workload"], r["dtype"], "torch_compile"))
        fmt = lambda v: f"{v:.0f}" if v else "-"
        ratio = lambda v: f"{r['gbps'] / v:.2f}" if v else "-"
        launch = (r["gbps"] * r["ms"] / r["ms_launch"] / copy_launch
                  if r.get("ms_launch") and copy_launch else None)
        lines.append(f"| `{r['workload']}` | {r['dtype']} | {r['gbps']:.0f} | {r['gbps'] / copy:.3f} "
                     f"| {f'{launch:.3f}' if launch else '-'} | {fmt(e)} | {fmt(k)} | {ratio(e)} | {ratio(k)} | {'ok' if not r['bad'] else 'WRONG'} |")
        merged.append(dict(r, copy_ratio=r["gbps"] / copy, copy_ratio_launch=launch,
                           torch_eager_gbps=e, torch_compile_gbps=k))
    h = c["host_us"]
    lines += ["", "Host cost per back-to-back call (us): " +
              ", ".join(f"{k} {v:.2f}" for k, v in h.items()) + "."]
    open(prefix + ".md", "w").write("\n".join(lines) + "\n")
    json.dump({"device": c["device"], "copy_gbps": copy, "copy_launch_gbps": copy_launch,
               "host_us": h, "rows": merged},
              open(prefix + ".json", "w"), indent=1)
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        labels = [f"{r['workload']}\n{r['dtype']}" for r in merged]
        xs = range(len(merged))
        fig, ax = plt.subplots(figsize=(12, 5))
        w = 0.27
        for i, (key, name) in enumerate((("gbps", "cufuse"), ("torch_eager_gbps", "torch eager"),
                                         ("torch_compile_gbps", "torch.compile"))):
            ax.bar([x + (i - 1) * w for x in xs], [(r[key] or 0) / copy for r in merged], w, label=name)
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel("GB/s / device-to-device copy")
        title = sys.argv[4] if len(sys.argv) > 4 else "N-d shapes"
        ax.set_title(f"{title}, {c['device']} (copy {copy:.0f} GB/s)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(prefix + ".png", dpi=110)
    except ImportError:
        pass


if __name__ == "__main__":
    main()
