/// \file The FP32 SIMT kernels (CUDA cores): the register-staged one (sm_70+) and the cp.async
/// pipeline (sm_80+), with their configurations, tile loaders and copiers.
#pragma once

#include "../arch/cp_async.cuh"
#include "../epilogue/linear_combination.cuh"
#include "../epilogue/split_k.cuh"
#include "../tile.cuh"

namespace cufuse::gemm_detail {

// ---- SIMT (CUDA cores) -----------------------------------------------------------------------

/// FP32 SIMT tile: block BM x BN x BK; each thread computes (4*RM) x (4*RN) outputs as RM x RN
/// 4x4 sub-tiles spread BM/RM rows and BN/RN columns apart (conflict-free float4 shared reads).
/// Vec: elements per global load (4: 16-byte loads, needs aligned pointers and leading
/// dimensions; 1: any alignment). Splits > 1: split-K into an fp32 workspace.
/// Stages: 0 = tiles staged through registers into a shared double buffer (any type, sm_70+);
/// >= 2 = a cp.async pipeline of that many stages straight into shared memory (FP32 with Vec 4,
/// sm_80+): no staging registers, so deeper K tiles fit.
template <class T, int BM_, int BN_, int BK_, int RM_, int RN_, int Vec_, int Splits_ = 1,
          int Stages_ = 0, int KRowsA_ = 4, int KRowsB_ = 4>
struct simt_config {
  using element = T;
  static constexpr int BM = BM_, BN = BN_, BK = BK_, RM = RM_, RN = RN_, Vec = Vec_;
  static constexpr int splits = Splits_;
  static constexpr int stages = Stages_;
  /// cp.async: rows per warp copy of A / B when it is transposed by 4-byte copies (4 rows x 8 K,
  /// 2 x 16 or 1 x 32: fewer rows touch fewer lines per copy, at the price of bank conflicts)
  static constexpr int krows_a = KRowsA_, krows_b = KRowsB_;
  static constexpr int TM = 4 * RM, TN = 4 * RN;
  static constexpr int TX = BN / TN, TY = BM / TM;
  static constexpr int threads = TX * TY;
  static constexpr int pad = 4;
  static constexpr int smem_bytes = (stages > 0 ? stages : 2) * BK * ((BM + pad) + (BN + pad)) * 4;
  /// Two blocks per SM: 256-thread tiles with 8x8 outputs per thread must fit 128 registers,
  /// or one register over that halves the SM's warps (ptxas: the 128x128 NT kernel used 129).
  /// Larger thread tiles take one block and up to 255 registers.
  static constexpr int min_blocks = threads >= 256 && TM * TN <= 64 ? 2 : 1;
  static_assert(BM % TM == 0 && BN % TN == 0 && threads % 32 == 0 && threads <= 1024,
                "cufuse: SIMT tile must split into whole warps of thread tiles");
  static_assert(stages == 0 || (stages >= 2 && std::is_same_v<T, float> && Vec == 4),
                "cufuse: the cp.async SIMT pipeline takes FP32 operands with 16-byte alignment");
};

/// Loads an MN x BK tile of one operand from global memory into registers, then stores it to a
/// shared [BK][MN + pad] float array. KContig: the operand is contiguous along K.
template <class T, int MN, int BK, int Vec, int Threads, bool KContig>
struct simt_tile_loader {
  static constexpr int contig = KContig ? BK : MN;
  static constexpr int vec_per_row = contig / Vec;
  static constexpr int per_thread = MN * BK / Vec / Threads;
  static_assert((MN * BK / Vec) % Threads == 0 && contig % Vec == 0,
                "cufuse: SIMT tile not divisible among the threads");
  struct alignas(sizeof(T) * Vec) vec_t {
    T v[Vec];
  };
  float reg[per_thread][Vec];

  CUFUSE_DEVICE_FN void load(const T* p, std::int64_t ld, int mn0, int k0, int mn_end, int k_end,
                             int tid) {
    CUFUSE_UNROLL
    for (int i = 0; i < per_thread; ++i) {
      const int v = tid + i * Threads;
      const int row = v / vec_per_row;
      const int cv = (v % vec_per_row) * Vec;
      const int mn = KContig ? mn0 + row : mn0 + cv;
      const int k = KContig ? k0 + cv : k0 + row;
      const std::int64_t off = KContig ? std::int64_t(mn) * ld + k : std::int64_t(k) * ld + mn;
      const bool row_ok = KContig ? mn < mn_end : k < k_end;
      const int contig_left = KContig ? k_end - k : mn_end - mn;
      if (row_ok && contig_left >= Vec) {
        const vec_t x = *reinterpret_cast<const vec_t*>(p + off);
        CUFUSE_UNROLL
        for (int j = 0; j < Vec; ++j) {
          reg[i][j] = to_float(x.v[j]);
        }
      } else {
        CUFUSE_UNROLL
        for (int j = 0; j < Vec; ++j) {
          reg[i][j] = (row_ok && j < contig_left) ? to_float(p[off + j]) : 0.0f;
        }
      }
    }
  }

  /// The same for a tile wholly inside the matrix: no bounds checks, vector loads only.
  CUFUSE_DEVICE_FN void load_interior(const T* p, std::int64_t ld, int mn0, int k0, int tid) {
    const T* tile = p + (KContig ? std::int64_t(mn0) * ld + k0 : std::int64_t(k0) * ld + mn0);
    CUFUSE_UNROLL
    for (int i = 0; i < per_thread; ++i) {
      const int v = tid + i * Threads;
      const int row = v / vec_per_row;
      const int cv = (v % vec_per_row) * Vec;
      const vec_t x = *reinterpret_cast<const vec_t*>(tile + std::int64_t(row) * ld + cv);
      CUFUSE_UNROLL
      for (int j = 0; j < Vec; ++j) {
        reg[i][j] = to_float(x.v[j]);
      }
    }
  }

  CUFUSE_DEVICE_FN void store(float* s, int tid) const {
    constexpr int stride = MN + 4;
    CUFUSE_UNROLL
    for (int i = 0; i < per_thread; ++i) {
      const int v = tid + i * Threads;
      const int row = v / vec_per_row;
      const int cv = (v % vec_per_row) * Vec;
      CUFUSE_UNROLL
      for (int j = 0; j < Vec; ++j) {
        if constexpr (KContig) {
          s[(cv + j) * stride + row] = reg[i][j];
        } else {
          s[row * stride + cv + j] = reg[i][j];
        }
      }
    }
  }
};

/// A per-k step that does nothing.
struct no_step {
  CUFUSE_DEVICE_FN void operator()(int) const {}
};

/// Four consecutive floats of a 16-byte aligned shared row, one LDS.128, into f[0..3].
CUFUSE_DEVICE_FN void load_frag4(float* f, const float* p) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  f[0] = v.x;
  f[1] = v.y;
  f[2] = v.z;
  f[3] = v.w;
}

/// One K tile of the SIMT main loop: acc += A-tile x B-tile from shared [BK][BM + pad] and
/// [BK][BN + pad] arrays (this thread's rows ty*4 + r*BM/RM, columns tx*4 + c*BN/RN).
/// `step(kk)` runs before the reads of each k (the cp.async kernel issues the next tiles' copies
/// there, a few at a time).
template <class Cfg, class Step = no_step>
CUFUSE_DEVICE_FN void simt_tile_fma(const float* ca, const float* cb, int tx, int ty,
                                    float (&acc)[Cfg::TM][Cfg::TN], Step step = {}) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, RM = Cfg::RM, RN = Cfg::RN;
  constexpr int SA = BM + Cfg::pad, SB = BN + Cfg::pad;
  CUFUSE_UNROLL
  for (int kk = 0; kk < Cfg::BK; ++kk) {
    step(kk);
    float fa[Cfg::TM], fb[Cfg::TN];
    CUFUSE_UNROLL
    for (int r = 0; r < RM; ++r) {
      load_frag4(fa + r * 4, ca + kk * SA + r * (BM / RM) + ty * 4);
    }
    CUFUSE_UNROLL
    for (int c = 0; c < RN; ++c) {
      load_frag4(fb + c * 4, cb + kk * SB + c * (BN / RN) + tx * 4);
    }
    CUFUSE_UNROLL
    for (int i = 0; i < Cfg::TM; ++i) {
      CUFUSE_UNROLL
      for (int j = 0; j < Cfg::TN; ++j) {
        acc[i][j] = fmaf(fa[i], fb[j], acc[i][j]);
      }
    }
  }
}

/// Writes a SIMT thread's outputs through the epilogue `e` (of the block's batch), four columns
/// at a time.
template <class Cfg, class Epi>
CUFUSE_DEVICE_FN void simt_store_with(const gemm_args& p, const block_work& w, int tx, int ty,
                                      const float (&acc)[Cfg::TM][Cfg::TN], const Epi& e) {
  CUFUSE_UNROLL
  for (int r = 0; r < Cfg::RM; ++r) {
    CUFUSE_UNROLL
    for (int i = 0; i < 4; ++i) {
      const std::int64_t row = w.m0 + r * (Cfg::BM / Cfg::RM) + ty * 4 + i;
      CUFUSE_UNROLL
      for (int c = 0; c < Cfg::RN; ++c) {
        const int col = w.n0 + c * (Cfg::BN / Cfg::RN) + tx * 4;
        const float v[4] = {acc[r * 4 + i][c * 4 + 0], acc[r * 4 + i][c * 4 + 1],
                            acc[r * 4 + i][c * 4 + 2], acc[r * 4 + i][c * 4 + 3]};
        store_group<4>(p, w.c, row, col, v, w.vec_ok, e);
      }
    }
  }
}

/// The SIMT store of a block: raw partial sums (a split block writing the workspace: `p` is not
/// `p_in`) or the epilogue's values.
template <class Cfg, class Epi>
CUFUSE_DEVICE_FN void simt_store(const gemm_args& p, const gemm_args& p_in, const block_work& w,
                                 int tx, int ty, const float (&acc)[Cfg::TM][Cfg::TN],
                                 const Epi& epi) {
  if (writes_partials<Cfg>(p_in)) {
    simt_store_with<Cfg>(p, w, tx, ty, acc, identity_epilogue{});
  } else {
    simt_store_with<Cfg>(p, w, tx, ty, acc, epi.at_batch(w.batch));
  }
}

template <class Cfg, bool TA, bool TB, class Epi>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    simt_gemm_kernel(gemm_args p_in, const Epi epi) {
  using T = typename Cfg::element;
  const gemm_args p = writes_partials<Cfg>(p_in) ? split_partial_args(p_in, p_in.n) : p_in;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK;
  constexpr int SA = BM + Cfg::pad, SB = BN + Cfg::pad;
  extern __shared__ __align__(16) float simt_smem[];
  using storage = stage_ring<float, 2, BK * SA, BK * SB>; // two stages of [BK][SA], [BK][SB]
  static_assert(sizeof(storage) <= Cfg::smem_bytes, "cufuse: SIMT stages overflow");
  storage& ring = *reinterpret_cast<storage*>(simt_smem);
  float* sa = ring.a[0];
  float* sb = ring.b[0];

  const block_work w = locate_block<BM, BN, int(sizeof(T)), 4>(p);
  const T* a = reinterpret_cast<const T*>(w.a);
  const T* b = reinterpret_cast<const T*>(w.b);
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % Cfg::TX, ty = tid / Cfg::TX;

  simt_tile_loader<T, BM, BK, Cfg::Vec, Cfg::threads, !TA> la;
  simt_tile_loader<T, BN, BK, Cfg::Vec, Cfg::threads, TB> lb;
  float acc[Cfg::TM][Cfg::TN];
  zero_acc(acc);

  const int tiles = w.k_tiles<BK>();
  if (tiles > 0) {
    la.load(a, p.lda, w.m0, w.k_begin, p.m, w.k_end, tid);
    lb.load(b, p.ldb, w.n0, w.k_begin, p.n, w.k_end, tid);
    la.store(sa, tid);
    lb.store(sb, tid);
    __syncthreads();
  }
  // Interior tiles (the whole BM x BN x BK block inside the matrices) load without checks.
  const bool interior_mn = w.m0 + BM <= p.m && w.n0 + BN <= p.n;
  for (int t = 0; t < tiles; ++t) {
    const int cur = t & 1;
    if (t + 1 < tiles) {
      const int k0 = w.k_begin + (t + 1) * BK;
      if (interior_mn && k0 + BK <= w.k_end) {
        la.load_interior(a, p.lda, w.m0, k0, tid);
        lb.load_interior(b, p.ldb, w.n0, k0, tid);
      } else {
        la.load(a, p.lda, w.m0, k0, p.m, w.k_end, tid);
        lb.load(b, p.ldb, w.n0, k0, p.n, w.k_end, tid);
      }
    }
    simt_tile_fma<Cfg>(sa + cur * BK * SA, sb + cur * BK * SB, tx, ty, acc);
    if (t + 1 < tiles) {
      la.store(sa + (cur ^ 1) * BK * SA, tid);
      lb.store(sb + (cur ^ 1) * BK * SB, tid);
    }
    __syncthreads();
  }

  simt_store<Cfg>(p, p_in, w, tx, ty, acc, epi);
  if constexpr (Cfg::splits > 1) {
    splitk_fixup<BM, BN, Cfg::threads, finishes_in_kernel<Cfg>()>(p_in, w.m0, w.n0, epi);
  }
}

/// How a SIMT cp.async copier places one operand's MN x BK tile in shared memory, always as
/// [BK][MN + 4] (the layout simt_tile_fma reads).
/// transpose4: stored [MN][K] in global memory, transposed by 4-byte copies. A warp copies
///   KRows rows x 32 / KRows consecutive K (KRows = 4: one 32-byte sector per row, banks
///   4 k + row all distinct; fewer rows touch fewer lines per copy but conflict in banks).
/// along_mn: stored [K][MN], 16-byte copies.
enum class simt_copy : std::uint8_t { transpose4, along_mn };

/// The cp.async copies of one FP32 operand's tiles (16-byte aligned operand and leading
/// dimension), planned once per thread: a thread's copies differ by compile-time shared offsets
/// and by multiples of one global stride (R rows apart), and the next K tile is a fixed step
/// further.
template <int MN, int BK, int Threads, simt_copy Mode, int KRows = 4>
struct simt_copier {
  static constexpr bool t4 = Mode == simt_copy::transpose4;
  static constexpr int S = MN + 4; // floats per shared row
  static constexpr int warps = Threads / 32;
  static constexpr int per_row = MN / 4; // along_mn: 16-byte chunks per row
  static constexpr int KW = 32 / KRows;  // transpose4: consecutive K per row of a warp's copy
  static constexpr int R = t4 ? KRows * warps : Threads / per_row;
  static constexpr int RP = t4 ? MN / R : 1; // transpose4: row groups
  static constexpr int count = t4 ? RP * (BK / KW) : BK / R;
  static constexpr int stage_floats = BK * S;
  static_assert(t4 ? (MN % (KRows * warps) == 0 && BK % KW == 0)
                   : (Threads % per_row == 0 && BK % (Threads / per_row) == 0),
                "cufuse: SIMT cp.async tile copies must split evenly among the threads");

  const float* src;       // this thread's first copy of K tile 0
  std::int64_t step;      // floats between this thread's copy rows
  std::int64_t tile_step; // floats between K tiles
  int dst;                // float offset of the first copy in a stage

  /// Position (mn, k) of thread `tid`'s first copy in the tile (recomputed where needed, so it
  /// holds no registers through the main loop). Host-callable for test/host/test_gemm_layout.cu.
  __host__ __device__ __forceinline__ static constexpr int first_mn(int tid) {
    return t4 ? (tid / 32) * KRows + (tid % 32) / KW : (tid % per_row) * 4;
  }
  __host__ __device__ __forceinline__ static constexpr int first_k(int tid) {
    return t4 ? tid % KW : tid / per_row;
  }

  __host__ __device__ __forceinline__ simt_copier(const float* g, std::int64_t ld, int mn0, int k0,
                                                  int tid) {
    const int mn = first_mn(tid), k = first_k(tid);
    src =
        g + (t4 ? std::int64_t(mn0 + mn) * ld + (k0 + k) : std::int64_t(k0 + k) * ld + (mn0 + mn));
    tile_step = t4 ? std::int64_t(BK) : std::int64_t(BK) * ld;
    step = std::int64_t(R) * ld;
    dst = k * S + mn;
  }

  /// Shared float offset of copy (i, j): row group i, K group j (transpose4), or copy j.
  __host__ __device__ static constexpr int offset(int i, int j) {
    return t4 ? j * KW * S + i * R : j * R * S;
  }

  /// Copy `c` (0 .. count-1) of the K tile whose first copy reads `from`: what it reads, and
  /// the float offset in the stage where it writes (host-callable for the layout test).
  __host__ __device__ __forceinline__ const float* source(const float* from, int c) const {
    const int i = c / (count / RP), j = c % (count / RP);
    return t4 ? from + i * step + j * KW : from + j * step;
  }
  __host__ __device__ __forceinline__ int target(int c) const {
    return dst + offset(c / (count / RP), c % (count / RP));
  }
  /// Copy `c` of an interior K tile into the stage at shared byte address `stage`.
  CUFUSE_DEVICE_FN void copy(unsigned stage, const float* from, int c) const {
    const unsigned d = stage + unsigned(target(c)) * 4u;
    if constexpr (t4) {
      cp_async4_at(d, source(from, c), 4);
    } else {
      cp_async16_at(d, source(from, c), 16);
    }
  }

  /// The same for a tile that may cross the matrix edge: `mn_left` / `k_left` elements remain
  /// from the tile's origin; elements past them are zero-filled (`any` is a valid address).
  /// Its sources keep the row-pointer form (what source() computes): written through source(),
  /// this loop changed ptxas's register allocation for the whole kernel (spills,
  /// bench/JOURNAL.md g18).
  CUFUSE_DEVICE_FN void copy_checked(unsigned stage, const float* from, const float* any,
                                     int mn_left, int k_left, int tid) const {
    const int mn = first_mn(tid), k = first_k(tid);
    CUFUSE_UNROLL
    for (int i = 0; i < RP; ++i) {
      const float* row = from + i * step;
      CUFUSE_UNROLL
      for (int j = 0; j < count / RP; ++j) {
        const unsigned d = stage + unsigned(target(i * (count / RP) + j)) * 4u;
        if constexpr (t4) {
          const bool ok = mn + i * R < mn_left && k + j * KW < k_left;
          cp_async4_at(d, ok ? row + j * KW : any, ok ? 4 : 0);
        } else {
          const int valid = k + j * R < k_left ? ::max(0, ::min(4, mn_left - mn)) : 0;
          cp_async16_at(d, valid > 0 ? row + j * step : any, valid * 4);
        }
      }
    }
  }
};

/// FP32 SIMT with a `Cfg::stages`-deep cp.async pipeline (sm_80+): tiles go straight from
/// global to shared memory, one barrier per K tile; interior tiles copy without checks.
/// Operands contiguous along K are transposed by 4-byte copies, the others copied 16 bytes at a
/// time; both land as [BK][MN + 4] for simt_tile_fma. Split-K as simt_gemm_kernel's.
template <class Cfg, bool TA, bool TB, class Epi>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    simt_async_gemm_kernel(gemm_args p_in, const Epi epi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const gemm_args p = writes_partials<Cfg>(p_in) ? split_partial_args(p_in, p_in.n) : p_in;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, S = Cfg::stages;
  using copier_a = simt_copier<BM, BK, Cfg::threads,
                               TA ? simt_copy::along_mn : simt_copy::transpose4, Cfg::krows_a>;
  using copier_b = simt_copier<BN, BK, Cfg::threads,
                               TB ? simt_copy::transpose4 : simt_copy::along_mn, Cfg::krows_b>;
  constexpr int a_stage = copier_a::stage_floats, b_stage = copier_b::stage_floats;
  // The copies of each interior K tile go out in `spread` groups over the k of the tile computed
  // meanwhile, not in one burst after the barrier: 8 groups for NN, 16 for the other layouts
  // (BK when shorter), the counts ptxas scheduled best. Best variant / cuBLAS, 4096^3, H100:
  // NN 0.91 -> 0.94, NT 0.88 -> 0.94, TN 0.96 -> 0.97 (bench/JOURNAL.md g18).
  constexpr int spread_max = !TA && !TB ? 8 : 16;
  constexpr int spread = spread_max < BK ? spread_max : BK;
  static_assert(BK % spread == 0, "cufuse: SIMT copy groups must split the K tile evenly");
  extern __shared__ __align__(16) float simt_smem[];
  using storage = stage_ring<float, S, a_stage, b_stage>;
  static_assert(sizeof(storage) <= Cfg::smem_bytes, "cufuse: SIMT stages overflow");
  storage& ring = *reinterpret_cast<storage*>(simt_smem);

  const block_work w = locate_block<BM, BN, 4, 4>(p);
  const float* a = reinterpret_cast<const float*>(w.a);
  const float* b = reinterpret_cast<const float*>(w.b);
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % Cfg::TX, ty = tid / Cfg::TX;
  const copier_a cpa(a, p.lda, w.m0, w.k_begin, tid);
  const copier_b cpb(b, p.ldb, w.n0, w.k_begin, tid);
  const unsigned sa = smem_addr(simt_smem);
  const unsigned sb = sa + unsigned(S * a_stage) * 4u; // ring.b
  static_assert(offsetof(storage, b) == S * a_stage * 4);

  float acc[Cfg::TM][Cfg::TN];
  zero_acc(acc);

  const int tiles = w.k_tiles<BK>();
  auto copy_checked = [&](int tl, int stage) {
    const int k_left = w.k_end - (w.k_begin + tl * BK);
    cpa.copy_checked(sa + unsigned(stage * a_stage) * 4u, cpa.src + tl * cpa.tile_step, a,
                     p.m - w.m0, k_left, tid);
    cpb.copy_checked(sb + unsigned(stage * b_stage) * 4u, cpb.src + tl * cpb.tile_step, b,
                     p.n - w.n0, k_left, tid);
  };
  CUFUSE_UNROLL
  for (int s = 0; s < S - 1; ++s) {
    if (s < tiles) {
      copy_checked(s, s);
    }
    cp_async_commit();
  }

  int rs = 0, ws = S - 1; // the stages read and written by the current tile
  const float* a_next = cpa.src + (S - 1) * cpa.tile_step;
  const float* b_next = cpb.src + (S - 1) * cpb.tile_step;
  auto tile = [&](int t, auto planned) {
    cp_async_wait<S - 2>();
    __syncthreads(); // tile t landed for every thread; stage ws (tile t - 1) is free
    const float* ta = ring.a[0] + rs * a_stage;
    const float* tb = ring.b[0] + rs * b_stage;
    if constexpr (decltype(planned)::value) {
      const unsigned wa = sa + unsigned(ws * a_stage) * 4u, wb = sb + unsigned(ws * b_stage) * 4u;
      constexpr int copies = copier_a::count + copier_b::count;
      simt_tile_fma<Cfg>(ta, tb, tx, ty, acc, [&](int kk) {
        if (kk % (BK / spread) != 0) {
          return;
        }
        const int g = kk / (BK / spread);
        CUFUSE_UNROLL
        for (int c = g * copies / spread; c < (g + 1) * copies / spread; ++c) {
          if (c < copier_a::count) {
            cpa.copy(wa, a_next, c);
          } else {
            cpb.copy(wb, b_next, c - copier_a::count);
          }
        }
      });
      cp_async_commit();
      a_next += cpa.tile_step;
      b_next += cpb.tile_step;
    } else {
      if (t + S - 1 < tiles) {
        copy_checked(t + S - 1, ws);
      }
      cp_async_commit();
      a_next += cpa.tile_step;
      b_next += cpb.tile_step;
      simt_tile_fma<Cfg>(ta, tb, tx, ty, acc);
    }
    rs = rs + 1 == S ? 0 : rs + 1;
    ws = ws + 1 == S ? 0 : ws + 1;
  };
  run_k_tiles<S>(w.m0 + BM <= p.m && w.n0 + BN <= p.n, (w.k_end - w.k_begin) / BK, tiles, tile);
  cp_async_wait<0>();
  simt_store<Cfg>(p, p_in, w, tx, ty, acc, epi);
  if constexpr (Cfg::splits > 1) {
    splitk_fixup<BM, BN, Cfg::threads, finishes_in_kernel<Cfg>()>(p_in, w.m0, w.n0, epi);
  }
#else
  (void)p_in;
  (void)epi;
  __trap(); // never launched: the host checks the kernel's binary architecture first
#endif
}

} // namespace cufuse::gemm_detail
