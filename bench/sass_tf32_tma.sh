#!/usr/bin/env bash
# Dump the SASS of the TF32 TMA mma kernels' main loops (session 15).
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
prefix=(); [ -d .deps/catch2/usr ] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.deps/catch2/usr")
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUFUSE_BUILD_BENCH=ON "${prefix[@]}" >/dev/null 2>&1
cmake --build build-gpu -j"$(nproc)" --target cufuse-tune >/dev/null 2>&1 || exit 1
obj=$(find build-gpu -name 'variants_tf32_tma.cu.o' | head -1)
cuobjdump -sass "$obj" > "$OUT/tma.sass" 2>&1
obj2=$(find build-gpu -name 'variants_tf32.cu.o' | head -1)
cuobjdump -sass -arch sm_90 "$obj2" > "$OUT/old.sass" 2>&1 || cuobjdump -sass "$obj2" > "$OUT/old.sass" 2>&1
gzip -f "$OUT/tma.sass" "$OUT/old.sass"; ls -la "$OUT"
