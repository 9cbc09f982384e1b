"""PyTorch eager and torch.compile on the cufuse benchmark expressions, timed like the C++ bench:
CUDA events, median over repetitions after warm-up; plus wall time per back-to-back call at
n = 2^10. Writes JSON (--out)."""
import argparse
import json
import statistics
import time

import torch

ALPHA, P = 1.7, 0.1
SCALE = 1.0 / (1.0 - P)


def quickstart(b, c, d, e, f):
    return b + c * d + torch.sin(e) * f + 10.0


def axpy(x, y):
    return ALPHA * x + y


def gelu_dropout(x, u):
    return torch.nn.functional.gelu(x) * (u > P) * SCALE


EXPRS = {"quickstart": (quickstart, 5, 6), "axpy": (axpy, 2, 3), "gelu_dropout": (gelu_dropout, 2, 3)}


HOLD_CYCLES = 1_000_000  # ~0.5 ms at H100/H200 clocks: more than Python needs to enqueue a call


def hold():
    """Keeps the current stream busy while Python enqueues the timed call, so that events time
    the device's work alone, as bench/timing.cuh does for the C++ side (the host's cost of a call
    is measured separately, wall_us_per_call)."""
    torch.cuda._sleep(HOLD_CYCLES)


def held_call_ms(fn):
    """Milliseconds of one call of fn: CUDA events around it, recorded behind hold() (the
    device's time alone)."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    hold()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop)


def median_ms(fn, args, reps, held=True):
    """Median ms of one call over `reps` calls after warm-up, CUDA events around each call; held:
    recorded behind hold() (device time), else on an idle device (the launch counted too)."""
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        if held:
            hold()
        start.record()
        fn(*args)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def wall_us_per_call(fn, args, calls=500, rounds=11):
    for _ in range(100):
        fn(*args)
    torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="torch.json")
    ap.add_argument("--sizes", default="10,16,20,24,26,28")
    args = ap.parse_args()
    torch._dynamo.config.cache_size_limit = 256
    dev = torch.device("cuda")
    rows, host = [], {}
    for dtype_name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        for lg in [int(s) for s in args.sizes.split(",")]:
            n = 1 << lg
            reps = 30 if lg >= 24 else 200
            for name, (fn, n_in, tensors) in EXPRS.items():
                ins = [torch.empty(n, device=dev, dtype=dtype).uniform_(-2, 2) for _ in range(n_in)]
                if name == "gelu_dropout":
                    ins[1].uniform_(0, 1)
                compiled = torch.compile(fn, dynamic=False)
                for impl, f in (("torch_eager", fn), ("torch_compile", compiled)):
                    ms = median_ms(f, ins, reps)
                    gbps = tensors * n * ins[0].element_size() / (ms * 1e-3) / 1e9
                    rows.append({"expr": name, "dtype": dtype_name, "impl": impl, "n": n, "ms": ms, "gbps": gbps})
                    if lg == 10 and name == "quickstart" and dtype_name == "fp32":
                        host[impl] = wall_us_per_call(f, ins)
                del ins, compiled
            print(f"torch {dtype_name} 2^{lg} done", flush=True)
    # the largest copy, as torch measures it, for reference next to the C++ one
    x = torch.empty(1 << 29, device=dev)
    y = torch.empty_like(x)
    ms = median_ms(lambda: y.copy_(x), [], 20)
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "copy_gbps": 2 * x.numel() * 4 / (ms * 1e-3) / 1e9, "host_wall_us": host, "rows": rows},
              open(args.out, "w"), indent=1)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
