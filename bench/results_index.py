#!/usr/bin/env python3
"""Writes bench/results/README.md: the current table of every benchmark, taken from the tables
the report scripts generate from the JSON results (report.py, shapes_report.py, gemm_report.py,
sustained_report.py; reduce_bench and mma_peak write theirs directly). Run it after a benchmark
run: python3 bench/results_index.py"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")

# (title, table file, other files of the same run, what produced it)
SECTIONS = [
    ("Elementwise fusion", "elementwise.md", ["elementwise.json", "elementwise.png"],
     "`bash bench/run_gpu.sh bench` (bench/elementwise_bench.cu, bench/torch_bench.py, bench/report.py)"),
    ("N-d shapes: broadcasts, transposes, permutes, slices (H100)", "shapes_h100.md",
     ["shapes_h100.json", "shapes_h100.svg"],
     "`bash bench/run_gpu.sh membench` (bench/shapes_bench.cu, bench/torch_shapes.py, bench/shapes_report.py)"),
    ("N-d shapes on the H200", "shapes_h200.md",
     ["shapes_h200.json", "shapes_h200.svg", "shapes_lanes_ab_h200.md", "shapes_lanes_v8_ab_h200.md", "shapes_dense_ab_h200.md",
      "tests_reduce_h200.log",
      "sanitizers_reduce_h200.log",
      "ctest_memtest_h200.log", "sanitizers_shapes_h200.log"],
     "`bash bench/memory_prebuilt.sh` (bench/shapes_bench.cu, bench/torch_shapes.py, bench/shapes_report.py; in the same call `cufuse_gpu_tests` and memcheck / racecheck of the shape tests: tests_reduce_h200.log, sanitizers_reduce_h200.log; JOURNAL s7, s10; this table's call ran the shape tests, memcheck and racecheck on a standalone build of test/gpu/test_shapes_gpu.cu, and its table was rebuilt here from the merged JSON, as the device returned eight files: torch's own JSON and the PNG stayed behind, the plot is the report's SVG). An earlier call's ctest without GEMM / conv: ctest_memtest_h200.log, sanitizers_shapes_h200.log (JOURNAL s6)"),
    ("Reductions and the row kernel on the H200", "reduce_h200.md",
     ["reduce_h200.json", "reduce_h200.png", "tests_reduce_h200.log", "sanitizers_reduce_h200.log",
      "rows_pdl_sweep_h200.txt", "rows_held_ab_h200.md", "rows_probe_h200.md",
      "rows_direct_ab_h200.md", "tests_rows_direct_h200.log", "sanitizers_rows_direct_h200.log",
      "l2_hint_ab_h200.md", "tests_l2_hint_h200.log", "shapes_l2_hint_h200.log", "l2_after_h200.json",
      "l2_after_reset_h200.json"],
     "`PRE=... NO_TORCH_SHAPES=1 SANITIZER_TOOLS=memcheck bash bench/memory_prebuilt.sh` (bench/reduce_bench.cu with `REDUCE_NO_SWEEP=1`, bench/torch_reduce.py, bench/shapes_report.py) in one call, which also ran cufuse_gpu_tests, the reduction GPU tests, four samples, the shapes benchmark without PyTorch (shapes_l2_hint_h200.log), bench/l2_after.cu (l2_after_h200.json; with cudaCtxResetPersistingL2Cache, a later call: l2_after_reset_h200.json, JOURNAL m3) and memcheck of the reduction and shape tests: tests_l2_hint_h200.log; the A/Bs of the L2 policy: l2_hint_ab_h200.md (JOURNAL m2). Before it, `bash bench/reduce_prebuilt.sh`, which also ran racecheck of the row kernel's cases: tests_rows_direct_h200.log, sanitizers_rows_direct_h200.log (JOURNAL r15). Earlier tables came from `bash bench/memory_prebuilt.sh` (JOURNAL s7, r12, s10), whose call's short-row sweep with dependent and ordinary launches in turn is rows_pdl_sweep_h200.txt (`REDUCE_MID_SWEEP=1`, JOURNAL s10)"),
    ("Reductions and the row kernel (H100)", "reduce_h100.md", ["reduce_h100.json", "reduce_h100.png"],
     "`bash bench/run_gpu.sh membench` (bench/reduce_bench.cu, bench/torch_reduce.py, bench/shapes_report.py)"),
    ("GEMM, tuned, against cuBLAS (H200)", "gemm_h200.md", ["gemm_h200.json", "gemm_h200.png"],
     "`bash bench/run_gpu.sh gemm` (cufuse-tune --exhaustive, bench/gemm_report.py)"),
    ("GEMM, tuned, against cuBLAS (H100)", "gemm.md", ["gemm.json", "gemm.png"],
     "`bash bench/run_gpu.sh gemm` (cufuse-tune --exhaustive, bench/gemm_report.py)"),
    ("GEMM at any alignment (H100)", "any_shape_h100.md", ["any_shape_h100.json", "any_shape_h100.log"],
     "`bash bench/run_gpu.sh anyshape` (bench/any_shape_bench.cu)"),
    ("GEMM with M <= 128 (H100)", "small_m_h100.md", ["small_m_f32_h100.json", "small_m_stored_h100.json", "gemm_alternation_ab_h100.log", "small_m_sweep_h100.json", "small_m_n64_h100.json", "small_m_h100.json", "small_m_tests_h100.log"],
     "`bash bench/run_gpu.sh smallm` (cufuse-tune --exhaustive, bench/small_m_report.py)"),
    ("Online tuning's cost in each synchronization pattern (H100)", "online_h100.md", ["online_h100.jsonl", "online_h100.log"],
     "`bash bench/run_gpu.sh online` (bench/online_bench.cu)"),
    ("GEMM held at full load", "gemm_sustained.md",
     ["gemm_sustained_h100.json", "gemm_sustained_h200.json", "gemm_sustained.png"],
     "`bash bench/run_gpu.sh sustained` (bench/gemm_sustained.cu, bench/sustained_report.py)"),
    ("GEMM epilogues and the MLP block with dependent launches (H200)", "mlp_epilogue_pdl_h200.md",
     ["mlp_epilogue_pdl_h200.json", "pdl_tests_h200.log", "ctest_full_x_h200.log",
      "ctest_full_y_h200.log", "sanitizers_chain_h200.log"],
     "`NO_TESTS=1 NO_SANITIZE=1 MLP_ARGS=--small bash bench/epilogue_prebuilt.sh` on executables built by bench/prebuild.sh (JOURNAL g37; without the 16384-token block: see the next table). The same build's tests and sanitizers (bench/ctest_prebuilt.sh): pdl_tests_h200.log. A later full ctest of every executable built from 7952fca (two calls, the build too large for one: ctest_full_x_h200.log, ctest_full_y_h200.log; memcheck and racecheck of the chained-GEMM case: sanitizers_chain_h200.log)"),
    ("Kernels back to back: programmatic dependent launches (H200)", "chain_h200.md", ["chain_h200.json"],
     "bench/chain_bench.cu (JOURNAL g37)"),
    ("GEMM epilogues from expressions and the transformer MLP block (H200)", "mlp_epilogue_h200.md",
     ["mlp_epilogue_h200.json", "mlp_torch_h200.json", "epilogue_tests_h200.log", "gemm_lean_tests_h200.log"],
     "`NO_TESTS=1 NO_SANITIZE=1 bash bench/epilogue_prebuilt.sh` on executables built by bench/prebuild.sh (bench/mlp_bench.cu, bench/torch_mlp.py, bench/mlp_report.py; JOURNAL g35). The GEMM, conv, sample and tool tests of the same build and their sanitizers, two calls of bench/ctest_prebuilt.sh: gemm_lean_tests_h200.log; epilogue_tests_h200.log: the previous table's tests (e16)"),
    ("GEMM variants before / after the lean wgmma main loop (H200)", "gemm_lean_ab_h200.md",
     ["gemm_lean_ab_h200.json"],
     "cufuse-tune --exhaustive --no-cublas of 897f1f7 (built on the 2-core machine) and of the change, three rounds alternating in one call, bench/ab_report.py (JOURNAL g35)"),
    ("What an expression epilogue costs, by K and tile, before and after the lean main loop (H200)", "epilogue_cost_h200.md",
     ["epilogue_cost_h200.json"],
     "bench/epilogue_cost.cu built on both trees, run in turn in one call (JOURNAL e17, g35; Nsight Compute of the same kernels: bench/profile_epilogue.sh with BENCH_BIN, EPI_K, EPI_PROFILE)"),
    ("GEMM epilogues from expressions and the transformer MLP block, the bias folded into the accumulators (H200)", "mlp_epilogue_fold_h200.md",
     ["mlp_epilogue_fold_h200.json", "mlp_torch_fold_h200.json", "epilogue_fold_tests_h200.log", "epilogue_fold_conv_tests_h200.log",
      "epilogue_fold_ctest_h200.log"],
     "`NO_TESTS=1 NO_SANITIZE=1 bash bench/epilogue_prebuilt.sh` on executables built on the 2-core machine, PyTorch 2.11 in the same call (JOURNAL e18); the tests and sanitizers of the same build in the logs (ctest: bench/ctest_prebuilt.sh)"),
    ("GEMM epilogues and the transformer MLP block, short layer_norm rows held in registers (H200)", "mlp_rows_held_h200.md",
     ["mlp_rows_held_h200.json", "mlp_torch_rows_held_h200.json", "rows_held_tests_h200.log", "rows_held_probe_h200.md",
      "rows_held_ncu_h200.txt", "rows_held_final_h200.log"],
     "bench/mlp_bench.cu --small and bench/torch_mlp.py --small in one call with the reduction GPU tests, the layernorm and transformer_mlp samples and bench/rows_probe.cu (bench/mlp_report.py; JOURNAL r16); memcheck / racecheck of the held case in a second call: rows_held_tests_h200.log; the held form's grid sweep: rows_held_probe_h200.md; Nsight Compute of the held kernel and the probe: rows_held_ncu_h200.txt; the tests and the MLP blocks again on the final tree (no PyTorch): rows_held_final_h200.log"),
    ("The bias folded into the GEMM's accumulators, A/B (H200)", "epilogue_fold_ab_h200.md",
     ["epilogue_fold_tests_h200.log"],
     "bench/epilogue_cost.cu and bench/mlp_bench.cu built with -DCUFUSE_EPI_FOLD_BIAS=0 and without, alternating in one call (bench/ab_prebuilt.sh); the `[epilogue]` tests of the same build (JOURNAL e18)"),
    ("Row kernel: short rows two to a block, A/B (H200)", "rows_split_ab_h200.md",
     ["tests_reduce_split_h200.log"],
     "bench/reduce_bench.cu (`REDUCE_MID_SWEEP=1`, `REDUCE_ROWS_ONLY=1 REDUCE_NO_SWEEP=1`), two builds in one call; the reduction GPU tests and memcheck / racecheck of the new case in the same call (JOURNAL r13)"),
    ("GEMM epilogues from expressions and the transformer MLP block (H100)", "mlp_epilogue_h100.md",
     ["mlp_epilogue_h100.json", "mlp_torch_h100.json", "mlp_epilogue_variants_h100.log",
      "epilogue_tests_h100.log"],
     "`MLP_ALL=1 bash bench/run_gpu.sh epilogue` (bench/mlp_bench.cu, bench/torch_mlp.py, bench/mlp_report.py)"),
    ("conv2d and the ResNet basic block against cuDNN and PyTorch (H100)", "conv_h100.md",
     ["conv_cufuse_h100.json", "conv_torch_h100.json", "conv_bench_h100.log"],
     "`bash bench/run_gpu.sh conv` (bench/conv_bench.cu, bench/torch_conv.py, bench/conv_report.py)"),
    ("Tensor-core instruction ceilings (H200)", "mma_peak_h200.md", [],
     "bench/mma_peak.cu"),
]


def first_table(lines):
    """The lines before the first table, and the first table."""
    out, in_table = [], False
    for line in lines:
        is_row = line.startswith("|")
        if in_table and not is_row:
            break
        in_table = in_table or is_row
        out.append(line)
    return out


def main():
    out = ["# Benchmark results", "",
           "Generated by `python3 bench/results_index.py` from the tables next to this file; "
           "each table is one run with its peers measured in the same run. What was tried and "
           "why the numbers are what they are: `bench/JOURNAL.md`.", ""]
    missing = []
    for title, table, others, how in SECTIONS:
        path = os.path.join(RESULTS, table)
        if not os.path.exists(path):
            missing.append(table)
            continue
        lines = [l.rstrip("\n") for l in open(path)]
        body = first_table(lines)
        while body and not body[0].strip():
            body.pop(0)
        out += ["## " + title, ""]
        # A leading "# ..." title of the table file becomes plain text under ours.
        body = [l.lstrip("# ") if l.startswith("#") else l for l in body]
        out += body
        out.append("")
        files = ", ".join("[%s](%s)" % (f, f) for f in [table] + others
                          if os.path.exists(os.path.join(RESULTS, f)))
        shown = "" if len(body) >= len([l for l in lines if l.strip()]) else " (first table; the file has more)"
        out += ["Files: %s%s. Produced by %s." % (files, shown, how), ""]
    with open(os.path.join(RESULTS, "README.md"), "w") as f:
        f.write("\n".join(out))
    if missing:
        print("missing: " + ", ".join(missing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
