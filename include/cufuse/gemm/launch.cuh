/// \file How a tile configuration of gemm/variants.cuh is launched for an epilogue type: its
/// kernel per layout (`kernel_of`), the TMA descriptors (one cache type), the grid, and the
/// per-device preparation. Host code templated on the configuration and the epilogue, so that
/// a translation unit can instantiate the kernels for its own epilogue (libcufuse does it for
/// the standard one in src/gemm/variants_*.cu; expression epilogues in the user's file, see
/// gemm/epilogue/expression.cuh). What is not templated (the driver's TMA encoder, the
/// environment) is compiled once in libcufuse.
#pragma once

#include "../core/pdl.cuh"
#include "orient.hpp"
#include "variants.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>

namespace cufuse::gemm_detail {

/// Whether CUFUSE_GEMM_TMA_STORE allows the wgmma TMA-store epilogue (libcufuse; read once).
bool tma_store_allowed();

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
template <class T, int A, int B, int C, int D, bool E, int F, bool G>
struct is_wgmma<wgmma_config<T, A, B, C, D, E, F, G>> : std::true_type {};

/// Whether `Cfg` is a wgmma configuration whose splits run as a thread-block cluster.
template <class Cfg>
constexpr bool cluster_split() {
  if constexpr (is_wgmma<Cfg>::value) {
    return Cfg::cluster_k;
  } else {
    return false;
  }
}

/// Host: encodes the TMA descriptor of an operand stored row-major as `outer` rows of
/// `inner` elements (leading dimension `ld`), `batch` of them `batch_stride` apart (0: one
/// matrix shared by every batch), read in boxes of `box_inner` x `box_outer` elements with the
/// 128-byte swizzle. The driver's encoder is looked up once through the runtime.
cudaError_t encode_tma_operand(CUtensorMap* map, dtype t, const void* ptr, std::int64_t inner,
                               std::int64_t outer, std::int64_t ld, std::int64_t batch,
                               std::int64_t batch_stride, int box_inner, int box_outer);

/// Host: encodes the TMA im2col descriptor of a convolution's X (NHWC, `g`): boxes of `pixels`
/// output pixels x `channels` channels, 128-byte swizzle, zeros outside X (the padding).
cudaError_t encode_im2col_operand(CUtensorMap* map, dtype t, const void* ptr,
                                  const conv_geometry& g, int pixels, int channels);

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
        std::to_string(Cfg::stages) + (Cfg::tma ? "_tma" : "") + (Cfg::elem ? "_v1" : "");
  }
  if (Cfg::splits > 1) {
    s += (cluster_split<Cfg>() ? "_csplit" : "_split") + std::to_string(Cfg::splits);
  }
  return s;
}

/// Whether `Cfg` computes on TF32 tensor cores (the SIMT configurations have no `tf32`).
template <class Cfg>
constexpr bool tf32_of() {
  if constexpr (requires { Cfg::tf32; }) {
    return Cfg::tf32;
  } else {
    return false;
  }
}

/// Whether `Epi` runs its 16-bit wgmma configurations as one kernel for the four layouts (an
/// expression epilogue, unless built with CUFUSE_EPI_ONE_KERNEL_FOR_LAYOUTS=0).
template <class Epi>
constexpr bool one_kernel_for_layouts() {
  if constexpr (requires { Epi::one_kernel_for_layouts; }) {
    return Epi::one_kernel_for_layouts;
  } else {
    return false;
  }
}

/// The kernel that runs transposes (TA, TB). A problem that runs_transposed (variant.hpp) runs
/// as TT with the operands exchanged: the kernels' `Swapped` parameter. TF32 wgmma and the TMA
/// mma.sync tiles read B only K-major (NT as it is, TT with an M-major A); their TN is not
/// accepted (`layouts`), and its entry only gives prepare_variant a kernel to look at.
template <class Cfg, bool TA, bool TB, class Epi>
constexpr auto kernel_of() {
  constexpr bool swap = runs_transposed(tf32_of<Cfg>(), TA, TB);
  if constexpr (is_simt<Cfg>::value) {
    if constexpr (Cfg::stages > 0) {
      return &simt_async_gemm_kernel<Cfg, TA, TB, Epi>;
    } else {
      return &simt_gemm_kernel<Cfg, TA, TB, Epi>;
    }
  } else if constexpr (is_wgmma<Cfg>::value) {
    if constexpr (Cfg::tf32) {
      return &wgmma_gemm_kernel < Cfg, swap || (TA && TB), true, Epi, swap > ;
    } else if constexpr (one_kernel_for_layouts<Epi>()) {
      // An expression epilogue: one kernel for the four layouts, which reads p.layout (its
      // epilogue, the bulk of the code, is compiled once instead of four times).
      return &wgmma_gemm_kernel<Cfg, false, false, Epi, false, true>;
    } else {
      return &wgmma_gemm_kernel<Cfg, TA, TB, Epi>;
    }
  } else if constexpr (tma_loads<Cfg>()) {
    return &mma_tma_gemm_kernel < Cfg, swap || (TA && TB), Epi, swap > ;
  } else if constexpr (elem_loads<Cfg>()) {
    return &mma_elem_gemm_kernel < Cfg, TA || swap, TB || swap, Epi, swap > ;
  } else {
    return &mma_gemm_kernel < Cfg, TA || swap, TB || swap, Epi, swap > ;
  }
}

/// The tensor maps (A, B and C) of one thread's last launch of one variant: a call that repeats
/// the addresses, shapes and strides (a training loop on the same buffers) reuses them instead of
/// encoding them anew. One cache type for every TMA variant.
struct tma_maps {
  struct key_t {
    const void* a = nullptr;
    const void* b = nullptr;
    const void* c = nullptr;
    std::int64_t lda = 0, ldb = 0, ldc = 0, stride_a = 0, stride_b = 0, stride_c = 0;
    int m = 0, n = 0, k = 0, out_type = 0, epi_tma = 0;
    unsigned batch = 0;
    bool ta = false, tb = false, swapped = false;
    const void* x = nullptr; // the epilogue's staged operand (gemm_args::epi_operand)
    conv_geometry conv{};    // a convolution: A is X through an im2col map
    bool operator==(const key_t&) const = default;
  };
  key_t key;
  bool valid = false;
  CUtensorMap a{}, b{}, c{}, x{};

  /// The maps for `k`: the cached ones, or those `encode(*this)` writes (then cached).
  template <class Encode>
  cudaError_t get(const key_t& k, Encode&& encode) {
    if (valid && key == k) {
      return cudaSuccess;
    }
    valid = false;
    c = CUtensorMap{};
    x = CUtensorMap{};
    const cudaError_t e = encode(*this);
    if (e == cudaSuccess) {
      key = k;
      valid = true;
    }
    return e;
  }
};

/// Whether the wgmma epilogue may store C through shared memory and TMA (and load it so when
/// beta != 0): C's base, leading dimension and batch stride are 16-byte multiples (TMA's rule),
/// and so is its row length, since a TMA store writes whole 16-byte units (past a row's end it
/// would write the padding up to the next 16 bytes). Not for beta != 0 on a C that every batch
/// shares (batch stride 0), whose chunks the batches would load and store interleaved.
/// CUFUSE_GEMM_TMA_STORE=0 forces direct stores (for comparisons; read by libcufuse).
template <class Cfg>
bool tma_store_ok(const gemm_args& args, bool swapped, unsigned batches) {
  static const bool allowed = tma_store_allowed();
  const std::int64_t out_size = dtype_size(static_cast<dtype>(args.out_type));
  const bool batched_c = batches > 1 && args.stride_c != 0;
  const bool shared_c = batches > 1 && args.stride_c == 0;
  const std::int64_t c_cols = swapped ? args.m : args.n;
  return allowed && (args.beta == 0.0f || !shared_c) && (c_cols * out_size) % 16 == 0 &&
         (!Cfg::tf32 || args.out_type == int(dtype::f32)) &&
         reinterpret_cast<std::uintptr_t>(args.c) % 16 == 0 && (args.ldc * out_size) % 16 == 0 &&
         (!batched_c || (args.stride_c * out_size) % 16 == 0);
}

/// An expression epilogue's staged operand (gemm/epilogue/expression.cuh): its batch-0 address
/// and its strides in the output's [batch, rows, cols] (elements).
struct staged_operand {
  const void* ptr;
  std::int64_t sb, sr, sc;
};

/// CUFUSE_GEMM_EPI_STAGE=0: an expression epilogue's staged operand is read from global memory
/// even where it could be staged (for comparisons).
inline bool epi_stage_allowed() {
  static const bool allowed = [] {
    const char* e = std::getenv("CUFUSE_GEMM_EPI_STAGE");
    return e == nullptr || e[0] != '0';
  }();
  return allowed;
}

/// Whether the wgmma TMA-store epilogue (args.epi_tma) may load operand `x` into its buffers
/// with C's boxes: laid out exactly as C (same leading dimension, unit column stride, same batch
/// stride where there are batches, 16-byte aligned base; its dtype is C's by construction).
inline bool staged_ok(const gemm_args& args, const staged_operand& x, unsigned batches) {
  return epi_stage_allowed() && args.epi_tma && reinterpret_cast<std::uintptr_t>(x.ptr) % 16 == 0 &&
         x.sc == 1 && x.sr == args.ldc && (batches <= 1 || x.sb == args.stride_c);
}

/// The launch configuration of a cluster split-K configuration's kernel (clusters of
/// Cfg::splits blocks along x; `attr` holds the attribute); the caller sets the grid and stream.
template <class Cfg>
cudaLaunchConfig_t cluster_launch(cudaLaunchAttribute (&attr)[1]) {
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = Cfg::splits;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(unsigned(Cfg::splits) * 64u);
  cfg.blockDim = dim3(Cfg::threads);
  cfg.dynamicSmemBytes = Cfg::smem_bytes;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

/// cudaLaunchKernelEx, its error returned and not left for the caller's next check.
template <class Kernel, class... Args>
cudaError_t launch_ex(const cudaLaunchConfig_t& cfg, Kernel kernel, Args&&... args) {
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
  }
  return e;
}

/// How many clusters of `Cfg`'s kernel (epilogue `Epi`) the current device holds at once (its
/// shared memory opted in first: prepare_variant). An H100 holds 66 clusters of two 64x128 blocks
/// and 30 of four (not 33: its GPCs' SM counts).
template <class Cfg, class Epi>
cudaError_t resident_clusters(int* out) {
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = cluster_launch<Cfg>(attr);
  return cudaOccupancyMaxActiveClusters(out, kernel_of<Cfg, false, false, Epi>(), &cfg);
}

/// sm_90a wgmma: TMA loads, persistent blocks (each walks tiles blockIdx.x, + gridDim.x, ...
/// over every batch). A K-major operand is one box of BK elements (128 bytes) x tile rows; an
/// M/N-major one, boxes of BK M/N-elements (128 bytes) x BK K-rows (mainloop/wgmma.cuh).
template <class Cfg, class Epi, class Kernel>
cudaError_t launch_wgmma(Kernel kernel, const oriented& o, const Epi& epi, dim3 grid, int sms,
                         cudaStream_t stream) {
  gemm_args args = o.args;
  const bool ta = o.ta, tb = o.tb, swapped = o.swapped;
  args.layout = 2 * int(ta) + int(tb);
  // grid.z: batches x splits; the split-K tiles store partial sums directly (C is written by
  // the last split of each tile, splitk_finish).
  const unsigned batches = unsigned(args.batch);
  const bool split = Cfg::splits > 1 && !Cfg::cluster_k && args.ws != nullptr;
  // An expression epilogue whose operands' strides do not fit the TMA store's 32-bit offsets
  // within a tile (wgmma_store.cuh, store_tile_ahead) takes the direct stores.
  bool local_ok = true;
  if constexpr (requires { epi.local_strides(); }) {
    local_ok = epi.local_strides();
  }
  args.epi_tma = !split && local_ok && tma_store_ok<Cfg>(args, swapped, batches);
  // An expression epilogue's staged operand (a residual) laid out as C is loaded by TMA into the
  // epilogue's buffers, as C is for beta != 0 (wgmma_store.cuh), instead of by each thread from
  // global memory.
  staged_operand x{};
  args.epi_operand = 0;
  if constexpr (requires { Epi::staged; }) {
    if constexpr (Epi::staged) {
      x = epi.staged_operand();
      args.epi_operand = staged_ok(args, x, batches) ? 1 : 0;
    }
  }
  const std::int64_t out_size = dtype_size(static_cast<dtype>(args.out_type));
  thread_local tma_maps maps;
  const tma_maps::key_t key{args.a,
                            args.b,
                            args.c,
                            args.lda,
                            args.ldb,
                            args.ldc,
                            args.stride_a,
                            args.stride_b,
                            args.stride_c,
                            args.m,
                            args.n,
                            args.k,
                            args.out_type,
                            args.epi_tma,
                            batches,
                            ta,
                            tb,
                            swapped,
                            args.epi_operand != 0 ? x.ptr : nullptr,
                            args.conv};
  const cudaError_t e = maps.get(key, [&](tma_maps& m) {
    const dtype t = dtype_of<typename Cfg::element>();
    const std::int64_t batch = batches;
    constexpr int bk = Cfg::BK;
    cudaError_t r = args.conv.c != 0
                        ? encode_im2col_operand(&m.a, t, args.a, args.conv, Cfg::BM, bk)
                    : ta ? encode_tma_operand(&m.a, t, args.a, args.m, args.k, args.lda, batch,
                                              args.stride_a, bk, bk)
                         : encode_tma_operand(&m.a, t, args.a, args.k, args.m, args.lda, batch,
                                              args.stride_a, bk, Cfg::BM);
    if (r == cudaSuccess) {
      r = tb ? encode_tma_operand(&m.b, t, args.b, args.k, args.n, args.ldb, batch, args.stride_b,
                                  bk, Cfg::BN)
             : encode_tma_operand(&m.b, t, args.b, args.n, args.k, args.ldb, batch, args.stride_b,
                                  bk, bk);
    }
    if (r == cudaSuccess && args.epi_tma) {
      // C as stored: args.m x args.n, or args.n x args.m (columns first) for the swapped TF32
      // NN form, whose tile is written as two 32 x 32 boxes per 64-row atom.
      const std::int64_t rows = swapped ? args.n : args.m;
      const std::int64_t cols = swapped ? args.m : args.n;
      const int box_inner = swapped ? 32 : int(128 / out_size), box_outer = swapped ? 32 : 64;
      r = encode_tma_operand(&m.c, static_cast<dtype>(args.out_type), args.c, cols, rows, args.ldc,
                             batch, args.stride_c, box_inner, box_outer);
      if (r == cudaSuccess && args.epi_operand != 0) { // the staged operand, laid out as C
        r = encode_tma_operand(&m.x, static_cast<dtype>(args.out_type), x.ptr, cols, rows, args.ldc,
                               batch, args.stride_c, box_inner, box_outer);
      }
    }
    return r;
  });
  if (e != cudaSuccess) {
    return e;
  }
  if constexpr (Cfg::cluster_k) {
    // A cluster of Cfg::splits blocks per output tile (the kernel's cluster_reduce relies on
    // one tile per cluster); those the device cannot hold at once run as they free up.
    args.splits = Cfg::splits; // cluster_tiles: plane = batch * S + rank; k_chunk: host's plan
    cudaLaunchAttribute cluster[1];
    cudaLaunchConfig_t cfg = cluster_launch<Cfg>(cluster);
    cudaLaunchAttribute attr[2] = {cluster[0], detail::dependent_launch_attribute()};
    cfg.attrs = attr;
    cfg.numAttrs = detail::dependent_launches() ? 2 : 1;
    cfg.gridDim = dim3(cluster_tiles<Cfg::BM, Cfg::BN, Cfg::splits>::grid(args.m, args.n, batches));
    cfg.stream = stream;
    return launch_ex(cfg, kernel, maps.a, maps.b, maps.c, maps.x, args, epi);
  } else {
    const unsigned resident = unsigned(std::max(sms, 1) * Cfg::min_blocks);
    const unsigned blocks =
        persistent_tiles<Cfg::BM, Cfg::BN>::grid(args.m, args.n, grid.z, resident);
    // A programmatic dependent launch: the blocks set up their barriers while the kernel before
    // finishes, then wait for it (kernel/wgmma.cuh, core/pdl.cuh). About 1 us less per GEMM
    // that follows another kernel (bench/JOURNAL.md g36).
    cudaLaunchAttribute attr[1] = {detail::dependent_launch_attribute()};
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(Cfg::threads);
    cfg.dynamicSmemBytes = Cfg::smem_bytes;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = detail::dependent_launches() ? 1 : 0;
    return launch_ex(cfg, kernel, maps.a, maps.b, maps.c, maps.x, args, epi);
  }
}

/// sm_90a mma.sync whose stages TMA fills: M-major A in boxes of 32 M-rows x BK K-rows,
/// K-major operands BK x tile rows.
template <class Cfg, class Epi, class Kernel>
cudaError_t launch_mma_tma(Kernel kernel, const oriented& o, const Epi& epi, dim3 grid,
                           cudaStream_t stream) {
  const gemm_args& args = o.args;
  thread_local tma_maps maps;
  tma_maps::key_t key{};
  key.a = args.a;
  key.b = args.b;
  key.lda = args.lda;
  key.ldb = args.ldb;
  key.stride_a = args.stride_a;
  key.stride_b = args.stride_b;
  key.m = args.m;
  key.n = args.n;
  key.k = args.k;
  key.batch = grid.z;
  key.ta = o.ta;
  const cudaError_t e = maps.get(key, [&](tma_maps& m) {
    constexpr int bk = Cfg::BK;
    const std::int64_t batch = grid.z;
    cudaError_t r = o.ta ? encode_tma_operand(&m.a, dtype::f32, args.a, args.m, args.k, args.lda,
                                              batch, args.stride_a, 32, bk)
                         : encode_tma_operand(&m.a, dtype::f32, args.a, args.k, args.m, args.lda,
                                              batch, args.stride_a, bk, Cfg::BM);
    if (r == cudaSuccess) {
      r = encode_tma_operand(&m.b, dtype::f32, args.b, args.k, args.n, args.ldb, batch,
                             args.stride_b, bk, Cfg::BN);
    }
    return r;
  });
  if (e != cudaSuccess) {
    return e;
  }
  const dim3 tiles(tile_count<Cfg::BM, Cfg::BN>(args.m, args.n), 1, grid.z);
  kernel<<<tiles, dim3(Cfg::threads), Cfg::smem_bytes, stream>>>(maps.a, maps.b, args, epi);
  return cudaSuccess;
}

/// Whether a wgmma configuration also has kernels for the store-only standard epilogue
/// (linear_combination_stored: C of the inputs' type or fp32, stored by TMA, not read). Not the
/// workspace split-K tiles, whose partial tiles go out by direct stores.
template <class Cfg, class Epi>
constexpr bool has_stored_forms() {
  if constexpr (is_wgmma<Cfg>::value) {
    return std::is_same_v<Epi, linear_combination> && (Cfg::splits == 1 || Cfg::cluster_k);
  } else {
    return false;
  }
}

/// The kernel of configuration `Cfg` for epilogue `Epi` and the layout (ta, tb).
template <class Cfg, class Epi>
auto kernel_for(bool ta, bool tb) {
  return ta ? (tb ? kernel_of<Cfg, true, true, Epi>() : kernel_of<Cfg, true, false, Epi>())
            : (tb ? kernel_of<Cfg, false, true, Epi>() : kernel_of<Cfg, false, false, Epi>());
}

/// Lets the four layouts' kernels of (`Cfg`, `Epi`) take the configuration's shared memory.
template <class Cfg, class Epi>
cudaError_t opt_in_smem() {
  for (int l = 0; l < 4; ++l) {
    const void* k = reinterpret_cast<const void*>(kernel_for<Cfg, Epi>(l >= 2, l % 2 == 1));
    const cudaError_t e =
        cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::smem_bytes);
    if (e != cudaSuccess) {
      return e;
    }
  }
  return cudaSuccess;
}

/// Launches `Cfg`'s kernel for transposes (ta, tb) with the epilogue object `*epi` (an `Epi`;
/// null: a default-constructed one). The type-erased entry of a `variant` (src/gemm/variant.hpp)
/// and of an expression epilogue's kernels (gemm/epilogue/expression.cuh).
template <class Cfg, class Epi>
cudaError_t launch_variant(const gemm_args& args, const void* epi, bool ta, bool tb, dim3 grid,
                           int sms, cudaStream_t stream) {
  const Epi e = epi != nullptr ? *static_cast<const Epi*>(epi) : Epi{};
  const oriented o = orient(args, tf32_of<Cfg>(), ta, tb);
  if constexpr (has_stored_forms<Cfg, Epi>()) {
    // C stored by TMA and not read: the kernel that holds only that store, for C's type.
    using T = typename Cfg::element;
    // (linear_combination::reads_c is device code: beta != 0, tested here on the host.)
    if (o.args.beta == 0.0f && tma_store_ok<Cfg>(o.args, o.swapped, unsigned(o.args.batch))) {
      if (o.args.out_type == int(dtype::f32)) {
        using S = linear_combination_stored<float>;
        return launch_wgmma<Cfg>(kernel_for<Cfg, S>(ta, tb), o, S{}, grid, sms, stream);
      }
      if (o.args.out_type == int(dtype_of<T>())) {
        using S = linear_combination_stored<T>;
        return launch_wgmma<Cfg>(kernel_for<Cfg, S>(ta, tb), o, S{}, grid, sms, stream);
      }
    }
  }
  const auto k = kernel_for<Cfg, Epi>(ta, tb);
  if constexpr (is_wgmma<Cfg>::value) {
    return launch_wgmma<Cfg>(k, o, e, grid, sms, stream);
  } else if constexpr (tma_loads<Cfg>()) {
    return launch_mma_tma<Cfg>(k, o, e, grid, stream);
  } else {
    // One block per output tile of the orientation the kernel runs (grid.y, grid.z as given).
    const dim3 g(tile_count<Cfg::BM, Cfg::BN>(o.args.m, o.args.n), grid.y, grid.z);
    k<<<g, dim3(Cfg::threads), Cfg::smem_bytes, stream>>>(o.args, e);
    return cudaSuccess;
  }
}

/// Whether `Cfg` runs only on sm_90a (wgmma, or mma.sync fed by TMA).
template <class Cfg>
constexpr bool needs_sm90a() {
  return is_wgmma<Cfg>::value || tma_loads<Cfg>();
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
  if constexpr (has_stored_forms<Cfg, Epi>()) {
    cudaError_t e = opt_in_smem<Cfg, linear_combination_stored<float>>();
    if (e == cudaSuccess) {
      e = opt_in_smem<Cfg, linear_combination_stored<typename Cfg::element>>();
    }
    if (e != cudaSuccess) {
      return e;
    }
  }
  if constexpr (needs_sm90a<Cfg>()) {
    if (arch == 90) {
      // Probed once per device and epilogue type (0: not yet, 1: yes, 2: no).
      static std::atomic<int> known[64];
      int dev = 0;
      cudaError_t e = cudaGetDevice(&dev);
      if (e != cudaSuccess) {
        return e;
      }
      std::atomic<int>& k = known[dev & 63];
      if (k.load() == 0) {
        bool has = false;
        e = probe_sm90a<Epi>(&has);
        if (e != cudaSuccess) {
          return e;
        }
        k.store(has ? 1 : 2);
      }
      arch = k.load() == 1 ? arch : 0;
    }
  }
  *binary_arch = arch;
  return cudaSuccess;
}

} // namespace cufuse::gemm_detail
