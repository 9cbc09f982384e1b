#!/usr/bin/env bash
# Nsight Compute on small-M GEMM kernels: one launch of a cufuse variant and one of cuBLAS's
# kernel on the same problem, run through cufuse-tune (--only VARIANT: the variant, then cuBLAS).
# Duration, DRAM bytes and throughput, L2 traffic, launch shape (grid, cluster, shared memory).
#   SHAPES="16x4096x4096 32x4096x4096" VARIANT=64x64x64_wg1_s12 bash bench/profile_small_m.sh
# Needs a built $BUILD_DIR/src/cufuse-tune (default build-gpu). Reports go to $OUT/logs/.
# KERNEL: the cufuse kernel's name pattern (default wgmma_gemm_kernel; simt_async_gemm_kernel for
# the SIMT tiles); METRICS: more metrics to collect; ONLY_CUBLAS / ONLY_CUFUSE: one side only.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/logs"
B=${BUILD_DIR:-build-gpu}
variant=${VARIANT:-64x64x64_wg1_s12}
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum
metrics+=,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,sm__cycles_active.avg
metrics+=,sm__cycles_elapsed.avg,launch__grid_size,launch__block_size,launch__cluster_dim_x
metrics+=,launch__cluster_dim_y,launch__shared_mem_per_block_dynamic,launch__registers_per_thread
metrics+=${METRICS:+,$METRICS}
for shape in ${SHAPES:-16x4096x4096 32x4096x4096}; do
  for who in cufuse cublas; do
    re="regex:${KERNEL:-wgmma_gemm_kernel}"
    [ -n "${ONLY_CUBLAS:-}" ] && [ $who = cufuse ] && continue
    [ -n "${ONLY_CUFUSE:-}" ] && [ $who = cublas ] && continue
    [ $who = cublas ] && re="regex:${CUBLAS_KERNELS:-nvjet|xmma|cutlass}"
    echo "== $shape $who ($variant)"
    ncu --kernel-name "$re" --launch-skip "${SKIP:-10}" --launch-count 1 --metrics "$metrics" \
      "$B/src/cufuse-tune" --dtypes "${DTYPE:-bf16}" --trans "${TRANS:-NN}" --shapes "$shape" \
      --exhaustive --only "$variant" --file /tmp/profile_small_m.db \
      >"$OUT/logs/ncu_small_m_${shape}_$who.log" 2>&1 || echo "ncu failed"
    grep -E "^  [a-z_]+[A-Za-z_0-9]*\(|==PROF==|^  [^ ].*\(" "$OUT/logs/ncu_small_m_${shape}_$who.log" |
      head -3
    grep -E "gpu__time|dram__|lts__|sm__|launch__" "$OUT/logs/ncu_small_m_${shape}_$who.log"
  done
done
