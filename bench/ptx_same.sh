#!/usr/bin/env bash
# Compiles every src/gemm/variants_*.cu of two trees to PTX and compares them: a change that only
# moves kernel code (or host code) must leave the kernels' PTX byte for byte the same.
#   BEFORE=.ab/pre_split bash bench/ptx_same.sh        (a tree with include/ and src/)
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
before=${BEFORE:-.ab/before}
work=$(mktemp -d)
compile() { # tree file output
  local arch=compute_90
  case $2 in *wgmma* | *tma*) arch=compute_90a ;; esac
  nvcc -std=c++20 --extended-lambda -O3 -DNDEBUG -I"$1/include" -I"$1/src" -arch=$arch -ptx \
    "$1/src/gemm/$2" -o "$3"
}
files=$(cd src/gemm && ls variants_*.cu | grep -v none)
for f in $files; do
  compile "$before" "$f" "$work/before_$f.ptx" &
  compile . "$f" "$work/after_$f.ptx" &
done
wait
status=0
for f in $files; do
  if [ ! -s "$work/before_$f.ptx" ] || [ ! -s "$work/after_$f.ptx" ]; then
    echo "$f: no PTX"; status=1
  elif cmp -s "$work/before_$f.ptx" "$work/after_$f.ptx"; then
    echo "$f: PTX identical ($(grep -c '^.entry\|^\.visible \.entry' "$work/after_$f.ptx") kernels)"
  else
    echo "$f: PTX DIFFERS in $(diff "$work/before_$f.ptx" "$work/after_$f.ptx" | grep -c '^[<>]') lines"
    # the kernels whose text differs
    for k in $(grep -o '^\.visible \.entry [^(]*' "$work/after_$f.ptx" | awk '{print $3}'); do
      a=$(awk -v k="$k" '$0 ~ "entry " k "\\(" {p=1} p {print} p && /^}/ {exit}' "$work/before_$f.ptx" | sed 's/%[a-z]*[0-9]*//g' | md5sum)
      b=$(awk -v k="$k" '$0 ~ "entry " k "\\(" {p=1} p {print} p && /^}/ {exit}' "$work/after_$f.ptx" | sed 's/%[a-z]*[0-9]*//g' | md5sum)
      c=$(awk -v k="$k" '$0 ~ "entry " k "\\(" {p=1} p {print} p && /^}/ {exit}' "$work/before_$f.ptx" | md5sum)
      d=$(awk -v k="$k" '$0 ~ "entry " k "\\(" {p=1} p {print} p && /^}/ {exit}' "$work/after_$f.ptx" | md5sum)
      [ "$c" != "$d" ] && echo "  $k: $([ "$a" = "$b" ] && echo 'same instructions, registers renumbered' || echo 'instructions differ')"
    done
    status=1
  fi
done | tee "$OUT/ptx_same.txt"
exit $status
