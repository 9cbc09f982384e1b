#!/usr/bin/env bash
# CTest on the GPU machine over executables built on another machine, for the tests whose
# executables were carried (the device tool's calls are too short for the whole build there).
#   here:  PACK_CTEST=1 BUILD_DIR=build-x bash bench/prebuild.sh test/cufuse_gemm_gpu_tests ...
#          (packs the CTestTestfile.cmake files with the executables)
#   there: PRE=pre FROM_BUILD=/abs/build-x FROM_SRC=/abs/src bash bench/ctest_prebuilt.sh REGEX
#          after `mkdir -p pre && tar xJf build-x/prebuilt.tar.xz -C pre` (carry it)
# The CTest files name the build and source folders of the machine that built them; they are
# rewritten to PRE and this checkout. Runs `ctest -R REGEX` (default: the GEMM, conv, sample and
# tool tests; NO_CTEST=1 skips it), then memcheck and racecheck on the test cases SAN_CASES
# names (NO_SANITIZE=1 skips them; SAN_TIMEOUT seconds each). The summary goes to $OUT/ctest.log, logs to $OUT/logs.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
P=$(cd "${PRE:-pre}" && pwd)
FIN=${OUT:-$PWD/gpu-out}
L=$FIN/logs
mkdir -p "$L"
trap 'tar -czf "$FIN/logs.tar.gz" -C "$FIN" logs && rm -rf "$L"' EXIT
: "${FROM_BUILD:?the build folder the CTest files name}" "${FROM_SRC:?the source folder they name}"
status=0
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$L/device.txt"
find "$P" -name CTestTestfile.cmake -exec sed -i "s|$FROM_BUILD|$P|g; s|$FROM_SRC|$PWD|g" {} +
# (The compile-fail tests need CMake at the configured path: CI runs them.)
regex=${1:-gemm|conv|mlp|resnet|tool}
if [ -z "${NO_CTEST:-}" ]; then
  # shellcheck disable=SC2086 # CTEST_ARGS: several arguments
  (cd "$P" && timeout "${CTEST_TIMEOUT:-400}" ctest --output-on-failure -R "$regex" -E compile_fail ${CTEST_ARGS:-}) 2>&1 |
    tee "$FIN/ctest.log" | tail -30
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ -z "${NO_SANITIZE:-}" ]; then
  # SAN_CASES: "executable|test spec" pairs, `;`-separated.
  IFS=';' read -r -a cases <<<"${SAN_CASES:-test/cufuse_gemm_gpu_tests|[gemm][variants]}"
  for c in "${cases[@]}"; do
    exe=${c%%|*} spec=${c#*|}
    name=$(basename "$exe")
    for tool in memcheck racecheck; do
      # The GEMM tests' shapes: three under memcheck, one under racecheck (test/gpu/test_gemm.cu).
      quick=$([ $tool = memcheck ] && echo 1 || echo 2)
      CUFUSE_GEMM_QUICK=$quick timeout "${SAN_TIMEOUT:-120}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
        --print-limit 20 "$P/$exe" "$spec" >"$L/${tool}_$name.log" 2>&1
      rc=$?
      [ $rc = 0 ] || status=1
      echo "$tool $name $spec exit $rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/${tool}_$name.log" | tail -1) | $(tail -2 "$L/${tool}_$name.log" | head -1)" |
        tee -a "$FIN/sanitizers.txt"
    done
  done
fi
exit $status
