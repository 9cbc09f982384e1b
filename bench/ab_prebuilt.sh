#!/usr/bin/env bash
# Same-call A/B of benchmark executables built on another machine from two trees (or two
# settings of a compile-time knob), run alternating, round after round:
#   AB_A=pre-a AB_B=pre-b AB_RUNS="bench/cufuse_bench_epilogue_cost|--out@ bench/cufuse_bench_mlp|--small --blocks" \
#     ROUNDS=2 bash bench/ab_prebuilt.sh
# Each AB_RUNS entry is EXECUTABLE|ARGS (relative to AB_A / AB_B; '@' in ARGS becomes a JSON path
# under $OUT). Logs go to $OUT/logs (packed into $OUT/logs.tar.gz), one per run:
# ROUND-SIDE-NAME.log; each run's last lines are echoed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/gpu-out}
L=$OUT/logs
mkdir -p "$L"
trap 'tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$L"' EXIT
a=${AB_A:?AB_A: the first build folder} b=${AB_B:?AB_B: the second build folder}
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$L/device.txt"
status=0
for r in $(seq 1 "${ROUNDS:-2}"); do
  for side in A B; do
    dir=$([ $side = A ] && echo "$a" || echo "$b")
    for entry in ${AB_RUNS:?}; do
      exe=${entry%%|*} args=${entry#*|}
      [ "$args" = "$entry" ] && args=""
      name=$(basename "$exe")
      log="$L/$r-$side-$name.log"
      # shellcheck disable=SC2086 # args: several arguments
      timeout "${AB_TIMEOUT:-300}" "$dir/$exe" ${args//@/$L/$r-$side-$name.json} >"$log" 2>&1
      rc=$?
      [ $rc = 0 ] || status=1
      echo "== round $r $side $name exit $rc"
      tail -n "${AB_TAIL:-12}" "$log"
    done
  done
done
exit $status
