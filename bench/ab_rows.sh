#!/bin/bash
# The row kernel, old against new in one run: the reduction benchmark built from the last
# commit's include tree (.ab/reduce_old/include, made by `git archive HEAD include`) and from the
# working tree, run one after the other; SASS of the new row kernels to $OUT/rows.sass.
#   bash bench/ab_rows.sh [variant-defines...]
set -u
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
F="-std=c++20 --extended-lambda -O3 -gencode arch=compute_90a,code=sm_90a -Ibench"
nvcc $F -I.ab/reduce_old/include bench/reduce_bench.cu -o /tmp/rb_old >"$OUT/b_old.log" 2>&1 &
i=0
for d in "" "$@"; do
  nvcc $F -Iinclude $d bench/reduce_bench.cu -o /tmp/rb_new$i >"$OUT/b_new$i.log" 2>&1 &
  i=$((i + 1))
done
wait
cuobjdump -sass /tmp/rb_new0 | gzip >"$OUT/all.sass.gz"
echo "=== old"; /tmp/rb_old --out "$OUT/old.json" 2>&1
i=0
for d in "" "$@"; do echo "=== new$i $d"; /tmp/rb_new$i --out "$OUT/new$i.json" 2>&1; i=$((i + 1)); done
