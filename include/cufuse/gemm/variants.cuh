/// \file The GEMM variant set: a compile-time list of tile configurations per family, and the
/// run-time descriptor (`variant`) each configuration becomes when `src/` instantiates the list
/// for an epilogue (`instantiate<Epilogue>(list)`). The same lists can be instantiated for other
/// epilogues later without touching the kernels.
///
/// Names are stable and carry the configuration, e.g. `sm80_bf16_mma_128x128x32_w2x2_s3`:
/// minimum architecture, input type (tf32 = float inputs on tensor cores), family, block tile
/// MxNxK, warps (mma) or thread tile (simt), pipeline stages, `_v1` when it accepts any
/// alignment, `_splitN` for split-K. SIMT: `_vN` is the elements per global load, `_sN` a
/// cp.async pipeline of N stages (sm80_, e.g. `sm80_f32_simt_128x128x32_t8x8_v4_s3`), `_rAB` the
/// rows per warp of A's / B's transposing copies when not 4. Every variant declares its
/// constraints in the descriptor.
#pragma once

#include "kernels.cuh"
#include "kernels_sm90.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

#include <string>
#include <utility>
#include <vector>

namespace cufuse::gemm_detail {

enum class family : std::uint8_t { simt, mma, wgmma };

/// A pre-instantiated GEMM kernel configuration and its constraints.
struct variant {
  std::string name;
  family fam = family::simt;
  dtype ab = dtype::f32; // element type of A and B
  bool tf32 = false;     // float inputs, TF32 tensor-core math
  int min_arch = 70;     // compute capability x 10 its kernels need (90 = sm_90a)
  int align = 1;         // elements: A/B pointers, leading dimensions and batch strides
  int splits = 1;        // split-K factor (1: none)
  int layouts = 0xF;     // bit (2 * trans_a + trans_b): the transposes it accepts
  bool pingpong = false; // wgmma: consumer warpgroups take whole tiles in turn
  bool tma = false;      // operands loaded by TMA (sm_90a): batch strides must not overlap
  int bm = 0, bn = 0, bk = 0, threads = 0, smem = 0;
  /// Launches the kernel for the given transposes: `grid` has one block per output tile
  /// (grid.z = batch x splits); persistent kernels launch `sms` x blocks-per-SM blocks instead.
  /// Returns the error of building the launch (e.g. a TMA descriptor); the caller checks the
  /// launch itself.
  cudaError_t (*launch)(const gemm_args&, bool ta, bool tb, dim3 grid, int sms,
                        cudaStream_t) = nullptr;
  /// Per device: opts the kernels into their shared memory and reports the lowest SASS
  /// architecture they were compiled for on this device (0 when they have no code for it).
  cudaError_t (*prepare)(int* binary_arch) = nullptr;
};

template <class... C>
struct variant_list {};

// ---- the standard set ------------------------------------------------------------------------

using simt_variants = variant_list<
    // FP32 through cp.async pipelines (sm_80+), 16-byte aligned. First: the static heuristic
    // takes the first of equally rated tiles. _rAB: rows per warp of A's / B's transposing
    // copies; _r22 is for NT, where both operands are transposed (bench/JOURNAL.md g16).
    simt_config<float, 128, 128, 32, 2, 2, 4, 1, 3>, simt_config<float, 256, 128, 8, 4, 2, 4, 1, 3>,
    simt_config<float, 128, 128, 32, 2, 2, 4, 1, 3, 2, 2>,
    // FP32 staged through registers (any sm_70+), 16-byte loads
    simt_config<float, 128, 128, 16, 2, 2, 4>, simt_config<float, 128, 64, 8, 2, 2, 4>,
    simt_config<float, 64, 64, 16, 1, 1, 4>, simt_config<float, 32, 64, 16, 1, 1, 4>,
    simt_config<float, 16, 128, 32, 1, 1, 4>,
    // FP32, any alignment
    simt_config<float, 128, 128, 8, 2, 2, 1>, simt_config<float, 64, 64, 16, 1, 1, 1>,
    // FP32 split-K (small M*N, large K)
    simt_config<float, 64, 64, 16, 1, 1, 4, 4>, simt_config<float, 64, 64, 16, 1, 1, 4, 16>,
    simt_config<float, 64, 64, 16, 1, 1, 1, 8>,
    // FP16 / BF16 at any alignment (the tensor-core variants need 16-byte alignment)
    simt_config<__half, 64, 64, 16, 1, 1, 1>, simt_config<__half, 128, 128, 8, 2, 2, 1>,
    simt_config<__nv_bfloat16, 64, 64, 16, 1, 1, 1>,
    simt_config<__nv_bfloat16, 128, 128, 8, 2, 2, 1>>;

/// FP16 / BF16 on mma.sync. Split-K: 4 splits (finished in the kernel) and 16 (a reduction
/// kernel) for small outputs with a long K, e.g. 128 x 128 x 8192, where 16 tiles leave most
/// SMs idle.
template <class T>
using mma16_variants =
    variant_list<mma_config<T, 128, 128, 64, 2, 2, 3>, mma_config<T, 128, 256, 64, 2, 4, 3>,
                 mma_config<T, 256, 128, 64, 4, 2, 3>, mma_config<T, 128, 64, 64, 2, 2, 3>,
                 mma_config<T, 64, 128, 64, 2, 2, 3>, mma_config<T, 64, 64, 64, 2, 2, 4>,
                 mma_config<T, 64, 64, 32, 2, 2, 4, 4>, mma_config<T, 64, 64, 32, 2, 2, 4, 16>>;

using mma_f16_variants = mma16_variants<__half>;
using mma_bf16_variants = mma16_variants<__nv_bfloat16>;

using mma_tf32_variants =
    variant_list<mma_config<float, 128, 128, 32, 2, 2, 3>, mma_config<float, 128, 256, 32, 2, 4, 3>,
                 mma_config<float, 256, 128, 32, 4, 2, 3>, mma_config<float, 128, 64, 32, 2, 2, 3>,
                 mma_config<float, 64, 64, 32, 2, 2, 4>, mma_config<float, 64, 64, 32, 2, 2, 4, 4>,
                 mma_config<float, 64, 64, 32, 2, 2, 4, 16>>;

/// TF32 on mma.sync with TMA loads (sm_90a; layouts NN, NT, TT): compiled only into
/// src/gemm/variants_tf32_tma.cu, for -gencode arch=compute_90a.
using mma_tma_tf32_variants = variant_list<mma_config<float, 128, 256, 32, 2, 4, 3, 1, true>,
                                           mma_config<float, 256, 128, 32, 4, 2, 3, 1, true>,
                                           mma_config<float, 128, 256, 32, 2, 4, 4, 1, true>,
                                           mma_config<float, 128, 128, 32, 2, 2, 3, 1, true>>;

/// sm_90a (TMA + wgmma): compiled only into src/gemm/variants_wgmma*.cu, for
/// -gencode arch=compute_90a. Cooperative 128x256 (large problems), 128x128, 64x128 (two
/// blocks per SM); ping-pong 128x128 (each consumer warpgroup owns a tile).
template <class T>
using wgmma16_variants =
    variant_list<wgmma_config<T, 128, 256, 4>, wgmma_config<T, 128, 128, 6>,
                 wgmma_config<T, 64, 128, 4, 2>, wgmma_config<T, 128, 128, 6, 1, true>>;

/// TF32 on sm_90a: float inputs, layouts NN, NT and TT (see `layouts`); TN uses mma.sync.
using wgmma_tf32_variants =
    variant_list<wgmma_config<float, 128, 256, 4>, wgmma_config<float, 128, 128, 6>,
                 wgmma_config<float, 64, 128, 4, 2>, wgmma_config<float, 128, 128, 6, 1, true>>;

// ---- instantiation -----------------------------------------------------------------------

template <class T>
constexpr dtype dtype_of() {
  if constexpr (std::is_same_v<T, float>) {
    return dtype::f32;
  } else if constexpr (std::is_same_v<T, __half>) {
    return dtype::f16;
  } else {
    return dtype::bf16;
  }
}

template <class>
struct is_simt : std::false_type {};
template <class T, int A, int B, int C, int D, int E, int F, int G, int H, int I, int J>
struct is_simt<simt_config<T, A, B, C, D, E, F, G, H, I, J>> : std::true_type {};

template <class>
struct is_wgmma : std::false_type {};
template <class T, int A, int B, int C, int D, bool E>
struct is_wgmma<wgmma_config<T, A, B, C, D, E>> : std::true_type {};

/// Host: encodes the TMA descriptor of an operand stored row-major as `outer` rows of
/// `inner` elements (leading dimension `ld`), `batch` of them `batch_stride` apart (0: one
/// matrix shared by every batch), read in boxes of `box_inner` x `box_outer` elements with the
/// 128-byte swizzle. The driver's encoder is looked up once through the runtime.
cudaError_t encode_tma_operand(CUtensorMap* map, dtype t, const void* ptr, std::int64_t inner,
                               std::int64_t outer, std::int64_t ld, std::int64_t batch,
                               std::int64_t batch_stride, int box_inner, int box_outer);

/// Whether `Cfg` is an mma.sync configuration whose stages TMA fills (mma_config::tma).
template <class Cfg>
constexpr bool tma_loads() {
  if constexpr (requires { Cfg::tma; }) {
    return Cfg::tma;
  } else {
    return false;
  }
}

template <class Cfg>
std::string variant_name() {
  using T = typename Cfg::element;
  const std::string tile =
      std::to_string(Cfg::BM) + "x" + std::to_string(Cfg::BN) + "x" + std::to_string(Cfg::BK);
  std::string s;
  if constexpr (is_simt<Cfg>::value) {
    s = std::string(Cfg::stages > 0 ? "sm80_" : "sm70_") + dtype_name(dtype_of<T>()) + "_simt_" +
        tile + "_t" + std::to_string(Cfg::TM) + "x" + std::to_string(Cfg::TN) + "_v" +
        std::to_string(Cfg::Vec) + (Cfg::stages > 0 ? "_s" + std::to_string(Cfg::stages) : "") +
        (Cfg::krows_a != 4 || Cfg::krows_b != 4
             ? "_r" + std::to_string(Cfg::krows_a) + std::to_string(Cfg::krows_b)
             : "");
  } else if constexpr (is_wgmma<Cfg>::value) {
    s = std::string("sm90a_") + (Cfg::tf32 ? "tf32" : dtype_name(dtype_of<T>())) + "_wgmma_" +
        tile + "_wg" + std::to_string(Cfg::WG) + (Cfg::pingpong ? "pp" : "") + "_s" +
        std::to_string(Cfg::stages) + "_tma";
  } else {
    s = std::string(Cfg::tma ? "sm90a_" : "sm80_") +
        (Cfg::tf32 ? "tf32" : dtype_name(dtype_of<T>())) + "_mma_" + tile + "_w" +
        std::to_string(Cfg::WM) + "x" + std::to_string(Cfg::WN) + "_s" +
        std::to_string(Cfg::stages) + (Cfg::tma ? "_tma" : "");
  }
  if (Cfg::splits > 1) {
    s += "_split" + std::to_string(Cfg::splits);
  }
  return s;
}

template <class Cfg, bool TA, bool TB, class Epi>
constexpr auto kernel_of() {
  if constexpr (is_simt<Cfg>::value) {
    if constexpr (Cfg::stages > 0) {
      return &simt_async_gemm_kernel<Cfg, TA, TB, Epi>;
    } else {
      return &simt_gemm_kernel<Cfg, TA, TB, Epi>;
    }
  } else if constexpr (is_wgmma<Cfg>::value) {
    if constexpr (Cfg::tf32) {
      // B must be K-major: NT runs as is, TT with A through registers, NN as C^T = B^T A^T
      // (operands exchanged by launch_variant). TN is not accepted (`layouts`).
      if constexpr (TA && TB) {
        return &wgmma_gemm_kernel<Cfg, true, true, Epi>;
      } else if constexpr (!TA && !TB) {
        return &wgmma_gemm_kernel<Cfg, true, true, Epi, true>;
      } else {
        return &wgmma_gemm_kernel<Cfg, false, true, Epi>;
      }
    } else {
      return &wgmma_gemm_kernel<Cfg, TA, TB, Epi>;
    }
  } else if constexpr (tma_loads<Cfg>()) {
    // B K-major, as on wgmma: NT and TT as they are, NN as C^T = B^T A^T (TT). TN is not
    // accepted (`layouts`); its entry only gives prepare_variant a kernel to look at.
    constexpr bool a_mn = TA && TB; // M-major A: TT; NT (and TN's placeholder) read A K-major
    if constexpr (!TA && !TB) {
      return &mma_tma_gemm_kernel<Cfg, true, Epi, true>;
    } else {
      return &mma_tma_gemm_kernel<Cfg, a_mn, Epi>;
    }
  } else if constexpr (Cfg::tf32 && !TA && !TB) {
    // TF32 NN as C^T = B^T A^T (operands exchanged by launch_variant), i.e. layout TT: B is
    // contiguous along N, and in the role of A its fragments come from 8-byte shared reads
    // (two registers each) instead of one 32-bit read per register in the role of B.
    return &mma_gemm_kernel<Cfg, true, true, Epi, true>;
  } else {
    return &mma_gemm_kernel<Cfg, TA, TB, Epi>;
  }
}

/// The same GEMM as C^T = op(B)^T op(A)^T: operands, leading dimensions, batch strides and m / n
/// exchanged (C, its leading dimension and the epilogue stay; the kernel writes C as stored).
/// TF32 NN runs this way on both tensor-core families (see kernel_of).
inline gemm_args transposed_problem(const gemm_args& p) {
  gemm_args t = p;
  std::swap(t.a, t.b);
  std::swap(t.lda, t.ldb);
  std::swap(t.stride_a, t.stride_b);
  std::swap(t.m, t.n);
  return t;
}

template <class Cfg, class Epi>
cudaError_t launch_variant(const gemm_args& args_in, bool ta, bool tb, dim3 grid, int sms,
                           cudaStream_t stream) {
  const dim3 block(Cfg::threads);
  const auto k =
      ta ? (tb ? kernel_of<Cfg, true, true, Epi>() : kernel_of<Cfg, true, false, Epi>())
         : (tb ? kernel_of<Cfg, false, true, Epi>() : kernel_of<Cfg, false, false, Epi>());
  if constexpr (is_wgmma<Cfg>::value) {
    // TF32 NN runs as C^T = B^T A^T: B in the role of A (M-major), A in the role of B
    // (K-major), m and n exchanged; the kernel writes C transposed.
    const bool swapped = Cfg::tf32 && !ta && !tb;
    gemm_args args = swapped ? transposed_problem(args_in) : args_in;
    if (swapped) {
      ta = tb = true;
    }
    // C through shared memory and TMA (loads of C when beta != 0, then stores) when C's base,
    // leading dimension and batch stride are 16-byte multiples (TMA's rule), and so is its
    // row length: a TMA store writes whole 16-byte units, so past a row's end it would write
    // the padding up to the next 16 bytes. Else direct stores; also for beta != 0 on a C that
    // every batch shares (batch stride 0), whose chunks the batches would load and store
    // interleaved. CUFUSE_GEMM_TMA_STORE=0 forces direct stores (for comparisons).
    static const bool tma_store_allowed = [] {
      const char* e = std::getenv("CUFUSE_GEMM_TMA_STORE");
      return e == nullptr || std::string(e) != "0";
    }();
    const std::int64_t out_size = args.out_type == int(dtype::f32) ? 4 : 2;
    const bool batched_c = grid.z > 1 && args.stride_c != 0;
    const bool shared_c = grid.z > 1 && args.stride_c == 0;
    const std::int64_t c_cols = swapped ? args.m : args.n;
    args.epi_tma =
        tma_store_allowed && (args.beta == 0.0f || !shared_c) && (c_cols * out_size) % 16 == 0 &&
        (!Cfg::tf32 || args.out_type == int(dtype::f32)) &&
        reinterpret_cast<std::uintptr_t>(args.c) % 16 == 0 && (args.ldc * out_size) % 16 == 0 &&
        (!batched_c || (args.stride_c * out_size) % 16 == 0);
    // A K-major operand is one box of BK elements (128 bytes) x tile rows; an M/N-major one,
    // boxes of BK M/N-elements (128 bytes) x BK K-rows (see kernels_sm90.cuh). The tensor maps
    // depend only on addresses, shapes and strides: the last ones of this thread and variant
    // are reused when a call repeats them (a training loop on the same buffers).
    struct maps_key {
      const void* a;
      const void* b;
      const void* c;
      std::int64_t lda, ldb, ldc, stride_a, stride_b, stride_c;
      int m, n, k, out_type, epi_tma;
      unsigned batch;
      bool ta, tb, swapped;
      bool operator==(const maps_key&) const = default;
    };
    struct maps_cache {
      maps_key key{};
      bool valid = false;
      CUtensorMap a, b, c;
    };
    thread_local maps_cache last;
    const maps_key key{args.a,        args.b,        args.c,        args.lda, args.ldb, args.ldc,
                       args.stride_a, args.stride_b, args.stride_c, args.m,   args.n,   args.k,
                       args.out_type, args.epi_tma,  grid.z,        ta,       tb,       swapped};
    if (!last.valid || !(last.key == key)) {
      last.valid = false;
      const dtype t = dtype_of<typename Cfg::element>();
      const std::int64_t batch = grid.z;
      constexpr int bk = Cfg::BK;
      cudaError_t e = ta ? encode_tma_operand(&last.a, t, args.a, args.m, args.k, args.lda, batch,
                                              args.stride_a, bk, bk)
                         : encode_tma_operand(&last.a, t, args.a, args.k, args.m, args.lda, batch,
                                              args.stride_a, bk, Cfg::BM);
      if (e == cudaSuccess) {
        e = tb ? encode_tma_operand(&last.b, t, args.b, args.k, args.n, args.ldb, batch,
                                    args.stride_b, bk, Cfg::BN)
               : encode_tma_operand(&last.b, t, args.b, args.n, args.k, args.ldb, batch,
                                    args.stride_b, bk, bk);
      }
      last.c = CUtensorMap{};
      if (e == cudaSuccess && args.epi_tma) {
        // C as stored: args.m x args.n, or args.n x args.m (columns first) for the swapped
        // TF32 NN form, whose tile is written as two 32 x 32 boxes per 64-row atom.
        const dtype out = static_cast<dtype>(args.out_type);
        const std::int64_t rows = swapped ? args.n : args.m;
        const int box_inner = swapped ? 32 : int(128 / out_size), box_outer = swapped ? 32 : 64;
        e = encode_tma_operand(&last.c, out, args.c, c_cols, rows, args.ldc, batch, args.stride_c,
                               box_inner, box_outer);
      }
      if (e != cudaSuccess) {
        return e;
      }
      last.key = key;
      last.valid = true;
    }
    const CUtensorMap& map_a = last.a;
    const CUtensorMap& map_b = last.b;
    const CUtensorMap& map_c = last.c;
    // Persistent: each block walks tiles blockIdx.x, + gridDim.x, ... over every batch.
    const unsigned tiles = unsigned((args.m + Cfg::BM - 1) / Cfg::BM) *
                           unsigned((args.n + Cfg::BN - 1) / Cfg::BN) * grid.z;
    const unsigned resident = unsigned(std::max(sms, 1) * Cfg::min_blocks);
    k<<<dim3(std::min(tiles, resident)), block, Cfg::smem_bytes, stream>>>(map_a, map_b, map_c,
                                                                           args);
  } else if constexpr (tma_loads<Cfg>()) { // mma.sync, TMA loads
    (void)sms;
    const bool swapped = !ta && !tb; // C^T = B^T A^T (see kernel_of): n x m tiles
    const gemm_args args = swapped ? transposed_problem(args_in) : args_in;
    if (swapped) {
      ta = tb = true;
    }
    // The last maps of this thread and variant are reused when a call repeats them.
    struct maps_key {
      const void* a;
      const void* b;
      std::int64_t lda, ldb, stride_a, stride_b;
      int m, n, k;
      unsigned batch;
      bool ta;
      bool operator==(const maps_key&) const = default;
    };
    struct maps_cache {
      maps_key key{};
      bool valid = false;
      CUtensorMap a, b;
    };
    thread_local maps_cache last;
    const maps_key key{args.a, args.b, args.lda, args.ldb, args.stride_a, args.stride_b, args.m,
                       args.n, args.k, grid.z,   ta};
    if (!last.valid || !(last.key == key)) {
      last.valid = false;
      constexpr int bk = Cfg::BK;
      const std::int64_t batch = grid.z;
      // M-major A: boxes of 32 M-rows x BK K-rows; K-major operands: BK x tile rows.
      cudaError_t e = ta ? encode_tma_operand(&last.a, dtype::f32, args.a, args.m, args.k, args.lda,
                                              batch, args.stride_a, 32, bk)
                         : encode_tma_operand(&last.a, dtype::f32, args.a, args.k, args.m, args.lda,
                                              batch, args.stride_a, bk, Cfg::BM);
      if (e == cudaSuccess) {
        e = encode_tma_operand(&last.b, dtype::f32, args.b, args.k, args.n, args.ldb, batch,
                               args.stride_b, bk, Cfg::BN);
      }
      if (e != cudaSuccess) {
        return e;
      }
      last.key = key;
      last.valid = true;
    }
    const dim3 tiles(
        unsigned(((args.m + Cfg::BM - 1) / Cfg::BM) * ((args.n + Cfg::BN - 1) / Cfg::BN)), 1,
        grid.z);
    k<<<tiles, block, Cfg::smem_bytes, stream>>>(last.a, last.b, args);
  } else if constexpr (!is_simt<Cfg>::value) { // mma.sync
    (void)sms;
    if (Cfg::tf32 && !ta && !tb) { // C^T = B^T A^T (see kernel_of): n x m tiles of BM x BN
      const gemm_args args = transposed_problem(args_in);
      const dim3 swapped(
          unsigned(((args.m + Cfg::BM - 1) / Cfg::BM) * ((args.n + Cfg::BN - 1) / Cfg::BN)), grid.y,
          grid.z);
      k<<<swapped, block, Cfg::smem_bytes, stream>>>(args);
    } else {
      k<<<grid, block, Cfg::smem_bytes, stream>>>(args_in);
    }
  } else {
    (void)sms;
    k<<<grid, block, Cfg::smem_bytes, stream>>>(args_in);
  }
  return cudaSuccess;
}

template <class Cfg, class Epi>
cudaError_t prepare_variant(int* binary_arch) {
  const void* kernels[] = {reinterpret_cast<const void*>(kernel_of<Cfg, false, false, Epi>()),
                           reinterpret_cast<const void*>(kernel_of<Cfg, false, true, Epi>()),
                           reinterpret_cast<const void*>(kernel_of<Cfg, true, false, Epi>()),
                           reinterpret_cast<const void*>(kernel_of<Cfg, true, true, Epi>())};
  int arch = 1 << 30;
  for (const void* k : kernels) {
    cudaFuncAttributes attr{};
    cudaError_t e = cudaFuncGetAttributes(&attr, k);
    if (e == cudaErrorInvalidDeviceFunction || e == cudaErrorNoKernelImageForDevice) {
      (void)cudaGetLastError();
      *binary_arch = 0;
      return cudaSuccess;
    }
    if (e != cudaSuccess) {
      return e;
    }
    arch = attr.binaryVersion < arch ? attr.binaryVersion : arch;
    e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::smem_bytes);
    if (e != cudaSuccess) {
      return e;
    }
  }
  *binary_arch = arch;
  return cudaSuccess;
}

template <class Cfg, class Epi>
variant make_variant() {
  variant v;
  v.name = variant_name<Cfg>();
  using T = typename Cfg::element;
  v.ab = dtype_of<T>();
  v.splits = Cfg::splits;
  v.bm = Cfg::BM;
  v.bn = Cfg::BN;
  v.bk = Cfg::BK;
  v.threads = Cfg::threads;
  v.smem = Cfg::smem_bytes;
  if constexpr (is_simt<Cfg>::value) {
    v.fam = family::simt;
    v.min_arch = Cfg::stages > 0 ? 80 : 70; // cp.async
    v.align = Cfg::Vec;
  } else if constexpr (is_wgmma<Cfg>::value) {
    v.fam = family::wgmma;
    v.min_arch = 90;
    v.align = Cfg::chunk;
    v.pingpong = Cfg::pingpong;
    v.tf32 = Cfg::tf32;
    v.tma = true;
    if constexpr (Cfg::tf32) {
      // NN, NT, TT: TF32 wgmma reads B K-major only (kernel_of); TN would need both operands
      // transposed in shared memory.
      v.layouts = (1 << 0) | (1 << 1) | (1 << 3);
    }
  } else {
    v.fam = family::mma;
    v.tf32 = Cfg::tf32;
    v.min_arch = Cfg::tma ? 90 : 80;
    v.align = Cfg::chunk;
    v.tma = Cfg::tma;
    if constexpr (Cfg::tma) {
      v.layouts = (1 << 0) | (1 << 1) | (1 << 3); // NN, NT, TT: B K-major (kernel_of)
    }
  }
  v.launch = &launch_variant<Cfg, Epi>;
  v.prepare = &prepare_variant<Cfg, Epi>;
  return v;
}

/// The run-time descriptors of every configuration in `List`, for epilogue `Epi`.
template <class Epi, class... C>
std::vector<variant> instantiate(variant_list<C...>) {
  return {make_variant<C, Epi>()...};
}

} // namespace cufuse::gemm_detail
