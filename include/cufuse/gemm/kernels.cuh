/// \file GEMM kernel templates: FP32 SIMT, mma.sync (FP16/BF16 via ldmatrix, TF32), the split-K
/// reduction, and the shared epilogue. Instantiated by src/ through the variant lists of
/// variants.cuh; users do not include this file directly.
///
/// Conventions. Row-major storage. op(A) is m x k, op(B) is k x n. `TA`: A is stored k x m (the
/// GEMM uses its transpose), so it is contiguous along m; otherwise along k. `TB`: B is stored
/// n x k (contiguous along k); otherwise k x n (contiguous along n). Out-of-range elements load
/// as zero, so partial tiles need no special compute path. blockIdx.x walks output tiles in
/// groups of 8 tile rows (an L2-friendly order); blockIdx.z = batch * splits + split.
#pragma once

#include "../core/config.hpp"
#include "problem.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

/// Device-only helpers of the GEMM kernels.
#define CUFUSE_DEVICE_FN __device__ __forceinline__

namespace cufuse::gemm_detail {

// ---- element access ------------------------------------------------------------------------

CUFUSE_DEVICE_FN float to_float(float x) { return x; }
CUFUSE_DEVICE_FN float to_float(__half x) { return __half2float(x); }
CUFUSE_DEVICE_FN float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

/// Reads element i of an output of dtype `t` as float.
CUFUSE_DEVICE_FN float load_out(const void* c, std::int64_t i, int t) {
  if (t == int(dtype::f32)) {
    return static_cast<const float*>(c)[i];
  }
  if (t == int(dtype::f16)) {
    return __half2float(static_cast<const __half*>(c)[i]);
  }
  return __bfloat162float(static_cast<const __nv_bfloat16*>(c)[i]);
}

/// Writes v (rounded to nearest even) as element i of an output of dtype `t`.
CUFUSE_DEVICE_FN void store_out(void* c, std::int64_t i, float v, int t) {
  if (t == int(dtype::f32)) {
    static_cast<float*>(c)[i] = v;
  } else if (t == int(dtype::f16)) {
    static_cast<__half*>(c)[i] = __float2half_rn(v);
  } else {
    static_cast<__nv_bfloat16*>(c)[i] = __float2bfloat16_rn(v);
  }
}

/// The standard epilogue: alpha * acc + beta * c. beta == 0 never reads C (C may hold NaN).
struct linear_combination {
  static constexpr const char* name = "lincomb";
  CUFUSE_DEVICE_FN float operator()(float acc, float alpha, float beta, const void* c,
                                    std::int64_t i, int t) const {
    return beta == 0.0f ? alpha * acc : alpha * acc + beta * load_out(c, i, t);
  }
};

/// Writes `cnt` consecutive outputs of one row (cnt = 2 or 4) starting at column `col`, with one
/// vector store when the whole group is in range and `vec_ok` (aligned C), else one by one.
template <int Cnt, class Epi>
CUFUSE_DEVICE_FN void store_group(const gemm_args& p, void* c, std::int64_t row, int col,
                                  const float (&v)[Cnt], bool vec_ok, Epi epi) {
  if (row >= p.m) {
    return;
  }
  const std::int64_t base = row * p.ldc + col;
  if (vec_ok && col + Cnt <= p.n) {
    float r[Cnt];
    CUFUSE_UNROLL
    for (int j = 0; j < Cnt; ++j) {
      r[j] = epi(v[j], p.alpha, p.beta, c, base + j, p.out_type);
    }
    if (p.out_type == int(dtype::f32)) {
      if constexpr (Cnt == 4) {
        *reinterpret_cast<float4*>(static_cast<float*>(c) + base) =
            make_float4(r[0], r[1], r[2], r[3]);
      } else {
        *reinterpret_cast<float2*>(static_cast<float*>(c) + base) = make_float2(r[0], r[1]);
      }
    } else if (p.out_type == int(dtype::f16)) {
      __half2* d = reinterpret_cast<__half2*>(static_cast<__half*>(c) + base);
      CUFUSE_UNROLL
      for (int j = 0; j < Cnt; j += 2) {
        d[j / 2] = __floats2half2_rn(r[j], r[j + 1]);
      }
    } else {
      __nv_bfloat162* d = reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(c) + base);
      CUFUSE_UNROLL
      for (int j = 0; j < Cnt; j += 2) {
        d[j / 2] = __floats2bfloat162_rn(r[j], r[j + 1]);
      }
    }
    return;
  }
  CUFUSE_UNROLL
  for (int j = 0; j < Cnt; ++j) {
    if (col + j < p.n) {
      store_out(c, base + j, epi(v[j], p.alpha, p.beta, c, base + j, p.out_type), p.out_type);
    }
  }
}

/// Where one block works: its output tile, its K range, and its operands' base pointers.
struct block_work {
  int m0, n0, k_begin, k_end;
  const char* a;
  const char* b;
  void* c;
  bool vec_ok; // C's base and ldc allow `vec`-element vector stores
};

/// The work of output tile `pid` (of one batch x split plane `z`): groups of 8 tile rows are
/// walked column by column so that blocks running together share A and B tiles in L2.
template <int BM, int BN, int AElem, int Vec>
CUFUSE_DEVICE_FN block_work locate_tile(const gemm_args& p, int pid, int z) {
  const int tiles_m = (p.m + BM - 1) / BM;
  const int tiles_n = (p.n + BN - 1) / BN;
  constexpr int group = 8;
  const int width = group * tiles_n;
  const int first_m = (pid / width) * group;
  const int gsize = min(tiles_m - first_m, group);
  const int tm = first_m + (pid % width) % gsize;
  const int tn = (pid % width) / gsize;

  const int batch = z / p.splits;
  const int split = z - batch * p.splits;
  block_work w;
  w.m0 = tm * BM;
  w.n0 = tn * BN;
  w.k_begin = split * p.k_chunk;
  w.k_end = min(p.k, w.k_begin + p.k_chunk);
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

// ---- SIMT (CUDA cores) -----------------------------------------------------------------------

/// FP32 SIMT tile: block BM x BN x BK; each thread computes (4*RM) x (4*RN) outputs as RM x RN
/// 4x4 sub-tiles spread BM/RM rows and BN/RN columns apart (conflict-free float4 shared reads).
/// Vec: elements per global load (4: 16-byte loads, needs aligned pointers and leading
/// dimensions; 1: any alignment). Splits > 1: split-K into an fp32 workspace.
template <class T, int BM_, int BN_, int BK_, int RM_, int RN_, int Vec_, int Splits_ = 1>
struct simt_config {
  using element = T;
  static constexpr int BM = BM_, BN = BN_, BK = BK_, RM = RM_, RN = RN_, Vec = Vec_;
  static constexpr int splits = Splits_;
  static constexpr int TM = 4 * RM, TN = 4 * RN;
  static constexpr int TX = BN / TN, TY = BM / TM;
  static constexpr int threads = TX * TY;
  static constexpr int pad = 4;
  static constexpr int smem_bytes = 2 * BK * ((BM + pad) + (BN + pad)) * 4;
  /// Two blocks per SM: 256-thread tiles must fit 128 registers per thread, or one register
  /// over that halves the SM's warps (ptxas: the 128x128 NT kernel used 129).
  static constexpr int min_blocks = threads >= 256 ? 2 : 1;
  static_assert(BM % TM == 0 && BN % TN == 0 && threads % 32 == 0 && threads <= 1024,
                "cufuse: SIMT tile must split into whole warps of thread tiles");
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

template <class Cfg, bool TA, bool TB, class Epi>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks) simt_gemm_kernel(gemm_args p) {
  using T = typename Cfg::element;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, RM = Cfg::RM, RN = Cfg::RN;
  constexpr int SA = BM + Cfg::pad, SB = BN + Cfg::pad;
  extern __shared__ __align__(16) float simt_smem[];
  float* sa = simt_smem;               // [2][BK][SA]
  float* sb = simt_smem + 2 * BK * SA; // [2][BK][SB]

  const block_work w = locate_block<BM, BN, int(sizeof(T)), 4>(p);
  const T* a = reinterpret_cast<const T*>(w.a);
  const T* b = reinterpret_cast<const T*>(w.b);
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % Cfg::TX, ty = tid / Cfg::TX;

  simt_tile_loader<T, BM, BK, Cfg::Vec, Cfg::threads, !TA> la;
  simt_tile_loader<T, BN, BK, Cfg::Vec, Cfg::threads, TB> lb;
  float acc[Cfg::TM][Cfg::TN];
  CUFUSE_UNROLL
  for (int i = 0; i < Cfg::TM; ++i) {
    CUFUSE_UNROLL
    for (int j = 0; j < Cfg::TN; ++j) {
      acc[i][j] = 0.0f;
    }
  }

  const int tiles = w.k_end > w.k_begin ? (w.k_end - w.k_begin + BK - 1) / BK : 0;
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
    const float* ca = sa + cur * BK * SA;
    const float* cb = sb + cur * BK * SB;
    CUFUSE_UNROLL
    for (int kk = 0; kk < BK; ++kk) {
      float fa[Cfg::TM], fb[Cfg::TN];
      CUFUSE_UNROLL
      for (int r = 0; r < RM; ++r) {
        const float4 v = *reinterpret_cast<const float4*>(ca + kk * SA + r * (BM / RM) + ty * 4);
        fa[r * 4 + 0] = v.x;
        fa[r * 4 + 1] = v.y;
        fa[r * 4 + 2] = v.z;
        fa[r * 4 + 3] = v.w;
      }
      CUFUSE_UNROLL
      for (int c = 0; c < RN; ++c) {
        const float4 v = *reinterpret_cast<const float4*>(cb + kk * SB + c * (BN / RN) + tx * 4);
        fb[c * 4 + 0] = v.x;
        fb[c * 4 + 1] = v.y;
        fb[c * 4 + 2] = v.z;
        fb[c * 4 + 3] = v.w;
      }
      CUFUSE_UNROLL
      for (int i = 0; i < Cfg::TM; ++i) {
        CUFUSE_UNROLL
        for (int j = 0; j < Cfg::TN; ++j) {
          acc[i][j] = fmaf(fa[i], fb[j], acc[i][j]);
        }
      }
    }
    if (t + 1 < tiles) {
      la.store(sa + (cur ^ 1) * BK * SA, tid);
      lb.store(sb + (cur ^ 1) * BK * SB, tid);
    }
    __syncthreads();
  }

  CUFUSE_UNROLL
  for (int r = 0; r < RM; ++r) {
    CUFUSE_UNROLL
    for (int i = 0; i < 4; ++i) {
      const std::int64_t row = w.m0 + r * (BM / RM) + ty * 4 + i;
      CUFUSE_UNROLL
      for (int c = 0; c < RN; ++c) {
        const int col = w.n0 + c * (BN / RN) + tx * 4;
        const float v[4] = {acc[r * 4 + i][c * 4 + 0], acc[r * 4 + i][c * 4 + 1],
                            acc[r * 4 + i][c * 4 + 2], acc[r * 4 + i][c * 4 + 3]};
        store_group<4>(p, w.c, row, col, v, w.vec_ok, Epi{});
      }
    }
  }
}

// ---- tensor cores: shared-memory tiles, cp.async, ldmatrix, mma.sync --------------------------

/// mma.sync tile: block BM x BN x BK, WM x WN warps (each a (BM/WM) x (BN/WN) warp tile),
/// `Stages`-deep cp.async pipeline. T: __half, __nv_bfloat16, or float (TF32 math).
template <class T, int BM_, int BN_, int BK_, int WM_, int WN_, int Stages_, int Splits_ = 1>
struct mma_config {
  using element = T;
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, stages = Stages_;
  static constexpr int splits = Splits_;
  static constexpr int threads = 32 * WM * WN;
  static constexpr int WTM = BM / WM, WTN = BN / WN;
  static constexpr bool tf32 = sizeof(T) == 4;
  static constexpr int MMA_K = tf32 ? 8 : 16;
  static constexpr int MI = WTM / 16, NI = WTN / 8;
  static constexpr int chunk = 16 / int(sizeof(T)); // elements per 16-byte cp.async
  static constexpr int smem_bytes = stages * (BM + BN) * BK * int(sizeof(T));
  static_assert(WTM % 16 == 0 && WTN % 16 == 0 && BK % 16 == 0 && BK % chunk == 0,
                "cufuse: mma warp tile must be a multiple of 16 x 16 and BK of 16");
};

/// Element offset of (r, c) in a row-major shared tile of `RowLen` elements per row, 16-byte
/// chunks XOR-swizzled by row so that ldmatrix / fragment reads hit distinct banks.
/// `Tf32Mn`: the swizzle for TF32 tiles contiguous along M/N (scalar fragment reads).
template <int RowLen, int Chunk, bool Tf32Mn>
CUFUSE_DEVICE_FN int swz(int r, int c) {
  constexpr int ch = RowLen / Chunk;
  int f;
  if constexpr (Tf32Mn) {
    f = (r & 3) << 1;
  } else if constexpr (ch >= 8) {
    f = r & 7;
  } else if constexpr (ch == 4) {
    f = (r >> 1) & 3;
  } else {
    f = (r >> 2) & 1;
  }
  return r * RowLen + (((c / Chunk) ^ f) * Chunk) + (c % Chunk);
}

CUFUSE_DEVICE_FN unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// 16-byte cp.async; copies `bytes` (0..16) and zero-fills the rest.
CUFUSE_DEVICE_FN void cp_async16(void* dst, const void* src, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(bytes));
#endif
}
CUFUSE_DEVICE_FN void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
CUFUSE_DEVICE_FN void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
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
    const int valid = row_ok ? max(0, min(E, left)) : 0;
    const T* src =
        valid > 0 ? g + (KContig ? std::int64_t(mn) * ld + k : std::int64_t(k) * ld + mn) : g;
    cp_async16(s + swz<row_len, E, tf32_mn>(r, c), src, valid * int(sizeof(T)));
  }
}

CUFUSE_DEVICE_FN void ldmatrix_x4(unsigned (&r)[4], const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
#endif
}
CUFUSE_DEVICE_FN void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
#endif
}

template <class T>
CUFUSE_DEVICE_FN void mma_16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#endif
}

CUFUSE_DEVICE_FN void mma_1688_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/// fp32 -> tf32, round to nearest (ties away), as a 32-bit pattern.
CUFUSE_DEVICE_FN unsigned to_tf32(float x) {
  unsigned r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
#endif
  return r;
}

/// Loads the A and B fragments of k-step `ks` of the current stage for this warp.
template <class Cfg, bool TA, bool TB>
CUFUSE_DEVICE_FN void
mma_fragments(const typename Cfg::element* sa, const typename Cfg::element* sb, int ks, int wm,
              int wn, int lane, unsigned (&fa)[Cfg::MI][4], unsigned (&fb)[Cfg::NI][2]) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, E = Cfg::chunk;
  if constexpr (!Cfg::tf32) {
    const int kb = ks * 16;
    CUFUSE_UNROLL
    for (int mi = 0; mi < Cfg::MI; ++mi) {
      const int mb = wm * Cfg::WTM + mi * 16;
      if constexpr (!TA) {
        ldmatrix_x4(fa[mi], sa + swz<BK, E, false>(mb + (lane & 15), kb + (lane >> 4) * 8));
      } else {
        const int k = kb + (lane & 7) + ((lane >> 4) & 1) * 8;
        ldmatrix_x4_trans(fa[mi], sa + swz<BM, E, false>(k, mb + ((lane >> 3) & 1) * 8));
      }
    }
    CUFUSE_UNROLL
    for (int nj = 0; nj < Cfg::NI / 2; ++nj) {
      const int nb = wn * Cfg::WTN + nj * 16;
      unsigned r[4];
      if constexpr (TB) {
        const int n = nb + (lane & 7) + ((lane >> 4) & 1) * 8;
        ldmatrix_x4(r, sb + swz<BK, E, false>(n, kb + ((lane >> 3) & 1) * 8));
      } else {
        const int k = kb + (lane & 7) + ((lane >> 3) & 1) * 8;
        ldmatrix_x4_trans(r, sb + swz<BN, E, false>(k, nb + ((lane >> 4) & 1) * 8));
      }
      fb[2 * nj][0] = r[0];
      fb[2 * nj][1] = r[1];
      fb[2 * nj + 1][0] = r[2];
      fb[2 * nj + 1][1] = r[3];
    }
  } else {
    const int kb = ks * 8;
    const int g = lane >> 2, t = lane & 3;
    auto at = [&](int m, int k) -> float {
      return TA ? sa[swz<BM, E, true>(k, m)] : sa[swz<BK, E, false>(m, k)];
    };
    auto bt = [&](int k, int n) -> float {
      return TB ? sb[swz<BK, E, false>(n, k)] : sb[swz<BN, E, true>(k, n)];
    };
    CUFUSE_UNROLL
    for (int mi = 0; mi < Cfg::MI; ++mi) {
      const int m = wm * Cfg::WTM + mi * 16 + g;
      fa[mi][0] = to_tf32(at(m, kb + t));
      fa[mi][1] = to_tf32(at(m + 8, kb + t));
      fa[mi][2] = to_tf32(at(m, kb + t + 4));
      fa[mi][3] = to_tf32(at(m + 8, kb + t + 4));
    }
    CUFUSE_UNROLL
    for (int ni = 0; ni < Cfg::NI; ++ni) {
      const int n = wn * Cfg::WTN + ni * 8 + g;
      fb[ni][0] = to_tf32(bt(kb + t, n));
      fb[ni][1] = to_tf32(bt(kb + t + 4, n));
    }
  }
}

template <class Cfg, bool TA, bool TB, class Epi>
__global__ void __launch_bounds__(Cfg::threads) mma_gemm_kernel(gemm_args p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using T = typename Cfg::element;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, S = Cfg::stages;
  extern __shared__ __align__(128) unsigned char mma_smem[];
  T* sa = reinterpret_cast<T*>(mma_smem); // [S][BM * BK]
  T* sb = sa + S * BM * BK;               // [S][BN * BK]

  const block_work w = locate_block<BM, BN, int(sizeof(T)), 2>(p);
  const T* a = reinterpret_cast<const T*>(w.a);
  const T* b = reinterpret_cast<const T*>(w.b);
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5;
  const int wm = warp / Cfg::WN, wn = warp % Cfg::WN;

  float acc[Cfg::MI][Cfg::NI][4];
  CUFUSE_UNROLL
  for (int i = 0; i < Cfg::MI; ++i) {
    CUFUSE_UNROLL
    for (int j = 0; j < Cfg::NI; ++j) {
      CUFUSE_UNROLL
      for (int e = 0; e < 4; ++e) {
        acc[i][j][e] = 0.0f;
      }
    }
  }

  const int tiles = w.k_end > w.k_begin ? (w.k_end - w.k_begin + BK - 1) / BK : 0;
  auto load_stage = [&](int t) {
    const int st = t % S;
    const int k0 = w.k_begin + t * BK;
    mma_load_tile<Cfg, BM, !TA>(sa + st * BM * BK, a, p.lda, w.m0, k0, p.m, w.k_end, tid);
    mma_load_tile<Cfg, BN, TB>(sb + st * BN * BK, b, p.ldb, w.n0, k0, p.n, w.k_end, tid);
  };
  CUFUSE_UNROLL
  for (int s = 0; s < S - 1; ++s) {
    if (s < tiles) {
      load_stage(s);
    }
    cp_async_commit();
  }
  // Warp fragments are double-buffered: step ks + 1 is read from shared memory before the
  // MMAs of step ks are issued, so ldmatrix latency hides behind tensor-core work. The last
  // step of a tile first waits for the next stage and synchronizes, then reads its step 0.
  constexpr int KS = BK / Cfg::MMA_K;
  static_assert(KS % 2 == 0, "cufuse: BK must hold an even number of MMA k-steps");
  unsigned fa[2][Cfg::MI][4];
  unsigned fb[2][Cfg::NI][2];
  cp_async_wait<S - 2>();
  __syncthreads();
  if (tiles > 0) {
    mma_fragments<Cfg, TA, TB>(sa, sb, 0, wm, wn, lane, fa[0], fb[0]);
  }
  for (int t = 0; t < tiles; ++t) {
    const T* ca = sa + (t % S) * BM * BK;
    const T* cb = sb + (t % S) * BN * BK;
    CUFUSE_UNROLL
    for (int ks = 0; ks < KS; ++ks) {
      if (ks == 0) {
        // The stage refilled here was last read before the previous tile's final barrier.
        if (t + S - 1 < tiles) {
          load_stage(t + S - 1);
        }
        cp_async_commit();
      }
      if (ks + 1 < KS) {
        mma_fragments<Cfg, TA, TB>(ca, cb, ks + 1, wm, wn, lane, fa[(ks + 1) & 1],
                                   fb[(ks + 1) & 1]);
      } else {
        cp_async_wait<S - 2>();
        __syncthreads();
        const int nx = (t + 1) % S;
        mma_fragments<Cfg, TA, TB>(sa + nx * BM * BK, sb + nx * BN * BK, 0, wm, wn, lane,
                                   fa[(ks + 1) & 1], fb[(ks + 1) & 1]);
      }
      CUFUSE_UNROLL
      for (int i = 0; i < Cfg::MI; ++i) {
        CUFUSE_UNROLL
        for (int j = 0; j < Cfg::NI; ++j) {
          if constexpr (Cfg::tf32) {
            mma_1688_tf32(acc[i][j], fa[ks & 1][i], fb[ks & 1][j]);
          } else {
            mma_16816<T>(acc[i][j], fa[ks & 1][i], fb[ks & 1][j]);
          }
        }
      }
    }
  }
  cp_async_wait<0>();

  const int g = lane >> 2, tq = lane & 3;
  CUFUSE_UNROLL
  for (int i = 0; i < Cfg::MI; ++i) {
    const std::int64_t row = w.m0 + wm * Cfg::WTM + i * 16 + g;
    CUFUSE_UNROLL
    for (int j = 0; j < Cfg::NI; ++j) {
      const int col = w.n0 + wn * Cfg::WTN + j * 8 + 2 * tq;
      const float lo[2] = {acc[i][j][0], acc[i][j][1]};
      const float hi[2] = {acc[i][j][2], acc[i][j][3]};
      store_group<2>(p, w.c, row, col, lo, w.vec_ok, Epi{});
      store_group<2>(p, w.c, row + 8, col, hi, w.vec_ok, Epi{});
    }
  }
#else
  __trap(); // never launched: the host checks the kernel's binary architecture first
#endif
}

// ---- split-K reduction -----------------------------------------------------------------------

/// C[b] = epilogue(sum over splits of ws[b][s]); ws is [batch][splits][m][n] fp32.
template <class Epi>
__global__ void splitk_reduce_kernel(const float* ws, gemm_args p, int batch) {
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
    store_out(c, idx, Epi{}(s, p.alpha, p.beta, c, idx, p.out_type), p.out_type);
  }
}

} // namespace cufuse::gemm_detail
