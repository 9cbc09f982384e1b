/// \file Tile schedulers: where a block works (`block_work`), the L2-friendly tile order
/// (`locate_tile`), one block per output tile (`locate_block`, the SIMT and mma.sync kernels) or
/// persistent blocks that walk the tiles of every batch (`persistent_tiles`, the wgmma kernel,
/// whose grid size it also gives the host), the driver of a cp.async main loop over K tiles
/// (`run_k_tiles`), the shared stage ring of those kernels (`stage_ring`), and zeroing
/// accumulators.
#pragma once

#include "arch/device.cuh"

#include <cstddef>

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

/// The shared memory of a block of the SIMT and mma.sync kernels: S stages of the A and B
/// tiles, `AElems` / `BElems` elements each (padding included). The epilogues stage C's tile in
/// the same bytes once every warp has read its last fragments; the TMA-fed mma.sync kernel adds
/// its mbarriers (mma_tma_storage), the wgmma kernel has its own (wgmma_config::shared_storage).
template <class T, int S, int AElems, int BElems>
struct stage_ring {
  T a[S][AElems];
  T b[S][BElems];
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

/// Output tiles of BM x BN over an m x n matrix: the grid of the one-block-per-tile kernels
/// (one block per tile, blockIdx.x = the tile in locate_tile's order) and the work of the
/// persistent ones (the host side; the kernels compute the same from gemm_args).
template <int BM, int BN>
constexpr unsigned tile_count(std::int64_t m, std::int64_t n) {
  return unsigned((m + BM - 1) / BM) * unsigned((n + BN - 1) / BN);
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

/// The persistent walk: the work items of all batches and K splits are numbered 0 .. work - 1
/// (plane-major, where plane z = batch * splits + split, as blockIdx.z of the one-block-per-tile
/// kernels; each plane's tiles in locate_tile's order), and a block takes items blockIdx.x,
/// + gridDim.x, ...; a block whose warpgroups take turns (ping-pong) gives warpgroup i its
/// block's items i, i + 2, ...
template <int BM, int BN>
struct persistent_tiles {
  int per_plane; // output tiles of one batch (and split)
  int work;      // work items of all batches and splits

  CUFUSE_DEVICE_FN explicit persistent_tiles(const gemm_args& p)
      : per_plane(((p.m + BM - 1) / BM) * ((p.n + BN - 1) / BN)),
        work(per_plane * p.batch * p.splits) {}
  /// The block's i-th item.
  CUFUSE_DEVICE_FN int first(int i) const {
    return static_cast<int>(blockIdx.x) + i * static_cast<int>(gridDim.x);
  }
  /// The block's item `step` items after `item`.
  CUFUSE_DEVICE_FN int next(int item, int step) const {
    return item + step * static_cast<int>(gridDim.x);
  }
  /// The plane (batch * splits + split) of an item.
  CUFUSE_DEVICE_FN int plane_of(int item) const { return item / per_plane; }
  /// The output tile of an item among its batch's tiles (a split-K tile's counter).
  CUFUSE_DEVICE_FN int tile_of(int item, int plane) const { return item - plane * per_plane; }
  /// Where item `item` of plane `plane` works: its tile, batch (`batch`) and K range.
  template <int AElem>
  CUFUSE_DEVICE_FN block_work at(const gemm_args& p, int item, int plane) const {
    return locate_tile<BM, BN, AElem, 2>(p, tile_of(item, plane), plane);
  }
  /// The grid (host): a block per work item, at most `resident` (the blocks the GPU holds at
  /// once); `planes` = batches x splits.
  static constexpr unsigned grid(std::int64_t m, std::int64_t n, unsigned planes,
                                 unsigned resident) {
    const unsigned tiles = tile_count<BM, BN>(m, n) * planes;
    return tiles < resident ? tiles : resident;
  }
};

/// Split-K over thread-block clusters (the wgmma kernel's cluster split): the S blocks of a
/// cluster (consecutive blockIdx.x, rank blockIdx.x % S) take the same output tile, rank r the K
/// range of split r (plane batch * S + r, so p.splits must be S); cluster c takes item c (the
/// tiles of every batch in order). The interface of persistent_tiles, for one item per cluster.
template <int BM, int BN, int S>
struct cluster_tiles {
  int per_plane; // output tiles of one batch
  int work;      // items: the tiles of all batches
  int rank;      // this block's split

  CUFUSE_DEVICE_FN explicit cluster_tiles(const gemm_args& p)
      : per_plane(((p.m + BM - 1) / BM) * ((p.n + BN - 1) / BN)), work(per_plane * p.batch),
        rank(static_cast<int>(blockIdx.x) % S) {}
  CUFUSE_DEVICE_FN int first(int i) const {
    return static_cast<int>(blockIdx.x) / S + i * static_cast<int>(gridDim.x / S);
  }
  CUFUSE_DEVICE_FN int next(int item, int step) const {
    return item + step * static_cast<int>(gridDim.x / S);
  }
  CUFUSE_DEVICE_FN int plane_of(int item) const { return (item / per_plane) * S + rank; }
  CUFUSE_DEVICE_FN int tile_of(int item, int) const { return item % per_plane; }
  template <int AElem>
  CUFUSE_DEVICE_FN block_work at(const gemm_args& p, int item, int plane) const {
    return locate_tile<BM, BN, AElem, 2>(p, tile_of(item, plane), plane);
  }
  /// The grid (host): a cluster of S blocks per item.
  static constexpr unsigned grid(std::int64_t m, std::int64_t n, unsigned batches) {
    return tile_count<BM, BN>(m, n) * batches * unsigned(S);
  }
};

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
