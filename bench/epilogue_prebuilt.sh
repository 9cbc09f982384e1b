#!/usr/bin/env bash
# The GEMM epilogue issue's verification and benchmark in one GPU call, from executables built
# on another machine (bench/prebuild.sh builds and packs them on the 2-core machine):
#   here:  BUILD_DIR=build-pre EXTRA_CMAKE_ARGS=-DCUFUSE_BUILD_BENCH=ON bash bench/prebuild.sh \
#            bench/cufuse_bench_mlp test/cufuse_gemm_epilogue_tests samples/transformer_mlp
#   there: mkdir -p pre && tar xJf build-pre/prebuilt.tar.xz -C pre && PRE=pre bash bench/epilogue_prebuilt.sh
#          (carry ["build-pre/prebuilt.tar.xz"])
# Runs the "[epilogue]" tests, the transformer MLP sample, memcheck and racecheck on a subset of
# the tests (NO_SANITIZE=1 skips them), the MLP / epilogue benchmark (bench/mlp_bench.cu) and
# PyTorch eager / torch.compile of the same workloads (bench/torch_mlp.py) in the same call; the
# table by bench/mlp_report.py into $OUT/mlp.{md,json}. Logs are packed into $OUT/logs.tar.gz.
cd "$(dirname "$0")/.."
P=${PRE:-pre}
FIN=${OUT:-$PWD/gpu-out}
mkdir -p "$FIN"
L=$FIN/logs
mkdir -p "$L"
trap 'tar -czf "$FIN/logs.tar.gz" -C "$FIN" logs && rm -rf "$L"' EXIT
t0=$(date +%s)
el() { echo "[$(($(date +%s) - t0)) s] $*"; }
status=0
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$L/device.txt"
if [ -z "${NO_TESTS:-}" ]; then
  "$P/test/cufuse_gemm_epilogue_tests" "[epilogue]" >"$L/tests_epilogue.log" 2>&1
  rc=$?; [ $rc = 0 ] || status=1
  echo "cufuse_gemm_epilogue_tests [epilogue] exit $rc: $(tail -2 "$L/tests_epilogue.log" | head -1)" | tee "$L/summary.log"
  "$P/samples/transformer_mlp" >"$L/sample_transformer_mlp.log" 2>&1
  rc=$?; [ $rc = 0 ] || status=1
  echo "transformer_mlp exit $rc: $(tail -1 "$L/sample_transformer_mlp.log")" | tee -a "$L/summary.log"
  el tests
fi
if [ -z "${NO_SANITIZE:-}" ]; then
  timeout "${MEMCHECK_TIMEOUT:-200}" compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
    "$P/test/cufuse_gemm_epilogue_tests" "${EPI_MEMCHECK:-*auxiliary*,*batches*,*relu*,*residual*}" >"$L/memcheck_epi.log" 2>&1
  rc=$?; [ $rc = 0 ] || status=1
  echo "memcheck exit $rc: $(grep 'ERROR SUMMARY' "$L/memcheck_epi.log" | tail -1) | $(tail -2 "$L/memcheck_epi.log" | head -1)" | tee -a "$L/summary.log"
  timeout "${RACECHECK_TIMEOUT:-150}" compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$P/test/cufuse_gemm_epilogue_tests" "${EPI_RACECHECK:-*auxiliary*,*residual*}" >"$L/racecheck_epi.log" 2>&1
  rc=$?; [ $rc = 0 ] || status=1
  echo "racecheck exit $rc: $(grep 'RACECHECK SUMMARY' "$L/racecheck_epi.log" | tail -1) | $(tail -2 "$L/racecheck_epi.log" | head -1)" | tee -a "$L/summary.log"
  el sanitizers
fi
if [ -z "${NO_BENCH:-}" ]; then
  # shellcheck disable=SC2086 # MLP_ARGS: several arguments
  timeout "${MLP_TIMEOUT:-300}" "$P/bench/cufuse_bench_mlp" ${MLP_ARGS:-} --out "$L/mlp_cufuse.json" >"$L/mlp_bench.log" 2>&1
  rc=$?; [ $rc = 0 ] || status=1
  echo "mlp bench exit $rc"
  el bench
  if [ -z "${NO_TORCH:-}" ]; then
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 timeout "${TORCH_TIMEOUT:-300}" python3 bench/torch_mlp.py ${MLP_ARGS:-} \
      --out "$L/mlp_torch.json" >"$L/mlp_torch.log" 2>&1 || { echo "torch mlp bench failed:"; tail -5 "$L/mlp_torch.log"; }
    el torch
  fi
  python3 bench/mlp_report.py "$L/mlp_cufuse.json" "$L/mlp_torch.json" "$FIN/mlp" >"$L/report.log" 2>&1 || status=1
  cat "$FIN/mlp.md" 2>/dev/null | cut -d'|' -f2-7 | sed 's/  */ /g'
fi
exit $status
