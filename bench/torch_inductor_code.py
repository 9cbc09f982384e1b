"""Writes the Triton code torch.compile generates for the memory-bound workloads where it runs
faster than cufuse (fp32 layer_norm and rms_norm, the MLP block's bf16 layer_norm, the bf16
broadcasts), so the two can be compared instruction by instruction:
    python3 bench/torch_inductor_code.py --out inductor_code.txt
Nothing is timed here."""
import argparse
import gc

import torch
import torch.nn.functional as F
from torch._inductor.utils import run_and_get_code


def cases(dev):
    def rows(dt, m, n):
        x = torch.empty(m, n, device=dev, dtype=dt).uniform_(-2, 2)
        w = torch.empty(n, device=dev, dtype=dt).uniform_(-2, 2)
        b = torch.empty(n, device=dev, dtype=dt).uniform_(-2, 2)
        return x, w, b

    x, w, b = rows(torch.float32, 32768, 4096)
    yield "layer_norm fp32 [32768, 4096]", lambda x, w, b: F.layer_norm(x, (4096,), w, b, 1e-5), (x, w, b)
    yield ("rms_norm fp32 [32768, 4096]",
           lambda x, w: x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w, (x, w))
    x, w, b = rows(torch.bfloat16, 8192, 1024)
    yield "layer_norm bf16 [8192, 1024]", lambda x, w, b: F.layer_norm(x, (1024,), w, b, 1e-5), (x, w, b)
    m = n = 8192
    x = torch.empty(m, n, device=dev, dtype=torch.bfloat16).uniform_(-2, 2)
    bias = torch.empty(n, device=dev, dtype=torch.bfloat16).uniform_(-2, 2)
    col = torch.empty(m, 1, device=dev, dtype=torch.bfloat16).uniform_(-2, 2)
    yield "relu(X + bias) bf16 [8192, 8192]", lambda x, bias: torch.relu(x + bias), (x, bias)
    yield "X * col + bias bf16 [8192, 8192]", lambda x, col, bias: x * col + bias, (x, col, bias)


def chosen_configs():
    """The launch configuration each Triton kernel's autotuning kept (num_warps, blocks)."""
    try:
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    except ImportError:
        return "(no CachingAutotuner in this PyTorch)\n"
    lines = []
    for o in gc.get_objects():
        try:  # gc also holds weak proxies whose objects are gone
            if not (isinstance(o, CachingAutotuner) and getattr(o, "launchers", None)):
                continue
            name = getattr(getattr(o, "fn", None), "__name__", "?")
            lines.append(f"chosen {name}: {[str(l.config) for l in o.launchers]}")
        except ReferenceError:
            continue
    return "\n".join(sorted(set(lines))) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="inductor_code.txt")
    args = ap.parse_args()
    dev = torch.device("cuda")
    with open(args.out, "w") as f:
        for name, fn, inputs in cases(dev):
            torch._dynamo.reset()
            _, codes = run_and_get_code(torch.compile(fn), *inputs)
            f.write(f"==== {name} ====\n")
            for c in codes:
                f.write(c)
                f.write("\n")
            f.write(chosen_configs())
            print(name, "done", flush=True)


if __name__ == "__main__":
    main()
