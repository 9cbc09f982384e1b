#!/usr/bin/env bash
# Warp stall breakdown (cycles per issued instruction, by reason) and tensor-pipe activity of
# single GEMM variants, from Nsight Compute metrics. Run from the repository root on the GPU:
#   VARIANTS="sm80_f16_mma_128x128x64 sm80_f16_mma_128x256" bash bench/profile_stalls.sh
# SHAPE (4096x4096x4096), DTYPE (f16) and OP (NN) select the problem; TUNE=path profiles that
# cufuse-tune binary (e.g. an A/B build) instead of building build-gpu's.
set -uo pipefail
tune=${TUNE:-}
if [ -z "$tune" ]; then
  prefix=()
  [ -d .deps/catch2/usr ] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.deps/catch2/usr")
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release "${prefix[@]}" >/dev/null 2>&1
  cmake --build build-gpu -j"$(nproc)" --target cufuse-tune >/dev/null 2>&1 || { echo "build failed"; exit 1; }
  tune=build-gpu/src/cufuse-tune
fi
m=""
for r in barrier long_scoreboard short_scoreboard math_pipe_throttle wait mio_throttle \
  dispatch_stall not_selected selected lg_throttle no_instruction branch_resolving misc drain \
  membar sleeping tex_throttle imc_miss; do
  m="$m,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
m="${m#,},sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
m="$m,smsp__inst_executed_pipe_tensor_op_hmma.sum,smsp__inst_executed.sum,gpu__time_duration.sum"
m="$m,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
# memory side and clock: L2 hit rate, DRAM reads, the SM clock the kernel ran at, FMA pipe
m="$m,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,sm__cycles_elapsed.avg.per_second"
m="$m,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_issued.avg.pct_of_peak_sustained_active"
for v in ${VARIANTS:?set VARIANTS}; do
  echo "== $v ${DTYPE:-f16} ${OP:-NN} ${SHAPE:-4096x4096x4096}"
  ncu --clock-control none -k regex:gemm_kernel --launch-skip 2 --launch-count 1 --metrics "$m" \
    "$tune" --shapes "${SHAPE:-4096x4096x4096}" --dtypes "${DTYPE:-f16}" \
    --trans "${OP:-NN}" --only "$v" --no-cublas --file /tmp/stalls.db 2>&1 |
    grep -E "^ +[a-z0-9_]+__" | sed -e 's/smsp__average_warps_issue_stalled_//' -e 's/_per_issue_active.ratio//'
done
