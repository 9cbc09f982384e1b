"""PyTorch peers of bench/conv_bench.cu: cuDNN through PyTorch (bf16, channels_last, cudnn
benchmark mode) on the same convolutions, and the ResNet basic block eager and torch.compile.

Writes JSON rows {workload, what, ms} with the workload names of conv_bench.cu.
"""
import argparse
import json

import torch
import torch.nn.functional as F

from torch_bench import held_call_ms  # device time alone, as bench/timing.cuh


def median_ms(fn, reps=30, rounds=3):
    """The best of `rounds` medians of `reps` timed calls (cuDNN's times move between runs of
    the same process: the best round is the peer's steady state, and the fairest comparison)."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    best = None
    for _ in range(rounds):
        times = sorted(held_call_ms(fn) for _ in range(reps))
        m = times[len(times) // 2]
        best = m if best is None else min(best, m)
    return best


SHAPES = [  # n, h, w, c, k, r, s, stride, pad (as conv_bench.cu)
    (32, 56, 56, 64, 64, 3, 3, 1, 1), (32, 28, 28, 128, 128, 3, 3, 1, 1),
    (32, 14, 14, 256, 256, 3, 3, 1, 1), (64, 56, 56, 64, 256, 1, 1, 1, 0),
    (32, 7, 7, 512, 512, 3, 3, 1, 1), (32, 56, 56, 128, 128, 3, 3, 2, 1),
    (32, 56, 56, 256, 64, 1, 1, 1, 0), (32, 224, 224, 3, 64, 7, 7, 2, 3),
]
F32_SHAPES = [SHAPES[i] for i in (0, 1, 2, 3, 7)]


def kernels_of(fn, calls=5):
    """The CUDA kernels one call of `fn` runs (torch.profiler): [(name, mean us per call)]."""
    from collections import defaultdict
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    total = defaultdict(float)
    for e in prof.events():
        if str(getattr(e, "device_type", "")).endswith("CUDA"):
            us = getattr(e, "device_time", None)
            us = getattr(e, "cuda_time", 0.0) if us is None else us
            total[e.name] += us
    return sorted(((n, t / calls) for n, t in total.items()), key=lambda x: -x[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--kernels", action="store_true",
                    help="print the kernels cuDNN runs for each bf16 layer (torch.profiler) and stop")
    ap.add_argument("--only", default="",
                    help="--kernels: the layers whose name contains this; then 5 more calls in an "
                         "NVTX range 'cudnn_conv' (bench/profile_conv.sh)")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda"
    rows = []

    def add(workload, what, ms):
        rows.append({"workload": workload, "what": what, "ms": ms})
        print(f"{workload:40s} {what:26s} {ms:9.4f} ms", flush=True)

    def tensors(n, h, w, c, k, r, s, dtype):
        x = torch.randn(n, c, h, w, device=dev, dtype=dtype).to(memory_format=torch.channels_last)
        wt = (torch.randn(k, c, r, s, device=dev, dtype=dtype) * 0.1).to(
            memory_format=torch.channels_last)
        b = torch.randn(k, device=dev, dtype=dtype) * 0.5
        return x, wt, b

    if args.kernels:
        for n, h, w, c, k, r, s, st, pad in SHAPES:
            name = f"conv N{n} {h}x{w} C{c} K{k} {r}x{s} s{st}"
            if args.only not in name:
                continue
            x, wt, b = tensors(n, h, w, c, k, r, s, torch.bfloat16)
            print(f"{name}:", flush=True)
            for kname, us in kernels_of(lambda: F.conv2d(x, wt, stride=st, padding=pad)):
                print(f"  {us:8.2f} us  {kname}", flush=True)
            if args.only:
                torch.cuda.nvtx.range_push("cudnn_conv")
                for _ in range(5):
                    F.conv2d(x, wt, stride=st, padding=pad)
                torch.cuda.synchronize()
                torch.cuda.nvtx.range_pop()
        return
    for n, h, w, c, k, r, s, st, pad in SHAPES:
        x, wt, b = tensors(n, h, w, c, k, r, s, torch.bfloat16)
        name = f"conv N{n} {h}x{w} C{c} K{k} {r}x{s} s{st}"
        add(name, "cuDNN (torch eager)", median_ms(lambda: F.conv2d(x, wt, stride=st, padding=pad)))
        add(name, "torch eager conv+bias+relu",
            median_ms(lambda: F.relu(F.conv2d(x, wt, b, stride=st, padding=pad))))
    for n, h, w, c, k, r, s, st, pad in F32_SHAPES:
        x, wt, b = tensors(n, h, w, c, k, r, s, torch.float32)
        name = f"conv N{n} {h}x{w} C{c} K{k} {r}x{s} s{st} fp32"
        for tf32 in (False, True):
            torch.backends.cudnn.allow_tf32 = tf32
            add(name, "cuDNN tf32" if tf32 else "cuDNN fp32",
                median_ms(lambda: F.conv2d(x, wt, stride=st, padding=pad)))
        torch.backends.cudnn.allow_tf32 = False

    for n, hw, c in ((32, 56, 64), (32, 14, 256)):
        name = f"resnet block N{n} {hw}x{hw} C{c}"
        x = torch.randn(n, c, hw, hw, device=dev, dtype=torch.bfloat16).to(
            memory_format=torch.channels_last)
        conv1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        conv2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        bn1 = torch.nn.BatchNorm2d(c)
        bn2 = torch.nn.BatchNorm2d(c)
        for bn in (bn1, bn2):
            bn.running_mean.uniform_(-0.2, 0.2)
            bn.running_var.uniform_(0.5, 1.5)
        mods = [m.to(dev, torch.bfloat16).to(memory_format=torch.channels_last).eval()
                for m in (conv1, conv2, bn1, bn2)]
        conv1, conv2, bn1, bn2 = mods

        def block(x):
            return F.relu(bn2(conv2(F.relu(bn1(conv1(x))))) + x)

        with torch.no_grad():
            add(name, "torch eager (cuDNN)", median_ms(lambda: block(x)))
            add(name, "cuDNN convs alone", median_ms(lambda: conv2(conv1(x))))
            compiled = torch.compile(block)
            add(name, "torch.compile", median_ms(lambda: compiled(x)))

    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
