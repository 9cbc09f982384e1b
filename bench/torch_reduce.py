"""PyTorch eager and torch.compile on the workloads of bench/reduce_bench.cu (same shapes, same
byte counts), timed the same way: CUDA events behind a spin kernel (device time), median over repetitions
after warm-up, and once more on an idle device (launch included). Writes
JSON (--out)."""
import argparse
import json

import torch
import torch.nn.functional as F
from torch_bench import median_ms  # the same CUDA-event median as the elementwise peers


def rowwise(dev, name, dt, m, n, only_softmax_ln):
    x = torch.empty(m, n, device=dev, dtype=dt).uniform_(-2, 2)
    w = torch.empty(n, device=dev, dtype=dt).uniform_(-2, 2)
    b = torch.empty(n, device=dev, dtype=dt).uniform_(-2, 2)
    es = x.element_size()
    shape = f" [{m}, {n}]"
    yield ("softmax" + shape, name, lambda x: torch.softmax(x, -1), (x,), 2 * m * n * es)
    yield ("layer_norm" + shape, name, lambda x, w, b: F.layer_norm(x, (n,), w, b, 1e-5), (x, w, b),
           (2 * m * n + 2 * n) * es)
    if not only_softmax_ln:
        yield ("rms_norm" + shape, name,
               lambda x, w: x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w,
               (x, w), (2 * m * n + n) * es)


def workloads(dev):
    yield from rowwise(dev, "fp32", torch.float32, 32768, 4096, False)
    yield from rowwise(dev, "bf16", torch.bfloat16, 32768, 4096, False)
    yield from sums_and_full(dev)
    for n in (1024, 8192, 32768):  # last: the table needs the rows above first
        yield from rowwise(dev, "fp32", torch.float32, (1 << 27) // n, n, True)
        yield from rowwise(dev, "bf16", torch.bfloat16, (1 << 27) // n, n, True)


def sums_and_full(dev):
    m = n = 8192
    x = torch.empty(m, n, device=dev).uniform_(-2, 2)
    yield ("sum(X, 1) [8192, 8192]", "fp32", lambda x: x.sum(1), (x,), (m * n + m) * 4)
    yield ("sum(X, 0) [8192, 8192]", "fp32", lambda x: x.sum(0), (x,), (m * n + n) * 4)
    a, b, k = 256, 1024, 256
    t = torch.empty(a, b, k, device=dev).uniform_(-2, 2)
    yield ("sum(T, 1) [256, 1024, 256]", "fp32", lambda t: t.sum(1), (t,), (a * b * k + a * k) * 4)
    big = 1 << 28
    b = torch.empty(big, device=dev).uniform_(-2, 2)
    c = torch.empty(big, device=dev).uniform_(-2, 2)
    yield ("sum(B * C) 2^28", "fp32", lambda b, c: (b * c).sum(), (b, c), 2 * big * 4)
    yield ("argmax(B) 2^28", "fp32", lambda b: b.argmax(), (b,), big * 4)
    yield ("var(B) 2^28", "fp32", lambda b: b.var(), (b,), big * 4)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="torch_reduce.json")
    args = ap.parse_args()
    dev = torch.device("cuda")
    rows = []
    x = torch.empty(1 << 28, device=dev)
    y = torch.empty_like(x)
    ms = median_ms(lambda: y.copy_(x), [], 20)
    ms_launch = median_ms(lambda: y.copy_(x), [], 20, held=False)
    del x, y
    head = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "copy_gbps": 2 * (1 << 28) * 4 / (ms * 1e-3) / 1e9,
            "copy_launch_gbps": 2 * (1 << 28) * 4 / (ms_launch * 1e-3) / 1e9}

    def write():  # after every workload, so a run cut short by a time limit keeps what it measured
        json.dump(dict(head, rows=rows), open(args.out, "w"), indent=1)

    for name, dtype, fn, ins, nbytes in workloads(dev):
        compiled = torch.compile(fn, dynamic=False)
        for impl, f in (("torch_eager", fn), ("torch_compile", compiled)):
            ms = median_ms(f, ins, 30)
            ms_launch = median_ms(f, ins, 30, held=False)
            rows.append({"workload": name, "dtype": dtype, "impl": impl, "ms": ms, "ms_launch": ms_launch,
                         "gbps": nbytes / (ms * 1e-3) / 1e9})
            print(f"{name:34s} {dtype} {impl:14s} {ms:8.3f} ms {rows[-1]['gbps']:7.0f} GB/s", flush=True)
        write()
    write()
    print("wrote", args.out)


if __name__ == "__main__":
    main()
