"""PyTorch eager and torch.compile on the workloads of bench/shapes_bench.cu (same shapes, same
byte counts), timed the same way: CUDA events behind a spin kernel (device time), median over repetitions
after warm-up, and once more on an idle device (launch included). Writes
JSON (--out)."""
import argparse
import json

import torch
from torch_bench import median_ms  # the same CUDA-event median as the elementwise peers


def workloads(dev):
    m = n = 8192
    for name, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        x = torch.empty(m, n, device=dev, dtype=dt).uniform_(-2, 2)
        bias = torch.empty(n, device=dev, dtype=dt).uniform_(-2, 2)
        col = torch.empty(m, 1, device=dev, dtype=dt).uniform_(-2, 2)
        es = x.element_size()
        yield ("relu(X + bias)", name, lambda x, b: torch.relu(x + b), (x, bias), (2 * m * n + n) * es)
        yield ("X * col + bias", name, lambda x, c, b: x * c + b, (x, col, bias), (2 * m * n + m + n) * es)
    x = torch.empty(m, n, device=dev).uniform_(-2, 2)
    yield ("transpose(X) [8192, 8192]", "fp32", lambda x: x.t().contiguous(), (x,), 2 * m * n * 4)
    b, r, c = 64, 1024, 1024
    p = torch.empty(b, r, c, device=dev, dtype=torch.bfloat16).uniform_(-2, 2)
    z = torch.empty(b, c, r, device=dev, dtype=torch.bfloat16).uniform_(-2, 2)
    yield ("permute(P, {0, 2, 1}) + Z [64, 1024, 1024]", "bf16", lambda p, z: p.permute(0, 2, 1) + z,
           (p, z), 3 * b * r * c * 2)
    for name, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        x = torch.empty(m, n, device=dev, dtype=dt).uniform_(-2, 2)
        es = x.element_size()
        yield ("slice(X, all, range(0, n, 2)) * 2", name, lambda x: x[:, ::2] * 2, (x,), 2 * m * (n // 2) * es)
        yield ("slice(X, all, range(1, n)) + 1", name, lambda x: x[:, 1:] + 1, (x,), 2 * m * (n - 1) * es)
        y = x.reshape(-1)
        yield ("y[1:] - y[:-1], 2^26", name, lambda y: y[1:] - y[:-1], (y,), 2 * y.numel() * es)
        del x, y
        lg = torch.empty(4096, 50257, device=dev, dtype=dt).uniform_(-2, 2)
        b = torch.empty(50257, device=dev, dtype=dt).uniform_(-2, 2)
        yield ("X + bias [4096, 50257]", name, lambda x, b: x + b, (lg, b), (2 * 4096 * 50257 + 50257) * es)
        c = torch.empty(4096, 1, device=dev, dtype=dt).uniform_(-2, 2)
        yield ("X * col + bias [4096, 50257]", name, lambda x, c, b: x * c + b, (lg, c, b),
               (2 * 4096 * 50257 + 4096 + 50257) * es)
        del lg, b, c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="torch_shapes.json")
    ap.add_argument("--only", default="", help="time only the workloads whose name starts with this")
    args = ap.parse_args()
    dev = torch.device("cuda")
    rows = []
    for name, dtype, fn, ins, nbytes in workloads(dev):
        if not name.startswith(args.only):
            continue
        compiled = torch.compile(fn, dynamic=False)
        for impl, f in (("torch_eager", fn), ("torch_compile", compiled)):
            ms = median_ms(f, ins, 30)
            ms_launch = median_ms(f, ins, 30, held=False)
            rows.append({"workload": name, "dtype": dtype, "impl": impl, "ms": ms, "ms_launch": ms_launch,
                         "gbps": nbytes / (ms * 1e-3) / 1e9})
            print(f"{name:45s} {dtype} {impl:14s} {ms:8.3f} ms {rows[-1]['gbps']:7.0f} GB/s", flush=True)
    x = torch.empty(1 << 28, device=dev)
    y = torch.empty_like(x)
    ms = median_ms(lambda: y.copy_(x), [], 20)
    ms_launch = median_ms(lambda: y.copy_(x), [], 20, held=False)
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "copy_gbps": 2 * x.numel() * 4 / (ms * 1e-3) / 1e9,
               "copy_launch_gbps": 2 * x.numel() * 4 / (ms_launch * 1e-3) / 1e9, "rows": rows},
              open(args.out, "w"), indent=1)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
