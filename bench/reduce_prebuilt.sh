#!/usr/bin/env bash
# The reductions' verification and benchmark in one GPU call, from executables built on another
# machine (memory_prebuilt.sh without the elementwise and shape parts):
#   here:  cufuse_reduce_gpu_tests, cufuse_bench_reduce, the softmax and layernorm samples, and
#          optionally cufuse_bench_mlp, built into one folder (xz-compressed files are unpacked)
#   there: PRE=folder OUT=... bash bench/reduce_prebuilt.sh
# Runs: the reduction GPU tests ("[reduce]", "[reduce_gpu]"), the two samples, the reduction
# benchmark with PyTorch eager / torch.compile in the same call (bench/torch_reduce.py; table by
# bench/shapes_report.py into $OUT/reduce.*), memcheck of the reduction tests but [large],
# racecheck of the row kernel's cases, and the MLP block (`--blocks --small`, twice). Logs are
# packed into $OUT/logs.tar.gz.
cd "$(dirname "$0")/.."
source bench/prebuilt_common.sh
for f in $P/*.xz; do [ -e "$f" ] && xz -d "$f"; done
chmod +x $P/* 2>/dev/null
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
for tag in "[reduce]" "[reduce_gpu]"; do
  timeout ${TEST_TIMEOUT:-150} $P/cufuse_reduce_gpu_tests "$tag" > $OUT/tests_${tag//[^a-z_]/}.log 2>&1
  echo "cufuse_reduce_gpu_tests $tag exit $?: $(tail -2 $OUT/tests_${tag//[^a-z_]/}.log | head -1)"
done | tee $OUT/gpu_tests.log
for s in softmax layernorm; do
  $P/$s >$OUT/sample_$s.log 2>&1; echo "sample $s exit $?: $(tail -1 $OUT/sample_$s.log)"
done | tee $OUT/samples.log
el tests
REDUCE_NO_SWEEP=1 $P/cufuse_bench_reduce --out $OUT/reduce_cufuse.json > $OUT/reduce_bench.log 2>&1
echo "reduce bench exit $?"; grep -E "device|sum|argmax|var|softmax|layer_norm|rms_norm" $OUT/reduce_bench.log | awk '{print $1,$2,$3,$(NF-1)}' | tr '\n' ';'; echo
el bench
PYTHONUNBUFFERED=1 timeout ${TORCH_TIMEOUT:-150} python3 bench/torch_reduce.py --out $OUT/reduce_torch.json > $OUT/reduce_torch.log 2>&1
echo "torch exit $?"
python3 bench/shapes_report.py $OUT/reduce_cufuse.json $OUT/reduce_torch.json $FIN/reduce Reductions > $OUT/report.log 2>&1
echo "report exit $?"
el torch
timeout ${MEMCHECK_TIMEOUT:-120} compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
  $P/cufuse_reduce_gpu_tests "[reduce_gpu]~[large]" >$OUT/memcheck_reduce.log 2>&1
echo "memcheck exit $?: $(grep -E 'ERROR SUMMARY' $OUT/memcheck_reduce.log | tail -1) | $(tail -2 $OUT/memcheck_reduce.log | head -1)" | tee $OUT/sanitizers.log
timeout ${RACECHECK_TIMEOUT:-90} compute-sanitizer --tool racecheck --error-exitcode 9 --print-limit 20 \
  $P/cufuse_reduce_gpu_tests "the row kernel's direct*,short rows two to a block*,bf16 layer_norm with every operand form*,long rows: a cluster*" >$OUT/racecheck_rows.log 2>&1
echo "racecheck exit $?: $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck_rows.log | tail -1) | $(tail -2 $OUT/racecheck_rows.log | head -1)" | tee -a $OUT/sanitizers.log
el sanitizers
if [ -x $P/cufuse_bench_mlp ]; then
  for r in 1 2; do $P/cufuse_bench_mlp --blocks --small > $OUT/mlp_$r.log 2>&1; echo "mlp round $r exit $?"; grep -E "alone|block" $OUT/mlp_$r.log | cut -c36-100; done
fi
el done
