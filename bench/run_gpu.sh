#!/usr/bin/env bash
# Build, test, sanitize and benchmark cufuse on a GPU machine, in one go.
#   bash bench/run_gpu.sh [test|sanitize|shapes|reduce|memtest|membench|bench|gemm|sustained|epilogue|conv|staged|anyshape|smallm|online|all]      (from the repository root)
# Environment: NO_SANITIZE, NO_BENCH, NO_TORCH, NO_HOST skip parts of the reduce mode; CTEST_ARGS.
# Logs and results go to $OUT (default ./gpu-out). Catch2 is taken from .deps/ when staged there
# (../shared/tools/stage-device-deps.sh), else from the system.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/logs"
# The device tool returns at most 8 files: summaries stay at the top, everything else is
# packed into logs.tar.gz when the script ends.
pack_logs() { tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"; }
trap pack_logs EXIT
what=${1:-all}
# BUILD_DIR: the build directory (default build-gpu). PREBUILT=1: the executables are already in
# it (built on another machine for the same architecture and carried over): no configure, and
# build_targets builds nothing (the epilogue mode; the device time goes to tests and benchmarks).
B=${BUILD_DIR:-build-gpu}
jobs=$(nproc)
prefix=()
[ -d .deps/catch2/usr ] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.deps/catch2/usr")

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader |
  tee "$OUT/logs/device.txt"
if [ -z "${PREBUILT:-}" ]; then
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUFUSE_BUILD_BENCH=ON "${prefix[@]}" \
    >"$OUT/logs/configure.log" 2>&1 || { tail -20 "$OUT/logs/configure.log"; exit 1; }
fi

step() { echo "== $1 ($(date +%T))"; }
status=0
# build_targets NAME TARGET...: builds the targets (log in $OUT/logs/build-NAME.log); on failure
# prints the log's end and stops the script.
build_targets() {
  local name=$1
  shift
  [ -n "${PREBUILT:-}" ] && return 0
  cmake --build $B -j"$jobs" --target "$@" >"$OUT/logs/build-$name.log" 2>&1 ||
    { tail -30 "$OUT/logs/build-$name.log"; exit 1; }
}
# gemm_tests LOG GPU_FILTER [epilogue]: the GEMM host tests, the GEMM GPU tests that match
# GPU_FILTER and, given a third argument, the expression-epilogue tests; summaries in $OUT/LOG.
gemm_tests() {
  $B/test/cufuse_gemm_host_tests 2>&1 | tail -2 | tee "$OUT/$1"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  # A hung kernel (a barrier that never completes) ends the tests, not the device call.
  timeout ${GEMM_TEST_TIMEOUT:-900} $B/test/cufuse_gemm_gpu_tests "$2" 2>&1 | tail -15 |
    tee -a "$OUT/$1"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  if [ -n "${3:-}" ]; then
    $B/test/cufuse_gemm_epilogue_tests "[epilogue]" 2>&1 | tail -6 | tee -a "$OUT/$1"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
  fi
}
# gemm_sanitize NAME MEMCHECK_FILTER RACECHECK_FILTER: memcheck and racecheck of the GEMM GPU
# tests on the quick shapes (CUFUSE_GEMM_QUICK=1), logs in $OUT/logs/{memcheck,racecheck}_NAME.log.
gemm_sanitize() {
  local tool filter limit rc
  for tool in memcheck racecheck; do
    filter=$2 limit=${MEMCHECK_TIMEOUT:-200}
    [ $tool = racecheck ] && filter=$3 limit=${RACECHECK_TIMEOUT:-200}
    CUFUSE_GEMM_QUICK=1 timeout $limit compute-sanitizer --tool $tool --error-exitcode 9 \
      --print-limit 20 $B/test/cufuse_gemm_gpu_tests "$filter" >"$OUT/logs/${tool}_$1.log" 2>&1
    rc=$?; echo "$tool ($1) exit $rc"; tail -3 "$OUT/logs/${tool}_$1.log"; [ $rc = 0 ] || status=1
  done
}

if [ "$what" = test ] || [ "$what" = all ]; then
  step build
  cmake --build $B -j"$jobs" >"$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
  step ctest
  ctest --test-dir $B --output-on-failure -j4 ${CTEST_ARGS:-} 2>&1 | tee "$OUT/ctest.log" | tail -40
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

if [ "$what" = sanitize ] || [ "$what" = all ]; then
  step build
  cmake --build $B -j"$jobs" >"$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
  # [large] (2^31 elements) is too slow under the sanitizer; [oom] fails an allocation on purpose,
  # which memcheck reports as an API error.
  if [ "${SANITIZE_ONLY:-}" != gemm ]; then
  step "compute-sanitizer memcheck (all GPU cases but [large] and [oom])"
  timeout 420 compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
    $B/test/cufuse_gpu_tests "~[large]~[oom]" >"$OUT/logs/memcheck.log" 2>&1
  rc=$?
  echo "memcheck exit $rc"; tail -4 "$OUT/logs/memcheck.log"
  [ $rc = 0 ] || status=1
  fi
  if [ -z "${SANITIZE_SKIP_GEMM:-}" ]; then
  step "compute-sanitizer memcheck (GEMM: every variant on 3 shapes, API, batches, tuner)"
  CUFUSE_GEMM_QUICK=1 timeout ${MEMCHECK_TIMEOUT:-300} compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
    $B/test/cufuse_gemm_gpu_tests "[gemm]~[large]~[online]" >"$OUT/logs/memcheck_gemm.log" 2>&1
  rc=$?
  echo "memcheck (gemm) exit $rc"; tail -4 "$OUT/logs/memcheck_gemm.log"
  [ $rc = 0 ] || status=1
  step "compute-sanitizer racecheck (GEMM: every variant, one shape, NN and TT)"
  CUFUSE_GEMM_QUICK=2 timeout ${RACECHECK_TIMEOUT:-240} compute-sanitizer --tool racecheck --error-exitcode 9 \
    $B/test/cufuse_gemm_gpu_tests "[gemm][variants]" >"$OUT/logs/racecheck_gemm.log" 2>&1
  rc=$?
  echo "racecheck (gemm) exit $rc"; tail -3 "$OUT/logs/racecheck_gemm.log"
  [ $rc = 0 ] || status=1
  fi
  if [ "${SANITIZE_ONLY:-}" != gemm ]; then
  step "compute-sanitizer racecheck (device-only and shape cases: the shared-memory tiles)"
  timeout 240 compute-sanitizer --tool racecheck --error-exitcode 9 \
    $B/test/cufuse_gpu_tests "[gpu]~[large],[shapes]" >"$OUT/logs/racecheck.log" 2>&1
  rc=$?
  echo "racecheck exit $rc"; tail -3 "$OUT/logs/racecheck.log"
  [ $rc = 0 ] || status=1
  fi
fi

if [ "$what" = gemm ] || [ "$what" = all ]; then
  step "build cufuse-tune"
  cmake --build $B -j"$jobs" --target cufuse-tune >"$OUT/logs/build-tune.log" 2>&1 ||
    { tail -30 "$OUT/logs/build-tune.log"; exit 1; }
  step "instruction ceilings (mma.sync, FFMA; registers only)"
  cmake --build $B -j"$jobs" --target cufuse_bench_mma_peak >>"$OUT/logs/build-tune.log" 2>&1 &&
    $B/bench/cufuse_bench_mma_peak --json "$OUT/logs/mma_peak.json" | tee "$OUT/mma_peak.md"
  step "GEMM: cufuse-tune --exhaustive vs cuBLAS (same run)"
  timeout 480 $B/src/cufuse-tune --dtypes ${GEMM_DTYPES:-f32,tf32,f16,bf16} --trans ${GEMM_TRANS:-NN,NT} \
    --shapes ${GEMM_SHAPES:-1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x4096x1024,512x4096x4096,128x4096x4096,32x4096x4096,4096x4096x128,128x128x8192} \
    --exhaustive --file "$OUT/logs/tune.db" --json "$OUT/logs/gemm_tune.json" 2>&1 | tee "$OUT/logs/gemm_tune.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  python3 bench/gemm_report.py "$OUT/logs/gemm_tune.json" "$OUT/gemm" >/dev/null || status=1
fi

if [ "$what" = epilogue ]; then
  # GEMM epilogues from expressions: their tests (memcheck and racecheck on a quick subset), the
  # MLP sample, and the benchmark with cuBLAS and PyTorch (eager, torch.compile) in the same run.
  # NO_TESTS=1: the benchmark only (no tests, no sanitizers); BUILD_ONLY=1: build and stop;
  # MLP_ALL=1: the benchmark prints every variant's time (bench/profile_epilogue.sh: one kernel's
  # per-instruction profile); EPI_STAGE_AB=1: the benchmark also runs with CUFUSE_GEMM_EPI_STAGE=0
  # (residuals read from global memory) first, into logs/mlp_bench_nostage.log; EPI_MEMCHECK,
  # EPI_RACECHECK: the sanitizers' test filters.
  step "build epilogue tests, sample, benchmark"
  targets=(cufuse_bench_mlp)
  [ -z "${NO_TESTS:-}" ] && targets+=(cufuse_gemm_epilogue_tests transformer_mlp)
  build_targets epilogue "${targets[@]}"
  grep -E "warning" "$OUT/logs/build-epilogue.log" | head -5
  [ -n "${BUILD_ONLY:-}" ] && exit $status
  if [ -z "${NO_TESTS:-}" ]; then
    step "epilogue tests"
    $B/test/cufuse_gemm_epilogue_tests "[epilogue]" 2>&1 | tail -15 | tee "$OUT/epilogue_tests.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    $B/samples/transformer_mlp | tee -a "$OUT/epilogue_tests.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
  fi
  if [ -z "${NO_SANITIZE:-}" ] && [ -z "${NO_TESTS:-}" ]; then
    step "compute-sanitizer memcheck / racecheck (epilogues: aux output, batches, activations)"
    timeout ${MEMCHECK_TIMEOUT:-200} compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
      $B/test/cufuse_gemm_epilogue_tests "${EPI_MEMCHECK:-*auxiliary*,*batches*,*relu*,*residual*}" >"$OUT/logs/memcheck_epi.log" 2>&1
    rc=$?; echo "memcheck (epilogue) exit $rc"; tail -3 "$OUT/logs/memcheck_epi.log"; [ $rc = 0 ] || status=1
    timeout ${RACECHECK_TIMEOUT:-150} compute-sanitizer --tool racecheck --error-exitcode 9 \
      $B/test/cufuse_gemm_epilogue_tests "${EPI_RACECHECK:-*auxiliary*,*residual*}" >"$OUT/logs/racecheck_epi.log" 2>&1
    rc=$?; echo "racecheck (epilogue) exit $rc"; tail -3 "$OUT/logs/racecheck_epi.log"; [ $rc = 0 ] || status=1
  fi
  if [ -z "${NO_BENCH:-}" ]; then
    step "MLP / epilogue benchmark (cuBLAS in the same run)"
    if [ -n "${EPI_STAGE_AB:-}" ]; then
      # The same benchmark with the residual read from global memory (no staging), first
      # (EPI_STAGE_AB_ARGS: its arguments, default --quick: the two single-GEMM bf16 rows).
      CUFUSE_GEMM_EPI_STAGE=0 $B/bench/cufuse_bench_mlp ${EPI_STAGE_AB_ARGS:---quick} --out "$OUT/logs/mlp_cufuse_nostage.json" \
        >"$OUT/logs/mlp_bench_nostage.log" 2>&1 || status=1
    fi
    $B/bench/cufuse_bench_mlp ${MLP_ARGS:-} --out "$OUT/logs/mlp_cufuse.json" | tee "$OUT/logs/mlp_bench.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    if [ -z "${NO_TORCH:-}" ]; then
      step "PyTorch eager + torch.compile (MLP)"
      PYTHONUNBUFFERED=1 timeout 300 python3 bench/torch_mlp.py ${MLP_ARGS:-} --out "$OUT/logs/mlp_torch.json" \
        >"$OUT/logs/mlp_torch.log" 2>&1 || { echo "torch mlp bench failed:"; tail -5 "$OUT/logs/mlp_torch.log"; }
    fi
    python3 bench/mlp_report.py "$OUT/logs/mlp_cufuse.json" "$OUT/logs/mlp_torch.json" "$OUT/mlp"
  fi
fi

if [ "$what" = anyshape ]; then
  # GEMM at any alignment: the GEMM tests (every variant, the any-alignment tensor-core tiles and
  # the packing variants on odd shapes and offsets), memcheck / racecheck on them, and the
  # benchmark against cuBLAS. ANYSHAPE_EPILOGUE=1: the expression-epilogue tests too (a longer
  # build). BUILD_ONLY=1: stop after the build (a cold build may need a call of its own);
  # NO_TESTS=1: no test run (the sanitizers and the benchmark only).
  step "build GEMM tests + any-shape benchmark"
  targets=(cufuse_gemm_gpu_tests cufuse_gemm_host_tests cufuse_bench_any_shape)
  [ -n "${ANYSHAPE_EPILOGUE:-}" ] && targets+=(cufuse_gemm_epilogue_tests)
  build_targets anyshape "${targets[@]}"
  [ -n "${BUILD_ONLY:-}" ] && exit 0
  if [ -z "${NO_TESTS:-}" ]; then
    step "GEMM tests"
    gemm_tests anyshape_tests.log "[gemm]~[large]~[online]" ${ANYSHAPE_EPILOGUE:-}
  fi
  if [ -z "${NO_SANITIZE:-}" ]; then
    step "compute-sanitizer memcheck / racecheck (the any-alignment tiles and the packing variants)"
    gemm_sanitize anyshape "*any alignment*,*packing*" "*any alignment*,*packing*"
  fi
  if [ -z "${NO_BENCH:-}" ]; then
    step "any-shape GEMM benchmark (cuBLAS in the same run)"
    $B/bench/cufuse_bench_any_shape --out "$OUT/any_shape.json" ${ANYSHAPE_ARGS:-} 2>"$OUT/logs/any_shape_progress.log" | tee "$OUT/any_shape.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
  fi
fi

if [ "$what" = smallm ]; then
  # GEMM with M <= 128 (issue: GEMM at any shape): the GEMM tests (every variant, the cluster
  # split-K tiles batched), memcheck / racecheck on the batched cases, then cufuse-tune
  # --exhaustive on M = 16..128 x N = K = 4096 / 8192, bf16 and fp32, with cuBLAS and the
  # static heuristic's pick in the same run (bench/small_m_report.py). BUILD_ONLY, NO_TESTS,
  # NO_SANITIZE as in anyshape; SMALLM_SHAPES / SMALLM_DTYPES override the problems,
  # SMALLM_MEMCHECK / SMALLM_RACECHECK the sanitizers' test filters,
  # SMALLM_TESTS the GPU test filter; SMALLM_EPILOGUE=1 builds and runs the epilogue tests too.
  step "build GEMM tests + cufuse-tune"
  targets=(cufuse_gemm_gpu_tests cufuse_gemm_host_tests cufuse-tune)
  [ -n "${SMALLM_EPILOGUE:-}" ] && targets+=(cufuse_gemm_epilogue_tests)
  build_targets smallm "${targets[@]}"
  [ -n "${BUILD_ONLY:-}" ] && exit 0
  if [ -z "${NO_TESTS:-}" ]; then
    step "GEMM tests"
    gemm_tests smallm_tests.log "${SMALLM_TESTS:-[gemm]~[large]~[online]}" ${SMALLM_EPILOGUE:-}
  fi
  if [ -z "${NO_SANITIZE:-}" ]; then
    # Batched GEMM runs the cluster split-K tiles; every fp32 SIMT variant the split-K ones.
    # (Catch splits filters at commas, so no test name with a comma goes here.)
    step "compute-sanitizer memcheck / racecheck (batched GEMM: the cluster split-K tiles; SIMT)"
    gemm_sanitize smallm "${SMALLM_MEMCHECK:-gemm_batched*,*every fp32 SIMT variant*}" \
      "${SMALLM_RACECHECK:-gemm_batched*}"
  fi
  if [ -z "${NO_BENCH:-}" ]; then
    step "small-M GEMM: cufuse-tune --exhaustive vs cuBLAS and the heuristic (same run)"
    timeout ${SMALLM_TIMEOUT:-420} $B/src/cufuse-tune --dtypes ${SMALLM_DTYPES:-bf16,f32} --trans NN \
      --shapes ${SMALLM_SHAPES:-16x4096x4096,32x4096x4096,64x4096x4096,128x4096x4096,16x8192x8192,32x8192x8192,64x8192x8192,128x8192x8192,256x4096x4096,512x4096x4096} \
      --exhaustive --file "$OUT/logs/smallm.db" --json "$OUT/small_m.json" 2>&1 | tee "$OUT/logs/smallm_tune.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    python3 bench/small_m_report.py "$OUT/small_m.json" | tee "$OUT/small_m.md"
  fi
fi

if [ "$what" = online ]; then
  # Online tuning from an empty tuner in four synchronization patterns (one process each), the
  # issue's four keys, against the chosen variant and cuBLAS issued the same way
  # (bench/online_bench.cu).
  step "build online-tuning benchmark"
  build_targets online cufuse_bench_online
  step "online tuning: calls to commit, regret against the chosen variant, the exhaustive best"
  rm -f "$OUT/online.jsonl"
  # The issue's keys: bf16 -> fp32 and bf16 -> bf16 4096^3, bf16 8192x1024x4096, fp32 4096^3.
  for key in "--dtype bf16 --out-dtype f32" "--dtype bf16" "--dtype bf16 --m 8192 --n 1024 --k 4096" \
             "--dtype f32"; do
    for pat in b2b sync1 sync10 burst300; do
      env -u CUFUSE_TUNE_FILE $B/bench/cufuse_bench_online --pattern $pat $key \
        --calls ${ONLINE_CALLS:-1000} --out "$OUT/online.jsonl" 2>&1 | tee -a "$OUT/online.log"
      [ "${PIPESTATUS[0]}" = 0 ] || status=1
    done
  done
fi

if [ "$what" = conv ]; then
  # conv2d: its tests and samples, the GEMM epilogue tests and the tuning tool (ctest), memcheck
  # and racecheck of the conv tests, then the benchmark with cuDNN / PyTorch in the same run.
  step "build conv + epilogue tests, samples, tool, benchmark"
  # CONV_TARGETS: fewer targets for a quicker cold build (e.g. without the epilogue tests).
  cmake --build $B -j"$jobs" --target ${CONV_TARGETS:-cufuse_conv_gpu_tests cufuse_gemm_host_tests conv2d \
    resnet_block cufuse_gemm_epilogue_tests cufuse-tune cufuse_bench_conv} >"$OUT/logs/build-conv.log" 2>&1 ||
    { tail -30 "$OUT/logs/build-conv.log"; exit 1; }
  grep -E "warning" "$OUT/logs/build-conv.log" | head -5
  step "ctest (conv, epilogues, tools)"
  ctest --test-dir $B --output-on-failure -j4 -R "${CONV_CTEST:-conv|resnet|epilogue|tool}" 2>&1 |
    tee "$OUT/ctest_conv.log" | tail -25
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  if [ -z "${NO_SANITIZE:-}" ]; then
    step "compute-sanitizer memcheck / racecheck (conv)"
    timeout ${MEMCHECK_TIMEOUT:-200} compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
      $B/test/cufuse_conv_gpu_tests "*bf16*,*fused*,*views*,*halo*" >"$OUT/logs/memcheck_conv.log" 2>&1
    rc=$?; echo "memcheck (conv) exit $rc"; tail -3 "$OUT/logs/memcheck_conv.log"; [ $rc = 0 ] || status=1
    timeout ${RACECHECK_TIMEOUT:-150} compute-sanitizer --tool racecheck --error-exitcode 9 \
      $B/test/cufuse_conv_gpu_tests "*fused*,*halo*" >"$OUT/logs/racecheck_conv.log" 2>&1
    rc=$?; echo "racecheck (conv) exit $rc"; tail -3 "$OUT/logs/racecheck_conv.log"; [ $rc = 0 ] || status=1
  fi
  if [ -z "${NO_BENCH:-}" ]; then
    step "conv benchmark"
    timeout 240 $B/bench/cufuse_bench_conv --out "$OUT/logs/conv_cufuse.json" | tee "$OUT/logs/conv_bench.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    if [ -z "${NO_TORCH:-}" ]; then
      step "cuDNN / PyTorch eager + torch.compile (conv)"
      PYTHONUNBUFFERED=1 timeout 240 python3 bench/torch_conv.py --out "$OUT/logs/conv_torch.json" \
        >"$OUT/logs/conv_torch.log" 2>&1 || { echo "torch conv bench failed:"; tail -5 "$OUT/logs/conv_torch.log"; }
    fi
    python3 bench/conv_report.py "$OUT/logs/conv_cufuse.json" "$OUT/logs/conv_torch.json" "$OUT/conv.md"
  fi
fi

if [ "$what" = staged ]; then
  # The forms behind macros other than the default (-DCUFUSE_BUILD_STAGED=ON; bench/JOURNAL.md
  # e8): the expression epilogue with a wgmma kernel per layout. Its tests, the MLP benchmark
  # against the default build in the same run (alternating, STAGED_ROUNDS each), sanitizers.
  # STAGED_PARTS picks the parts (default: tests mlp sanitize).
  parts=${STAGED_PARTS:-tests mlp sanitize}
  rounds=${STAGED_ROUNDS:-2}
  build_targets staged cufuse_gemm_epilogue_per_layout_tests cufuse_bench_mlp cufuse_bench_mlp_per_layout
  if [[ " $parts " == *" tests "* ]]; then
    step "per-layout epilogue tests"
    $B/test/cufuse_gemm_epilogue_per_layout_tests "[epilogue]" 2>&1 | tail -6 | tee "$OUT/staged_tests.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
  fi
  if [[ " $parts " == *" mlp "* ]]; then
    for r in $(seq "$rounds"); do
      step "MLP benchmark, round $r: default (one kernel for the layouts), then a kernel per layout"
      $B/bench/cufuse_bench_mlp --small --out "$OUT/logs/mlp_default_$r.json" >"$OUT/logs/mlp_default_$r.log" 2>&1 || status=1
      $B/bench/cufuse_bench_mlp_per_layout --small --out "$OUT/logs/mlp_staged_$r.json" >"$OUT/logs/mlp_staged_$r.log" 2>&1 || status=1
    done
    python3 bench/ab_rows.py --a "$OUT"/logs/mlp_default_*.json --b "$OUT"/logs/mlp_staged_*.json \
      --names one_kernel,per_layout | tee "$OUT/staged_mlp.md"
  fi
  if [[ " $parts " == *" sanitize "* ]]; then
    step "compute-sanitizer memcheck / racecheck (per-layout epilogue tests)"
    for tool in memcheck racecheck; do
      filter='*auxiliary*,*batches*,*relu*,*residual*'
      [ $tool = racecheck ] && filter='*auxiliary*,*residual*'
      timeout ${SANITIZE_TIMEOUT:-150} compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 20 \
        $B/test/cufuse_gemm_epilogue_per_layout_tests "$filter" >"$OUT/logs/${tool}_staged.log" 2>&1
      rc=$?
      echo "$tool exit $rc: $(tail -1 "$OUT/logs/${tool}_staged.log")" | tee -a "$OUT/staged_sanitize.log"
      [ $rc = 0 ] || status=1
    done
  fi
fi

if [ "$what" = sustained ]; then
  # Sustained throughput (seconds per contender, power-limited clocks): cuBLAS, the best
  # mma.sync and wgmma tiles of the tuner's runs, and the FP32 SIMT tile.
  step "build the sustained GEMM benchmark"
  cmake --build $B -j"$jobs" --target cufuse_bench_gemm_sustained >"$OUT/logs/build-sustained.log" 2>&1 ||
    { tail -30 "$OUT/logs/build-sustained.log"; exit 1; }
  step "GEMM: sustained, cuBLAS in the same run"
  v=sm80_f32_simt_256x128x8_t16x8_v4_s3,sm80_tf32_mma_128x256x32_w2x4_s3,sm90a_tf32_mma_128x256x32_w2x4_s4_tma
  v=$v,sm90a_tf32_wgmma_128x256x32_wg2_s4_tma
  for t in f16 bf16; do v=$v,sm80_${t}_mma_256x128x64_w4x2_s3,sm90a_${t}_wgmma_128x256x64_wg2_s4_tma; done
  $B/bench/cufuse_bench_gemm_sustained --variants "$v" --dtypes ${SUSTAINED_DTYPES:-f32,tf32,f16,bf16} \
    --trans ${SUSTAINED_TRANS:-NN,NT} --shapes ${SUSTAINED_SHAPES:-4096x4096x4096,8192x8192x8192} \
    --seconds ${SUSTAINED_SECONDS:-3} --rounds ${SUSTAINED_ROUNDS:-2} --json "$OUT/gemm_sustained.json" |
    tee "$OUT/logs/sustained.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  python3 bench/sustained_report.py "$OUT/gemm_sustained" "$OUT/gemm_sustained.json" || status=1
fi

if [ "$what" = sweep ]; then
  cmake --build $B -j"$jobs" --target cufuse_bench_elementwise >"$OUT/logs/build-bench.log" 2>&1 ||
    { tail -30 "$OUT/logs/build-bench.log"; exit 1; }
  for w in ${WAVES_SWEEP:-0 16}; do
    step "waves sweep: CUFUSE_EVAL_WAVES=$w"
    CUFUSE_EVAL_WAVES=$w $B/bench/cufuse_bench_elementwise --min-log2 26 \
      --out "$OUT/logs/waves_$w.json" | grep -E "^check" | head -1
  done
  python3 bench/waves_table.py "$OUT"/logs/waves_*.json | tee "$OUT/logs/waves.md"
fi

if [ "$what" = shapes ] || [ "$what" = all ]; then
  # N-d shapes: the shape test suites (host and GPU, memcheck and racecheck on the GPU one), the
  # shapes benchmark and its PyTorch peers in the same run.
  step "build shape tests + bench"
  cmake --build $B -j"$jobs" --target cufuse_gpu_tests cufuse_host_tests cufuse_bench_shapes \
    >"$OUT/logs/build-shapes.log" 2>&1 || { tail -30 "$OUT/logs/build-shapes.log"; exit 1; }
  step "shape tests"
  $B/test/cufuse_host_tests "[shapes]" 2>&1 | tail -3 | tee "$OUT/logs/shapes_host.log"
  $B/test/cufuse_gpu_tests "[shapes],[gpu]" 2>&1 | tail -12 | tee "$OUT/logs/shapes_gpu.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  step "shapes benchmark (C++)"
  $B/bench/cufuse_bench_shapes --out "$OUT/logs/shapes_cufuse.json" 2>&1 | tee "$OUT/logs/shapes_bench.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  if [ -z "${NO_TORCH:-}" ]; then
    step "PyTorch eager + torch.compile (shapes)"
    PYTHONUNBUFFERED=1 timeout 300 python3 bench/torch_shapes.py --out "$OUT/logs/shapes_torch.json" \
      >"$OUT/logs/shapes_torch.log" 2>&1 || { echo "torch shapes bench failed:"; tail -5 "$OUT/logs/shapes_torch.log"; }
  fi
  python3 bench/shapes_report.py "$OUT/logs/shapes_cufuse.json" "$OUT/logs/shapes_torch.json" "$OUT/shapes"
fi

if [ "$what" = reduce ] || [ "$what" = all ]; then
  # Reductions: the reduction suites (host and GPU, memcheck and racecheck on the GPU ones but
  # [large]), the reduction benchmark and its PyTorch peers in the same run. NO_HOST=1 leaves
  # out the host tests (CI runs them).
  step "build reduction tests + bench"
  host_target=cufuse_host_tests
  [ -n "${NO_HOST:-}" ] && host_target=
  cmake --build $B -j"$jobs" --target cufuse_reduce_gpu_tests $host_target cufuse_bench_reduce \
    softmax layernorm graph >"$OUT/logs/build-reduce.log" 2>&1 || { tail -30 "$OUT/logs/build-reduce.log"; exit 1; }
  step "reduction samples"
  for s in softmax layernorm graph; do
    $B/samples/$s >"$OUT/logs/sample_$s.log" 2>&1
    rc=$?
    echo "sample $s exit $rc: $(tail -1 "$OUT/logs/sample_$s.log")"
    [ $rc = 0 ] || status=1
  done
  step "reduction tests"
  [ -z "${NO_HOST:-}" ] && $B/test/cufuse_host_tests "[reduce]" 2>&1 | tail -3 | tee "$OUT/logs/reduce_host.log"
  $B/test/cufuse_reduce_gpu_tests 2>&1 | tail -25 | tee "$OUT/reduce_gpu.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  if [ -z "${NO_SANITIZE:-}" ]; then
    step "memcheck + racecheck (reductions, but [large])"
    timeout ${MEMCHECK_TIMEOUT:-300} compute-sanitizer --tool memcheck --error-exitcode 1 $B/test/cufuse_reduce_gpu_tests "~[large]" \
      >"$OUT/logs/reduce_memcheck.log" 2>&1
    echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY' "$OUT/logs/reduce_memcheck.log" | tail -1)" | tee "$OUT/sanitizers_reduce.log"
    timeout ${RACECHECK_TIMEOUT:-300} compute-sanitizer --tool racecheck --error-exitcode 1 $B/test/cufuse_reduce_gpu_tests "~[large]" \
      >"$OUT/logs/reduce_racecheck.log" 2>&1
    echo "racecheck rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/logs/reduce_racecheck.log" | tail -1)" | tee -a "$OUT/sanitizers_reduce.log"
  fi
  if [ -z "${NO_BENCH:-}" ]; then
  step "reduction benchmark (C++)"
  $B/bench/cufuse_bench_reduce --out "$OUT/logs/reduce_cufuse.json" 2>&1 | tee "$OUT/logs/reduce_bench.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  if [ -z "${NO_TORCH:-}" ]; then
    step "PyTorch eager + torch.compile (reductions)"
    PYTHONUNBUFFERED=1 timeout 420 python3 bench/torch_reduce.py --out "$OUT/logs/reduce_torch.json" \
      >"$OUT/logs/reduce_torch.log" 2>&1 || { echo "torch reduce bench failed:"; tail -5 "$OUT/logs/reduce_torch.log"; }
  fi
  python3 bench/shapes_report.py "$OUT/logs/reduce_cufuse.json" "$OUT/logs/reduce_torch.json" "$OUT/reduce" Reductions
  fi
fi

if [ "$what" = memtest ]; then
  # Everything but GEMM and conv (the fusion core, N-d shapes, reductions): its ctest, the
  # reduction samples, memcheck / racecheck of the shape and reduction suites, then the
  # membench tables. NO_TESTS, NO_SANITIZE, NO_BENCH skip parts (the build is kept between
  # calls on a warm machine).
  step "build (no GEMM / conv targets)"
  build_targets memtest cufuse_gpu_tests cufuse_host_tests cufuse_reduce_gpu_tests \
    cufuse_debug_sync_test cufuse_tune_tests cufuse_no_device_test quickstart user_kernel \
    gelu_dropout_scale softmax layernorm graph cufuse_bench_shapes cufuse_bench_reduce
  if [ -z "${NO_TESTS:-}" ]; then
    step "ctest (no GEMM / conv / package)"
    ctest --test-dir $B --output-on-failure -j4 -E "gemm|conv|epilogue|tool|package|resnet|mlp|sample" \
      2>&1 | tee "$OUT/ctest_mem.log" | tail -30
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    for s in quickstart user_kernel gelu_dropout_scale softmax layernorm graph; do
      $B/samples/$s >"$OUT/logs/sample_$s.log" 2>&1
      rc=$?; echo "sample $s exit $rc: $(tail -1 "$OUT/logs/sample_$s.log")" | tee -a "$OUT/ctest_mem.log"
      [ $rc = 0 ] || status=1
    done
  fi
  if [ -z "${NO_SANITIZE:-}" ]; then
    step "memcheck / racecheck (shapes, device-only, reductions but [large])"
    for tool in memcheck racecheck; do
      timeout ${SAN_TIMEOUT:-240} compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 20 \
        $B/test/cufuse_gpu_tests "[shapes],[gpu]~[large]~[oom]" >"$OUT/logs/${tool}_shapes.log" 2>&1
      rc=$?; echo "$tool shapes exit $rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/logs/${tool}_shapes.log" | tail -1)" | tee -a "$OUT/sanitizers_mem.log"
      [ $rc = 0 ] || status=1
      timeout ${SAN_TIMEOUT:-240} compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 20 \
        $B/test/cufuse_reduce_gpu_tests "~[large]" >"$OUT/logs/${tool}_reduce.log" 2>&1
      rc=$?; echo "$tool reduce exit $rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/logs/${tool}_reduce.log" | tail -1)" | tee -a "$OUT/sanitizers_mem.log"
      [ $rc = 0 ] || status=1
    done
  fi
  [ -n "${NO_BENCH:-}" ] && exit $status
  what=membench
  SKIP_MEMBENCH_BUILD=1
fi

if [ "$what" = membench ]; then
  # The shapes and reduction benchmarks alone (no tests), with their PyTorch peers: a quick
  # same-run table of every memory-bound row (NO_TORCH skips the peers; BUILD_ONLY=1 builds and
  # stops, e.g. for bench/profile_reduce.sh).
  if [ -z "${SKIP_MEMBENCH_BUILD:-}" ]; then
    step "build shapes + reduction benchmarks"
    build_targets membench cufuse_bench_shapes cufuse_bench_reduce
  fi
  [ -n "${BUILD_ONLY:-}" ] && exit 0
  for b in shapes reduce; do
    step "$b benchmark (C++)"
    $B/bench/cufuse_bench_$b --out "$OUT/logs/${b}_cufuse.json" 2>&1 | tee "$OUT/logs/${b}_bench.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
    if [ -z "${NO_TORCH:-}" ]; then
      step "PyTorch eager + torch.compile ($b)"
      PYTHONUNBUFFERED=1 timeout 420 python3 bench/torch_$b.py --out "$OUT/logs/${b}_torch.json" \
        >"$OUT/logs/${b}_torch.log" 2>&1 || { echo "torch $b bench failed:"; tail -5 "$OUT/logs/${b}_torch.log"; }
    fi
  done
  python3 bench/shapes_report.py "$OUT/logs/shapes_cufuse.json" "$OUT/logs/shapes_torch.json" "$OUT/shapes"
  python3 bench/shapes_report.py "$OUT/logs/reduce_cufuse.json" "$OUT/logs/reduce_torch.json" "$OUT/reduce" Reductions
fi

if [ "$what" = bench ] || [ "$what" = all ]; then
  step "build bench + samples"
  cmake --build $B -j"$jobs" --target cufuse_bench_elementwise quickstart user_kernel \
    gelu_dropout_scale >"$OUT/logs/build-bench.log" 2>&1 || { tail -30 "$OUT/logs/build-bench.log"; exit 1; }
  step samples
  for s in quickstart user_kernel gelu_dropout_scale; do
    $B/samples/$s || status=1
  done 2>&1 | tee "$OUT/logs/samples.log"
  step "elementwise benchmark (C++)"
  $B/bench/cufuse_bench_elementwise --out "$OUT/logs/cufuse.json" 2>&1 | tee "$OUT/logs/bench.log"
  step "PyTorch eager + torch.compile"
  PYTHONUNBUFFERED=1 timeout 300 python3 bench/torch_bench.py --out "$OUT/logs/torch.json" \
    >"$OUT/logs/torch.log" 2>&1 || { echo "torch bench failed:"; tail -5 "$OUT/logs/torch.log"; }
  if [ -n "${WAVES_SWEEP:-}" ]; then
    for w in $WAVES_SWEEP; do
      step "waves sweep: CUFUSE_EVAL_WAVES=$w"
      CUFUSE_EVAL_WAVES=$w $B/bench/cufuse_bench_elementwise --min-log2 24 \
        --out "$OUT/logs/waves_$w.json" | grep -E "^check" | head -1
    done
    python3 bench/waves_table.py "$OUT"/logs/waves_*.json | tee "$OUT/logs/waves.md"
  fi
  step report
  python3 bench/report.py "$OUT/logs/cufuse.json" "$OUT/logs/torch.json" "$OUT/elementwise"
fi
exit $status
