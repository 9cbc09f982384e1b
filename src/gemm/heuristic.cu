/// \file The static heuristic: a time model per variant, used when no tuning data decides.
#include "engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace cufuse::gemm_detail {

namespace {

/// A block's FLOP rate at full arithmetic intensity, per family: the heuristic's rate table.
/// Only the order of variants matters (the heuristic picks one when no tuning data decides), so
/// these are round numbers set by hand when each family was added (commit 78f6cf9 for SIMT and
/// mma.sync, then the wgmma pair with the sm_90a variants), not measurements; the persistent
/// wgmma adjustments in predicted_seconds were fit to the H200 sweeps (bench/results/gemm.json).
/// The tuner (online, or a database from cufuse-tune) replaces the heuristic's choice.
struct family_rate {
  const char* family;
  double flops_per_second;
};
constexpr family_rate simt_rate{"SIMT fp32", 0.45e12};
constexpr family_rate mma_tf32_rate{"mma.sync TF32", 2.2e12};
constexpr family_rate mma_16bit_rate{"mma.sync FP16/BF16", 4.5e12};
constexpr family_rate wgmma_tf32_rate{"wgmma TF32", 3.5e12};
constexpr family_rate wgmma_16bit_rate{"wgmma FP16/BF16", 7.0e12};

constexpr family_rate rate_of(const variant& v) {
  switch (v.fam) {
  case family::simt:
    return simt_rate;
  case family::mma:
    return v.tf32 ? mma_tf32_rate : mma_16bit_rate;
  default:
    return v.tf32 ? wgmma_tf32_rate : wgmma_16bit_rate;
  }
}

/// Whether the wgmma kernels can store C through TMA (include/cufuse/gemm/launch.cuh,
/// tma_store_ok): a 16-byte aligned base, leading dimension and batch stride, and rows of whole
/// 16-byte units. Else they store from the accumulators, 8 rows per warp store.
bool c_tma_storable(const problem& p) {
  const std::int64_t e = dtype_size(p.out);
  const bool batched_c = p.batch > 1 && p.stride_c != 0;
  return reinterpret_cast<std::uintptr_t>(p.c) % 16 == 0 && (p.ldc * e) % 16 == 0 &&
         (p.n * e) % 16 == 0 && (!batched_c || (p.stride_c * e) % 16 == 0) &&
         (p.batch <= 1 || p.stride_c != 0 || p.beta == 0.0f);
}

/// Cluster split-K (wgmma, M <= 128 in mind): waves of clusters over the clusters the device
/// holds, each wave its blocks' K ranges at the wgmma rate plus 8 us (fill, the exchange,
/// block 0's store: 64x128 in clusters of 2 took 21.7 us at 16x4096x4096, 22.7 us at
/// 128x4096x4096 and 34 us in two waves at 256x4096x4096, H100; bench/JOURNAL.md t8), and no
/// less than streaming A and B at 2.6 TB/s, B once per row of tiles unless one wave holds every
/// row of a column of tiles (they then share it in L2).
double cluster_seconds(int vi, const problem& p, const device_state& d, int chunk) {
  const variant& v = registry()[vi];
  const std::int64_t tm = ceil_div(p.m, v.bm), tn = ceil_div(p.n, v.bn);
  const double items = double(tm * tn * p.batch);
  const int held = vi < int(d.clusters.size()) && d.clusters[vi] > 0
                       ? d.clusters[vi]
                       : std::max(1, d.sms / std::max(v.splits, 1));
  const double waves = std::ceil(items / held);
  const double k_work = double(ceil_div(std::max<std::int64_t>(chunk, 1), v.bk) * v.bk);
  const double intensity = std::min(1.0, (double(v.bm) * v.bn / (v.bm + v.bn)) / 64.0);
  const double t_math =
      waves * (2.0 * v.bm * v.bn * k_work / (rate_of(v).flops_per_second * intensity) + 8e-6);
  const double b_reads = waves > 1 ? double(tm) : 1.0;
  const double bytes =
      (double(p.m) * p.k + double(p.k) * p.n * b_reads) * double(dtype_size(p.ab)) * p.batch;
  return std::max(t_math, bytes / 2.6e12);
}

} // namespace

/// A rough time model: waves of blocks over the SMs, each block's work divided by a per-SM rate
/// that grows with the tile's arithmetic intensity, plus the split-K reduction's traffic.
double predicted_seconds(int vi, const problem& p, const device_state& d) {
  const variant& v = registry()[vi];
  if (v.packs >= 0) {
    // The base variant on the copies, after a pass that reads and writes the copied operands
    // at about 80% of an H100's copy bandwidth, plus a launch and the workspace's allocation.
    const pack_plan plan = plan_packing(registry()[v.packs], p);
    return predicted_seconds(v.packs, p, d) + 2.0 * double(plan.a_bytes + plan.b_bytes) / 2.5e12 +
           4e-6;
  }
  const auto [splits, chunk] = split_plan(v, p);
  if (v.cluster_split) {
    return cluster_seconds(vi, p, d, chunk);
  }
  const double tiles = double(ceil_div(p.m, v.bm) * ceil_div(p.n, v.bn)) * p.batch * splits;
  const int per_sm = std::max(1, std::min({d.smem_per_sm / std::max(v.smem, 1), 2048 / v.threads,
                                           v.fam == family::simt ? 2 : 2}));
  const double waves = std::ceil(tiles / (double(d.sms) * per_sm));
  const double rate = rate_of(v).flops_per_second;
  double intensity = std::min(1.0, (double(v.bm) * v.bn / (v.bm + v.bn)) / 64.0);
  if (v.fam == family::simt) {
    // A SIMT thread's FMAs per shared-memory read grow with its thread tile: 64x256 with the
    // 8x8 thread tiles of 128x128 ran as fast or faster (M = 64-256, fp32, H100;
    // bench/JOURNAL.md t15), which the block tile's shape alone rates 0.8x.
    intensity = std::max(intensity, std::min(1.0, double(v.bm) * v.bn / v.threads / 64.0));
  }
  const double k_work = double(ceil_div(std::max<std::int64_t>(chunk, 1), v.bk) * v.bk);
  double t = waves * 2.0 * v.bm * v.bn * k_work * per_sm / (rate * intensity);
  if (v.align == 1 && v.fam == family::simt) {
    t *= 1.3; // scalar loads
  }
  if (v.align == 1 && v.fam == family::mma) {
    // Loads of 2 to 8 bytes through registers: behind the cp.async tiles when aligned. Among
    // themselves the load instructions, not the tile's intensity, bound the 16-bit tiles:
    // 128 x 64 ran 1.19x and 1.29x faster than 128 x 128 on bf16 1000x3000x500 and
    // 8192x50257x768, 0.88x on 4095^3 (H100, bench/any_shape_bench.cu), so the wider tile is
    // rated down. TF32 (4-byte elements, half the loads per FLOP): 128 x 128 on 8 warps ran
    // 1.15x and 1.19x faster than 128 x 64 on 4095^3 and 8192x50257x768.
    t *= v.bm * v.bn > 128 * 64 && !v.tf32 ? 1.6 * 1.6 : 1.6;
  }
  if (splits > 1) {
    t += double(p.m) * p.n * p.batch * (splits + 2) * 4 / 2.5e12 + 3e-6;
  }
  if (splits > 1 && v.fam == family::mma) {
    // The mma.sync split-K tiles (a workspace, its counters cleared by a memset, the last
    // split's sum) ran 2-3.5x slower than this model at M <= 128, N = K = 4096 / 8192 (H100,
    // bench/results/small_m_h100.md): rated down as the wgmma ones below.
    t *= 2.0;
  }
  if (v.fam == family::wgmma) {
    // Persistent TMA kernels, calibrated on H200 measurements (bench/results/gemm.json):
    // ping-pong hides the epilogue but pays a serialized start, so it wins only with several
    // tiles per block and a long K loop; 128x256 wins only with many tiles per block.
    const double per_block = tiles / (double(d.sms) * per_sm);
    if (v.pingpong) {
      t *= (per_block >= 4 && p.k >= 2048) ? 0.95 : 1.3;
    } else if (v.bm * v.bn > 128 * 128) {
      t *= per_block >= 12 ? 0.97 : 1.08;
    }
    if (v.bn == 64) {
      // One consumer warpgroup issuing m64n64 MMAs: half the work per instruction of the
      // 64x128 tile. Where the tiles outnumber the SMs its MMA rate shows: 256x4096x4096 took
      // 32.0 us on 64x64 against 28.1 on 64x128 two per SM (H100, bench/JOURNAL.md t10).
      t *= 1.55;
    }
    if (!c_tma_storable(p)) {
      // C stored straight from the accumulators, at about 1.5 TB/s with the 128 x 128 and
      // 64 x 128 tiles and 0.4 TB/s with the 128 x 256 and ping-pong ones, as the vocabulary
      // projection 8192x50257x768 (C's rows 2-byte aligned) ran against mma.sync's staged
      // stores (H100, bench/any_shape_bench.cu; bench/JOURNAL.md t6).
      const double rate = v.pingpong || v.bm * v.bn > 128 * 128 ? 0.4e12 : 1.5e12;
      t += double(p.m) * p.n * p.batch * dtype_size(p.out) / rate;
    }
    // Few tiles (M <= 128 with N, K in the thousands): the blocks stream their operands at
    // about 27 GB/s each, which bounds such problems before the MMAs do (the unsplit 128x128
    // tile took 75 us at 16x8192x8192 on 64 blocks, H100; bench/JOURNAL.md t8). A and B once
    // each (their rows of tiles share them in L2), at most 2.6 TB/s.
    const double blocks = std::min(tiles, double(d.sms));
    const double bytes = (double(p.m) * p.k + double(p.k) * p.n) * dtype_size(p.ab) * p.batch;
    t = std::max(t, bytes / std::min(2.6e12, blocks * 27e9));
    if (splits > 1) {
      // Split-K on the persistent tiles ran 1.0-1.9x slower than the model says (M <= 128,
      // N = K = 4096 / 8192, H100; bench/JOURNAL.md t5): the model would pick it for every
      // small-M problem. Rated down so that only tuning picks it.
      t *= 2.0;
    }
  }
  return t;
}

int heuristic(const problem& p, const device_state& d, const std::vector<int>& valid) {
  int best = -1;
  double best_t = 0;
  for (int vi : valid) {
    const double t = predicted_seconds(vi, p, d);
    if (best < 0 || t < best_t) {
      best = vi;
      best_t = t;
    }
  }
  return best;
}

} // namespace cufuse::gemm_detail
