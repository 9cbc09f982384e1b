#!/usr/bin/env bash
# The memory-bound kernels' verification and benchmarks in one GPU call, from executables built
# on another machine (the 2-core machine builds them; the GPU's time goes to running them):
#   here:  ninja -C BUILD test/cufuse_gpu_tests test/cufuse_reduce_gpu_tests \
#            bench/cufuse_bench_shapes bench/cufuse_bench_reduce samples/{quickstart,softmax,layernorm,graph}
#          mkdir -p pre && cp <those outputs> pre/ && strip pre/* && tar cf - pre | xz -6 > pre.tar.xz
#   there: tar xJf pre.tar.xz && PRE=pre OUT=... bash bench/memory_prebuilt.sh
# Runs: cufuse_gpu_tests (elementwise and shapes), the reduction GPU tests, four samples, the
# shapes and reduction benchmarks with PyTorch eager / torch.compile in the same call
# (bench/torch_shapes.py, bench/torch_reduce.py; tables by bench/shapes_report.py into $OUT),
# memcheck and racecheck of the reduction and shape tests; cufuse_bench_elementwise and
# cufuse_bench_l2_after when they are in the folder. Logs are packed into logs.tar.gz.
# Knobs: NO_TORCH_SHAPES=1 (no PyTorch for the shapes table), SANITIZER_TOOLS ("memcheck
# racecheck"), SANITIZER_TIMEOUT (seconds per sanitizer run).
cd "$(dirname "$0")/.."
source bench/prebuilt_common.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
$P/cufuse_gpu_tests > $OUT/tests_gpu.log 2>&1
echo "cufuse_gpu_tests exit $?: $(tail -2 $OUT/tests_gpu.log | head -1)" | tee $OUT/gpu_tests.log
for tag in "[reduce]" "[reduce_gpu]"; do
  $P/cufuse_reduce_gpu_tests "$tag" > $OUT/tests_${tag//[^a-z_]/}.log 2>&1
  echo "cufuse_reduce_gpu_tests $tag exit $?: $(tail -2 $OUT/tests_${tag//[^a-z_]/}.log | head -1)"
done | tee -a $OUT/gpu_tests.log
for s in quickstart softmax layernorm graph; do
  $P/$s >$OUT/sample_$s.log 2>&1; echo "sample $s exit $?: $(tail -1 $OUT/sample_$s.log)"
done | tee $OUT/samples.log
el tests
$P/cufuse_bench_shapes --out $OUT/shapes_cufuse.json > $OUT/shapes_bench.log 2>&1
echo "shapes bench exit $?"; grep -E "^relu|^X \*|^transpose|^slice|^permute|device" $OUT/shapes_bench.log
if [ -z "${NO_TORCH_SHAPES:-}" ]; then # set: the shapes table without PyTorch (saves ~90 s)
  PYTHONUNBUFFERED=1 timeout 150 python3 bench/torch_shapes.py --out $OUT/shapes_torch.json > $OUT/shapes_torch.log 2>&1
  echo "torch shapes exit $?"
  python3 bench/shapes_report.py $OUT/shapes_cufuse.json $OUT/shapes_torch.json $FIN/shapes > $OUT/report_shapes.log 2>&1
fi
el shapes
# optional: the elementwise benchmark, and what the streaming L2 policy leaves for the next kernel
for b in elementwise l2_after; do
  if [ -x $P/cufuse_bench_$b ]; then
    $P/cufuse_bench_$b --out $FIN/${b}_cufuse.json > $OUT/${b}_bench.log 2>&1
    echo "$b bench exit $?"; grep -vE "^\s*$" $OUT/${b}_bench.log | tail -${BENCH_TAIL:-14}
  fi
done
el optional
REDUCE_NO_SWEEP=1 $P/cufuse_bench_reduce --out $OUT/reduce_cufuse.json > $OUT/reduce_bench.log 2>&1
echo "reduce bench exit $?"; grep -E "device|sum|argmax|var|softmax|layer_norm|rms_norm" $OUT/reduce_bench.log | awk '{print $1,$2,$3,$(NF-1)}' | tr '\n' ';'; echo
el bench
PYTHONUNBUFFERED=1 timeout 150 python3 bench/torch_reduce.py --out $OUT/reduce_torch.json > $OUT/reduce_torch.log 2>&1
echo "torch exit $?"
python3 bench/shapes_report.py $OUT/reduce_cufuse.json $OUT/reduce_torch.json $FIN/reduce Reductions > $OUT/report.log 2>&1
el torch
for tool in ${SANITIZER_TOOLS:-memcheck racecheck}; do
  timeout ${SANITIZER_TIMEOUT:-130} compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 20 \
    $P/cufuse_reduce_gpu_tests "~[large]" >$OUT/${tool}_reduce.log 2>&1
  rc=$?; echo "$tool reduce exit $rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/${tool}_reduce.log | tail -1) | $(tail -2 $OUT/${tool}_reduce.log | head -1)" | tee -a $OUT/sanitizers.log
  timeout ${SANITIZER_TIMEOUT:-100} compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 20 \
    $P/cufuse_gpu_tests "[shapes]~[large]~[oom],[gpu]~[large]~[oom]" >$OUT/${tool}_shapes.log 2>&1
  rc=$?; echo "$tool shapes exit $rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/${tool}_shapes.log | tail -1) | $(tail -2 $OUT/${tool}_shapes.log | head -1)" | tee -a $OUT/sanitizers.log
done
el done
