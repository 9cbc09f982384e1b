/// \file Split-K: the partial tiles a split block writes to the fp32 workspace, the in-kernel
/// finish by the last split of a tile (up to 4 splits), and the reduction kernel (8 or more).
#pragma once

#include "../tile.cuh"
#include "linear_combination.cuh"

namespace cufuse::gemm_detail {

/// Split-K: the arguments a split block writes its partial tile with, into the fp32 workspace
/// (alpha 1, beta 0; rows of `cols` = C's stored row length; split planes of m x n).
CUFUSE_DEVICE_FN gemm_args split_partial_args(const gemm_args& p, int cols) {
  gemm_args q = p;
  q.c = p.ws;
  q.ldc = cols;
  q.split_stride_c = std::int64_t(p.m) * p.n;
  q.stride_c = q.split_stride_c * p.splits;
  q.alpha = 1.0f;
  q.beta = 0.0f;
  q.out_type = int(dtype::f32);
  return q;
}

/// Split-K, after a block has written its partial CM x CN tile (at row0, col0 of C as stored,
/// whose shape `p` gives): the last of the tile's splits to arrive sums the partials of every
/// split in split order (so the result does not depend on which one is last), applies the
/// epilogue and writes C: one launch per call. (Without counters, p.ws_count null, the
/// launcher runs splitk_reduce_kernel after the GEMM instead.)
template <int CM, int CN, int Threads, class Epi>
CUFUSE_DEVICE_FN void splitk_fixup(const gemm_args& p, int row0, int col0, const Epi& epi) {
  __shared__ int last;
  if (p.ws == nullptr || p.ws_count == nullptr) { // unsplit, or reduced by a second kernel
    return;
  }
  const int tid = static_cast<int>(threadIdx.x);
  __threadfence(); // this thread's partials are visible to the block that finishes the tile
  __syncthreads();
  const int batch = static_cast<int>(blockIdx.z) / p.splits;
  if (tid == 0) {
    unsigned* count = p.ws_count + std::int64_t(batch) * gridDim.x + blockIdx.x;
    last = atomicAdd(count, 1u) + 1 == unsigned(p.splits);
  }
  __syncthreads();
  if (!last) {
    return;
  }
  __threadfence();
  // Each thread sums groups of 4 columns over every split, the groups' loads of one split
  // issued together (16-byte loads where the workspace rows allow): a scalar loop left the
  // finishing block waiting on one load at a time (bench/JOURNAL.md g27).
  static_assert(CN % 4 == 0 && (CM * CN / 4) % Threads == 0,
                "cufuse: a split-K tile must split into 4-column groups evenly over the block");
  constexpr int G = CM * CN / 4 / Threads;
  const std::int64_t mn = std::int64_t(p.m) * p.n;
  const float* src = p.ws + std::int64_t(batch) * p.splits * mn;
  const int out_size = p.out_type == int(dtype::f32) ? 4 : 2;
  void* c = static_cast<char*>(p.c) + batch * p.stride_c * out_size;
  const bool vec_ok =
      p.ldc % 4 == 0 && reinterpret_cast<std::uintptr_t>(c) % (4u * unsigned(out_size)) == 0;
  float sum[G][4];
  std::int64_t at[G];
  int cnt[G];  // columns of the group inside C (0 .. 4)
  bool vec[G]; // all 4, and 16-byte aligned in the workspace (rows of a multiple of 4)
  CUFUSE_UNROLL
  for (int g = 0; g < G; ++g) {
    const int e = tid + g * Threads, r = e / (CN / 4), q = e % (CN / 4) * 4;
    at[g] = std::int64_t(row0 + r) * p.n + (col0 + q);
    cnt[g] = row0 + r < p.m ? ::max(0, ::min(4, p.n - (col0 + q))) : 0;
    vec[g] = cnt[g] == 4 && p.n % 4 == 0;
    sum[g][0] = sum[g][1] = sum[g][2] = sum[g][3] = 0.0f;
  }
  for (int k = 0; k < p.splits; ++k) { // in split order: the same sum whichever block is last
    const float* part = src + k * mn;
    CUFUSE_UNROLL
    for (int g = 0; g < G; ++g) {
      if (vec[g]) {
        const float4 x = __ldcg(reinterpret_cast<const float4*>(part + at[g]));
        sum[g][0] += x.x;
        sum[g][1] += x.y;
        sum[g][2] += x.z;
        sum[g][3] += x.w;
      } else {
        CUFUSE_UNROLL
        for (int j = 0; j < 4; ++j) {
          if (j < cnt[g]) {
            sum[g][j] += __ldcg(part + at[g] + j);
          }
        }
      }
    }
  }
  const Epi eb = epi.at_batch(batch);
  CUFUSE_UNROLL
  for (int g = 0; g < G; ++g) {
    if (cnt[g] > 0) {
      const int e = tid + g * Threads;
      store_group<4>(p, c, row0 + e / (CN / 4), col0 + e % (CN / 4) * 4, sum[g], vec_ok, eb);
    }
  }
}

// ---- split-K reduction -----------------------------------------------------------------------

/// C[b] = epilogue(sum over splits of ws[b][s]); ws is [batch][splits][m][n] fp32. For 8 and
/// more splits, where the in-kernel fixup (one block per tile) reads too much per block.
template <class Epi>
__global__ void splitk_reduce_kernel(const float* ws, gemm_args p, int batch, const Epi epi) {
  const std::int64_t mn = std::int64_t(p.m) * p.n;
  const std::int64_t total = mn * batch;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t bi = i / mn;
    const std::int64_t e = i - bi * mn;
    const float* src = ws + bi * p.splits * mn + e;
    float s = 0.0f;
    for (int k = 0; k < p.splits; ++k) {
      s += src[k * mn];
    }
    const std::int64_t row = e / p.n, col = e - row * p.n;
    void* c = static_cast<char*>(p.c) + bi * p.stride_c * (p.out_type == int(dtype::f32) ? 4 : 2);
    const std::int64_t idx = row * p.ldc + col;
    const Epi eb = epi.at_batch(int(bi));
    if constexpr (Epi::extra_outputs) {
      const float v[1] = {s};
      eb.store_extra(row, col, v, 1);
    }
    store_out(c, idx, epilogue_at(eb, p, eb.reads_c(p), s, c, idx, p.out_type, row, col),
              p.out_type);
  }
}

} // namespace cufuse::gemm_detail
