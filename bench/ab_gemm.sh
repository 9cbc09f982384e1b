#!/usr/bin/env bash
# Same-run A/B of every GEMM variant between two source trees: BEFORE (default .ab/before, e.g.
# `git archive <rev> | tar -x -C .ab/before`) and this tree. Builds cufuse-tune in each (timing
# libcufuse's build), then times every valid variant of each key with `cufuse-tune --exhaustive`,
# the trees alternating for ROUNDS rounds, and compares them (bench/ab_report.py).
#   BEFORE=.ab/before bash bench/ab_gemm.sh          (from the repository root, on a GPU machine)
# Environment: AB_DTYPES (f32,tf32,bf16), AB_SHAPES (4096x4096x4096,128x4096x4096), AB_TRANS (NN),
# ROUNDS (2).
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/logs"
pack_logs() { tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"; }
trap pack_logs EXIT
before=${BEFORE:-.ab/before}
jobs=$(nproc)
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader |
  tee "$OUT/logs/device.txt"
for tree in before after; do
  src=$([ $tree = before ] && echo "$before" || echo .)
  cmake -S "$src" -B "build-ab-$tree" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUFUSE_BUILD_TESTS=OFF \
    -DCUFUSE_BUILD_SAMPLES=OFF >"$OUT/logs/configure-$tree.log" 2>&1 ||
    { tail -20 "$OUT/logs/configure-$tree.log"; exit 1; }
  t0=$(date +%s.%N)
  cmake --build "build-ab-$tree" -j"$jobs" --target cufuse_gemm >"$OUT/logs/build-$tree.log" 2>&1 ||
    { tail -30 "$OUT/logs/build-$tree.log"; exit 1; }
  t1=$(date +%s.%N)
  cmake --build "build-ab-$tree" -j"$jobs" --target cufuse-tune >>"$OUT/logs/build-$tree.log" 2>&1 ||
    { tail -30 "$OUT/logs/build-$tree.log"; exit 1; }
  echo "libcufuse build ($tree, $jobs jobs): $(python3 -c "print(round($t1 - $t0, 1))") s" |
    tee -a "$OUT/ab_build_times.txt"
done
for r in $(seq 1 "${ROUNDS:-2}"); do
  for tree in before after; do
    echo "== round $r: $tree ($(date +%T))"
    timeout 240 "build-ab-$tree/src/cufuse-tune" --dtypes "${AB_DTYPES:-f32,tf32,bf16}" \
      --trans "${AB_TRANS:-NN}" --shapes "${AB_SHAPES:-4096x4096x4096,128x4096x4096}" \
      --exhaustive --no-cublas --file "/tmp/ab-$tree.db" --json "$OUT/logs/ab_${tree}_$r.json" \
      >"$OUT/logs/ab_${tree}_$r.log" 2>&1 || { echo "cufuse-tune ($tree) failed"; tail -5 "$OUT/logs/ab_${tree}_$r.log"; }
  done
done
python3 bench/ab_report.py "$OUT/logs" "$OUT/ab_gemm" | tee "$OUT/ab_summary.txt"
