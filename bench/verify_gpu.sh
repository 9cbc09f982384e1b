#!/usr/bin/env bash
# Verifies a change to the GEMM kernels on a GPU machine in two calls of at most 10 minutes each
# (the device tool's limit), keeping the build between them:
#   bash bench/verify_gpu.sh build   build everything (libcufuse's build timed), then ctest;
#                                    PREBUILT_TGZ=path: executables built on another machine
#                                    from the same tree (same nvcc, sm_90a; paths relative to the
#                                    build folder, e.g. the epilogue tests, whose files take
#                                    longer to compile than one call allows) are unpacked into
#                                    build-gpu and every other target is built here. A whole
#                                    build took ~14 min of the 16-core machine (2026-11); its
#                                    long poles: the epilogue tests, test/gpu/test_conv.cu, the
#                                    resnet_block and transformer_mlp samples, cufuse-tune's
#                                    epilogue files; build and pack those with
#                                    bench/prebuild.sh (64 MiB at most per call)
#   bash bench/verify_gpu.sh ctest   ctest of the build a previous call left (same machine);
#                                    CTEST_ARGS: more ctest arguments (both modes)
#   bash bench/verify_gpu.sh ab      build the BEFORE tree's libcufuse (timed) and cufuse-tune,
#                                    same-run A/B of every GEMM variant (bench/ab_report.py),
#                                    then memcheck and racecheck of the GEMM tests
#   bash bench/verify_gpu.sh gemm    all in one call, for the GEMM part only: build libcufuse
#                                    (timed), the GEMM and conv tests, samples and tool; their
#                                    ctest; then `ab`
#                                    with one round, racecheck and memcheck in the time left
# BEFORE: the tree before the change (default .ab/before: `git archive <rev> | tar -x -C ...`).
# Environment as bench/ab_gemm.sh: AB_DTYPES, AB_SHAPES, AB_TRANS, ROUNDS.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT/logs"
pack_logs() { tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"; }
trap pack_logs EXIT
what=${1:-build}
jobs=$(nproc)
start=$(date +%s)
left() { echo $((${BUDGET_S:-590} - ($(date +%s) - start))); }
step() { echo "== $1 ($(date +%T), $(left) s left)"; }
prefix=()
[ -d .deps/catch2/usr ] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.deps/catch2/usr")
timed_build() { # dir target log
  local t0 t1
  t0=$(date +%s.%N)
  cmake --build "$1" -j"$jobs" --target "$2" >>"$3" 2>&1 || { tail -30 "$3"; exit 1; }
  t1=$(date +%s.%N)
  python3 -c "print(round($t1 - $t0, 1))"
}
# The device, the configuration of build-gpu and libcufuse's build (timed).
configure_and_build_lib() {
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader |
    tee "$OUT/logs/device.txt"
  step configure
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release "${prefix[@]}" \
    >"$OUT/logs/configure.log" 2>&1 || { tail -20 "$OUT/logs/configure.log"; exit 1; }
  step "build libcufuse"
  echo "libcufuse build (after, $jobs jobs): $(timed_build build-gpu cufuse_gemm "$OUT/logs/build.log") s" |
    tee -a "$OUT/build_times.txt"
}
status=0

if [ "$what" = gemm ]; then
  configure_and_build_lib
  step "build the GEMM tests and samples"
  cmake --build build-gpu -j"$jobs" --target cufuse-tune cufuse_gemm_host_tests cufuse_gemm_gpu_tests \
    cufuse_gemm_epilogue_tests cufuse_conv_gpu_tests gemm_sample transformer_mlp resnet_block \
    >>"$OUT/logs/build.log" 2>&1 ||
    { tail -30 "$OUT/logs/build.log"; exit 1; }
  grep -i "warning" "$OUT/logs/build.log" | head -5
  step "ctest (GEMM)"
  timeout "$(left)" ctest --test-dir build-gpu --output-on-failure -j4 -R "gemm|mlp|conv|resnet|tool" 2>&1 |
    tee "$OUT/ctest.log" | tail -25
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  what=ab
  ROUNDS=${ROUNDS:-1}
fi

if [ "$what" = build ]; then
  configure_and_build_lib
  step "build everything"
  if [ -n "${PREBUILT_TGZ:-}" ]; then
    tar xf "$PREBUILT_TGZ" -C build-gpu
    tar tf "$PREBUILT_TGZ" | tee "$OUT/logs/prebuilt.txt"
    # Every target of the build but the carried ones (ninja builds a file's target only when asked).
    targets=$(for d in samples src test; do
      ninja -C build-gpu -t query "$d/all" | sed -n '/input:/,/outputs:/p' | sed '1d;$d' |
        sed 's/^ *//; s/^|| *//; s/^| *//'
    done | sort -u | grep -v -x -F -f "$OUT/logs/prebuilt.txt")
    cmake --build build-gpu -j"$jobs" --target $targets >>"$OUT/logs/build.log" 2>&1 ||
      { tail -30 "$OUT/logs/build.log"; exit 1; }
  else
    cmake --build build-gpu -j"$jobs" >>"$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
  fi
  grep -i "warning" "$OUT/logs/build.log" | head -5
  what=ctest
fi

if [ "$what" = ctest ]; then
  step ctest
  # shellcheck disable=SC2086 # CTEST_ARGS: several arguments (e.g. -E gemm_large)
  timeout "$(left)" ctest --test-dir build-gpu --output-on-failure -j4 ${CTEST_ARGS:-} 2>&1 |
    tee "$OUT/ctest.log" | tail -25
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

if [ "$what" = ab ]; then
  before=${BEFORE:-.ab/before}
  step "build the before tree"
  cmake -S "$before" -B build-ab-before -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUFUSE_BUILD_TESTS=OFF \
    -DCUFUSE_BUILD_SAMPLES=OFF >"$OUT/logs/configure-before.log" 2>&1 ||
    { tail -20 "$OUT/logs/configure-before.log"; exit 1; }
  echo "libcufuse build (before, $jobs jobs): $(timed_build build-ab-before cufuse_gemm "$OUT/logs/build-before.log") s" |
    tee -a "$OUT/build_times.txt"
  timed_build build-ab-before cufuse-tune "$OUT/logs/build-before.log" >/dev/null
  for r in $(seq 1 "${ROUNDS:-2}"); do
    for tree in before after; do
      step "A/B round $r: $tree"
      tune=$([ $tree = before ] && echo build-ab-before/src/cufuse-tune || echo build-gpu/src/cufuse-tune)
      timeout 120 "$tune" --dtypes "${AB_DTYPES:-f32,tf32,bf16}" --trans "${AB_TRANS:-NN}" \
        --shapes "${AB_SHAPES:-4096x4096x4096,128x4096x4096}" --exhaustive --no-cublas \
        --file "/tmp/ab-$tree.db" --json "$OUT/logs/ab_${tree}_$r.json" \
        >"$OUT/logs/ab_${tree}_$r.log" 2>&1 || { echo "cufuse-tune ($tree) failed"; tail -5 "$OUT/logs/ab_${tree}_$r.log"; }
    done
  done
  python3 bench/ab_report.py "$OUT/logs" "$OUT/ab_gemm" | tail -40
  step "compute-sanitizer racecheck (GEMM: every variant, one shape, NN and TT)"
  CUFUSE_GEMM_QUICK=2 timeout $(($(left) * 6 / 10)) compute-sanitizer --tool racecheck \
    --error-exitcode 9 build-gpu/test/cufuse_gemm_gpu_tests "[gemm][variants]" \
    >"$OUT/logs/racecheck_gemm.log" 2>&1
  echo "racecheck (gemm) exit $?"; tail -3 "$OUT/logs/racecheck_gemm.log" | tee "$OUT/sanitizers.txt"
  step "compute-sanitizer memcheck (GEMM: every variant on 3 shapes, API, batches, tuner)"
  CUFUSE_GEMM_QUICK=1 timeout $(($(left) - 5)) compute-sanitizer --tool memcheck --error-exitcode 9 \
    --print-limit 20 build-gpu/test/cufuse_gemm_gpu_tests "[gemm]~[large]~[online]" \
    >"$OUT/logs/memcheck_gemm.log" 2>&1
  echo "memcheck (gemm) exit $?"; tail -3 "$OUT/logs/memcheck_gemm.log" | tee -a "$OUT/sanitizers.txt"
fi
exit $status
