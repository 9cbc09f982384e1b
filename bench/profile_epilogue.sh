#!/usr/bin/env bash
# Nsight Compute on the GEMM-epilogue benchmark's kernels (bench/mlp_bench.cu --quick): the
# warp-state breakdown and the per-instruction stall samples (SASS) of one launch of each kernel
# that KERNELS names (mangled-name regexes, `;`-separated; the default: the 128x256 wgmma tile
# with bias + GELU fused, and plain). Needs a built build-gpu/bench/cufuse_bench_mlp (run_gpu.sh
# epilogue with BUILD_ONLY=1). Reports and CSVs go to $OUT/logs/.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/logs"
# Packed at the end (the device tool returns a few files): $OUT/profile_logs.tar.gz.
trap 'tar -czf "$OUT/profile_logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"' EXIT
bench=${BENCH_BIN:-build-gpu/bench/cufuse_bench_mlp}
args=${BENCH_ARGS---quick}
default='fused=wgmma_gemm_kernel.*Li128ELi256ELi4.*expression_epilogue.*gelu_tanh;plain=wgmma_gemm_kernel.*Li128ELi256ELi4.*linear_combination'
IFS=';' read -r -a kernels <<<"${KERNELS:-$default}"
for entry in "${kernels[@]}"; do
  name=${entry%%=*} re=${entry#*=}
  echo "== $name: $re"
  # shellcheck disable=SC2086 # args: several arguments
  ncu --kernel-name-base mangled --kernel-name "regex:$re" --launch-skip "${SKIP:-3}" --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats \
    --section InstructionStats --section ComputeWorkloadAnalysis -f -o "$OUT/logs/$name" "$bench" $args >"$OUT/logs/ncu_$name.log" 2>&1 ||
    { echo "ncu failed"; tail -5 "$OUT/logs/ncu_$name.log"; continue; }
  ncu -i "$OUT/logs/$name.ncu-rep" --page details >"$OUT/logs/${name}_details.txt" 2>&1
  grep -E "Duration|Stall|Warp Cycles|Issued Ipc|Executed Ipc|Registers|Instructions|Pipe|SM Busy" \
    "$OUT/logs/${name}_details.txt" | head -40
  ncu -i "$OUT/logs/$name.ncu-rep" --page source --csv --print-source sass \
    >"$OUT/logs/${name}_sass.csv" 2>&1 || echo "(no source page)"
  wc -c "$OUT/logs/${name}_sass.csv"
done
