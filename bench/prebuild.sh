#!/usr/bin/env bash
# Builds, on this machine (no GPU needed; nvcc as on the GPU machine), the executables whose
# files take longest to compile, and packs them for the GPU machine:
#   bash bench/prebuild.sh [PATH ...]      (from the repository root)
#   then run there: PREBUILT_TGZ=build-pre/prebuilt.tar.xz bash bench/verify_gpu.sh build
#   with carry ["build-pre/prebuilt.tar.xz", ".deps"].
# PATHs are outputs relative to the build folder (default: the long poles of a whole build on
# the GPU machine, bench/verify_gpu.sh). BUILD_DIR (build-pre), EXTRA_CMAKE_ARGS (e.g.
# -DCUFUSE_BUILD_STAGED=ON). The device tool carries at most 64 MiB per call.
set -euo pipefail
B=${BUILD_DIR:-build-pre}
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(test/cufuse_gemm_epilogue_tests test/cufuse_conv_gpu_tests
  samples/resnet_block samples/transformer_mlp)
prefix=()
[ -d .deps/catch2/usr ] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.deps/catch2/usr")
# shellcheck disable=SC2086 # EXTRA_CMAKE_ARGS: several arguments
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release "${prefix[@]}" ${EXTRA_CMAKE_ARGS:-} >/dev/null
start=$(date +%s)
ninja -C "$B" "${paths[@]}"
echo "built in $(($(date +%s) - start)) s"
# xz: the GEMM and epilogue executables take 15 MiB this way, 91 MiB through gzip.
# PACK_CTEST=1: the CTest files too (bench/ctest_prebuilt.sh runs them there).
if [ -n "${PACK_CTEST:-}" ]; then
  while IFS= read -r f; do paths+=("$f"); done < <(cd "$B" && find . -name CTestTestfile.cmake | sed 's|^\./||')
fi
tar cf - -C "$B" "${paths[@]}" | xz -T0 --lzma2=preset=6,dict=256MiB >"$B/prebuilt.tar.xz"
size=$(stat -c %s "$B/prebuilt.tar.xz")
echo "$B/prebuilt.tar.xz: $((size / 1048576)) MiB"
[ "$size" -le $((64 * 1048576)) ] || echo "more than the 64 MiB a device call carries: pack fewer" >&2
