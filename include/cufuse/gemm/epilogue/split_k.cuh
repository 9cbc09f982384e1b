/// \file Split-K: the partial tiles a split block writes to the fp32 workspace, the in-kernel
/// finish by the last split of a tile (up to 4 splits), and the reduction kernel (8 or more).
#pragma once

#include "../../core/pdl.cuh"
#include "../tile.cuh"
#include "linear_combination.cuh"

namespace cufuse::gemm_detail {

/// Whether the last split to arrive at each tile of configuration `Cfg` sums the tile's
/// partials in the kernel (splitk_finish, per-tile counters). Otherwise, past splitk_fixup_max
/// splits, a reduction kernel after the GEMM does (src/gemm/launch.cu), and the kernels compile
/// neither that finish nor a direct store.
template <class Cfg>
CUFUSE_HOST_DEVICE constexpr bool finishes_in_kernel() {
  return Cfg::splits > 1 && Cfg::splits <= splitk_fixup_max;
}

/// Whether a block of configuration `Cfg` writes its partial tile to the workspace: always for
/// the tiles a reduction kernel finishes (launch.cu gives them a workspace always), else when
/// the launcher gave one (p.ws).
template <class Cfg>
CUFUSE_DEVICE_FN bool writes_partials(const gemm_args& p) {
  if constexpr (Cfg::splits > 1 && !finishes_in_kernel<Cfg>()) {
    return true;
  } else {
    return Cfg::splits > 1 && p.ws != nullptr;
  }
}

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

/// Split-K, after the `Threads` threads `tid` (0 .. Threads - 1) of a block have written their
/// split's partial CM x CN tile (at row0, col0 of C as stored, whose shape `p` gives; output
/// tile `tile` of batch `batch`): the last of the tile's splits to arrive sums the partials of
/// every split in split order (so the result does not depend on which one is last), applies the
/// epilogue and writes C: one launch per call. Each thread sums groups of 4 columns, at most
/// `MaxGroups` of them at a time; `MaxSplits` > 0 bounds p.splits (all splits' loads then go out
/// together), 0: any number. `sync()` synchronizes the `Threads` threads (the
/// whole block, or a named barrier over the consumer warpgroups of the wgmma kernel). (Without
/// counters, p.ws_count null, the launcher runs splitk_reduce_kernel after the GEMM instead.)
template <int CM, int CN, int Threads, int MaxGroups, int MaxSplits, class Epi, class Sync>
CUFUSE_DEVICE_FN void splitk_finish(const gemm_args& p, int row0, int col0, const Epi& epi, int tid,
                                    int batch, int tile, const Sync& sync) {
  __shared__ int last;
  if (p.ws == nullptr || p.ws_count == nullptr) { // unsplit, or reduced by a second kernel
    return;
  }
  const int tiles = ((p.m + CM - 1) / CM) * ((p.n + CN - 1) / CN);
  __threadfence(); // this thread's partials are visible to the block that finishes the tile
  sync();
  if (tid == 0) {
    unsigned* count = p.ws_count + std::int64_t(batch) * tiles + tile;
    last = atomicAdd(count, 1u) + 1 == unsigned(p.splits);
  }
  sync();
  if (!last) {
    return;
  }
  __threadfence();
  // Each thread sums groups of 4 columns over every split, the groups' loads of one split
  // issued together (16-byte loads where the workspace rows allow): a scalar loop left the
  // finishing block waiting on one load at a time (bench/JOURNAL.md g27).
  static_assert(CN % 4 == 0 && (CM * CN / 4) % Threads == 0,
                "cufuse: a split-K tile must split into 4-column groups evenly over the block");
  // At most MaxGroups groups at a time: all 16 of a thread's groups of the wgmma 64x128 tile at
  // once spilled 844 bytes (128 registers per thread), 8 at a time 144 bytes, 4 none.
  constexpr int GT = CM * CN / 4 / Threads, G = GT < MaxGroups ? GT : MaxGroups;
  static_assert(GT % G == 0, "cufuse: a split-K tile's groups run in equal batches");
  const std::int64_t mn = std::int64_t(p.m) * p.n;
  const float* src = p.ws + std::int64_t(batch) * p.splits * mn;
  const int out_size = p.out_type == int(dtype::f32) ? 4 : 2;
  void* c = static_cast<char*>(p.c) + batch * p.stride_c * out_size;
  const bool vec_ok =
      p.ldc % 4 == 0 && reinterpret_cast<std::uintptr_t>(c) % (4u * unsigned(out_size)) == 0;
  const Epi eb = epi.at_batch(batch);
  for (int g0 = 0; g0 < GT; g0 += G) {
    float sum[G][4];
    std::int64_t at[G];
    int cnt[G];  // columns of the group inside C (0 .. 4)
    bool vec[G]; // all 4, and 16-byte aligned in the workspace (rows of a multiple of 4)
    CUFUSE_UNROLL
    for (int g = 0; g < G; ++g) {
      const int e = tid + (g0 + g) * Threads, r = e / (CN / 4), q = e % (CN / 4) * 4;
      at[g] = std::int64_t(row0 + r) * p.n + (col0 + q);
      cnt[g] = row0 + r < p.m ? ::max(0, ::min(4, p.n - (col0 + q))) : 0;
      vec[g] = cnt[g] == 4 && p.n % 4 == 0;
      sum[g][0] = sum[g][1] = sum[g][2] = sum[g][3] = 0.0f;
    }
    auto add = [&](int k) {
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
    };
    // In split order: the same sum whichever block is last. With a bound on the splits, every
    // split's loads of the batch go out together.
    if constexpr (MaxSplits > 0) {
      CUFUSE_UNROLL
      for (int k = 0; k < MaxSplits; ++k) {
        if (k < p.splits) {
          add(k);
        }
      }
    } else {
      for (int k = 0; k < p.splits; ++k) {
        add(k);
      }
    }
    CUFUSE_UNROLL
    for (int g = 0; g < G; ++g) {
      if (cnt[g] > 0) {
        const int e = tid + (g0 + g) * Threads;
        store_group<4>(p, c, row0 + e / (CN / 4), col0 + e % (CN / 4) * 4, sum[g], vec_ok, eb);
      }
    }
  }
}

/// splitk_finish for the one-block-per-tile kernels: every thread of the block, output tile
/// blockIdx.x of plane blockIdx.z. Nothing unless `Finish` (finishes_in_kernel): the code would
/// only take registers (the 128x128 SIMT 8-split kernel spilled in its main loop with it).
template <int CM, int CN, int Threads, bool Finish, class Epi>
CUFUSE_DEVICE_FN void splitk_fixup(const gemm_args& p, int row0, int col0, const Epi& epi) {
  if constexpr (Finish) {
    splitk_finish<CM, CN, Threads, 8, 0>(p, row0, col0, epi, static_cast<int>(threadIdx.x),
                                         static_cast<int>(blockIdx.z) / p.splits,
                                         static_cast<int>(blockIdx.x), [] { __syncthreads(); });
  } else {
    (void)p, (void)row0, (void)col0, (void)epi;
  }
}

// ---- split-K reduction -----------------------------------------------------------------------

/// C[b] = epilogue(sum over splits of ws[b][s]); ws is [batch][splits][m][n] fp32. For 8 and
/// more splits, where the in-kernel fixup (one block per tile) reads too much per block. Each
/// thread sums a group of 4 columns over the splits in split order (16-byte loads when rows are
/// whole groups) and stores it through store_group: two 64-bit divisions per group, where one
/// thread per element paid two per element. Launched after the GEMM as a programmatic
/// dependent launch where the device allows (launch_splitk_reduce): pdl_wait before the reads.
template <class Epi>
__global__ void splitk_reduce_kernel(const float* ws, gemm_args p, int batch, const Epi epi) {
  detail::pdl_wait();
  const int groups = (p.n + 3) / 4; // per row
  const std::int64_t mn = std::int64_t(p.m) * p.n, per_batch = std::int64_t(p.m) * groups;
  const std::int64_t total = per_batch * batch;
  const bool vec_rows = p.n % 4 == 0;
  const int out_size = p.out_type == int(dtype::f32) ? 4 : 2;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const int bi = static_cast<int>(i / per_batch);
    const std::int64_t e = i - bi * per_batch;
    const int row = static_cast<int>(e / groups);
    const int col = static_cast<int>(e - std::int64_t(row) * groups) * 4;
    const float* src = ws + bi * p.splits * mn + std::int64_t(row) * p.n + col;
    const int cnt = ::min(4, p.n - col);
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (vec_rows) {
#pragma unroll 8
      for (int k = 0; k < p.splits; ++k) {
        const float4 x = __ldcg(reinterpret_cast<const float4*>(src + k * mn));
        s[0] += x.x;
        s[1] += x.y;
        s[2] += x.z;
        s[3] += x.w;
      }
    } else {
      for (int k = 0; k < p.splits; ++k) {
        for (int j = 0; j < cnt; ++j) {
          s[j] += __ldcg(src + k * mn + j);
        }
      }
    }
    void* c = static_cast<char*>(p.c) + bi * p.stride_c * out_size;
    const bool vec_ok =
        p.ldc % 4 == 0 && reinterpret_cast<std::uintptr_t>(c) % (4u * unsigned(out_size)) == 0;
    store_group<4>(p, c, row, col, s, vec_ok, epi.at_batch(bi));
  }
}

} // namespace cufuse::gemm_detail
