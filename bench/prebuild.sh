#!/usr/bin/env bash
# Builds, on this machine (no GPU needed; nvcc as on the GPU machine), the executables whose
# files take longest to compile, and packs them for the GPU machine:
#   bash bench/prebuild.sh [PATH ...]      (from the repository root)
#   then run there: PREBUILT_TGZ=build-pre/prebuilt.tgz bash bench/verify_gpu.sh build
#   with carry ["build-pre/prebuilt.tgz", ".deps"].
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
tar czf "$B/prebuilt.tgz" -C "$B" "${paths[@]}"
size=$(stat -c %s "$B/prebuilt.tgz")
echo "$B/prebuilt.tgz: $((size / 1048576)) MiB"
[ "$size" -le $((64 * 1048576)) ] || echo "more than the 64 MiB a device call carries: pack fewer" >&2
