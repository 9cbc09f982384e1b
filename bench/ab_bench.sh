#!/bin/bash
# A header-only benchmark, old against new in one run: built from the last commit's include tree
# (.ab/old/include, made by `git archive HEAD include | tar -x -C .ab/old`) and from the working
# tree with each set of defines, run one after the other; SASS of the first new build to $OUT.
#   BENCH=shapes_bench bash bench/ab_bench.sh [variant-defines...]     (default BENCH=reduce_bench)
# AB_PHASE=build or run does one half (to build alongside other work, then time on a quiet host).
set -u
PHASE=${AB_PHASE:-all}
OUT=${OUT:-$PWD/gpu-out}
BENCH=${BENCH:-reduce_bench}
mkdir -p "$OUT"
F="-std=c++20 --extended-lambda -O3 -gencode arch=compute_90a,code=sm_90a -Ibench"
if [ "$PHASE" != run ]; then
nvcc $F -I.ab/old/include "bench/$BENCH.cu" -o /tmp/ab_old >"$OUT/b_old.log" 2>&1 &
i=0
for d in "" "$@"; do
  nvcc $F -Iinclude $d "bench/$BENCH.cu" -o /tmp/ab_new$i >"$OUT/b_new$i.log" 2>&1 &
  i=$((i + 1))
done
wait
cuobjdump -sass /tmp/ab_new0 | gzip >"$OUT/all.sass.gz"
fi
[ "$PHASE" = build ] && exit 0
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
echo "=== old"; /tmp/ab_old --out "$OUT/old.json" 2>&1
i=0
for d in "" "$@"; do echo "=== new$i $d"; /tmp/ab_new$i --out "$OUT/new$i.json" 2>&1; i=$((i + 1)); done
