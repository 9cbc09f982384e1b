#!/usr/bin/env bash
# Nsight Compute on one conv2d layer, cufuse against cuDNN: cufuse's kernel (the heuristic's
# choice, tuner off: bench/conv_bench.cu --only LAYER, its 4th conv launch) and cuDNN's (through
# PyTorch, bench/torch_conv.py --kernels --only LAYER: the first kernel inside its NVTX range).
# Speed of light, occupancy, launch, compute (pipes) and memory sections of one launch each;
# summaries on stdout, reports in $OUT/logs/. Needs build-gpu/bench/cufuse_bench_conv.
#   LAYER="28x28 C128" bash bench/profile_conv.sh
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/logs"
layer=${LAYER:-28x28 C128}
sections=(--section SpeedOfLight --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis
  --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats)
tag=$(echo "$layer" | tr -c 'A-Za-z0-9\n' '_')
summary() { # report name
  ncu -i "$1" --page details >"$OUT/logs/$2_details.txt" 2>&1
  echo "== $2"
  grep -E "^  [a-z_A-Z].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Registers Per|Grid Size|Block Size|Achieved Occupancy|Theoretical Occupancy|Dynamic Shared|Issue Slots Busy|Eligible Warps|No Eligible|Warp Cycles Per Issued|Executed Ipc Active|L2 Hit|L1/TEX Hit" \
    "$OUT/logs/$2_details.txt" | cut -c1-160 | head -40
}
ncu --kernel-name regex:conv2d_mma_kernel --launch-skip 3 --launch-count 1 "${sections[@]}" -f \
  -o "$OUT/logs/conv_cufuse_$tag" build-gpu/bench/cufuse_bench_conv --only "$layer" \
  >"$OUT/logs/ncu_conv_cufuse_$tag.log" 2>&1 || tail -5 "$OUT/logs/ncu_conv_cufuse_$tag.log"
summary "$OUT/logs/conv_cufuse_$tag.ncu-rep" "conv_cufuse_$tag"
ncu --nvtx --nvtx-include "cudnn_conv/" --launch-count 1 "${sections[@]}" -f \
  -o "$OUT/logs/conv_cudnn_$tag" python3 bench/torch_conv.py --kernels --only "$layer" \
  >"$OUT/logs/ncu_conv_cudnn_$tag.log" 2>&1 || tail -5 "$OUT/logs/ncu_conv_cudnn_$tag.log"
grep -E "us  " "$OUT/logs/ncu_conv_cudnn_$tag.log" | head -5
summary "$OUT/logs/conv_cudnn_$tag.ncu-rep" "conv_cudnn_$tag"
