#!/usr/bin/env bash
# TF32 mma.sync A/B (session 15): GEMM GPU tests, then every TF32 mma variant (cp.async and TMA) in one
# cufuse-tune binary, 2 rounds; prints per-variant TFLOP/s (bench/results/gemm_tf32_tma_ab_h200.md).
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/logs"
pack_logs() { tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs; }
trap pack_logs EXIT
prefix=()
[ -d .deps/catch2/usr ] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.deps/catch2/usr")
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/logs/device.txt"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUFUSE_BUILD_BENCH=ON "${prefix[@]}" >"$OUT/logs/configure.log" 2>&1 || { tail -20 "$OUT/logs/configure.log"; exit 1; }
echo "== build $(date +%T)"
cmake --build build-gpu -j"$(nproc)" --target cufuse-tune cufuse_gemm_gpu_tests >"$OUT/logs/build.log" 2>&1 || { tail -40 "$OUT/logs/build.log"; exit 1; }
echo "== tests $(date +%T)"
timeout ${TEST_TIMEOUT:-200} build-gpu/test/cufuse_gemm_gpu_tests "${TEST_FILTER:-[gemm]~[large]~[online]~[threads]}" >"$OUT/logs/tests.log" 2>&1
echo "tests exit $?"; grep -E "FAILED|failed|passed" "$OUT/logs/tests.log" | tail -8
for r in ${ROUNDS:-1 2}; do
  echo "== tune round $r $(date +%T)"
  timeout 240 build-gpu/src/cufuse-tune --dtypes tf32 --trans ${TRANS:-NN,NT} --only tf32_mma \
    --shapes ${SHAPES:-4096x4096x4096,8192x8192x8192,2048x2048x2048,3072x3072x3072} --exhaustive \
    --json "$OUT/logs/tune_$r.json" >"$OUT/logs/tune_$r.log" 2>&1
  echo "tune exit $?"
done
python3 - "$OUT"/logs/tune_*.json <<'PY' | tee "$OUT/summary.md"
import json, sys, statistics as st
rows = {}
for f in sys.argv[1:]:
    d = json.load(open(f))
    for k in d["keys"]:
        key = f"{k['trans']} {k['m']}x{k['n']}x{k['k']}"
        fl = 2.0 * k["m"] * k["n"] * k["k"] * k["batch"]
        r = rows.setdefault(key, {"cublas": [], "v": {}})
        r["cublas"].append(fl / k["cublas_s"] / 1e12)
        for v, s in k["exhaustive"]["samples"].items():
            r["v"].setdefault(v, []).append(fl / st.median(s) / 1e12)
for key, r in rows.items():
    cb = st.median(r["cublas"])
    print(f"## {key}  cuBLAS {' '.join(f'{x:.1f}' for x in r['cublas'])}")
    for v, xs in sorted(r["v"].items(), key=lambda t: -max(t[1])):
        print(f"  {v:45s} " + " ".join(f"{x:6.1f}" for x in xs) + f"   best/cuBLAS {max(xs)/cb:.3f}")
PY
