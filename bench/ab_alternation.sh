#!/usr/bin/env bash
# What a GEMM call costs right after a different GEMM kernel, two cufuse-tune builds compared in
# one call (bench/JOURNAL.md t11, t12): for each problem, `cufuse-tune --exhaustive --only` with
# several variants, so every timed call follows a different kernel (the sweep), against the
# committed variant timed back to back; cuBLAS in both.
#   OLD=path/to/cufuse-tune NEW=build-gpu/src/cufuse-tune bash bench/ab_alternation.sh
# SPECS: space-separated SHAPE:VARIANT_SUBSTRINGS (cufuse-tune --only); ROUNDS (2); SAMPLES (9).
set -uo pipefail
old=${OLD:?OLD: the cufuse-tune before the change}
new=${NEW:-build-gpu/src/cufuse-tune}
specs=${SPECS:-"32x4096x4096:64x64x64_wg1_s1 128x4096x4096:64x64x64_wg1_s12,64x128x64_wg1_s6 \
4096x4096x4096:128x256x64_wg2_s4,128x128x64_wg2pp_s6,128x128x64_wg2_s6 \
8192x1024x4096:128x256x64_wg2_s4,128x128x64_wg2pp_s6"}
for r in $(seq 1 "${ROUNDS:-2}"); do
  for tree in old new; do
    tool=$([ $tree = old ] && echo "$old" || echo "$new")
    for spec in $specs; do
      shape=${spec%%:*} only=${spec#*:}
      json=$(mktemp) db=$(mktemp -u)
      "$tool" --dtypes "${DTYPE:-bf16}" --trans NN --shapes "$shape" --exhaustive --only "$only" \
        --samples "${SAMPLES:-9}" --file "$db" --json "$json" >"$json.log" 2>&1 ||
        { echo "$tree $shape: cufuse-tune failed"; tail -3 "$json.log"; continue; }
      python3 - "$json" "$r" "$tree" "$shape" <<'PY'
import json, statistics as st, sys
path, r, tree, shape = sys.argv[1:]
for k in json.load(open(path))["keys"]:
    ex = k["exhaustive"]
    sweep = " ".join(f"{n.split('_wgmma_')[-1]} {st.median(v) * 1e6:.1f}"
                     for n, v in ex["samples"].items())
    print(f"round {r} {tree:3} {shape}: back to back {k['chosen_s'] * 1e6:.1f} (cuBLAS "
          f"{k['cublas_s'] * 1e6:.1f}) | sweep {sweep} (cuBLAS {ex['cublas_s'] * 1e6:.1f})")
PY
      rm -f "$json" "$json.log" "$db"
    done
  done
done
