#!/usr/bin/env bash
# ncu on the shapes benchmark's kernels: one launch per workload (after warm-up), speed of light,
# occupancy and warp stalls. Run after `bash bench/run_gpu.sh shapes` built build-gpu.
#   bash bench/profile_shapes.sh [launch-skip ...]      (default: the bf16 broadcasts, the tiles)
# Each workload launches 64 evaluation kernels (a check, 3 warm-ups, 2 x 30 timed): 64 k + 4 is
# the k-th workload in shapes_bench's order (0 relu fp32, 1 X * col + bias fp32, 2-3 bf16, 4 the
# transpose, 5 the slice, 6 the permute).
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/logs"
for skip in ${@:-132 196 260 388}; do
  ncu --launch-skip "$skip" --launch-count 1 --kernel-name regex:evaluate \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
    --section LaunchStats --section WarpStateStats \
    build-gpu/bench/cufuse_bench_shapes --out /dev/null 2>&1 |
    grep -E "evaluate_|DRAM Throughput|Memory Throughput|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Size|Grid Size|Stall|cycles being stalled|Warp Cycles Per Issued|L1/TEX Hit|L2 Hit|Mem Busy" |
    sed -E 's/\(cufuse::detail::[^)]*\)//g' | cut -c1-160
done | tee "$OUT/logs/profile_shapes.log"
