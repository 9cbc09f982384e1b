/// \file The GEMM variant set: a compile-time list of tile configurations per family. libcufuse
/// (src/gemm/variants_*.cu) turns each list into run-time descriptors for an epilogue
/// (`instantiate<Epilogue>(list)`, src/gemm/variant_launch.cuh); the same lists can be
/// instantiated for other epilogues without touching the kernels.
///
/// Names are stable and carry the configuration, e.g. `sm80_bf16_mma_128x128x32_w2x2_s3`:
/// minimum architecture, input type (tf32 = float inputs on tensor cores), family, block tile
/// MxNxK, warps (mma) or thread tile (simt), pipeline stages, `_v1` when it accepts any
/// alignment, `_splitN` for split-K. SIMT: `_vN` is the elements per global load, `_sN` a
/// cp.async pipeline of N stages (sm80_, e.g. `sm80_f32_simt_128x128x32_t8x8_v4_s3`), `_rAB` the
/// rows per warp of A's / B's transposing copies when not 4. To add a variant: add its
/// configuration to a list here (docs/design.md, "Adding a GEMM variant").
#pragma once

#include "kernels.cuh"
#include "kernels_sm90.cuh"

namespace cufuse::gemm_detail {

template <class... C>
struct variant_list {};

// ---- the standard set ------------------------------------------------------------------------

using simt_variants = variant_list<
    // FP32 through cp.async pipelines (sm_80+), 16-byte aligned. First: the static heuristic
    // takes the first of equally rated tiles. _rAB: rows per warp of A's / B's transposing
    // copies; _r22 is for NT, where both operands are transposed (bench/JOURNAL.md g16).
    simt_config<float, 128, 128, 32, 2, 2, 4, 1, 3>, simt_config<float, 256, 128, 8, 4, 2, 4, 1, 3>,
    simt_config<float, 128, 128, 32, 2, 2, 4, 1, 3, 2, 2>,
    // FP32 staged through registers (any sm_70+), 16-byte loads
    simt_config<float, 128, 128, 16, 2, 2, 4>, simt_config<float, 128, 64, 8, 2, 2, 4>,
    simt_config<float, 64, 64, 16, 1, 1, 4>, simt_config<float, 32, 64, 16, 1, 1, 4>,
    simt_config<float, 16, 128, 32, 1, 1, 4>,
    // FP32, any alignment
    simt_config<float, 128, 128, 8, 2, 2, 1>, simt_config<float, 64, 64, 16, 1, 1, 1>,
    // FP32 split-K (small M*N, large K)
    simt_config<float, 64, 64, 16, 1, 1, 4, 4>, simt_config<float, 64, 64, 16, 1, 1, 4, 16>,
    simt_config<float, 64, 64, 16, 1, 1, 1, 8>,
    // FP16 / BF16 at any alignment (the tensor-core variants need 16-byte alignment)
    simt_config<__half, 64, 64, 16, 1, 1, 1>, simt_config<__half, 128, 128, 8, 2, 2, 1>,
    simt_config<__nv_bfloat16, 64, 64, 16, 1, 1, 1>,
    simt_config<__nv_bfloat16, 128, 128, 8, 2, 2, 1>>;

/// FP16 / BF16 on mma.sync. Split-K: 4 splits (finished in the kernel) and 16 (a reduction
/// kernel) for small outputs with a long K, e.g. 128 x 128 x 8192, where 16 tiles leave most
/// SMs idle.
template <class T>
using mma16_variants =
    variant_list<mma_config<T, 128, 128, 64, 2, 2, 3>, mma_config<T, 128, 256, 64, 2, 4, 3>,
                 mma_config<T, 256, 128, 64, 4, 2, 3>, mma_config<T, 128, 64, 64, 2, 2, 3>,
                 mma_config<T, 64, 128, 64, 2, 2, 3>, mma_config<T, 64, 64, 64, 2, 2, 4>,
                 mma_config<T, 64, 64, 32, 2, 2, 4, 4>, mma_config<T, 64, 64, 32, 2, 2, 4, 16>>;

using mma_f16_variants = mma16_variants<__half>;
using mma_bf16_variants = mma16_variants<__nv_bfloat16>;

using mma_tf32_variants =
    variant_list<mma_config<float, 128, 128, 32, 2, 2, 3>, mma_config<float, 128, 256, 32, 2, 4, 3>,
                 mma_config<float, 256, 128, 32, 4, 2, 3>, mma_config<float, 128, 64, 32, 2, 2, 3>,
                 mma_config<float, 64, 64, 32, 2, 2, 4>, mma_config<float, 64, 64, 32, 2, 2, 4, 4>,
                 mma_config<float, 64, 64, 32, 2, 2, 4, 16>>;

/// TF32 on mma.sync with TMA loads (sm_90a; layouts NN, NT, TT): compiled only into
/// src/gemm/variants_tf32_tma.cu, for -gencode arch=compute_90a.
using mma_tma_tf32_variants = variant_list<mma_config<float, 128, 256, 32, 2, 4, 3, 1, true>,
                                           mma_config<float, 256, 128, 32, 4, 2, 3, 1, true>,
                                           mma_config<float, 128, 256, 32, 2, 4, 4, 1, true>,
                                           mma_config<float, 128, 128, 32, 2, 2, 3, 1, true>>;

/// sm_90a (TMA + wgmma): compiled only into src/gemm/variants_wgmma*.cu, for
/// -gencode arch=compute_90a. Cooperative 128x256 (large problems), 128x128, 64x128 (two
/// blocks per SM); ping-pong 128x128 (each consumer warpgroup owns a tile).
template <class T>
using wgmma16_variants =
    variant_list<wgmma_config<T, 128, 256, 4>, wgmma_config<T, 128, 128, 6>,
                 wgmma_config<T, 64, 128, 4, 2>, wgmma_config<T, 128, 128, 6, 1, true>>;

/// TF32 on sm_90a: float inputs, layouts NN, NT and TT (see `layouts`); TN uses mma.sync.
using wgmma_tf32_variants =
    variant_list<wgmma_config<float, 128, 256, 4>, wgmma_config<float, 128, 128, 6>,
                 wgmma_config<float, 64, 128, 4, 2>, wgmma_config<float, 128, 128, 6, 1, true>>;

} // namespace cufuse::gemm_detail
