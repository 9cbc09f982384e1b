/// \file GEMM kernel templates: FP32 SIMT, mma.sync (FP16/BF16 via ldmatrix; TF32 via ldmatrix
/// for K-major operands, 4- or 8-byte reads of padded rows for M/N-major ones), the split-K
/// fixup, and the shared epilogue (the mma.sync warp step and epilogue also serve the TMA-fed
/// TF32 kernel of kernels_sm90.cuh). Instantiated by src/ through the variant lists of
/// variants.cuh; users do not include this file directly.
///
/// The pieces: arch/ (PTX wrappers), tile.cuh (the tile schedule), epilogue/ (the epilogue
/// interface, split-K), mainloop/ (shared-memory tiles of mma.sync), kernel/ (each family's
/// __global__ functions, which compose them). This header includes the pre-Hopper families;
/// kernels_sm90.cuh adds the sm_90a ones.
///
/// Conventions. Row-major storage. op(A) is m x k, op(B) is k x n. `TA`: A is stored k x m (the
/// GEMM uses its transpose), so it is contiguous along m; otherwise along k. `TB`: B is stored
/// n x k (contiguous along k); otherwise k x n (contiguous along n). Out-of-range elements load
/// as zero, so partial tiles need no special compute path. blockIdx.x walks output tiles in
/// groups of 8 tile rows (an L2-friendly order); blockIdx.z = batch * splits + split.
#pragma once

#include "kernel/mma.cuh"
#include "kernel/mma_elem.cuh"
#include "kernel/simt.cuh"
