"""PyTorch peers of bench/mlp_bench.cu: eager and torch.compile, same shapes, CUDA-event medians.

Writes JSON rows {workload, dtype, what, ms} (what: "torch eager" / "torch.compile" / "torch
matmul(s) alone"), the three timed in turn.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F

from torch_bench import held_call_ms  # device time alone, as bench/timing.cuh


def interleaved_ms(fns, reps=31, warm_s=0.5):
    """Median ms of each of `fns`, timed in turn in every round (CUDA events behind hold()), after
    `warm_s` seconds of untimed rounds: every contender at the same, sustained clocks (a device
    under its power limit slows as it heats; bench/timing.cuh does the same)."""
    t0 = time.monotonic()
    while True:
        for fn in fns:
            fn()
        torch.cuda.synchronize()
        if time.monotonic() - t0 >= warm_s:
            break
    times = [[] for _ in fns]
    for _ in range(reps):
        for i, fn in enumerate(fns):
            times[i].append(held_call_ms(fn))
    return [sorted(t)[len(t) // 2] for t in times]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--small", action="store_true")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []

    def run(workload, dtype, fn, *inputs, gemms=None):
        """Eager and torch.compile of fn, and `gemms` (the workload's matmuls alone, through
        PyTorch's cuBLAS: a check of the C++ side's cuBLAS rows), timed in turn."""
        comp = torch.compile(fn)
        comp(*inputs)  # compiles outside the timing
        fns = [lambda: fn(*inputs), lambda: comp(*inputs)]
        names = ["torch eager", "torch.compile"]
        if gemms is not None:
            fns.append(gemms)
            names.append("torch matmul(s) alone")
        for what, ms in zip(names, interleaved_ms(fns)):
            rows.append({"workload": workload, "dtype": dtype, "what": what, "ms": ms})
            print(f"{workload:34s} {dtype:5s} {what:28s} {ms:9.4f} ms", flush=True)

    dev = "cuda"
    m, n, k = 4096, 4096, 1024
    for dtype, tname in ((torch.bfloat16, "bf16"), (torch.float32, "tf32")):
        torch.backends.cuda.matmul.allow_tf32 = tname == "tf32"
        x = torch.randn(m, k, device=dev, dtype=dtype)
        w = torch.randn(n, k, device=dev, dtype=dtype) * 0.05
        b = torch.randn(n, device=dev, dtype=dtype) * 0.5
        run("gemm+bias+gelu 4096x4096x1024", tname,
            lambda x, w, b: F.gelu(F.linear(x, w, b), approximate="tanh"), x, w, b,
            gemms=lambda: F.linear(x, w))
    torch.backends.cuda.matmul.allow_tf32 = False
    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=dev, dtype=torch.bfloat16) * 0.05
    b = torch.randn(n, device=dev, dtype=torch.bfloat16) * 0.5
    r = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
    run("gemm+bias+relu+res 4096x4096x1024", "bf16",
        lambda x, w, b, r: F.relu(F.linear(x, w, b)) + r, x, w, b, r,
        gemms=lambda: F.linear(x, w))

    def block(x, g, beta, w1, b1, w2, b2):
        xn = F.layer_norm(x, (x.shape[-1],), g, beta, 1e-5)
        return x + F.linear(F.gelu(F.linear(xn, w1, b1), approximate="tanh"), w2, b2)

    shapes = [(8192, 1024, 4096)] + ([] if args.small else [(16384, 4096, 16384)])
    for tokens, d, h in shapes:
        bf = torch.bfloat16
        x = torch.randn(tokens, d, device=dev, dtype=bf)
        g = torch.randn(d, device=dev, dtype=bf)
        beta = torch.randn(d, device=dev, dtype=bf) * 0.5
        w1 = torch.randn(h, d, device=dev, dtype=bf) * 0.05
        b1 = torch.randn(h, device=dev, dtype=bf) * 0.5
        w2 = torch.randn(d, h, device=dev, dtype=bf) * 0.03
        b2 = torch.randn(d, device=dev, dtype=bf) * 0.5
        xn = F.layer_norm(x, (d,), g, beta, 1e-5)
        hh = F.gelu(F.linear(xn, w1, b1), approximate="tanh")
        with torch.no_grad():
            run(f"mlp {tokens} tok d {d} h {h}", "bf16", block, x, g, beta, w1, b1, w2, b2,
                gemms=lambda: (F.linear(xn, w1), F.linear(hh, w2)))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
