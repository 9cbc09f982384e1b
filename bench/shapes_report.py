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
    title = sys.argv[4] if len(sys.argv) > 4 else "N-d shapes"
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
        ax.set_title(f"{title}, {c['device']} (copy {copy:.0f} GB/s)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(prefix + ".png", dpi=110)
    except ImportError:  # no matplotlib: the same bars as SVG
        write_svg(prefix + ".svg", merged, copy, f"{title}, {c['device']} (copy {copy:.0f} GB/s)")


def write_svg(path, rows, copy, title):
    """Grouped bars of GB/s / copy (cufuse, torch eager, torch.compile) per workload, as SVG."""
    keys = (("gbps", "cufuse", "#1f77b4"), ("torch_eager_gbps", "torch eager", "#ff7f0e"),
            ("torch_compile_gbps", "torch.compile", "#2ca02c"))
    w, h, left, top, bottom, slot = 60 + 90 * len(rows), 420, 50, 40, 130, 90
    y = lambda r: top + (h - top - bottom) * (1 - min(r, 1.2) / 1.2)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
           f'font-size="10"><rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="20" font-size="13">{title}</text>']
    for t in (0.2, 0.4, 0.6, 0.8, 1.0, 1.2):
        out.append(f'<line x1="{left}" x2="{w - 10}" y1="{y(t):.1f}" y2="{y(t):.1f}" '
                   f'stroke="{"black" if t == 1.0 else "#ddd"}"/><text x="{left - 30}" '
                   f'y="{y(t) + 3:.1f}">{t:.1f}</text>')
    for i, r in enumerate(rows):
        x0 = left + 10 + i * slot
        for k, (key, _, color) in enumerate(keys):
            v = (r.get(key) or 0) / copy
            out.append(f'<rect x="{x0 + k * 24}" y="{y(v):.1f}" width="22" '
                       f'height="{y(0) - y(v):.1f}" fill="{color}"/>')
        label = f"{r['workload'][:28]} {r['dtype']}".replace("&", "&amp;").replace("<", "&lt;")
        out.append(f'<text transform="translate({x0 + 30},{y(0) + 8:.1f}) rotate(40)">{label}</text>')
    for k, (_, name, color) in enumerate(keys):
        out.append(f'<rect x="{w - 130}" y="{30 + 14 * k}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{w - 115}" y="{39 + 14 * k}">{name}</text>')
    out.append(f'<text x="8" y="{y(0.6):.1f}" transform="rotate(-90 8 {y(0.6):.1f})">'
               'GB/s / device-to-device copy</text></svg>')
    open(path, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
