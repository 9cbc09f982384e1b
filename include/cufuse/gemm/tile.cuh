/// \file The tile schedule of the non-persistent kernels (one block per output tile): where a
/// block works (`block_work`), the L2-friendly tile order (`locate_tile`), the driver of a
/// cp.async main loop over K tiles (`run_k_tiles`), and zeroing accumulators.
#pragma once

#include "arch/device.cuh"

namespace cufuse::gemm_detail {

/// Where one block works: its output tile, its K range, and its operands' base pointers.
struct block_work {
  int m0, n0, k_begin, k_end;
  int batch;
  const char* a;
  const char* b;
  void* c;
  bool vec_ok; // C's base and ldc allow `vec`-element vector stores

  /// K tiles of depth BK in this block's K range (the last one may be partial).
  template <int BK>
  CUFUSE_DEVICE_FN int k_tiles() const {
    return k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
  }
};

/// Sets every element of a thread's accumulator array to zero.
template <class A>
CUFUSE_DEVICE_FN void zero_acc(A& acc) {
  if constexpr (std::is_array_v<A>) {
    CUFUSE_UNROLL
    for (int i = 0; i < int(std::extent_v<A>); ++i) {
      zero_acc(acc[i]);
    }
  } else {
    acc = 0.0f;
  }
}

/// The work of output tile `pid` (of one batch x split plane `z`): groups of 8 tile rows are
/// walked column by column so that blocks running together share A and B tiles in L2.
template <int BM, int BN, int AElem, int Vec>
CUFUSE_DEVICE_FN block_work locate_tile(const gemm_args& p, int pid, int z) {
  const int tiles_m = (p.m + BM - 1) / BM;
  const int tiles_n = (p.n + BN - 1) / BN;
  constexpr int group = 8;
  const int width = group * tiles_n;
  const int first_m = (pid / width) * group;
  const int gsize = ::min(tiles_m - first_m, group);
  const int tm = first_m + (pid % width) % gsize;
  const int tn = (pid % width) / gsize;

  const int batch = z / p.splits;
  const int split = z - batch * p.splits;
  block_work w;
  w.m0 = tm * BM;
  w.n0 = tn * BN;
  w.batch = batch;
  w.k_begin = split * p.k_chunk;
  w.k_end = ::min(p.k, w.k_begin + p.k_chunk);
  w.a = static_cast<const char*>(p.a) + batch * p.stride_a * AElem;
  w.b = static_cast<const char*>(p.b) + batch * p.stride_b * AElem;
  const int out_size = p.out_type == int(dtype::f32) ? 4 : 2;
  w.c = static_cast<char*>(p.c) + (batch * p.stride_c + split * p.split_stride_c) * out_size;
  w.vec_ok = (p.ldc % Vec == 0) &&
             (reinterpret_cast<std::uintptr_t>(w.c) % (std::uintptr_t(Vec) * out_size) == 0);
  return w;
}

template <int BM, int BN, int AElem, int Vec>
CUFUSE_DEVICE_FN block_work locate_block(const gemm_args& p) {
  return locate_tile<BM, BN, AElem, Vec>(p, static_cast<int>(blockIdx.x),
                                         static_cast<int>(blockIdx.z));
}

/// Drives a cp.async main loop of `tiles` K tiles with an S-stage ring: tile(t, std::true_type)
/// while the copies tile t issues (of tile t + S - 1) lie wholly inside the matrices (`interior_mn`
/// block, `full` K tiles wholly inside), so they need no checks; tile(t, std::false_type) after.
template <int S, class Tile>
CUFUSE_DEVICE_FN void run_k_tiles(bool interior_mn, int full, int tiles, Tile& tile) {
  int t = 0;
  if (interior_mn) {
    for (; t + S - 1 < full; ++t) {
      tile(t, std::true_type{});
    }
  }
  for (; t < tiles; ++t) {
    tile(t, std::false_type{});
  }
}

} // namespace cufuse::gemm_detail
