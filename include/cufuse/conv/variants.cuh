/// \file conv2d's implicit-GEMM variants: their names and configurations, which can run a
/// convolution here, the heuristic's choice, the launches (split-K's workspace included), and
/// the type-erased set the tuner chooses from (conv/tuning.hpp, implemented in libcufuse).
#pragma once

#include "../gemm.cuh"
#include "mma.cuh"
#include "problem.cuh"
#include "simt.cuh"
#include "tuning.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace cufuse::conv_detail {

/// Per-device facts the variant choice needs, read once per device.
struct device_facts {
  int sms = 0, major = 0, ordinal = 0;
};
inline device_facts facts_of_current_device() {
  static std::atomic<long long> known[64]; // sms << 8 | major, 0: not read yet
  int dev = 0;
  CUFUSE_CUDA_CHECK_MSG(cudaGetDevice(&dev), "cufuse::conv2d: reading the current device");
  std::atomic<long long>& slot = known[dev & 63];
  long long v = slot.load(std::memory_order_relaxed);
  if (v == 0) {
    int sms = 0, major = 0;
    CUFUSE_CUDA_CHECK_MSG(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev),
                          "cufuse::conv2d: reading the SM count");
    CUFUSE_CUDA_CHECK_MSG(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev),
                          "cufuse::conv2d: reading the compute capability");
    v = (static_cast<long long>(sms) << 8) | major;
    slot.store(v, std::memory_order_relaxed);
  }
  return {static_cast<int>(v >> 8), static_cast<int>(v & 0xff), dev};
}

/// A convolution on the GEMM's wgmma kernel of configuration G (its producer warpgroup, ring,
/// ping-pong or cooperative consumers and TMA-store epilogues, expression epilogues included):
/// the GEMM [n p q, r s c] x [r s c, k] with A read from X by TMA in im2col mode, each K tile
/// one filter tap and 64 channels (gemm_args::conv, mainloop/wgmma.cuh wgmma_produce), B the
/// filter as a [k, r s c] matrix (layout NT), C = Y as [n p q, k]. No per-thread gather: the
/// implicit-GEMM tiles spend about half their issue slots on the gather's addresses
/// (bench/JOURNAL.md c8).
template <class G>
struct tma_conv_config {
  static_assert(G::splits == 1, "cufuse: the im2col tiles are unsplit (the cluster split-K form "
                                "measured slower on every ResNet layer: bench/JOURNAL.md c9)");
  using gemm = G;
  using element = typename G::element;
  static constexpr bool tma_conv = true;
  static constexpr int BM = G::BM, BN = G::BN, BK = G::BK, stages = G::stages, splits = 1;
  static constexpr int threads = G::threads, smem_bytes = G::smem_bytes;
  static constexpr int min_blocks = G::min_blocks;
};
template <class Cfg>
inline constexpr bool tma_conv_v = requires { Cfg::tma_conv; };

/// Whether the im2col TMA tiles can run `a` (beyond mma_refusal's rules, which already ask for
/// 16-byte aligned X and W, contiguous channels and strides in whole 16-byte units): 16-bit
/// inputs, C a multiple of 64 (a K tile never straddles two taps), strides of at most 8 (TMA's
/// element strides), the window origins' box within the map's 8-bit corners, filter offsets
/// within 16 bits, X's strides nested (W's inside H's inside N's), and 32-bit GEMM extents.
template <class T>
bool im2col_fits(const conv_args& a) {
  const index_t uw = (a.q - 1) * a.sw - a.pw - (a.wd - 1);
  const index_t uh = (a.p - 1) * a.sh - a.ph - (a.h - 1);
  auto corner = [](index_t v) { return v >= -128 && v <= 127; };
  return sizeof(T) == 2 && a.c % 64 == 0 && a.sh <= 8 && a.sw <= 8 && corner(-a.ph) &&
         corner(-a.pw) && corner(uh) && corner(uw) && (a.r - 1) * a.dh < 65536 &&
         (a.s - 1) * a.dw < 65536 && a.xs[2] >= a.c && a.xs[1] >= a.wd * a.xs[2] &&
         a.xs[0] >= a.h * a.xs[1] && a.n * a.p * a.q < INT_MAX && a.r * a.s * a.c < INT_MAX &&
         a.n < INT_MAX && a.h < INT_MAX && a.wd < INT_MAX;
}

/// The SIMT variant's name (any shape, layout and alignment; exact fp32 arithmetic).
inline constexpr const char* simt_name = "conv_simt_64x64x16";

/// "_halo<E>" for the halo tiles (E: the largest (R - 1) W + S - 1 they take), else "".
template <class Cfg>
std::string halo_suffix() {
  if constexpr (halo_v<Cfg>) {
    return "_halo" + std::to_string(Cfg::halo_extra);
  } else {
    return std::string();
  }
}

/// A tensor-core variant's name: element type (tf32 for fp32 inputs), tile, stages.
template <class Cfg>
std::string mma_name() {
  using T = typename Cfg::element;
  const char* t = std::is_same_v<T, float> ? "tf32" : (std::is_same_v<T, __half> ? "f16" : "bf16");
  if constexpr (tma_conv_v<Cfg>) {
    using G = typename Cfg::gemm;
    return std::string("conv_im2col_") + t + "_" + std::to_string(G::BM) + "x" +
           std::to_string(G::BN) + "x" + std::to_string(G::BK) + "_wg" + std::to_string(G::WG) +
           (G::pingpong ? "pp" : "") + "_s" + std::to_string(G::stages) +
           (G::min_blocks > 1 ? "_b" + std::to_string(G::min_blocks) : "");
  }
  return std::string(wgmma_conv_v<Cfg> ? "conv_wgmma_" : "conv_mma_") + t + "_" +
         std::to_string(Cfg::BM) + "x" + std::to_string(Cfg::BN) + "x" + std::to_string(Cfg::BK) +
         "_s" + std::to_string(Cfg::stages) +
         (Cfg::splits > 1 ? "_k" + std::to_string(Cfg::splits) : std::string()) +
         (elem_gather_v<Cfg> ? "_elem" : "") + halo_suffix<Cfg>();
}

/// Calls f(std::type_identity<Cfg>{}) for each tensor-core configuration of element type T,
/// in the heuristic's order of preference (heuristic_choice): the 128-row wgmma tiles (sm_90a),
/// the mma.sync tiles, larger first, split-K, the element gather, the 64-row wgmma tile (the
/// tuner's to choose), then the wgmma halo tiles of stride-1 "same" convolutions (halo_config),
/// which replace the gathering tile of their size where they can run, then the GEMM's wgmma
/// tiles with im2col TMA loads (tma_conv_config), chosen before all others where they run and
/// K >= 128 (heuristic_choice).
/// Measured on ResNet's layers (bench/JOURNAL.md c2, c3, c5): no 128 x 128 mma.sync tile with
/// 64-element steps (it spills); halo tiles over mma.sync (they were no faster: the ldmatrix
/// and MMA issue, not the gather, bounds those tiles) and TF32 ones are not in the set.
template <class T, class F>
void for_each_mma_config(F&& f) {
  if constexpr (std::is_same_v<T, float>) { // TF32: 128 fp32 accumulators of a 128 x 128 warp
    f(std::type_identity<mma_conv_config<float, 128, 64, 32, 4>>{}); // tile would spill
    f(std::type_identity<mma_conv_config<float, 64, 64, 32, 4>>{});
    f(std::type_identity<mma_conv_config<float, 64, 64, 32, 4, 4>>{});
  } else {
    f(std::type_identity<wgmma_conv_config<T, 128, 128, 3>>{});
    f(std::type_identity<wgmma_conv_config<T, 128, 64, 4>>{});
    f(std::type_identity<mma_conv_config<T, 128, 128, 32, 5>>{});
    f(std::type_identity<mma_conv_config<T, 128, 64, 32, 5>>{});
    f(std::type_identity<mma_conv_config<T, 128, 64, 64, 4>>{});
    f(std::type_identity<mma_conv_config<T, 64, 64, 64, 4>>{});
    f(std::type_identity<mma_conv_config<T, 64, 64, 32, 4>>{});
    f(std::type_identity<mma_conv_config<T, 64, 64, 64, 4, 4>>{});
    // Channel counts or layouts the 16-byte gathers cannot take.
    f(std::type_identity<elem_gather_config<mma_conv_config<T, 64, 64, 32, 3>>>{});
    f(std::type_identity<wgmma_conv_config<T, 64, 64, 4>>{});
    f(std::type_identity<halo_config<wgmma_conv_config<T, 128, 128, 3>, 64>>{});
    f(std::type_identity<halo_config<wgmma_conv_config<T, 128, 64, 4>, 128>>{});
    f(std::type_identity<halo_config<wgmma_conv_config<T, 64, 64, 4>, 64>>{});
    // The GEMM's wgmma kernels with im2col TMA loads.
    using gemm_detail::wgmma_config;
    f(std::type_identity<tma_conv_config<wgmma_config<T, 128, 128, 6, 1, true>>>{});
    f(std::type_identity<tma_conv_config<wgmma_config<T, 128, 256, 4>>>{});
    f(std::type_identity<tma_conv_config<wgmma_config<T, 64, 128, 4, 2>>>{});
  }
}

/// Whether the halo tile Cfg can run `a` (beyond mma_refusal's rules): stride and dilation 1,
/// the output as large as the input (so that output pixel m's tap (r, s) is input pixel
/// m + (r - ph) W + (s - pw)), X's pixels evenly spaced (H W of them an image), whole BK-channel
/// chunks, the halo within its buffers, and at least stages - 1 taps (a halo buffer is refilled
/// S - 1 tiles ahead: see halo_tiles).
template <class Cfg>
bool halo_fits(const conv_args& a) {
  const index_t taps = a.r * a.s;
  return a.sh == 1 && a.sw == 1 && a.dh == 1 && a.dw == 1 && a.p == a.h && a.q == a.wd &&
         a.c % Cfg::BK == 0 && taps <= 32 && taps >= Cfg::stages - 1 &&
         (a.r - 1) * a.wd + a.s - 1 <= Cfg::halo_extra && a.xs[2] > 0 &&
         a.xs[1] == a.wd * a.xs[2] && a.xs[0] == a.h * a.xs[1];
}

/// Whether offsets into X, the output's pixels or the reduction reach 2^31 (the tensor-core
/// kernels index with 32-bit integers).
inline bool too_large(const conv_args& a) {
  auto mag = [](index_t v) { return v < 0 ? -v : v; };
  const index_t span = (a.n - 1) * mag(a.xs[0]) + (a.h - 1) * mag(a.xs[1]) +
                       (a.wd - 1) * mag(a.xs[2]) + (a.c - 1) * mag(a.xs[3]) + 1;
  const index_t pad = a.ph * mag(a.xs[1]) + a.pw * mag(a.xs[2]);
  return span + pad >= INT_MAX || a.n * a.p * a.q >= INT_MAX - 256 ||
         a.r * a.s * (a.c + 8) >= INT_MAX || a.k >= INT_MAX || (a.r * a.dh + a.h) >= INT_MAX / 2 ||
         (a.s * a.dw + a.wd) >= INT_MAX / 2;
}

/// Why the tensor-core variants cannot run `a`: 0 they can; else the reason (refusal_text).
/// T: the input type; fp32 inputs run on them (TF32) only when `options.math` asks for TF32.
/// `device`: also check the device (the layout alone otherwise).
template <class T>
int mma_refusal(const conv_args& a, const gemm_options& options, const device_facts* d) {
  constexpr index_t E = 16 / index_t(sizeof(T));
  auto aligned = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
  if (std::is_same_v<T, float> && options.math != gemm_math::tf32) {
    return 1;
  }
  if (d != nullptr && d->major < 8) {
    return 2;
  }
  if (a.c % E != 0 || a.xs[3] != 1 || a.xs[0] % E != 0 || a.xs[1] % E != 0 || a.xs[2] % E != 0 ||
      !aligned(a.x)) {
    return 3;
  }
  if (a.ws[3] != 1 || a.ws[2] != a.c || a.ws[1] != a.s * a.c || a.ws[0] % E != 0 || !aligned(a.w)) {
    return 4;
  }
  return too_large(a) ? 5 : 0;
}

/// Why the element-gather variant cannot run `a` (0: it can), in mma_refusal's codes (1: not a
/// 16-bit type).
template <class T>
int elem_refusal(const conv_args& a, const device_facts* d) {
  if (sizeof(T) != 2) {
    return 1;
  }
  if (d != nullptr && d->major < 8) {
    return 2;
  }
  return too_large(a) ? 5 : 0;
}

template <class T>
std::string refusal_text(int code) {
  const std::string e = std::to_string(16 / sizeof(T));
  switch (code) {
  case 1:
    return sizeof(T) == 2 ? "fp32 inputs run on tensor cores only with gemm_options::math = tf32"
                          : "the element-gather variants are for fp16 / bf16 inputs";
  case 2:
    return "the device has no mma.sync (compute capability below 8.0)";
  case 3:
    return "X's channels must be contiguous, C and X's strides multiples of " + e +
           " elements, X 16-byte aligned";
  case 4:
    return "W's r, s, c must be dense, its rows a multiple of " + e +
           " elements apart, W 16-byte aligned";
  case 5:
    return "X, the output or the filter has 2^31 elements or more";
  case 6:
    return "the halo tiles need stride 1, dilation 1, an output as large as the input, X's "
           "pixels evenly spaced, C a multiple of the tile's reduction step, at least stages - 1 "
           "and at most 32 filter taps, and (R - 1) W + S - 1 within the number the name ends with";
  case 7:
    return "the im2col tiles need fp16 / bf16 inputs, C a multiple of 64, strides of at most 8, "
           "padding within 128 and X's strides nested (channels, then W, H, N)";
  default:
    return "no code for this device";
  }
}

/// Whether the kernel of configuration Cfg for epilogue Epi has code for the current device;
/// sets its shared-memory limit there.
template <class Cfg, class Epi>
bool mma_prepare() {
  const void* k = nullptr;
  if constexpr (tma_conv_v<Cfg>) {
    k = reinterpret_cast<const void*>(
        gemm_detail::kernel_of<typename Cfg::gemm, false, true, Epi>());
  } else {
    k = reinterpret_cast<const void*>(&conv2d_mma_kernel<Cfg, Epi>);
  }
  cudaFuncAttributes attr{};
  const cudaError_t e = cudaFuncGetAttributes(&attr, k);
  if (e == cudaErrorInvalidDeviceFunction || e == cudaErrorNoKernelImageForDevice) {
    (void)cudaGetLastError();
    return false;
  }
  CUFUSE_CUDA_CHECK_MSG(e, "cufuse::conv2d: reading the attributes of " + mma_name<Cfg>());
  if (attr.binaryVersion < 80) {
    return false;
  }
  if constexpr (wgmma_conv_v<Cfg> || tma_conv_v<Cfg>) { // sm_90a code (sm_90 alone traps)
    bool has = false;
    CUFUSE_CUDA_CHECK_MSG(gemm_detail::probe_sm90a<Epi>(&has),
                          "cufuse::conv2d: probing for sm_90a code");
    if (attr.binaryVersion != 90 || !has) {
      return false;
    }
  }
  CUFUSE_CUDA_CHECK_MSG(
      cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::smem_bytes),
      "cufuse::conv2d: setting the shared memory of " + mma_name<Cfg>());
  return true;
}

/// The tensor-core variants of element type T and epilogue Epi that have code for the current
/// device `dev` (bit v: the v-th of for_each_mma_config<T>), prepared on first use; afterwards
/// one atomic load.
template <class T, class Epi>
std::uint32_t ready_mask(int dev) {
  static std::atomic<std::uint32_t> known[64]; // bit 31: prepared on that device
  std::atomic<std::uint32_t>& slot = known[dev & 63];
  std::uint32_t m = slot.load(std::memory_order_acquire);
  if ((m >> 31) == 0) {
    m = 1u << 31;
    int i = 0;
    for_each_mma_config<T>([&](auto cfg) {
      const int v = i++;
      m |= mma_prepare<typename decltype(cfg)::type, Epi>() ? 1u << v : 0u;
    });
    slot.store(m, std::memory_order_release);
  }
  return m & ~(1u << 31);
}

/// Output tiles of configuration Cfg over `a`'s [n p q, k] output.
template <class Cfg>
index_t tiles_of(const conv_args& a) {
  return ((a.n * a.p * a.q + Cfg::BM - 1) / Cfg::BM) * ((a.k + Cfg::BN - 1) / Cfg::BN);
}

/// Runs `a` on the GEMM wgmma kernel of tma_conv_config Cfg (persistent blocks, as many as
/// the SMs hold).
template <class Cfg, class Epi>
void launch_im2col(const conv_args& a, const Epi& epi, cudaStream_t stream) {
  using G = typename Cfg::gemm;
  gemm_detail::gemm_args g{};
  g.a = a.x;
  g.b = a.w;
  g.c = a.y;
  g.lda = a.c;
  g.ldb = a.ws[0];
  g.ldc = a.ldy;
  g.m = int(a.n * a.p * a.q);
  g.n = int(a.k);
  g.k = int(a.r * a.s * a.c);
  g.batch = 1;
  g.splits = 1;
  g.k_chunk = g.k;
  g.alpha = 1.0f;
  g.beta = 0.0f;
  g.out_type = a.out_type;
  gemm_detail::conv_geometry& cv = g.conv;
  cv.c = int(a.c);
  cv.sc = int(a.s * a.c);
  cv.pq = int(a.p * a.q);
  cv.q = int(a.q);
  cv.sh = int(a.sh);
  cv.sw = int(a.sw);
  cv.ph = int(a.ph);
  cv.pw = int(a.pw);
  cv.dh = int(a.dh);
  cv.dw = int(a.dw);
  cv.n = int(a.n);
  cv.h = int(a.h);
  cv.wd = int(a.wd);
  cv.p = int(a.p);
  cv.r = int(a.r);
  cv.s = int(a.s);
  cv.xs_n = a.xs[0];
  cv.xs_h = a.xs[1];
  cv.xs_w = a.xs[2];
  const gemm_detail::oriented o{g, false, true, false};
  const cudaError_t e =
      gemm_detail::launch_wgmma<G>(gemm_detail::kernel_of<G, false, true, Epi>(), o, epi,
                                   dim3(1, 1, 1), facts_of_current_device().sms, stream);
  CUFUSE_CUDA_CHECK_MSG(e == cudaSuccess ? cudaGetLastError() : e,
                        "launching cufuse::conv2d's " + mma_name<Cfg>());
}

/// Runs `a` on the implicit-GEMM kernel of configuration Cfg (conv2d_mma_kernel).
template <class Cfg, class Epi>
void launch_gather(const conv_args& a, const Epi& epi, cudaStream_t stream) {
  const index_t tiles = tiles_of<Cfg>(a);
  if (tiles > 0x7fffffff) {
    throw error("cufuse::conv2d: the output is too large for one launch of " + mma_name<Cfg>());
  }
  if constexpr (Cfg::splits == 1) {
    conv2d_mma_kernel<Cfg, Epi><<<unsigned(tiles), Cfg::threads, Cfg::smem_bytes, stream>>>(a, epi);
    CUFUSE_CUDA_CHECK_MSG(cudaGetLastError(), "launching cufuse::conv2d's " + mma_name<Cfg>());
  } else {
    // Split-K: the partial sums and the tiles' arrival counters in one stream-ordered
    // allocation (as the GEMM's split-K variants do).
    const std::size_t part_bytes =
        static_cast<std::size_t>(a.n * a.p * a.q * a.k) * Cfg::splits * sizeof(float);
    const std::size_t count_at = (part_bytes + 255) / 256 * 256;
    const std::size_t bytes = count_at + static_cast<std::size_t>(tiles) * sizeof(unsigned);
    void* ws = nullptr;
    CUFUSE_CUDA_CHECK_MSG(cudaMallocAsync(&ws, bytes, stream),
                          "allocating the " + std::to_string(bytes) +
                              "-byte split-K workspace of " + mma_name<Cfg>());
    conv_args s = a;
    s.part = static_cast<float*>(ws);
    s.part_count = reinterpret_cast<unsigned*>(static_cast<char*>(ws) + count_at);
    s.splits = Cfg::splits;
    cudaError_t e = cudaMemsetAsync(s.part_count, 0, bytes - count_at, stream);
    if (e == cudaSuccess) {
      conv2d_mma_kernel<Cfg, Epi><<<dim3(unsigned(tiles), 1, unsigned(Cfg::splits)), Cfg::threads,
                                    Cfg::smem_bytes, stream>>>(s, epi);
      e = cudaGetLastError();
    }
    const cudaError_t freed = cudaFreeAsync(ws, stream);
    CUFUSE_CUDA_CHECK_MSG(e, "launching cufuse::conv2d's " + mma_name<Cfg>());
    CUFUSE_CUDA_CHECK_MSG(freed, "freeing the split-K workspace of " + mma_name<Cfg>());
  }
}

template <class Cfg, class Epi>
void launch_mma(const conv_args& a, const Epi& epi, cudaStream_t stream) {
  if constexpr (tma_conv_v<Cfg>) {
    launch_im2col<Cfg>(a, epi, stream);
  } else {
    launch_gather<Cfg>(a, epi, stream);
  }
}

template <class T, class Epi>
void launch_simt(const conv_args& a, const Epi& epi, cudaStream_t stream) {
  const index_t rows = a.n * a.p * a.q;
  const index_t gx = (rows + 63) / 64, gy = (a.k + 63) / 64;
  if (gx > 0x7fffffff || gy > 65535) {
    throw error("cufuse::conv2d: the output is too large for one launch (" + std::to_string(rows) +
                " pixels x " + std::to_string(a.k) + " channels)");
  }
  conv2d_simt_kernel<T, Epi><<<dim3(unsigned(gx), unsigned(gy)), 256, 0, stream>>>(a, epi);
  CUFUSE_CUDA_CHECK_MSG(cudaGetLastError(), "launching cufuse::conv2d's SIMT kernel");
}

/// The conv_set of input type T and epilogue type Epi: every implicit-GEMM variant's name, in
/// for_each_mma_config's order, the SIMT one last (one static object per pair).
template <class T, class Epi>
const conv_set& conv_set_of() {
  static const conv_set s = [] {
    conv_set c;
    if constexpr (!std::is_same_v<Epi, gemm_detail::linear_combination>) {
      c.epilogue = gemm_detail::epilogue_name<Epi>();
    }
    for_each_mma_config<T>(
        [&](auto cfg) { c.names.push_back(mma_name<typename decltype(cfg)::type>()); });
    c.names.emplace_back(simt_name);
    return c;
  }();
  return s;
}

/// One call, as the tuner's launch callback receives it.
template <class Epi>
struct conv_call {
  const conv_args* a;
  const Epi* epi;
};

/// Launches variant `v` of conv_set_of<T, Epi>() (conv_launch_fn).
template <class T, class Epi>
void launch_variant(int v, const void* call, cudaStream_t stream) {
  const auto& c = *static_cast<const conv_call<Epi>*>(call);
  int i = 0;
  bool done = false;
  for_each_mma_config<T>([&](auto cfg) {
    using Cfg = typename decltype(cfg)::type;
    if (i++ == v) {
      launch_mma<Cfg, Epi>(*c.a, *c.epi, stream);
      done = true;
    }
  });
  if (!done) {
    launch_simt<T>(*c.a, *c.epi, stream);
  }
}

/// Blocks of configuration Cfg that one SM holds (shared memory; at most 3, the register
/// budget of 128-thread tiles: mma_config::min_blocks).
template <class Cfg>
constexpr int blocks_per_sm() {
  const int by_smem = (227 * 1024) / (Cfg::smem_bytes + 1024);
  return by_smem < 3 ? by_smem : 3;
}

/// The heuristic's choice among the variants `valid` marks (bit v: the v-th of
/// for_each_mma_config<T>, the SIMT kernel after them): the first unsplit 128-row wgmma or
/// mma.sync tile (in for_each_mma_config's order, tiles wider than K skipped) whose blocks fill
/// the GPU's block slots in whole waves to at least 75% (wgmma tiles: 70%, measured: on 28x28
/// C128 the 128 x 128 one at 0.74 waves is the fastest); where none does, the 64 x 64 mma.sync
/// tile, or split-K when even that leaves more than half the SMs idle; the element gather where
/// only it can run; else the SIMT kernel. A halo tile of the chosen tile's size replaces it
/// where it can run. (Measured on ResNet's layers, bench/JOURNAL.md c3, c5.) Where an im2col
/// TMA tile runs and K >= 128, one of those instead (below; c9).
/// Host code without device calls: test/host/test_conv_api.cu checks its picks.
template <class T>
int heuristic_choice(const conv_args& a, int sms, std::uint32_t valid) {
  int heuristic = -1, fallback = -1, split = -1, elem = -1, i = 0;
  index_t small_tiles = 0;
  for_each_mma_config<T>([&](auto cfg) {
    using Cfg = typename decltype(cfg)::type;
    const int v = i++;
    if ((valid >> v & 1u) == 0) {
      return;
    }
    if constexpr (halo_v<Cfg> || tma_conv_v<Cfg> || (wgmma_conv_v<Cfg> && Cfg::BM == 64)) {
      return; // halo and im2col tiles: below; the 64-row wgmma tile: the tuner's to choose
    } else if constexpr (elem_gather_v<Cfg>) {
      elem = elem < 0 ? v : elem;
    } else if constexpr (Cfg::splits > 1) {
      split = split < 0 ? v : split;
    } else {
      const index_t tiles = tiles_of<Cfg>(a);
      const double waves = double(tiles) / double(index_t(sms) * blocks_per_sm<Cfg>());
      const double fill = waves / std::ceil(waves);
      const double least = wgmma_conv_v<Cfg> ? 0.7 : 0.75;
      if (heuristic < 0 && (Cfg::BN <= 64 || a.k > 64) && waves >= least && fill >= least) {
        heuristic = v;
      }
      if (!wgmma_conv_v<Cfg> && Cfg::BM == 64 && Cfg::BN == 64 && fallback < 0) {
        fallback = v;
        small_tiles = tiles;
      }
    }
  });
  if (heuristic < 0) {
    heuristic = split >= 0 && 2 * small_tiles < sms ? split : fallback;
  }
  if (heuristic < 0) {
    heuristic = elem;
  }
  // A halo tile of the chosen tile's size replaces it where it can run.
  int dims = 0, j = 0, halo = -1;
  for_each_mma_config<T>([&](auto cfg) {
    using Cfg = typename decltype(cfg)::type;
    const int v = j++;
    const int d = (Cfg::BM << 20) | (Cfg::BN << 10) | Cfg::BK | (wgmma_conv_v<Cfg> ? 1 << 30 : 0);
    if (v == heuristic && !elem_gather_v<Cfg> && Cfg::splits == 1) {
      dims = d;
    }
    if (halo_v<Cfg> && (valid >> v & 1u) != 0 && d == dims && halo < 0) {
      halo = v;
    }
  });
  heuristic = halo >= 0 ? halo : heuristic;
  // The im2col TMA tiles, where they run and K fills their 128 columns: the 128 x 128
  // ping-pong tile when its tiles give every SM one, else the 64 x 128 tile with two blocks per
  // SM (measured on ResNet's layers, bench/JOURNAL.md c9: 1.1-1.6x faster than the gathering
  // tiles on the 3x3 layers with K >= 128; with K = 64 half of each tile's columns would idle,
  // and the halo tile stays faster).
  if (a.k >= 128) {
    int pp = -1, narrow = -1, t = 0;
    index_t pp_tiles = 0;
    for_each_mma_config<T>([&](auto cfg) {
      using Cfg = typename decltype(cfg)::type;
      const int v = t++;
      if constexpr (tma_conv_v<Cfg>) {
        if ((valid >> v & 1u) != 0) {
          if (Cfg::gemm::pingpong && pp < 0) {
            pp = v;
            pp_tiles = tiles_of<Cfg>(a);
          } else if (Cfg::BM == 64 && narrow < 0) {
            narrow = v;
          }
        }
      }
    });
    if (pp >= 0 && (pp_tiles >= index_t(sms) || narrow < 0)) {
      return pp;
    }
    if (narrow >= 0) {
      return narrow;
    }
  }
  return heuristic < 0 ? i : heuristic;
}

/// The variants of conv_set_of<T, Epi>() that can run `a` here (bit v for names[v]), and the
/// heuristic's choice among them (heuristic_choice).
template <class T, class Epi>
std::pair<std::uint32_t, int> valid_variants(const conv_args& a, const gemm_options& options) {
  const device_facts d = facts_of_current_device();
  const bool tc = mma_refusal<T>(a, options, &d) == 0;
  // The element gather runs what the 16-byte gathers cannot (and only that).
  const bool tc_elem = !tc && elem_refusal<T>(a, &d) == 0;
  const std::uint32_t ready = ready_mask<T, Epi>(d.ordinal);
  std::uint32_t valid = 0;
  int i = 0;
  for_each_mma_config<T>([&](auto cfg) {
    using Cfg = typename decltype(cfg)::type;
    const int v = i++;
    bool runs = elem_gather_v<Cfg> ? tc_elem : tc;
    if constexpr (halo_v<Cfg>) {
      runs = runs && halo_fits<Cfg>(a);
    }
    if constexpr (tma_conv_v<Cfg>) {
      runs = runs && im2col_fits<T>(a);
    }
    if (runs && (ready >> v & 1u) != 0) {
      valid |= 1u << v;
    }
  });
  valid |= 1u << i; // the SIMT kernel
  return {valid, heuristic_choice<T>(a, d.sms, valid)};
}

/// What run() does with a problem: run it (no member set), or instead put the names of the
/// implicit-GEMM variants that can run it into `*list`, record `*record` measured at `seconds`
/// as its choice in the tuning database, put the tuner's choice into `*chosen`, or time every
/// variant (`tune`: the GEMM's variants where it runs as one) and put the fastest into
/// `*best` (recording it when a database file is set).
struct conv_action {
  std::vector<std::string>* list = nullptr;
  const std::string* record = nullptr;
  double seconds = 0.0;
  std::optional<std::string>* chosen = nullptr;
  std::pair<std::string, double>* best = nullptr;
  int repeats = 5;
};

/// Runs `a` with epilogue object `epi` on the variant `options.variant` names, else on the
/// tuner's choice (or performs `act`).
template <class T, class Epi>
void launch(const conv_args& a, const conv_key& key, const Epi& epi, const gemm_options& options,
            cudaStream_t stream, const conv_action* act) {
  const conv_set& set = conv_set_of<T, Epi>();
  const auto [valid, heuristic] = valid_variants<T, Epi>(a, options);
  if (act != nullptr) {
    std::vector<std::string> names;
    for (std::size_t v = 0; v < set.names.size(); ++v) {
      if ((valid >> v & 1u) != 0) {
        names.push_back(set.names[v]);
      }
    }
    if (act->list != nullptr) {
      *act->list = names;
    } else if (act->record != nullptr) {
      if (std::find(names.begin(), names.end(), *act->record) == names.end()) {
        throw error("cufuse::tuning::record_conv2d: variant '" + *act->record +
                    "' cannot run this convolution here");
      }
      record_conv(key, set, *act->record, act->seconds);
    } else if (act->chosen != nullptr) {
      *act->chosen = chosen_conv(key, set);
    } else if (act->best != nullptr) {
      const conv_call<Epi> call{&a, &epi};
      *act->best = {std::string(), 0.0};
      for (std::size_t v = 0; v < set.names.size(); ++v) {
        if ((valid >> v & 1u) == 0) {
          continue;
        }
        // 10 calls per sample: the host's launch path overlaps the queued kernels.
        const double t = gemm_detail::median_call_seconds(
            stream, act->repeats, 10, [&] { launch_variant<T, Epi>(int(v), &call, stream); });
        if (act->best->first.empty() || t < act->best->second) {
          *act->best = {set.names[v], t};
        }
      }
      if (!tuning::file().empty()) {
        record_conv(key, set, act->best->first, act->best->second);
      }
    }
    return;
  }
  const conv_call<Epi> call{&a, &epi};
  if (!options.variant.empty()) {
    for (std::size_t v = 0; v < set.names.size(); ++v) {
      if (set.names[v] == options.variant) {
        if ((valid >> v & 1u) == 0) {
          const device_facts d = facts_of_current_device();
          const std::string& n = options.variant;
          const bool is_elem = n.size() > 5 && n.compare(n.size() - 5, 5, "_elem") == 0;
          int code = is_elem ? elem_refusal<T>(a, &d) : mma_refusal<T>(a, options, &d);
          int i = 0;
          for_each_mma_config<T>([&](auto cfg) {
            using Cfg = typename decltype(cfg)::type;
            if constexpr (halo_v<Cfg>) {
              code = i == int(v) && code == 0 && !halo_fits<Cfg>(a) ? 6 : code;
            }
            if constexpr (tma_conv_v<Cfg>) {
              code = i == int(v) && code == 0 && !im2col_fits<T>(a) ? 7 : code;
            }
            ++i;
          });
          const std::string why =
              code != 0 ? refusal_text<T>(code)
              : is_elem && mma_refusal<T>(a, options, &d) == 0
                  ? std::string("the 16-byte gathers run it (the element gather runs only what "
                                "they cannot)")
                  : std::string("no code for this device");
          throw error("cufuse::conv2d: variant " + n + " cannot run this problem: " + why);
        }
        launch_variant<T, Epi>(int(v), &call, stream);
        return;
      }
    }
    throw error("cufuse::conv2d: '" + options.variant +
                "' is not a conv2d variant for this element type (cufuse::conv2d_variants lists "
                "those that can run a convolution)");
  }
  run_conv(key, set, valid, heuristic, &launch_variant<T, Epi>, &call, stream);
}

} // namespace cufuse::conv_detail
