/// \file GEMM kernel templates: FP32 SIMT, mma.sync (FP16/BF16 via ldmatrix; TF32 via ldmatrix
/// for K-major operands, 4- or 8-byte reads of padded rows for M/N-major ones), the split-K
/// fixup, and the shared epilogue (the mma.sync warp step and epilogue also serve the TMA-fed
/// TF32 kernel of kernels_sm90.cuh). Instantiated by src/ through the variant lists of
/// variants.cuh; users do not include this file directly.
///
/// Conventions. Row-major storage. op(A) is m x k, op(B) is k x n. `TA`: A is stored k x m (the
/// GEMM uses its transpose), so it is contiguous along m; otherwise along k. `TB`: B is stored
/// n x k (contiguous along k); otherwise k x n (contiguous along n). Out-of-range elements load
/// as zero, so partial tiles need no special compute path. blockIdx.x walks output tiles in
/// groups of 8 tile rows (an L2-friendly order); blockIdx.z = batch * splits + split.
#pragma once

#include "../core/config.hpp"
#include "args.hpp"

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

/// The dtype code of C: `p.out_type` when `Out` is void (known at run time only), else the code
/// of `Out` (a compile-time constant, so every branch on it folds away).
template <class Out>
CUFUSE_DEVICE_FN int out_code(const gemm_args& p) {
  if constexpr (std::is_same_v<Out, float>) {
    return int(dtype::f32);
  } else if constexpr (std::is_same_v<Out, __half>) {
    return int(dtype::f16);
  } else if constexpr (std::is_same_v<Out, __nv_bfloat16>) {
    return int(dtype::bf16);
  } else {
    return p.out_type;
  }
}

/// Two floats as one 32-bit pair of 16-bit outputs (`t`: f16 or bf16, round to nearest even).
CUFUSE_DEVICE_FN unsigned pack_out16(float x, float y, int t) {
  if (t == int(dtype::f16)) {
    const __half2 h = __floats2half2_rn(x, y);
    return *reinterpret_cast<const unsigned*>(&h);
  }
  const __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
  return *reinterpret_cast<const unsigned*>(&h);
}

/// Writes `Cnt` consecutive outputs of one row (2, 4, or 8 for a 16-bit C) starting at column
/// `col`, with one vector store (two float4 for 8 fp32 outputs) when the whole group is in
/// range and `vec_ok` (C's base and leading dimension aligned to Cnt elements), else one by
/// one. `Out`: C's element type when the caller dispatched on it once (void: look it up per
/// call).
template <int Cnt, class Epi, class Out = void>
CUFUSE_DEVICE_FN void store_group(const gemm_args& p, void* c, std::int64_t row, int col,
                                  const float (&v)[Cnt], bool vec_ok, Epi epi) {
  static_assert(Cnt == 2 || Cnt == 4 || Cnt == 8, "cufuse: store groups are 2, 4 or 8 outputs");
  if (row >= p.m) {
    return;
  }
  const int t = out_code<Out>(p);
  const std::int64_t base = row * p.ldc + col;
  if (vec_ok && col + Cnt <= p.n) {
    float r[Cnt];
    CUFUSE_UNROLL
    for (int j = 0; j < Cnt; ++j) {
      r[j] = epi(v[j], p.alpha, p.beta, c, base + j, t);
    }
    if (t == int(dtype::f32)) {
      float* d = static_cast<float*>(c) + base;
      if constexpr (Cnt == 2) {
        *reinterpret_cast<float2*>(d) = make_float2(r[0], r[1]);
      } else {
        CUFUSE_UNROLL
        for (int j = 0; j < Cnt; j += 4) {
          *reinterpret_cast<float4*>(d + j) = make_float4(r[j], r[j + 1], r[j + 2], r[j + 3]);
        }
      }
    } else {
      unsigned w[Cnt / 2];
      CUFUSE_UNROLL
      for (int j = 0; j < Cnt; j += 2) {
        w[j / 2] = pack_out16(r[j], r[j + 1], t);
      }
      unsigned* d = reinterpret_cast<unsigned*>(static_cast<char*>(c) + base * 2);
      if constexpr (Cnt == 2) {
        *d = w[0];
      } else if constexpr (Cnt == 4) {
        *reinterpret_cast<uint2*>(d) = make_uint2(w[0], w[1]);
      } else {
        *reinterpret_cast<uint4*>(d) = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
    return;
  }
  CUFUSE_UNROLL
  for (int j = 0; j < Cnt; ++j) {
    if (col + j < p.n) {
      store_out(c, base + j, epi(v[j], p.alpha, p.beta, c, base + j, t), t);
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

  /// K tiles of depth BK in this block's K range (the last one may be partial).
  template <int BK>
  CUFUSE_DEVICE_FN int k_tiles() const {
    return k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
  }
};

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
CUFUSE_DEVICE_FN void splitk_fixup(const gemm_args& p, int row0, int col0) {
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
    cnt[g] = row0 + r < p.m ? max(0, min(4, p.n - (col0 + q))) : 0;
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
  CUFUSE_UNROLL
  for (int g = 0; g < G; ++g) {
    if (cnt[g] > 0) {
      const int e = tid + g * Threads;
      store_group<4>(p, c, row0 + e / (CN / 4), col0 + e % (CN / 4) * 4, sum[g], vec_ok, Epi{});
    }
  }
}

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

// ---- cp.async ------------------------------------------------------------------------------

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
/// 16-byte cp.async of a whole chunk, to a shared-memory byte address.
CUFUSE_DEVICE_FN void cp_async16_at(unsigned dst, const void* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
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

/// 4-byte cp.async (L1-allocating, the only kind for 4 bytes) to a shared byte address;
/// copies `bytes` (0 or 4) and zero-fills the rest.
CUFUSE_DEVICE_FN void cp_async4_at(unsigned dst, const void* src, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
#endif
}
/// 16-byte cp.async of `bytes` (0..16, the rest zero-filled) to a shared byte address.
CUFUSE_DEVICE_FN void cp_async16_at(unsigned dst, const void* src, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
#endif
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

/// Writes a SIMT thread's outputs through the epilogue, four columns at a time.
template <class Cfg, class Epi>
CUFUSE_DEVICE_FN void simt_store(const gemm_args& p, const block_work& w, int tx, int ty,
                                 const float (&acc)[Cfg::TM][Cfg::TN]) {
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
        store_group<4>(p, w.c, row, col, v, w.vec_ok, Epi{});
      }
    }
  }
}

template <class Cfg, bool TA, bool TB, class Epi>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks) simt_gemm_kernel(gemm_args p_in) {
  using T = typename Cfg::element;
  const gemm_args p =
      Cfg::splits > 1 && p_in.ws != nullptr ? split_partial_args(p_in, p_in.n) : p_in;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK;
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

  simt_store<Cfg, Epi>(p, w, tx, ty, acc);
  if constexpr (Cfg::splits > 1) {
    splitk_fixup<BM, BN, Cfg::threads, Epi>(p_in, w.m0, w.n0);
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
  /// this loop changed ptxas's register allocation for the whole kernel (spills, NOTES g18).
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
          const int valid = k + j * R < k_left ? max(0, min(4, mn_left - mn)) : 0;
          cp_async16_at(d, valid > 0 ? row + j * step : any, valid * 4);
        }
      }
    }
  }
};

/// FP32 SIMT with a `Cfg::stages`-deep cp.async pipeline (sm_80+): tiles go straight from
/// global to shared memory, one barrier per K tile; interior tiles copy without checks.
/// Operands contiguous along K are transposed by 4-byte copies, the others copied 16 bytes at a
/// time; both land as [BK][MN + 4] for simt_tile_fma.
template <class Cfg, bool TA, bool TB, class Epi>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    simt_async_gemm_kernel(gemm_args p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  static_assert(Cfg::splits == 1, "cufuse: the cp.async SIMT kernel has no split-K form");
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
  static_assert(S * (a_stage + b_stage) * 4 <= Cfg::smem_bytes, "cufuse: SIMT stages overflow");
  extern __shared__ __align__(16) float simt_smem[];

  const block_work w = locate_block<BM, BN, 4, 4>(p);
  const float* a = reinterpret_cast<const float*>(w.a);
  const float* b = reinterpret_cast<const float*>(w.b);
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % Cfg::TX, ty = tid / Cfg::TX;
  const copier_a cpa(a, p.lda, w.m0, w.k_begin, tid);
  const copier_b cpb(b, p.ldb, w.n0, w.k_begin, tid);
  const unsigned sa = smem_addr(simt_smem);
  const unsigned sb = sa + unsigned(S * a_stage) * 4u;

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
    const float* ta = simt_smem + rs * a_stage;
    const float* tb = simt_smem + S * a_stage + rs * b_stage;
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
  simt_store<Cfg, Epi>(p, w, tx, ty, acc);
#else
  __trap(); // never launched: the host checks the kernel's binary architecture first
#endif
}

// ---- tensor cores: shared-memory tiles, cp.async, ldmatrix, mma.sync --------------------------

/// mma.sync tile: block BM x BN x BK, WM x WN warps (each a (BM/WM) x (BN/WN) warp tile),
/// `Stages`-deep cp.async pipeline. T: __half, __nv_bfloat16, or float (TF32 math).
/// `Tma` (TF32 only, sm_90a: kernels_sm90.cuh): the stages are filled by TMA instead of
/// cp.async, in the 128-byte-swizzled layouts of the wgmma kernels (no padded rows).
template <class T, int BM_, int BN_, int BK_, int WM_, int WN_, int Stages_, int Splits_ = 1,
          bool Tma_ = false>
struct mma_config {
  using element = T;
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, stages = Stages_;
  static constexpr int splits = Splits_;
  static constexpr bool tma = Tma_;
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
    const int valid = row_ok ? max(0, min(E, left)) : 0;
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

/// ldmatrix .x4 at a shared-memory byte address (each lane supplies one row address).
CUFUSE_DEVICE_FN void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#endif
}
CUFUSE_DEVICE_FN void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
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

/// An fp32 operand as a TF32 mma.sync operand: its bits as they are. The tensor cores read the
/// top 19 bits and drop the low 13 (toward zero), the same as the wgmma variants, which read
/// fp32 tiles straight from shared memory; so every TF32 variant computes with the same inputs,
/// whichever one the tuner picks. (Rounding by a cvt.rna per fragment register made TF32
/// mma.sync 17-25% slower at 4096^3: bench/JOURNAL.md g18.)
CUFUSE_DEVICE_FN unsigned to_tf32(float x) { return __float_as_uint(x); }

/// Loads the A and B fragments of k-step `ks` for this warp from the stage tiles at shared
/// byte addresses `ra` / `rb` (`sa` / `sb`: the same tiles as pointers, for the TF32 reads of
/// M- or N-major tiles).
/// `row` >= 0 (a constant of an unrolled loop): only the share of MMA row `row`, so that the
/// next k-step's reads go out between the rows of MMAs: A fragment `row`, and the B
/// fragments spread over the first half of the rows (they are all needed by the next step's
/// first row).
template <class Cfg, bool TA, bool TB>
CUFUSE_DEVICE_FN void mma_fragments(unsigned ra, unsigned rb, const typename Cfg::element* sa,
                                    const typename Cfg::element* sb, int a_base, int b_base, int ks,
                                    unsigned (&fa)[Cfg::MI][4], unsigned (&fb)[Cfg::NI][2],
                                    int row = -1) {
  using L = mma_frag_layout<Cfg, TA, TB>;
  constexpr unsigned sz = sizeof(typename Cfg::element);
  constexpr int NB = L::b_ldsm ? Cfg::NI / 2 : Cfg::NI; // B reads: ldmatrix pairs or blocks
  constexpr int HB = Cfg::MI / 2 > 0 ? Cfg::MI / 2 : 1; // rows that carry them
  const int a0 = row < 0 ? 0 : row, a1 = row < 0 ? Cfg::MI : row + 1;
  const int b0 = row < 0 ? 0 : (row < HB ? row * NB / HB : NB);
  const int b1 = row < 0 ? NB : (row < HB ? (row + 1) * NB / HB : NB);
  CUFUSE_UNROLL
  for (int mi = 0; mi < Cfg::MI; ++mi) {
    if (mi < a0 || mi >= a1) {
      continue;
    }
    if constexpr (L::a_ldsm) {
      const unsigned addr = ra + unsigned(L::a_off(a_base, mi, ks)) * sz;
      if constexpr (TA) {
        ldmatrix_x4_trans(fa[mi], addr);
      } else {
        ldmatrix_x4(fa[mi], addr);
      }
    } else { // 8-byte reads: rows g and g + 8 of k row kh (see a_row)
      CUFUSE_UNROLL
      for (int kh = 0; kh < 2; ++kh) {
        const float2 x = *reinterpret_cast<const float2*>(sa + L::a_off(a_base, mi, ks, kh));
        fa[mi][2 * kh] = to_tf32(x.x);
        fa[mi][2 * kh + 1] = to_tf32(x.y);
      }
    }
  }
  if constexpr (L::b_ldsm) {
    CUFUSE_UNROLL
    for (int nj = 0; nj < Cfg::NI / 2; ++nj) {
      if (nj < b0 || nj >= b1) {
        continue;
      }
      unsigned r[4];
      const unsigned addr = rb + unsigned(L::b_off(b_base, nj, ks)) * sz;
      if constexpr (TB) {
        ldmatrix_x4(r, addr);
      } else {
        ldmatrix_x4_trans(r, addr);
      }
      fb[2 * nj][0] = r[0];
      fb[2 * nj][1] = r[1];
      fb[2 * nj + 1][0] = r[2];
      fb[2 * nj + 1][1] = r[3];
    }
  } else {
    CUFUSE_UNROLL
    for (int ni = 0; ni < Cfg::NI; ++ni) {
      if (ni < b0 || ni >= b1) {
        continue;
      }
      fb[ni][0] = to_tf32(sb[L::b_off(b_base, ni, ks, 0)]);
      fb[ni][1] = to_tf32(sb[L::b_off(b_base, ni, ks, 1)]);
    }
  }
}

/// One k-step of a warp: the MMAs of fragments `fa` x `fb`, with the fragments of step `nks`
/// (at stage addresses na / nb, npa / npb) read into `na_f` / `nb_f` between the rows of MMAs,
/// not all before them: fewer warps stall on a full MIO queue (bench/JOURNAL.md g21).
template <class Cfg, bool TA, bool TB>
CUFUSE_DEVICE_FN void mma_step(float (&acc)[Cfg::MI][Cfg::NI][4], const unsigned (&fa)[Cfg::MI][4],
                               const unsigned (&fb)[Cfg::NI][2], unsigned na, unsigned nb,
                               const typename Cfg::element* npa, const typename Cfg::element* npb,
                               int a_base, int b_base, int nks, unsigned (&na_f)[Cfg::MI][4],
                               unsigned (&nb_f)[Cfg::NI][2]) {
  CUFUSE_UNROLL
  for (int i = 0; i < Cfg::MI; ++i) {
    CUFUSE_UNROLL
    for (int j = 0; j < Cfg::NI; ++j) {
      if constexpr (Cfg::tf32) {
        mma_1688_tf32(acc[i][j], fa[i], fb[j]);
      } else {
        mma_16816<typename Cfg::element>(acc[i][j], fa[i], fb[j]);
      }
    }
    mma_fragments<Cfg, TA, TB>(na, nb, npa, npb, a_base, b_base, nks, na_f, nb_f, i);
  }
}

/// The mma.sync epilogue: the block's accumulators go through shared memory `smem` (free once
/// every warp has read its last fragments; this starts with the barrier) to C, and a split-K
/// block finishes its tile (splitk_fixup). `p`: the problem as the kernel computed it (a split
/// block's partial-tile arguments), `p_in`: as launched.
/// `tid`: the thread among the block's mma_threads; `bar`: 0 when they are the whole block,
/// else the named barrier they synchronize on (TMA tiles, whose producer warps have left).
template <class Cfg, bool TA, bool TB, class Epi, bool Swap>
CUFUSE_DEVICE_FN void mma_epilogue(float (&acc)[Cfg::MI][Cfg::NI][4], unsigned char* smem,
                                   const gemm_args& p, const gemm_args& p_in, const block_work& w,
                                   int tid, int bar = 0) {
  using T = typename Cfg::element;
  constexpr int BM = Cfg::BM, BN = Cfg::BN;
  auto sync = [&] {
    if (bar == 0) {
      __syncthreads();
    } else {
      asm volatile("bar.sync %0, %1;\n" ::"r"(bar), "n"(Cfg::mma_threads) : "memory");
    }
  };
  // The output type is dispatched once, so that each warp runs one straight-line store
  // sequence (the per-store dispatch made the unrolled epilogue several times longer, and at
  // 4096^3 warps waited on instruction fetch; bench/JOURNAL.md g17). C is fp32 or the input type
  // (cufuse::gemm's static_assert), so TF32 writes fp32 only.
  const int lane = tid & 31, warp = tid >> 5;
  const int wm = warp / Cfg::WN, wn = warp % Cfg::WN;
  const int g = lane >> 2, tq = lane & 3;
  using L = mma_frag_layout<Cfg, TA, TB>;
  // C goes through shared memory (free once the last K tile is read): the fragments' own
  // layout puts 8 rows in every warp store, 8 separate 16- or 32-byte pieces, and the LSU
  // spent ~11k cycles per 128x128 block on them (6 us, 10% of a 4096^3 block; bench/JOURNAL.md
  // g19). Staged, each thread writes whole 16-byte row pieces. The stage holds C's tile as
  // stored: CM x CN (BN x BM under Swap, whose accumulators are C^T), rows padded so that the
  // fragments' float2 writes fall in distinct banks: by 8 floats for rows g (banks 8 g + 2 tq),
  // by 4 for the paired rows 2 g + h of TF32 M-major A (8 g + 2 tq), and under Swap, where
  // those pairs are neighbours along a row of C (8 tq + 2 g). (The TMA layout's rows, a_row,
  // meet two-way conflicts here, once per tile.)
  static_assert(!Swap || !L::a_ldsm, "cufuse: only TF32 M-major A (paired rows) is swapped");
  constexpr int CM = Swap ? BN : BM, CN = Swap ? BM : BN;
  constexpr int SP = CN + (L::a_ldsm ? 8 : 4);
  static_assert(CM * SP * 4 <= Cfg::ring_bytes,
                "cufuse: an mma tile's C (padded rows of floats) must fit in its pipeline's "
                "shared memory, where the epilogue stages it");
  float* st = reinterpret_cast<float*>(smem);
  sync(); // every warp has read its last fragments from the stages
  CUFUSE_UNROLL
  for (int i = 0; i < Cfg::MI; ++i) {
    CUFUSE_UNROLL
    for (int j = 0; j < Cfg::NI; ++j) {
      const int col = wn * Cfg::WTN + j * 8 + 2 * tq;
      if constexpr (Swap) { // rows a_row(i, 0 / 1, g) of C^T: a float2 in row col (+ 1) of C
        const int row = wm * Cfg::WTM + L::a_row(i, 0, g);
        *reinterpret_cast<float2*>(st + col * SP + row) = make_float2(acc[i][j][0], acc[i][j][2]);
        *reinterpret_cast<float2*>(st + (col + 1) * SP + row) =
            make_float2(acc[i][j][1], acc[i][j][3]);
      } else {
        CUFUSE_UNROLL
        for (int h = 0; h < 2; ++h) {
          const int row = wm * Cfg::WTM + L::a_row(i, h, g);
          *reinterpret_cast<float2*>(st + row * SP + col) =
              make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        }
      }
    }
  }
  sync();
  gemm_args pc = p; // C as stored
  if constexpr (Swap) {
    pc.m = p.n;
    pc.n = p.m;
  }
  const int row0 = Swap ? w.n0 : w.m0, col0 = Swap ? w.m0 : w.n0;
  auto store_rows = [&](auto out) {
    using Out = typename decltype(out)::type;
    constexpr int V = 16 / int(sizeof(Out));
    constexpr int per_row = CN / V, rows = Cfg::mma_threads / per_row;
    static_assert(Cfg::mma_threads % per_row == 0 && CM % rows == 0,
                  "cufuse: staged C rows must split evenly over the block");
    const bool aligned = p.ldc % V == 0 && reinterpret_cast<std::uintptr_t>(w.c) % 16 == 0;
    const int r0 = tid / per_row, c0 = (tid % per_row) * V;
    CUFUSE_UNROLL
    for (int r = r0; r < CM; r += rows) {
      float v[V];
      CUFUSE_UNROLL
      for (int q = 0; q < V; q += 4) {
        const float4 x = *reinterpret_cast<const float4*>(st + r * SP + c0 + q);
        v[q] = x.x;
        v[q + 1] = x.y;
        v[q + 2] = x.z;
        v[q + 3] = x.w;
      }
      store_group<V, Epi, Out>(pc, w.c, row0 + r, col0 + c0, v, aligned, Epi{});
    }
  };
  if (Cfg::tf32 || p.out_type == int(dtype::f32)) {
    store_rows(std::type_identity<float>{});
  } else if constexpr (!Cfg::tf32) {
    store_rows(std::type_identity<T>{});
  }
  if constexpr (Cfg::splits > 1) {
    gemm_args rc = p_in; // C as stored
    if constexpr (Swap) {
      rc.m = p_in.n;
      rc.n = p_in.m;
    }
    static_assert(!Cfg::tma, "cufuse: TMA mma tiles have no split-K");
    splitk_fixup<CM, CN, Cfg::threads, Epi>(rc, row0, col0);
  }
}

/// Swap: `p` describes C^T = op(B)^T op(A)^T (operands, m / n and their strides exchanged by
/// the launcher) and the kernel writes C as stored (TF32 NN runs as TT: see kernel_of).
template <class Cfg, bool TA, bool TB, class Epi, bool Swap = false>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks) mma_gemm_kernel(gemm_args p_in) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using T = typename Cfg::element;
  // Split-K blocks write partial tiles of C as stored (n x m under Swap) to the workspace
  // (without one, a split configuration launched unsplit writes C directly).
  const gemm_args p = Cfg::splits > 1 && p_in.ws != nullptr
                          ? split_partial_args(p_in, Swap ? p_in.m : p_in.n)
                          : p_in;
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, S = Cfg::stages;
  extern __shared__ __align__(128) unsigned char mma_smem[];
  using CA = mma_tile_copier<Cfg, BM, !TA>;
  using CB = mma_tile_copier<Cfg, BN, TB>;
  constexpr int a_elems = CA::stage_elems, b_elems = CB::stage_elems; // BM x BK, BN x BK (+ pad)
  static_assert(S * (a_elems + b_elems) * int(sizeof(T)) <= Cfg::smem_bytes,
                "cufuse: mma stages overflow the shared memory");
  T* sa = reinterpret_cast<T*>(mma_smem); // [S][a_elems]
  T* sb = sa + S * a_elems;               // [S][b_elems]

  const block_work w = locate_block<BM, BN, int(sizeof(T)), 2>(p);
  const T* a = reinterpret_cast<const T*>(w.a);
  const T* b = reinterpret_cast<const T*>(w.b);
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31, warp = tid >> 5;
  const int wm = warp / Cfg::WN, wn = warp % Cfg::WN;

  float acc[Cfg::MI][Cfg::NI][4];
  zero_acc(acc);

  const int tiles = w.k_tiles<BK>();
  // Edge tiles (partly outside the matrices) load through the checked, zero-filling path.
  auto load_stage_checked = [&](int t, int st) {
    const int k0 = w.k_begin + t * BK;
    mma_load_tile<Cfg, BM, !TA>(sa + st * a_elems, a, p.lda, w.m0, k0, p.m, w.k_end, tid);
    mma_load_tile<Cfg, BN, TB>(sb + st * b_elems, b, p.ldb, w.n0, k0, p.n, w.k_end, tid);
  };
  CUFUSE_UNROLL
  for (int s = 0; s < S - 1; ++s) {
    if (s < tiles) {
      load_stage_checked(s, s);
    }
    cp_async_commit();
  }
  // Interior tiles: each thread's copies planned once; they are spread over the k-steps of
  // the tile being computed so that no k-step issues a long run of copies.
  const CA cpa(a, p.lda, w.m0, w.k_begin, tid);
  const CB cpb(b, p.ldb, w.n0, w.k_begin, tid);
  const bool interior_mn = w.m0 + BM <= p.m && w.n0 + BN <= p.n;
  constexpr unsigned a_stage = a_elems * sizeof(T), b_stage = b_elems * sizeof(T);
  const unsigned s_a = smem_addr(mma_smem), s_b = s_a + S * a_stage;

  using L = mma_frag_layout<Cfg, TA, TB>;
  const int a_base = L::a_base(wm, lane), b_base = L::b_base(wn, lane);
  // Warp fragments are double-buffered: step ks + 1 is read from shared memory while the
  // MMAs of step ks are issued (its reads between their rows), so ldmatrix latency hides
  // behind tensor-core work. The last step of a tile first waits for the next stage and
  // synchronizes, then reads its step 0.
  constexpr int KS = BK / Cfg::MMA_K;
  static_assert(KS % 2 == 0, "cufuse: BK must hold an even number of MMA k-steps");
  constexpr int copies = CA::count + CB::count;
  unsigned fa[2][Cfg::MI][4];
  unsigned fb[2][Cfg::NI][2];
  cp_async_wait<S - 2>();
  __syncthreads();
  if (tiles > 0) {
    mma_fragments<Cfg, TA, TB>(s_a, s_b, sa, sb, a_base, b_base, 0, fa[0], fb[0]);
  }
  int rs = 0;     // the stage this tile reads: t % S
  int ws = S - 1; // the stage it refills: (t + S - 1) % S, last read before the previous barrier
  // One K tile of the main loop. `planned`: the tile loaded meanwhile (t + S - 1) lies inside
  // the matrices and takes the planned copies; otherwise the checked path (or no load at all
  // past the last tile). The two kinds run in separate loops, so the hot loop carries no
  // checked copies: FP16 4096^3 went from 94 M to 77 M instructions and +13% (bench/JOURNAL.md
  // g14).
  auto tile = [&](int t, auto planned) {
    const int tl = t + S - 1;
    const unsigned ra = s_a + rs * a_stage, rb = s_b + rs * b_stage;
    const T* pa = sa + rs * a_elems;
    const T* pb = sb + rs * b_elems;
    const unsigned wa = s_a + ws * a_stage, wb = s_b + ws * b_stage;
    const T* a_from = cpa.src + tl * cpa.tile_step;
    const T* b_from = cpb.src + tl * cpb.tile_step;
    rs = rs + 1 == S ? 0 : rs + 1;
    CUFUSE_UNROLL
    for (int ks = 0; ks < KS; ++ks) {
      if constexpr (decltype(planned)::value) {
        CUFUSE_UNROLL
        for (int i = ks * copies / KS; i < (ks + 1) * copies / KS; ++i) {
          if (i < CA::count) {
            cpa.copy(wa, a_from, i);
          } else {
            cpb.copy(wb, b_from, i - CA::count);
          }
        }
      } else if (ks == 0 && tl < tiles) {
        load_stage_checked(tl, ws);
      }
      const bool last = ks + 1 == KS; // the next step is step 0 of the next stage
      if (last) {
        cp_async_commit();
        cp_async_wait<S - 2>();
        __syncthreads();
      }
      const unsigned na = last ? s_a + rs * a_stage : ra, nb = last ? s_b + rs * b_stage : rb;
      const T* npa = last ? sa + rs * a_elems : pa;
      const T* npb = last ? sb + rs * b_elems : pb;
      mma_step<Cfg, TA, TB>(acc, fa[ks & 1], fb[ks & 1], na, nb, npa, npb, a_base, b_base,
                            last ? 0 : ks + 1, fa[(ks + 1) & 1], fb[(ks + 1) & 1]);
    }
    ws = ws + 1 == S ? 0 : ws + 1;
  };
  run_k_tiles<S>(interior_mn, (w.k_end - w.k_begin) / BK, tiles, tile);
  cp_async_wait<0>();

  mma_epilogue<Cfg, TA, TB, Epi, Swap>(acc, mma_smem, p, p_in, w, tid);
#else
  __trap(); // never launched: the host checks the kernel's binary architecture first
#endif
}

// ---- split-K reduction -----------------------------------------------------------------------

/// C[b] = epilogue(sum over splits of ws[b][s]); ws is [batch][splits][m][n] fp32. For 8 and
/// more splits, where the in-kernel fixup (one block per tile) reads too much per block.
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
