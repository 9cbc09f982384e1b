/// \file The shared-memory side of the mma.sync main loops: the configuration, the swizzled
/// tile layouts, the cp.async tile copies and where each warp's fragments lie.
#pragma once

#include "../arch/cp_async.cuh"
#include "../tile.cuh"

namespace cufuse::gemm_detail {

// ---- tensor cores: shared-memory tiles, cp.async, ldmatrix, mma.sync --------------------------

/// mma.sync tile: block BM x BN x BK, WM x WN warps (each a (BM/WM) x (BN/WN) warp tile),
/// `Stages`-deep cp.async pipeline. T: __half, __nv_bfloat16, or float (TF32 math).
/// `Tma` (TF32 only, sm_90a: kernels_sm90.cuh): the stages are filled by TMA instead of
/// cp.async, in the 128-byte-swizzled layouts of the wgmma kernels (no padded rows).
/// `Elem` (fp16 / bf16): the stages are filled through registers, for operands of any
/// alignment (kernel/mma_elem.cuh).
template <class T, int BM_, int BN_, int BK_, int WM_, int WN_, int Stages_, int Splits_ = 1,
          bool Tma_ = false, bool Elem_ = false>
struct mma_config {
  using element = T;
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, stages = Stages_;
  static constexpr int splits = Splits_;
  static constexpr bool tma = Tma_;
  static constexpr bool elem = Elem_;
  /// The warps that compute (and, with cp.async, copy); TMA tiles add a producer warpgroup.
  static constexpr int mma_threads = 32 * WM * WN;
  static constexpr int threads = mma_threads + (tma ? 128 : 0);
  static constexpr int WTM = BM / WM, WTN = BN / WN;
  static constexpr bool tf32 = sizeof(T) == 4;
  static constexpr int MMA_K = tf32 ? 8 : 16;
  static constexpr int MI = WTM / 16, NI = WTN / 8;
  static constexpr int chunk = 16 / int(sizeof(T)); // elements per 16-byte cp.async
  /// TF32 tiles contiguous along M or N pad each row by this many elements (see `swz`); the
  /// shared memory covers the padded size for either operand, whichever layout runs.
  static constexpr int mn_pad = tf32 && !tma ? 8 : 0;
  static constexpr int ring_bytes = stages * (BM + BN + 2 * mn_pad) * BK * int(sizeof(T));
  /// TMA: the ring starts on a 1024-byte boundary (the swizzle's period); two mbarriers per
  /// stage follow it.
  static constexpr int smem_bytes = ring_bytes + (tma ? 1024 + 16 * stages : 0);
  /// 4-warp tiles whose stages fit three blocks per SM ask ptxas for registers that allow
  /// three (12 warps instead of 8: the 128x64 tile, 166 registers, hides more latency).
  static constexpr int min_blocks =
      tma ? (WM * WN == 4 ? 2 : 1) : (threads == 128 && smem_bytes <= 72 * 1024 ? 3 : 1);
  static_assert(WTM % 16 == 0 && WTN % 16 == 0 && BK % 16 == 0 && BK % chunk == 0,
                "cufuse: mma warp tile must be a multiple of 16 x 16 and BK of 16");
  static_assert(!tma || (tf32 && BK == 32 && splits == 1 && WTM % 32 == 0 && BM <= 256 &&
                         BN <= 256 && smem_bytes <= 227 * 1024),
                "cufuse: TMA mma tiles are TF32 with BK = 32 (one 128-byte swizzled row), no "
                "split-K, warp tiles of whole 32-row boxes, at most 256 x 256 and 227 KiB");
};

/// Element offset of (r, c) in a row-major shared tile of `RowLen` elements per row, 16-byte
/// chunks XOR-swizzled by row so that ldmatrix / fragment reads hit distinct banks.
/// `Tf32Mn`: a TF32 tile contiguous along M/N, read one 32-bit element per fragment register
/// (ldmatrix cannot transpose 32-bit elements). Its rows are padded by 8 floats instead of
/// swizzled: a warp's 4-byte reads of rows t = 0..3, columns n + g (g = 0..7) then fall on
/// banks 8 t + g, its 8-byte reads of columns n + 2 g (g = 0..3, half a warp) on 8 t + 2 g,
/// all distinct, and every read of the main loop is one per-thread base plus a compile-time
/// offset. (The XOR swizzle needed an address per n8 block, recomputed every K tile: the hot
/// loop of the 256x128 NN kernel went from 356 to 325 instructions; bench/JOURNAL.md g21.)
template <int RowLen, int Chunk, bool Tf32Mn>
__host__ __device__ constexpr int swz(int r, int c) {
  constexpr int ch = RowLen / Chunk;
  int f = 0;
  if constexpr (Tf32Mn) {
    return r * (RowLen + 8) + c;
  } else if constexpr (ch >= 8) {
    f = r & 7;
  } else if constexpr (ch == 4) {
    f = (r >> 1) & 3;
  } else {
    f = (r >> 2) & 1;
  }
  return r * RowLen + (((c / Chunk) ^ f) * Chunk) + (c % Chunk);
}

/// Issues the cp.async copies of one MN x BK operand tile. KContig: stored [MN][BK] (rows along
/// MN), else [BK][MN]. Elements past mn_end / k_end are zero-filled (partial chunks included).
template <class Cfg, int MN, bool KContig>
CUFUSE_DEVICE_FN void mma_load_tile(typename Cfg::element* s, const typename Cfg::element* g,
                                    std::int64_t ld, int mn0, int k0, int mn_end, int k_end,
                                    int tid) {
  using T = typename Cfg::element;
  constexpr int E = Cfg::chunk;
  constexpr int row_len = KContig ? Cfg::BK : MN;
  constexpr int rows = KContig ? MN : Cfg::BK;
  constexpr int per_row = row_len / E;
  constexpr int total = rows * per_row;
  constexpr bool tf32_mn = Cfg::tf32 && !KContig;
  const bool full = mn0 + MN <= mn_end && k0 + Cfg::BK <= k_end;
  if (full) { // interior tile: no bounds checks
    CUFUSE_UNROLL
    for (int v = tid; v < total; v += Cfg::threads) {
      const int r = v / per_row;
      const int c = (v % per_row) * E;
      const std::int64_t off =
          KContig ? std::int64_t(mn0 + r) * ld + (k0 + c) : std::int64_t(k0 + r) * ld + (mn0 + c);
      cp_async16(s + swz<row_len, E, tf32_mn>(r, c), g + off, 16);
    }
    return;
  }
  CUFUSE_UNROLL
  for (int v = tid; v < total; v += Cfg::threads) {
    const int r = v / per_row;
    const int c = (v % per_row) * E;
    const int mn = KContig ? mn0 + r : mn0 + c;
    const int k = KContig ? k0 + c : k0 + r;
    const bool row_ok = KContig ? mn < mn_end : k < k_end;
    const int left = KContig ? k_end - k : mn_end - mn;
    const int valid = row_ok ? ::max(0, ::min(E, left)) : 0;
    const T* src =
        valid > 0 ? g + (KContig ? std::int64_t(mn) * ld + k : std::int64_t(k) * ld + mn) : g;
    cp_async16(s + swz<row_len, E, tf32_mn>(r, c), src, valid * int(sizeof(T)));
  }
}

/// The cp.async copies of one operand's interior tiles, planned once per thread. A thread's
/// copies of a tile sit R rows apart; R is a multiple of the swizzle's row period, so their
/// shared offsets differ by compile-time constants and their sources by a fixed stride, and
/// the next K tile is a fixed step further. (mma_load_tile recomputed all of it per copy.)
template <class Cfg, int MN, bool KContig>
struct mma_tile_copier {
  using T = typename Cfg::element;
  static constexpr int E = Cfg::chunk;
  static constexpr int row_len = KContig ? Cfg::BK : MN;
  static constexpr int rows = KContig ? MN : Cfg::BK;
  static constexpr int per_row = row_len / E;
  static constexpr int total = rows * per_row;
  static constexpr int R = Cfg::threads / per_row;
  static constexpr bool padded = Cfg::tf32 && !KContig; // rows padded, not swizzled (swz)
  static constexpr int pitch = row_len + (padded ? Cfg::mn_pad : 0);
  static constexpr int period = padded ? 1 : 8;    // rows per swizzle pattern
  static constexpr int stage_elems = rows * pitch; // one stage of this operand
  static constexpr int count = total / Cfg::threads;
  static_assert(Cfg::threads % per_row == 0 && total % Cfg::threads == 0 && R % period == 0,
                "cufuse: mma tile copies must split evenly into whole swizzle periods");

  const T* src;           // this thread's first copy of K tile 0
  std::int64_t step;      // elements between this thread's copies
  std::int64_t tile_step; // elements between K tiles
  int dst;                // element offset of the first copy in a stage

  CUFUSE_DEVICE_FN mma_tile_copier(const T* g, std::int64_t ld, int mn0, int k0, int tid) {
    const int r = tid / per_row, c = (tid % per_row) * E;
    src = g +
          (KContig ? std::int64_t(mn0 + r) * ld + (k0 + c) : std::int64_t(k0 + r) * ld + (mn0 + c));
    step = std::int64_t(R) * ld;
    tile_step = KContig ? std::int64_t(Cfg::BK) : std::int64_t(Cfg::BK) * ld;
    dst = swz < row_len, E, Cfg::tf32 && !KContig > (r, c);
  }
  /// Copy i of this thread for the K tile whose first copy (i = 0) reads `from`, into the
  /// stage at shared byte address `stage`.
  CUFUSE_DEVICE_FN void copy(unsigned stage, const T* from, int i) const {
    cp_async16_at(stage + unsigned(dst + i * R * pitch) * unsigned(sizeof(T)), from + i * step);
  }
};

/// Where a lane's fragment reads fall in the swizzled stage tiles. Every read of the main loop
/// is at element `r0 * RowLen + (base ^ c0)`: a per-thread `base` (warp position and lane, the
/// swizzle applied once) and a compile-time (r0, c0) from the unrolled mi / nj / ks loops.
/// This holds because RowLen is a power of two, r0 is a multiple of the swizzle's row period,
/// and c0 only carries chunk bits that `base` leaves zero, so the swizzle's XOR commutes with
/// adding c0. One XOR per distinct c0 replaces a full swizzle per ldmatrix.
/// test/host/test_gemm_layout.cu checks it against the direct swz() of every read of every
/// configuration. TF32: operands contiguous along K use ldmatrix (32-bit elements as b16
/// pairs); the others are read from padded rows, at `r0 * (RowLen + 8) + base + c0`: B one
/// 32-bit element per register (`e`), A two registers per 8-byte read (`kh`: the k row).
template <class Cfg, bool TA, bool TB>
struct mma_frag_layout {
  static constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, E = Cfg::chunk;
  static constexpr int WTM = Cfg::WTM, WTN = Cfg::WTN;
  static constexpr bool a_ldsm = !Cfg::tf32 || !TA; // A fragments come from ldmatrix
  static constexpr bool b_ldsm = !Cfg::tf32 || TB;
  /// TF32 M-major A filled by TMA: boxes of 32 M-rows (128 bytes) x BK K-rows, one per 4 KiB,
  /// 16-byte chunks XOR-swizzled with the K row (k & 7), as the wgmma kernels load it.
  static constexpr bool a_box = Cfg::tma && !a_ldsm;

  /// The 16-byte chunk of a 32-row box that lane group g reads for fragment parity u = mi & 1
  /// (TMA layout): half a warp (g = 0..3 or 4..7) reads rows k t (t = 0..3) of chunks c, c,
  /// c ^ 4, c ^ 4, the g & 1 half of each, so with the swizzle (c ^ t) its 16 8-byte reads
  /// cover the 32 banks once.
  __host__ __device__ static constexpr int box_chunk(int u, int g) {
    return ((g >> 1) & 1) * 4 + (g >> 2) * 2 + u;
  }
  /// Row of the warp tile that row h * 8 + g of m16 fragment mi computes. TF32 M-major A: rows
  /// g and g + 8 are neighbours in shared memory (2 g + h, or a pair of a box chunk under TMA),
  /// so that registers a0 / a1 (one k) come from one 8-byte read into the register pair the MMA
  /// takes (a2 / a3 likewise); the MMA does not care which rows it is given, and the epilogue
  /// writes each row back to where it came from.
  __host__ __device__ static constexpr int a_row(int mi, int h, int g) {
    if constexpr (a_ldsm) {
      return mi * 16 + h * 8 + g;
    } else if constexpr (a_box) {
      return 32 * (mi >> 1) + 4 * box_chunk(mi & 1, g) + 2 * (g & 1) + h;
    } else {
      return mi * 16 + 2 * g + h;
    }
  }

  __host__ __device__ static constexpr int a_base(int wm, int lane) {
    const int m = wm * WTM;
    if constexpr (a_box) { // box of the warp's rows, k row t, chunk swizzled with t (k & 7)
      const int g = lane >> 2, t = lane & 3;
      return (m / 32) * 32 * BK + t * 32 + ((box_chunk(0, g) ^ t) << 2) + 2 * (g & 1);
    } else if constexpr (!Cfg::tf32 && !TA) {
      return swz<BK, E, false>(m + (lane & 15), (lane >> 4) * 8);
    } else if constexpr (!Cfg::tf32) {
      return swz<BM, E, false>((lane & 7) + ((lane >> 4) & 1) * 8, m + ((lane >> 3) & 1) * 8);
    } else if constexpr (!TA) {
      return swz<BK, E, false>(m + (lane & 7) + ((lane >> 3) & 1) * 8, ((lane >> 4) & 1) * 4);
    } else {
      return swz<BM, E, true>(lane & 3, m + 2 * (lane >> 2));
    }
  }
  /// A fragment mi of k-step ks (ldmatrix), or registers 2 kh, 2 kh + 1 of it (TF32 M-major).
  __host__ __device__ static constexpr int a_off(int base, int mi, int ks, int kh = 0) {
    if constexpr (a_box) { // chunk ^ u (odd fragments) ^ 4 kh (k row + 4): bits 2 and 4 of base
      return (base ^ (4 * (mi & 1) + 16 * kh)) + (mi >> 1) * 32 * BK + (ks * 8 + kh * 4) * 32;
    } else if constexpr (!TA) {
      return mi * 16 * BK + (base ^ (ks * Cfg::MMA_K));
    } else if constexpr (!Cfg::tf32) {
      return ks * 16 * BM + (base ^ (mi * 16));
    } else {
      return (ks * 8 + kh * 4) * (BM + Cfg::mn_pad) + base + mi * 16;
    }
  }
  __host__ __device__ static constexpr int b_base(int wn, int lane) {
    const int n = wn * WTN;
    if constexpr (!Cfg::tf32 && TB) {
      return swz<BK, E, false>(n + (lane & 7) + ((lane >> 4) & 1) * 8, ((lane >> 3) & 1) * 8);
    } else if constexpr (!Cfg::tf32) {
      return swz<BN, E, false>((lane & 7) + ((lane >> 3) & 1) * 8, n + ((lane >> 4) & 1) * 8);
    } else if constexpr (TB) {
      return swz<BK, E, false>(n + (lane & 7) + ((lane >> 4) & 1) * 8, ((lane >> 3) & 1) * 4);
    } else {
      return swz<BN, E, true>(lane & 3, n + (lane >> 2));
    }
  }
  /// B fragments of k-step ks: the pair of n8 blocks j (ldmatrix), or block j, register e
  /// (TF32 N-major: one 32-bit read per register).
  __host__ __device__ static constexpr int b_off(int base, int j, int ks, int e = 0) {
    if constexpr (TB) {
      return j * 16 * BK + (base ^ (ks * Cfg::MMA_K));
    } else if constexpr (!Cfg::tf32) {
      return ks * 16 * BN + (base ^ (j * 16));
    } else {
      return (ks * 8 + e * 4) * (BN + Cfg::mn_pad) + base + j * 8;
    }
  }
};

} // namespace cufuse::gemm_detail
