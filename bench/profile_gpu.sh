#!/usr/bin/env bash
# Nsight Compute profiles of single GEMM variants and of cuBLAS on the same problem, for the
# performance notes (bench/JOURNAL.md). Run from the repository root on the GPU machine:
#   PROFILES="f16:NN:4096x4096x4096:wg2pp tf32:NN:4096x4096x4096:128x256" bash bench/profile_gpu.sh
# Each entry is dtype:op:shape:variant-substring (cufuse-tune --only); `cublas` as the variant
# profiles cuBLAS's kernel for that problem instead. Reports go to $OUT/profiles.txt.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
jobs=$(nproc)
prefix=()
[ -d .deps/catch2/usr ] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.deps/catch2/usr")
# TUNE=path: profile that cufuse-tune binary (e.g. built on another machine) instead of building.
tune=${TUNE:-}
if [ -z "$tune" ]; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release "${prefix[@]}" >"$OUT/configure.log" 2>&1 ||
    { tail -20 "$OUT/configure.log"; exit 1; }
  cmake --build build-gpu -j"$jobs" --target cufuse-tune >"$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
  tune=build-gpu/src/cufuse-tune
fi
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
  --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats
  --section InstructionStats)
report="$OUT/profiles.txt"
: >"$report"
for entry in ${PROFILES:?set PROFILES}; do
  IFS=: read -r dt op shape which <<<"$entry"
  echo "== $entry ($(date +%T))" | tee -a "$report"
  if [ "$which" = cublas ]; then
    # The cuBLAS kernel is the most launched one that is neither cufuse's, the input fill nor the
    # spin kernel that holds the stream while the timed calls are enqueued.
    name=$(ncu --metrics gpu__time_duration.sum --csv --kernel-name-base function \
      "$tune" --shapes "$shape" --dtypes "$dt" --trans "$op" --only 128x128 --file /tmp/p.db 2>/dev/null |
      awk -F'","' 'NR > 1 { print $5 }' | grep -v -e gemm_kernel -e fill_uniform -e hold_stream | sort | uniq -c |
      sort -rn | awk 'NR == 1 { print $2 }')
    echo "cuBLAS kernel: ${name:-not found}" | tee -a "$report"
    [ -n "$name" ] || continue
    ncu --clock-control none --kernel-name-base function -k "$name" --launch-skip 2 --launch-count 1 \
      "${sections[@]}" "$tune" --shapes "$shape" --dtypes "$dt" --trans "$op" --only 128x128 \
      --file /tmp/p.db >>"$report" 2>&1
  else
    ncu --clock-control none -k regex:gemm_kernel --launch-skip 2 --launch-count 1 "${sections[@]}" \
      "$tune" --shapes "$shape" --dtypes "$dt" --trans "$op" --only "$which" --no-cublas \
      --file /tmp/p.db >>"$report" 2>&1
  fi
done
if [ -n "${SASS:-}" ] && command -v cuobjdump >/dev/null; then
  # SASS of the objects named in $SASS (paths under build-gpu), for instruction-mix reading.
  for o in $SASS; do
    cuobjdump -sass "build-gpu/$o" 2>&1 | gzip >"$OUT/$(basename "$o").sass.gz"
  done
fi
grep -E "^== |cuBLAS kernel|gemm_kernel|nvjet|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Issue Slots Busy|Executed Ipc Active|Registers Per|Achieved Occupancy|No Eligible|Warp Cycles Per Issued" "$report" |
  cut -c1-160
