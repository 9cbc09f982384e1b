#!/usr/bin/env bash
# Nsight Compute on one launch of a kernel of the reduction or shapes benchmark: speed of light,
# occupancy, warp states, memory workload and per-instruction SASS samples. Needs the built
# benchmarks (bash bench/run_gpu.sh membench). PROFILES: `;`-separated NAME=BENCH:REGEX:SKIP
# (BENCH reduce or shapes, REGEX a kernel-name regex, SKIP the launches of it to skip: each
# workload launches its kernel 64 times, 1 check + 3 warm-up + 2 x 30 timed). The default: bf16
# softmax and layer_norm [32768, 4096], bf16 X * col + bias and the bf16 permute. ROWS=1: the
# row kernels of bench/rows_profile.cu instead, with per-instruction counts.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/logs"
default='softmax_bf16=reduce:rows_kernel:195;layer_norm_bf16=reduce:rows_kernel:259'
default="$default;xcolbias_bf16=shapes:evaluate:195;permute_bf16=shapes:evaluate:387"
if [ -n "${ROWS:-}" ]; then
  # Every row-kernel launch of bench/rows_profile.cu (fp32 then bf16 softmax, layer_norm,
  # rms_norm at [32768, 4096]) with per-instruction counts (--page source) at real clocks.
  ncu --clock-control none --kernel-name regex:rows_kernel --section SpeedOfLight \
    --section Occupancy --section WarpStateStats --section InstructionStats --section SourceCounters \
    -f -o "$OUT/logs/rows" build-gpu/bench/cufuse_rows_profile >"$OUT/logs/ncu_rows.log" 2>&1
  ncu -i "$OUT/logs/rows.ncu-rep" --page source --csv --print-source sass >"$OUT/rows_source.csv"
  exit 0
fi
IFS=';' read -r -a profiles <<<"${PROFILES:-$default}"
for entry in "${profiles[@]}"; do
  name=${entry%%=*} spec=${entry#*=}
  IFS=':' read -r bench re skip <<<"$spec"
  echo "== $name: $bench, kernel $re, skip $skip"
  ncu --kernel-name "regex:$re" --launch-skip "$skip" --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section SourceCounters --section InstructionStats \
    -f -o "$OUT/logs/$name" "build-gpu/bench/cufuse_bench_$bench" --out /dev/null \
    >"$OUT/logs/ncu_$name.log" 2>&1 || { echo "ncu failed"; tail -5 "$OUT/logs/ncu_$name.log"; continue; }
  ncu -i "$OUT/logs/$name.ncu-rep" --page details >"$OUT/logs/${name}_details.txt" 2>&1
  grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Stall|Warp Cycles Per|Issued Ipc|Registers Per|Achieved Occ|Theoretical Occ|Block Size|Grid Size|Executed Instructions  |Shared Memory Config|Dynamic Shared" \
    "$OUT/logs/${name}_details.txt" | sed -E 's/\(cufuse::detail::[^)]*\)//g' | cut -c1-150 | head -45
  ncu -i "$OUT/logs/$name.ncu-rep" --page source --csv --print-source sass \
    >"$OUT/logs/${name}_sass.csv" 2>&1 || echo "(no source page)"
done
