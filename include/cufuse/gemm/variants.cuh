/// \file The GEMM variant set: a compile-time list of tile configurations per family. libcufuse
/// (src/gemm/variants_*.cu) turns each list into run-time descriptors for an epilogue
/// (`instantiate<Epilogue>(list)`, src/gemm/variant_launch.cuh); the same lists can be
/// instantiated for other epilogues without touching the kernels.
///
/// Names are stable and carry the configuration, e.g. `sm80_bf16_mma_128x128x32_w2x2_s3`:
/// minimum architecture, input type (tf32 = float inputs on tensor cores), family, block tile
/// MxNxK, warps (mma) or thread tile (simt), pipeline stages, `_v1` when it accepts any
/// alignment, `_splitN` for split-K (`_csplitN`: over a thread-block cluster). SIMT: `_vN` is the
/// elements per global load, `_sN` a cp.async pipeline of N stages (sm80_, e.g.
/// `sm80_f32_simt_128x128x32_t8x8_v4_s3`), `_rAB` the rows per warp of A's / B's transposing copies
/// when not 4. To add a variant: add its configuration to a list here (docs/design.md, "Adding a
/// GEMM variant").
#pragma once

#include "kernels.cuh"
#include "kernels_sm90.cuh"

namespace cufuse::gemm_detail {

template <class... C>
struct variant_list {};

/// Tile configurations by name (C++20 class-type template arguments); each names the
/// configuration template of its family in kernels.cuh / kernels_sm90.cuh.
///
/// SIMT (CUDA cores): block tile bm x bn x bk; each thread computes (4 rm) x (4 rn) outputs;
/// `vec` elements per global load (4: 16-byte loads, aligned operands; 1: any alignment);
/// `stages` 0: staged through registers (sm_70+), >= 2: a cp.async pipeline (sm_80+, FP32,
/// vec 4); `krows_a`/`krows_b`: rows per warp of the transposing cp.async copies of A / B.
struct simt_tile {
  int bm, bn, bk, rm, rn, vec;
  int splits = 1, stages = 0, krows_a = 4, krows_b = 4;
};
template <class T, simt_tile S>
using simt =
    simt_config<T, S.bm, S.bn, S.bk, S.rm, S.rn, S.vec, S.splits, S.stages, S.krows_a, S.krows_b>;

/// mma.sync: block tile bm x bn x bk, wm x wn warps, a `stages`-deep pipeline; `tma`: the
/// stages are filled by TMA (TF32, sm_90a) instead of cp.async; `any_align`: through registers,
/// for fp16 / bf16 operands of any alignment.
struct mma_tile {
  int bm, bn, bk, wm, wn, stages;
  int splits = 1;
  bool tma = false;
  bool any_align = false;
};
template <class T, mma_tile S>
using mma = mma_config<T, S.bm, S.bn, S.bk, S.wm, S.wn, S.stages, S.splits, S.tma, S.any_align>;

/// wgmma (sm_90a): block tile bm x bn (bk: one 128-byte row of K), `stages` ring slots,
/// `min_blocks` blocks per SM, `pingpong`: the consumer warpgroups take whole tiles in turn;
/// `splits`: split-K (up to 4, cooperative tiles); `cluster`: the splits of a tile run as one
/// thread-block cluster and are summed through distributed shared memory (no workspace).
struct wgmma_tile {
  int bm, bn, stages;
  int min_blocks = 1;
  bool pingpong = false;
  int splits = 1;
  bool cluster = false;
};
template <class T, wgmma_tile S>
using wgmma = wgmma_config<T, S.bm, S.bn, S.stages, S.min_blocks, S.pingpong, S.splits, S.cluster>;

// ---- the standard set ------------------------------------------------------------------------

using simt_variants = variant_list<
    // FP32 through cp.async pipelines (sm_80+), 16-byte aligned. First: the static heuristic
    // takes the first of equally rated tiles. _rAB: rows per warp of A's / B's transposing
    // copies; _r22 is for NT, where both operands are transposed (bench/JOURNAL.md g16).
    simt<float, simt_tile{.bm = 128, .bn = 128, .bk = 32, .rm = 2, .rn = 2, .vec = 4, .stages = 3}>,
    simt<float, simt_tile{.bm = 256, .bn = 128, .bk = 8, .rm = 4, .rn = 2, .vec = 4, .stages = 3}>,
    simt<float, simt_tile{.bm = 128,
                          .bn = 128,
                          .bk = 32,
                          .rm = 2,
                          .rn = 2,
                          .vec = 4,
                          .stages = 3,
                          .krows_a = 2,
                          .krows_b = 2}>,
    // FP32 staged through registers (any sm_70+), 16-byte loads
    simt<float, simt_tile{.bm = 128, .bn = 128, .bk = 16, .rm = 2, .rn = 2, .vec = 4}>,
    simt<float, simt_tile{.bm = 128, .bn = 64, .bk = 8, .rm = 2, .rn = 2, .vec = 4}>,
    simt<float, simt_tile{.bm = 64, .bn = 64, .bk = 16, .rm = 1, .rn = 1, .vec = 4}>,
    simt<float, simt_tile{.bm = 32, .bn = 64, .bk = 16, .rm = 1, .rn = 1, .vec = 4}>,
    simt<float, simt_tile{.bm = 16, .bn = 128, .bk = 32, .rm = 1, .rn = 1, .vec = 4}>,
    // FP32, any alignment
    simt<float, simt_tile{.bm = 128, .bn = 128, .bk = 8, .rm = 2, .rn = 2, .vec = 1}>,
    simt<float, simt_tile{.bm = 64, .bn = 64, .bk = 16, .rm = 1, .rn = 1, .vec = 1}>,
    // FP32 split-K (small M*N, large K)
    simt<float, simt_tile{.bm = 64, .bn = 64, .bk = 16, .rm = 1, .rn = 1, .vec = 4, .splits = 4}>,
    simt<float, simt_tile{.bm = 64, .bn = 64, .bk = 16, .rm = 1, .rn = 1, .vec = 4, .splits = 16}>,
    simt<float, simt_tile{.bm = 64, .bn = 64, .bk = 16, .rm = 1, .rn = 1, .vec = 1, .splits = 8}>,
    // FP32 split-K for M <= 128 with a long K (N = K = 4096: 128-256 blocks); narrow tiles so
    // that rows past M are not computed
    simt<float, simt_tile{.bm = 16, .bn = 128, .bk = 32, .rm = 1, .rn = 1, .vec = 4, .splits = 8}>,
    simt<float, simt_tile{.bm = 32, .bn = 128, .bk = 32, .rm = 1, .rn = 1, .vec = 4, .splits = 4}>,
    simt<float, simt_tile{.bm = 32, .bn = 128, .bk = 32, .rm = 1, .rn = 1, .vec = 4, .splits = 8}>,
    simt<float, simt_tile{.bm = 128, .bn = 128, .bk = 16, .rm = 2, .rn = 2, .vec = 4, .splits = 4}>,
    simt<float,
         simt_tile{
             .bm = 128, .bn = 128, .bk = 32, .rm = 2, .rn = 2, .vec = 4, .splits = 4, .stages = 3}>,
    simt<float,
         simt_tile{
             .bm = 64, .bn = 128, .bk = 32, .rm = 1, .rn = 2, .vec = 4, .splits = 4, .stages = 3}>,
    simt<float,
         simt_tile{
             .bm = 64, .bn = 128, .bk = 32, .rm = 1, .rn = 2, .vec = 4, .splits = 8, .stages = 3}>,
    // 64 rows with the 128x128 tile's 8x8 thread tiles: the fastest fp32 tile at M = 64 to 256
    // with N = K = 4096 / 8192 (bench/JOURNAL.md t15); before 128x128 so that the heuristic
    // takes it where the two tie
    simt<float,
         simt_tile{
             .bm = 64, .bn = 256, .bk = 16, .rm = 2, .rn = 2, .vec = 4, .splits = 8, .stages = 3}>,
    simt<float,
         simt_tile{
             .bm = 128, .bn = 128, .bk = 32, .rm = 2, .rn = 2, .vec = 4, .splits = 8, .stages = 3}>,
    // FP16 / BF16 at any alignment (the tensor-core variants need 16-byte alignment)
    simt<__half, simt_tile{.bm = 64, .bn = 64, .bk = 16, .rm = 1, .rn = 1, .vec = 1}>,
    simt<__half, simt_tile{.bm = 128, .bn = 128, .bk = 8, .rm = 2, .rn = 2, .vec = 1}>,
    simt<__nv_bfloat16, simt_tile{.bm = 64, .bn = 64, .bk = 16, .rm = 1, .rn = 1, .vec = 1}>,
    simt<__nv_bfloat16, simt_tile{.bm = 128, .bn = 128, .bk = 8, .rm = 2, .rn = 2, .vec = 1}>>;

/// FP16 / BF16 on mma.sync. Split-K: 4 splits (finished in the kernel) and 16 (a reduction
/// kernel) for small outputs with a long K, e.g. 128 x 128 x 8192, where 16 tiles leave most
/// SMs idle.
template <class T>
using mma16_variants = variant_list<
    mma<T, mma_tile{.bm = 128, .bn = 128, .bk = 64, .wm = 2, .wn = 2, .stages = 3}>,
    mma<T, mma_tile{.bm = 128, .bn = 256, .bk = 64, .wm = 2, .wn = 4, .stages = 3}>,
    mma<T, mma_tile{.bm = 256, .bn = 128, .bk = 64, .wm = 4, .wn = 2, .stages = 3}>,
    mma<T, mma_tile{.bm = 128, .bn = 64, .bk = 64, .wm = 2, .wn = 2, .stages = 3}>,
    mma<T, mma_tile{.bm = 64, .bn = 128, .bk = 64, .wm = 2, .wn = 2, .stages = 3}>,
    mma<T, mma_tile{.bm = 64, .bn = 64, .bk = 64, .wm = 2, .wn = 2, .stages = 4}>,
    mma<T, mma_tile{.bm = 64, .bn = 64, .bk = 32, .wm = 2, .wn = 2, .stages = 4, .splits = 4}>,
    mma<T, mma_tile{.bm = 64, .bn = 64, .bk = 32, .wm = 2, .wn = 2, .stages = 4, .splits = 16}>>;

using mma_f16_variants = mma16_variants<__half>;
using mma_bf16_variants = mma16_variants<__nv_bfloat16>;

/// FP16 / BF16 on mma.sync for operands whose base or leading dimension is not 16-byte aligned
/// (vocabularies of 50257, K = 4095, padded or offset views): loads of 2, 4 or 8 bytes as each
/// operand allows, through registers (kernel/mma_elem.cuh). Compiled into
/// src/gemm/variants_any_align.cu.
template <class T>
using mma16_any_align_variants = variant_list<
    mma<T,
        mma_tile{.bm = 128, .bn = 128, .bk = 64, .wm = 2, .wn = 4, .stages = 3, .any_align = true}>,
    mma<T,
        mma_tile{.bm = 128, .bn = 64, .bk = 32, .wm = 2, .wn = 2, .stages = 4, .any_align = true}>,
    mma<T,
        mma_tile{.bm = 64, .bn = 64, .bk = 32, .wm = 2, .wn = 2, .stages = 4, .any_align = true}>>;

/// TF32 on mma.sync for fp32 operands whose base or leading dimension is not 16-byte aligned
/// (K odd, offset views): 4- or 8-byte loads through registers, as the fp16 / bf16 tiles above;
/// 128 x 128 on 8 warps (on 4 its staging registers spilled 360-2376 bytes). Compiled into
/// src/gemm/variants_any_align.cu.
using mma_tf32_any_align_variants = variant_list<
    mma<float,
        mma_tile{.bm = 128, .bn = 128, .bk = 32, .wm = 2, .wn = 4, .stages = 3, .any_align = true}>,
    mma<float,
        mma_tile{.bm = 128, .bn = 64, .bk = 32, .wm = 2, .wn = 2, .stages = 3, .any_align = true}>,
    mma<float,
        mma_tile{.bm = 64, .bn = 64, .bk = 32, .wm = 2, .wn = 2, .stages = 4, .any_align = true}>>;

using mma_tf32_variants = variant_list<
    mma<float, mma_tile{.bm = 128, .bn = 128, .bk = 32, .wm = 2, .wn = 2, .stages = 3}>,
    mma<float, mma_tile{.bm = 128, .bn = 256, .bk = 32, .wm = 2, .wn = 4, .stages = 3}>,
    mma<float, mma_tile{.bm = 256, .bn = 128, .bk = 32, .wm = 4, .wn = 2, .stages = 3}>,
    mma<float, mma_tile{.bm = 128, .bn = 64, .bk = 32, .wm = 2, .wn = 2, .stages = 3}>,
    mma<float, mma_tile{.bm = 64, .bn = 64, .bk = 32, .wm = 2, .wn = 2, .stages = 4}>,
    mma<float, mma_tile{.bm = 64, .bn = 64, .bk = 32, .wm = 2, .wn = 2, .stages = 4, .splits = 4}>,
    mma<float,
        mma_tile{.bm = 64, .bn = 64, .bk = 32, .wm = 2, .wn = 2, .stages = 4, .splits = 16}>>;

/// TF32 on mma.sync with TMA loads (sm_90a; layouts NN, NT, TT): compiled only into
/// src/gemm/variants_tf32_tma.cu, for -gencode arch=compute_90a.
using mma_tma_tf32_variants = variant_list<
    mma<float,
        mma_tile{.bm = 128, .bn = 256, .bk = 32, .wm = 2, .wn = 4, .stages = 3, .tma = true}>,
    mma<float,
        mma_tile{.bm = 256, .bn = 128, .bk = 32, .wm = 4, .wn = 2, .stages = 3, .tma = true}>,
    mma<float,
        mma_tile{.bm = 128, .bn = 256, .bk = 32, .wm = 2, .wn = 4, .stages = 4, .tma = true}>,
    mma<float,
        mma_tile{.bm = 128, .bn = 128, .bk = 32, .wm = 2, .wn = 2, .stages = 3, .tma = true}>>;

/// sm_90a (TMA + wgmma): compiled only into src/gemm/variants_wgmma*.cu, for
/// -gencode arch=compute_90a. Cooperative 128x256 (large problems), 128x128, 64x128 (two
/// blocks per SM); ping-pong 128x128 (each consumer warpgroup owns a tile). For M <= 128:
/// 64x128 split-K over clusters of 2 (N = 4096: 64 blocks stream B instead of 32; the workspace
/// split-K tiles lost to the unsplit ones, bench/JOURNAL.md t5). Clusters of 3 (64x128, 128x128)
/// ran 3-25% slower than those of 2 on every small-M shape measured, clusters of 4 slower still
/// (an H100 holds 30 clusters of four such blocks, N = 4096 needs 32; t8). 64x64 (m64n64
/// MMAs), unsplit with 12 stages and split over clusters of 2 with 10: 128 blocks where 64x128
/// has 64, for M <= 128 with N = 4096 (128x4096x4096 0.73x -> 0.87x cuBLAS; t10).
template <class T>
using wgmma16_variants = variant_list<
    wgmma<T, wgmma_tile{.bm = 128, .bn = 256, .stages = 4}>,
    wgmma<T, wgmma_tile{.bm = 128, .bn = 128, .stages = 6}>,
    wgmma<T, wgmma_tile{.bm = 64, .bn = 128, .stages = 4, .min_blocks = 2}>,
    wgmma<T, wgmma_tile{.bm = 128, .bn = 128, .stages = 6, .pingpong = true}>,
    wgmma<T, wgmma_tile{.bm = 64, .bn = 128, .stages = 6, .splits = 2, .cluster = true}>,
    wgmma<T, wgmma_tile{.bm = 64, .bn = 64, .stages = 12}>,
    wgmma<T, wgmma_tile{.bm = 64, .bn = 64, .stages = 10, .splits = 2, .cluster = true}>>;

/// TF32 on sm_90a: float inputs, layouts NN, NT and TT (see `layouts`); TN uses mma.sync.
/// Split-K 4 on 128x128: the fastest variant at M = 16, 32 with N = K = 8192 (H100; the 16-bit
/// wgmma split-K tiles lost to the unsplit ones on every M <= 256 measured: bench/JOURNAL.md t5).
using wgmma_tf32_variants =
    variant_list<wgmma<float, wgmma_tile{.bm = 128, .bn = 256, .stages = 4}>,
                 wgmma<float, wgmma_tile{.bm = 128, .bn = 128, .stages = 6}>,
                 wgmma<float, wgmma_tile{.bm = 64, .bn = 128, .stages = 4, .min_blocks = 2}>,
                 wgmma<float, wgmma_tile{.bm = 128, .bn = 128, .stages = 6, .pingpong = true}>,
                 wgmma<float, wgmma_tile{.bm = 128, .bn = 128, .stages = 6, .splits = 4}>>;

} // namespace cufuse::gemm_detail
