/// \file 2-D convolution, forward, by implicit GEMM: NHWC activations X [n, h, w, c], KRSC filters
/// W [k, r, s, c], NPQK output Y [n, p, q, k]. As a GEMM, the rows are the N P Q output pixels,
/// the columns the K output channels, the reduction runs over R S C; the A tile is gathered from
/// X on the fly (no im2col buffer), zero outside the padded input.
///
///   cufuse::conv2d(X, Wt, Y, {.stride = {1, 1}, .padding = {1, 1}, .dilation = {1, 1}});
///   cufuse::conv2d(X, Wt, Y, params, cufuse::relu(cufuse::acc * bn_scale + bn_shift) + R);
///   auto [p, q] = cufuse::conv2d_output_size(h, w, r, s, params);
///
/// The epilogue is an expression over `cufuse::acc` (the fp32 sum at each output element) and
/// tensors / views that broadcast to Y's [n, p, q, k]: per-channel operands ([k]) and operands
/// of Y's whole shape (a residual) with rows of k that follow one another. It is applied in
/// registers before the one store.
///
/// What runs (docs/conv.md):
///  - a 1x1 filter with stride 1 and no padding over a dense X is a plain GEMM over [n h w, c]
///    x [k, c]^T: libcufuse's variants and tuner, tensor cores, the epilogue fused into its store;
///  - every other convolution: an implicit-GEMM kernel instantiated in the calling file for its
///    epilogue type: on tensor cores (conv/mma.cuh: fp16, bf16, and fp32 as TF32 when
///    `gemm_options::math` is tf32) where channels come in 16-byte chunks, else the SIMT kernel
///    (conv/simt.cuh: exact fp32 FMAs, any shape, stride, padding, dilation and alignment).
///    `conv2d_variants` lists them; `gemm_options::variant` picks one, else a heuristic does.
#pragma once

#include "conv/implicit_gemm.cuh"
#include "conv/mma.cuh"
#include "conv/simt.cuh"
#include "conv/tuning.hpp"
#include "gemm.cuh"
#include "memory/views.cuh"

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace cufuse {

/// Stride, padding and dilation, {along h, along w}. `padding` pads the top and left and, unless
/// `padding_end` says otherwise (-1: as `padding`), the bottom and right.
struct conv2d_params {
  std::array<index_t, 2> stride{1, 1};
  std::array<index_t, 2> padding{0, 0};
  std::array<index_t, 2> dilation{1, 1};
  std::array<index_t, 2> padding_end{-1, -1};
};

/// {p, q}: the output's height and width for an h x w input and an r x s filter (PyTorch's
/// floor((h + pads - dilation (r - 1) - 1) / stride) + 1). Zero or negative when the dilated
/// filter does not fit the padded input; conv2d then throws shape_error.
inline std::array<index_t, 2> conv2d_output_size(index_t h, index_t w, index_t r, index_t s,
                                                 const conv2d_params& prm) {
  auto one = [](index_t in, index_t f, index_t st, index_t p0, index_t p1, index_t d) {
    const index_t span = in + p0 + p1 - d * (f - 1) - 1;
    if (st <= 0) {
      return index_t(0);
    }
    return span < 0 ? index_t(0) - ((-span + st - 1) / st) + 1 : span / st + 1;
  };
  const index_t pb = prm.padding_end[0] < 0 ? prm.padding[0] : prm.padding_end[0];
  const index_t pr = prm.padding_end[1] < 0 ? prm.padding[1] : prm.padding_end[1];
  return {one(h, r, prm.stride[0], prm.padding[0], pb, prm.dilation[0]),
          one(w, s, prm.stride[1], prm.padding[1], pr, prm.dilation[1])};
}

namespace conv_detail {

/// A leaf of a conv epilogue (shaped against Y's [n, p, q, k]) as a leaf of the [n p q, k]
/// matrix the kernels write: broadcast over n, p and q ([k], [1, k], ...), or Y's whole shape
/// with rows of k that follow one another. Anything else throws shape_error naming the shapes.
template <class T, int R, class S>
detail::leaf<T, 2, S> flatten_leaf(const detail::leaf<T, R, S>& l, const extents<4>& y) {
  static_assert(R <= 4, "cufuse::conv2d: an epilogue's tensors have rank 0 to 4");
  index_t ext[4] = {1, 1, 1, 1}, st[4] = {0, 0, 0, 0};
  for (int d = 0; d < R; ++d) {
    ext[4 - R + d] = l.shp[d];
    st[4 - R + d] = l.shp[d] == 1 ? 0 : l.str[d];
  }
  bool ok = ext[3] == 1 || ext[3] == y[3];
  bool broadcast = true, full = true;
  for (int d = 0; d < 3; ++d) {
    broadcast = broadcast && (ext[d] == 1 || y[d] == 1);
    full = full && ext[d] == y[d];
  }
  index_t row = 0; // the stride from one output pixel to the next
  if (ok && !broadcast) {
    ok = full;
    if (ok) {
      row = y[2] > 1 ? st[2] : (y[1] > 1 ? st[1] : st[0]);
      ok = (y[2] <= 1 || st[2] == row) && (y[1] <= 1 || st[1] == y[2] * row) &&
           (y[0] <= 1 || st[0] == y[1] * y[2] * row);
    }
  }
  if (!ok) {
    throw shape_error("cufuse::conv2d: an epilogue operand of shape " + l.shp.to_string() +
                      " with strides " + l.str.to_string() + " neither broadcasts over Y's " +
                      y.to_string() +
                      " first three dimensions (as [k] does) nor covers them with rows of k "
                      "that follow one another (per-image or per-row operands are not supported)");
  }
  const index_t rows_ext = broadcast ? 1 : y[0] * y[1] * y[2];
  return detail::leaf<T, 2, S>{l.ptr, extents<2>{rows_ext, ext[3]},
                               strides<2>{rows_ext == 1 ? 0 : row, ext[3] == 1 ? 0 : st[3]}};
}

/// The epilogue expression with every leaf flattened (flatten_leaf).
template <class N>
auto flatten_epilogue(const N& n, const extents<4>& y) {
  if constexpr (detail::is_leaf_node_v<N>) {
    return flatten_leaf(n, y);
  } else if constexpr (detail::map_arity<N>::value > 0) {
    return [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      using flat = detail::map_node<typename N::op_type,
                                    decltype(flatten_epilogue(detail::get<Is>(n.args), y))...>;
      return flat{n.op, detail::make_pack(flatten_epilogue(detail::get<Is>(n.args), y)...)};
    }(std::make_index_sequence<detail::map_arity<N>::value>{});
  } else {
    return n;
  }
}

/// Checked shapes and the views of one conv2d call.
template <class XV, class WV, class YV>
struct problem {
  XV x;
  WV w;
  YV y;
  index_t p, q, ldy;
  index_t pb, pr; // bottom and right padding
};

inline std::string describe(const extents<4>& x, const extents<4>& w, const extents<4>& y,
                            const conv2d_params& prm) {
  auto pair = [](const std::array<index_t, 2>& v) {
    return "{" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "}";
  };
  const index_t pb = prm.padding_end[0] < 0 ? prm.padding[0] : prm.padding_end[0];
  const index_t pr = prm.padding_end[1] < 0 ? prm.padding[1] : prm.padding_end[1];
  return "cufuse::conv2d: X " + x.to_string() + " (NHWC), W " + w.to_string() + " (KRSC), Y " +
         y.to_string() + " (NPQK), stride " + pair(prm.stride) + ", padding {top " +
         std::to_string(prm.padding[0]) + ", left " + std::to_string(prm.padding[1]) + ", bottom " +
         std::to_string(pb) + ", right " + std::to_string(pr) + "}, dilation " +
         pair(prm.dilation) + ": ";
}

template <class X, class W, class Y>
auto check(X&& xt, W&& wt, Y&& yt, const conv2d_params& prm) {
  auto xv = detail::view_of(std::forward<X>(xt));
  auto wv = detail::view_of(std::forward<W>(wt));
  auto yv = detail::view_of(std::forward<Y>(yt));
  using XV = decltype(xv);
  using WV = decltype(wv);
  using YV = decltype(yv);
  static_assert(XV::rank == 4 && WV::rank == 4 && YV::rank == 4,
                "cufuse::conv2d: X, W and Y are rank-4 tensors or views: X [n, h, w, c] (NHWC), "
                "W [k, r, s, c] (KRSC), Y [n, p, q, k] (NPQK)");
  using T = std::remove_const_t<typename XV::element_type>;
  using TW = std::remove_const_t<typename WV::element_type>;
  using TY = typename YV::element_type;
  static_assert(std::is_same_v<T, TW>, "cufuse::conv2d: X and W must have the same element type");
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, __half> ||
                    std::is_same_v<T, __nv_bfloat16>,
                "cufuse::conv2d: X and W are float, __half or __nv_bfloat16");
  static_assert(std::is_same_v<TY, T> || std::is_same_v<TY, float>,
                "cufuse::conv2d: Y is of X's element type or float (and not const)");
  static_assert(!std::is_same_v<typename XV::space, host_space> &&
                    !std::is_same_v<typename WV::space, host_space> &&
                    !std::is_same_v<typename YV::space, host_space>,
                "cufuse::conv2d: X, W and Y must be device tensors or views");
  const extents<4> xs = xv.shape(), ws = wv.shape(), ys = yv.shape();
  // The message is built on the error path only: a valid call formats no strings.
  auto fail = [&](const std::string& why) { throw shape_error(describe(xs, ws, ys, prm) + why); };
  for (int i = 0; i < 2; ++i) {
    if (prm.stride[i] < 1 || prm.dilation[i] < 1) {
      fail("stride and dilation must be >= 1");
    }
    if (prm.padding[i] < 0 || prm.padding_end[i] < -1) {
      fail("padding must be >= 0");
    }
  }
  if (xs[3] != ws[3]) {
    fail("X has " + std::to_string(xs[3]) + " channels, W " + std::to_string(ws[3]));
  }
  if (ws[1] < 1 || ws[2] < 1) {
    fail("the filter must be at least 1 x 1");
  }
  const auto [p, q] = conv2d_output_size(xs[1], xs[2], ws[1], ws[2], prm);
  if (p <= 0 || q <= 0) {
    fail("the output would be " + std::to_string(p) + " x " + std::to_string(q));
  }
  const extents<4> want{xs[0], p, q, ws[0]};
  if (!(ys == want)) {
    fail("Y must be " + want.to_string());
  }
  // Y is written as [n p q, k] rows: unit stride along k, rows that follow one another.
  const auto yst = yv.strides();
  const index_t ldy = q > 1 ? yst[2] : (p > 1 ? yst[1] : (ys[0] > 1 ? yst[0] : ys[3]));
  const bool y_rows = (ys[3] <= 1 || yst[3] == 1) && (q <= 1 || yst[2] == ldy) &&
                      (p <= 1 || yst[1] == q * ldy) && (ys[0] <= 1 || yst[0] == p * q * ldy) &&
                      ldy >= ys[3];
  if (!y_rows) {
    fail("Y's strides " + yst.to_string() +
         " are not NPQK rows of k (unit stride along k, pixels that follow one another)");
  }
  // The inputs must not share memory with the output (they are read while it is written).
  auto span = [](const auto& v) { return gemm_detail::span_of_leaf(v.node()); };
  const auto sy = span(yv), sx = span(xv), sw = span(wv);
  if (gemm_detail::overlaps(sx.first, sx.second, sy.first, sy.second) ||
      gemm_detail::overlaps(sw.first, sw.second, sy.first, sy.second)) {
    throw error(describe(xs, ws, ys, prm) + "X or W shares memory with Y");
  }
  const index_t pb = prm.padding_end[0] < 0 ? prm.padding[0] : prm.padding_end[0];
  const index_t pr = prm.padding_end[1] < 0 ? prm.padding[1] : prm.padding_end[1];
  return problem<XV, WV, YV>{xv, wv, yv, p, q, ldy, pb, pr};
}

/// The 1x1 convolution that is a plain GEMM: stride 1, no padding, X's pixels one row apart.
template <class P>
bool is_gemm(const P& pr, const conv2d_params& prm) {
  const extents<4> xs = pr.x.shape(), ws = pr.w.shape();
  const auto xst = pr.x.strides();
  const auto wst = pr.w.strides();
  if (ws[1] != 1 || ws[2] != 1 || prm.stride[0] != 1 || prm.stride[1] != 1 || prm.padding[0] != 0 ||
      prm.padding[1] != 0 || pr.pb != 0 || pr.pr != 0) {
    return false;
  }
  const index_t ldx = xs[2] > 1 ? xst[2] : (xs[1] > 1 ? xst[1] : (xs[0] > 1 ? xst[0] : xs[3]));
  return (xs[3] <= 1 || xst[3] == 1) && (xs[2] <= 1 || xst[2] == ldx) &&
         (xs[1] <= 1 || xst[1] == xs[2] * ldx) && (xs[0] <= 1 || xst[0] == xs[1] * xs[2] * ldx) &&
         (ws[3] <= 1 || wst[3] == 1);
}

/// The kernel's arguments for a checked problem.
template <class P>
conv_args args_of(const P& pr, const conv2d_params& prm) {
  const extents<4> xs = pr.x.shape(), ws = pr.w.shape();
  const auto xst = pr.x.strides();
  const auto wst = pr.w.strides();
  conv_args a{};
  a.x = pr.x.data();
  a.w = pr.w.data();
  a.y = pr.y.data();
  a.n = xs[0];
  a.h = xs[1];
  a.wd = xs[2];
  a.c = xs[3];
  a.k = ws[0];
  a.r = ws[1];
  a.s = ws[2];
  a.p = pr.p;
  a.q = pr.q;
  for (int d = 0; d < 4; ++d) {
    a.xs[d] = xst[d];
    a.ws[d] = wst[d];
  }
  a.ldy = pr.ldy;
  a.sh = prm.stride[0];
  a.sw = prm.stride[1];
  a.ph = prm.padding[0];
  a.pw = prm.padding[1];
  a.dh = prm.dilation[0];
  a.dw = prm.dilation[1];
  using TY = std::remove_const_t<typename decltype(pr.y)::element_type>;
  a.out_type = int(gemm_detail::dtype_of<TY>());
  return a;
}

/// Per-device facts the variant choice needs, read once per device.
struct device_facts {
  int sms = 0, major = 0;
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
  return {static_cast<int>(v >> 8), static_cast<int>(v & 0xff)};
}

/// The SIMT variant's name (any shape, layout and alignment; exact fp32 arithmetic).
inline constexpr const char* simt_name = "conv_simt_64x64x16";

/// A tensor-core variant's name: element type (tf32 for fp32 inputs), tile, stages.
template <class Cfg>
std::string mma_name() {
  using T = typename Cfg::element;
  const char* t = std::is_same_v<T, float> ? "tf32" : (std::is_same_v<T, __half> ? "f16" : "bf16");
  return std::string("conv_mma_") + t + "_" + std::to_string(Cfg::BM) + "x" +
         std::to_string(Cfg::BN) + "x" + std::to_string(Cfg::BK) + "_s" +
         std::to_string(Cfg::stages) +
         (Cfg::splits > 1 ? "_k" + std::to_string(Cfg::splits) : std::string());
}

/// Calls f(std::type_identity<Cfg>{}) for each tensor-core configuration of element type T,
/// in the heuristic's order of preference (valid_variants): larger tiles first, split-K last.
/// (No 128 x 128 tile with 64-element steps: it spills. bench/JOURNAL.md c2, c3: what each
/// wins.)
template <class T, class F>
void for_each_mma_config(F&& f) {
  if constexpr (std::is_same_v<T, float>) { // TF32: 128 fp32 accumulators of a 128 x 128 warp
    f(std::type_identity<mma_conv_config<float, 128, 64, 32, 4>>{}); // tile would spill
    f(std::type_identity<mma_conv_config<float, 64, 64, 32, 4>>{});
    f(std::type_identity<mma_conv_config<float, 64, 64, 32, 4, 4>>{});
  } else {
    f(std::type_identity<mma_conv_config<T, 128, 128, 32, 5>>{});
    f(std::type_identity<mma_conv_config<T, 128, 64, 32, 5>>{});
    f(std::type_identity<mma_conv_config<T, 128, 64, 64, 4>>{});
    f(std::type_identity<mma_conv_config<T, 64, 64, 64, 4>>{});
    f(std::type_identity<mma_conv_config<T, 64, 64, 32, 4>>{});
    f(std::type_identity<mma_conv_config<T, 64, 64, 64, 4, 4>>{});
  }
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
  const index_t span = (a.n - 1) * a.xs[0] + (a.h - 1) * a.xs[1] + (a.wd - 1) * a.xs[2] + a.c;
  const index_t pad = a.ph * a.xs[1] + a.pw * a.xs[2];
  if (span + pad >= INT_MAX || a.n * a.p * a.q >= INT_MAX - 256 || a.r * a.s * a.c >= INT_MAX ||
      a.k >= INT_MAX || (a.r * a.dh + a.h) >= INT_MAX / 2 || (a.s * a.dw + a.wd) >= INT_MAX / 2) {
    return 5;
  }
  return 0;
}

template <class T>
std::string refusal_text(int code) {
  const std::string e = std::to_string(16 / sizeof(T));
  switch (code) {
  case 1:
    return "fp32 inputs run on tensor cores only with gemm_options::math = tf32";
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
  default:
    return "no code for this device";
  }
}

/// Whether the kernel of configuration Cfg for epilogue Epi has code for the current device;
/// sets its shared-memory limit there (once per device).
template <class Cfg, class Epi>
bool mma_ready() {
  static std::atomic<int> state[64]; // 0: unknown, 1: ready, 2: no code for the device
  int dev = 0;
  CUFUSE_CUDA_CHECK_MSG(cudaGetDevice(&dev), "cufuse::conv2d: reading the current device");
  std::atomic<int>& st = state[dev & 63];
  int v = st.load(std::memory_order_acquire);
  if (v == 0) {
    const void* k = reinterpret_cast<const void*>(&conv2d_mma_kernel<Cfg, Epi>);
    cudaFuncAttributes attr{};
    const cudaError_t e = cudaFuncGetAttributes(&attr, k);
    if (e == cudaErrorInvalidDeviceFunction || e == cudaErrorNoKernelImageForDevice) {
      (void)cudaGetLastError();
      v = 2;
    } else {
      CUFUSE_CUDA_CHECK_MSG(e, "cufuse::conv2d: reading the attributes of " + mma_name<Cfg>());
      v = attr.binaryVersion >= 80 ? 1 : 2;
      if (v == 1) {
        CUFUSE_CUDA_CHECK_MSG(
            cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::smem_bytes),
            "cufuse::conv2d: setting the shared memory of " + mma_name<Cfg>());
      }
    }
    st.store(v, std::memory_order_release);
  }
  return v == 1;
}

/// Output tiles of configuration Cfg over `a`'s [n p q, k] output.
template <class Cfg>
index_t tiles_of(const conv_args& a) {
  return ((a.n * a.p * a.q + Cfg::BM - 1) / Cfg::BM) * ((a.k + Cfg::BN - 1) / Cfg::BN);
}

template <class Cfg, class Epi>
void launch_mma(const conv_args& a, const Epi& epi, cudaStream_t stream) {
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

/// The variants of conv_set_of<T, Epi>() that can run `a` here (bit v for names[v]), and the
/// heuristic's choice among them: the first unsplit tensor-core tile (largest first) whose
/// blocks fill the GPU's block slots in whole waves to at least 75%; where none does, the
/// 64 x 64 tile, or split-K when even that leaves more than half the SMs idle; the SIMT kernel
/// where no tensor-core variant can run. (Measured on ResNet's layers, bench/JOURNAL.md c3: it
/// picks the fastest variant on 5 of 6.)
template <class T, class Epi>
std::pair<std::uint32_t, int> valid_variants(const conv_args& a, const gemm_options& options) {
  const device_facts d = facts_of_current_device();
  const bool tc = mma_refusal<T>(a, options, &d) == 0;
  std::uint32_t valid = 0;
  int heuristic = -1, fallback = -1, split = -1, i = 0;
  index_t small_tiles = 0;
  for_each_mma_config<T>([&](auto cfg) {
    using Cfg = typename decltype(cfg)::type;
    const int v = i++;
    if (!tc || !mma_ready<Cfg, Epi>()) {
      return;
    }
    valid |= 1u << v;
    if constexpr (Cfg::splits > 1) {
      split = split < 0 ? v : split;
    } else {
      const index_t tiles = tiles_of<Cfg>(a);
      const double waves = double(tiles) / double(index_t(d.sms) * blocks_per_sm<Cfg>());
      const double fill = waves / std::ceil(waves);
      if (heuristic < 0 && (Cfg::BN <= 64 || a.k > 64) && waves >= 0.75 && fill >= 0.75) {
        heuristic = v;
      }
      if (Cfg::BM == 64 && Cfg::BN == 64 && fallback < 0) {
        fallback = v;
        small_tiles = tiles;
      }
    }
  });
  valid |= 1u << i; // the SIMT kernel
  if (heuristic < 0) {
    heuristic = split >= 0 && 2 * small_tiles < d.sms ? split : fallback;
  }
  return {valid, heuristic < 0 ? i : heuristic};
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
          throw error("cufuse::conv2d: variant " + options.variant + " cannot run this problem: " +
                      refusal_text<T>(mma_refusal<T>(a, options, &d)));
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

/// The tuner's key of a checked problem.
template <class P>
conv_key key_of(const P& pr, const conv_args& a, const gemm_options& options) {
  using T = std::remove_const_t<typename decltype(pr.x)::element_type>;
  using TY = std::remove_const_t<typename decltype(pr.y)::element_type>;
  conv_key k;
  k.in = std::uint8_t(gemm_detail::dtype_of<T>());
  k.out = std::uint8_t(gemm_detail::dtype_of<TY>());
  k.tf32 = std::is_same_v<T, float> && options.math == gemm_math::tf32 ? 1 : 0;
  gemm_options tc = options;
  tc.math = gemm_math::tf32;
  k.chunked = mma_refusal<T>(a, tc, nullptr) == 0 ? 1 : 0;
  k.n = a.n;
  k.h = a.h;
  k.w = a.wd;
  k.c = a.c;
  k.k = a.k;
  k.r = a.r;
  k.s = a.s;
  k.sh = a.sh;
  k.sw = a.sw;
  k.pt = a.ph;
  k.pl = a.pw;
  k.pb = pr.pb;
  k.pr = pr.pr;
  k.dh = a.dh;
  k.dw = a.dw;
  k.p = a.p;
  k.q = a.q;
  return k;
}

template <class X, class W, class Y, class E>
void run(X&& xt, W&& wt, Y&& yt, const conv2d_params& prm, const E* epilogue,
         const gemm_options& options, cudaStream_t stream, const conv_action* act = nullptr) {
  if constexpr (!std::is_same_v<E, void>) {
    using N = detail::node_t<E>;
    static_assert(detail::epilogue_node_v<N>,
                  "cufuse::conv2d: an epilogue holds cufuse::acc, tensors / views, scalars and "
                  "elementwise operations (no reductions)");
    static_assert(detail::mentions_acc_v<N>, "cufuse::conv2d: the epilogue does not use "
                                             "cufuse::acc (the convolution's sum); write e.g. "
                                             "cufuse::conv2d(X, W, Y, params, cufuse::acc + bias)");
  }
  const auto pr = check(std::forward<X>(xt), std::forward<W>(wt), std::forward<Y>(yt), prm);
  using T = std::remove_const_t<typename decltype(pr.x)::element_type>;
  using TY = typename decltype(pr.y)::element_type;
  const extents<4> xs = pr.x.shape(), ws = pr.w.shape(), ys = pr.y.shape();
  const index_t rows = ys[0] * ys[1] * ys[2];
  const bool empty = rows == 0 || ys[3] == 0;
  if (empty && act == nullptr) {
    return;
  }
  using YE = typename decltype(pr.y)::element_type;
  using YM = tensor_view<YE, 2, device_space>;
  const YM ym(pr.y.data(), extents<2>{rows, ys[3]}, strides<2>{pr.ldy, 1}, typename YM::trusted{});
  // A conv2d variant named in the options runs the implicit GEMM even where a GEMM could; so do
  // the variant queries (conv2d_variants, record_conv2d, chosen_conv2d).
  const bool conv_variant = options.variant.rfind("conv_", 0) == 0;
  const bool implicit_only = act != nullptr && act->best == nullptr;
  if (!conv_variant && !implicit_only && !empty && is_gemm(pr, prm)) {
    const auto xst = pr.x.strides();
    const index_t ldx = xs[2] > 1 ? xst[2] : (xs[1] > 1 ? xst[1] : (xs[0] > 1 ? xst[0] : xs[3]));
    using XE = typename decltype(pr.x)::element_type;
    using WE = typename decltype(pr.w)::element_type;
    using XM = tensor_view<XE, 2, device_space>;
    using WM = tensor_view<WE, 2, device_space>;
    const XM xm(pr.x.data(), extents<2>{xs[0] * xs[1] * xs[2], xs[3]}, strides<2>{ldx, 1},
                typename XM::trusted{});
    const WM wm(pr.w.data(), extents<2>{ws[0], ws[3]}, strides<2>{pr.w.strides()[0], 1},
                typename WM::trusted{});
    if (act != nullptr) { // tune: the GEMM this convolution runs as
      if constexpr (std::is_same_v<E, void>) {
        const gemm_problem gp = tuning::problem(xm, transpose(wm), ym, 1.0f, 0.0f, options);
        *act->best = {std::string(), 0.0};
        for (const std::string& name : tuning::variants(gp, options)) {
          const double t = tuning::time(gp, name, stream, act->repeats, options);
          if (act->best->first.empty() || t < act->best->second) {
            *act->best = {name, t};
          }
        }
        if (act->best->first.empty()) {
          throw error("cufuse::tuning::tune_conv2d: no GEMM variant can run this 1x1 convolution");
        }
        if (!tuning::file().empty()) {
          tuning::record(gp, act->best->first, act->best->second, options);
        }
      } else {
        const auto c = tuning::tune_epilogue(xm, transpose(wm), ym,
                                             flatten_epilogue(detail::to_node(*epilogue), ys),
                                             options, act->repeats, false, stream);
        *act->best = {c.variant, c.seconds};
      }
      return;
    }
    if constexpr (std::is_same_v<E, void>) {
      gemm(xm, transpose(wm), ym, 1.0f, 0.0f, stream, options);
    } else {
      gemm(xm, transpose(wm), ym, flatten_epilogue(detail::to_node(*epilogue), ys), options,
           stream);
    }
    return;
  }
  const conv_args a = args_of(pr, prm);
  const conv_key key = key_of(pr, a, options);
  if (empty && act->best != nullptr) {
    throw error("cufuse::tuning::tune_conv2d: the output is empty");
  }
  if constexpr (std::is_same_v<E, void>) {
    launch<T>(a, key, gemm_detail::linear_combination{}, options, stream, act);
  } else {
    const auto flat = flatten_epilogue(detail::to_node(*epilogue), ys);
    // Operands that share memory with Y must read exactly the element being written.
    const auto yl = ym.node();
    auto check_alias = [&](const auto& leaf) {
      const auto ls = gemm_detail::span_of_leaf(leaf);
      const auto os = gemm_detail::span_of_leaf(yl);
      if (!gemm_detail::overlaps(ls.first, ls.second, os.first, os.second)) {
        return;
      }
      const bool same = static_cast<const void*>(leaf.ptr) == static_cast<const void*>(yl.ptr) &&
                        sizeof(*leaf.ptr) == sizeof(TY) && leaf.shp == yl.shp && leaf.str == yl.str;
      if (!same) {
        throw error("cufuse::conv2d: an epilogue operand of shape " + leaf.shp.to_string() +
                    " shares memory with Y at other elements; copy it first");
      }
    };
    detail::for_each_leaf(flat, check_alias);
    const auto bound = detail::bind_epilogue(flat, extents<3>{1, rows, ys[3]}, 2);
    using Epi = detail::expression_epilogue<std::remove_cvref_t<decltype(bound)>, detail::pack<>,
                                            detail::pack<>>;
    launch<T>(a, key, Epi{bound, {}, {}}, options, stream, act);
  }
}

} // namespace conv_detail

/// Y = conv2d(X, W): X [n, h, w, c] (NHWC), W [k, r, s, c] (KRSC), Y [n, p, q, k] (NPQK), fp32
/// accumulation, Y of X's type or float. `options` applies where the call runs as a GEMM (1x1).
template <class X, class W, class Y>
void conv2d(X&& x, W&& w, Y&& y, const conv2d_params& params = {}, const gemm_options& options = {},
            cudaStream_t stream = current_stream()) {
  conv_detail::run<X, W, Y, void>(std::forward<X>(x), std::forward<W>(w), std::forward<Y>(y),
                                  params, nullptr, options, stream);
}

/// Y = epilogue(conv2d(X, W)), the epilogue an expression over `cufuse::acc` (see the file's
/// comment), applied before the one store.
template <class X, class W, class Y, class E>
  requires(!std::is_same_v<std::remove_cvref_t<E>, gemm_options>)
void conv2d(X&& x, W&& w, Y&& y, const conv2d_params& params, const E& epilogue,
            const gemm_options& options = {}, cudaStream_t stream = current_stream()) {
  conv_detail::run<X, W, Y, E>(std::forward<X>(x), std::forward<W>(w), std::forward<Y>(y), params,
                               &epilogue, options, stream);
}

/// The implicit-GEMM variants that can run this convolution here, by name (for
/// `gemm_options::variant`, which then runs that variant even where a 1x1 convolution would run
/// as a GEMM): tensor-core tiles (fp16 / bf16, and TF32 for fp32 inputs when `options.math` is
/// tf32) where the layout allows them, and the SIMT kernel, which runs everything.
template <class X, class W, class Y>
std::vector<std::string> conv2d_variants(X&& x, W&& w, Y&& y, const conv2d_params& params = {},
                                         const gemm_options& options = {}) {
  std::vector<std::string> names;
  conv_detail::conv_action act;
  act.list = &names;
  conv_detail::run<X, W, Y, void>(std::forward<X>(x), std::forward<W>(w), std::forward<Y>(y),
                                  params, nullptr, options, current_stream(), &act);
  return names;
}

namespace tuning {

/// The fastest variant for one convolution, and its seconds per call.
struct conv2d_choice {
  std::string variant;
  double seconds = 0.0;
};

/// Times every variant that can run conv2d(x, w, y, params[, epilogue]) on `stream` (after one
/// untimed run each: `repeats` samples of 10 back-to-back calls between CUDA events, the median
/// per call) and returns the fastest; with a tuning database file set (tuning::set_file or
/// CUFUSE_TUNE_FILE), also records it there for save() to write, under the key conv2d looks up
/// (modes online and frozen). A 1x1 convolution that runs as a GEMM tunes that GEMM's key.
/// What `cufuse-tune --conv` does. Y is overwritten many times.
template <class X, class W, class Y>
conv2d_choice tune_conv2d(X&& x, W&& w, Y&& y, const conv2d_params& params = {},
                          const gemm_options& options = {}, int repeats = 5,
                          cudaStream_t stream = current_stream()) {
  if (repeats < 1) {
    throw error("cufuse::tuning::tune_conv2d: repeats must be >= 1, got " +
                std::to_string(repeats));
  }
  std::pair<std::string, double> best;
  conv_detail::conv_action act;
  act.best = &best;
  act.repeats = repeats;
  conv_detail::run<X, W, Y, void>(std::forward<X>(x), std::forward<W>(w), std::forward<Y>(y),
                                  params, nullptr, options, stream, &act);
  return {best.first, best.second};
}

/// tune_conv2d for a convolution with a fused epilogue (its own key: the epilogue's type).
template <class X, class W, class Y, class E>
  requires(!std::is_same_v<std::remove_cvref_t<E>, gemm_options>)
conv2d_choice tune_conv2d(X&& x, W&& w, Y&& y, const conv2d_params& params, const E& epilogue,
                          const gemm_options& options = {}, int repeats = 5,
                          cudaStream_t stream = current_stream()) {
  if (repeats < 1) {
    throw error("cufuse::tuning::tune_conv2d: repeats must be >= 1, got " +
                std::to_string(repeats));
  }
  std::pair<std::string, double> best;
  conv_detail::conv_action act;
  act.best = &best;
  act.repeats = repeats;
  conv_detail::run<X, W, Y, E>(std::forward<X>(x), std::forward<W>(w), std::forward<Y>(y), params,
                               &epilogue, options, stream, &act);
  return {best.first, best.second};
}

/// The implicit-GEMM variant the tuner has settled on for this convolution (standard
/// epilogue), if it has: in this process, else the database's exact entry.
template <class X, class W, class Y>
std::optional<std::string> chosen_conv2d(X&& x, W&& w, Y&& y, const conv2d_params& params = {},
                                         const gemm_options& options = {}) {
  std::optional<std::string> chosen;
  conv_detail::conv_action act;
  act.chosen = &chosen;
  conv_detail::run<X, W, Y, void>(std::forward<X>(x), std::forward<W>(w), std::forward<Y>(y),
                                  params, nullptr, options, current_stream(), &act);
  return chosen;
}

/// chosen_conv2d for a convolution with a fused epilogue.
template <class X, class W, class Y, class E>
  requires(!std::is_same_v<std::remove_cvref_t<E>, gemm_options>)
std::optional<std::string> chosen_conv2d(X&& x, W&& w, Y&& y, const conv2d_params& params,
                                         const E& epilogue, const gemm_options& options = {}) {
  std::optional<std::string> chosen;
  conv_detail::conv_action act;
  act.chosen = &chosen;
  conv_detail::run<X, W, Y, E>(std::forward<X>(x), std::forward<W>(w), std::forward<Y>(y), params,
                               &epilogue, options, current_stream(), &act);
  return chosen;
}

/// Stores a measured choice of implicit-GEMM variant for this convolution (standard epilogue)
/// in the tuning database; save() persists it. Throws if the variant cannot run it here or
/// there is no database file.
template <class X, class W, class Y>
void record_conv2d(X&& x, W&& w, Y&& y, const conv2d_params& params, const std::string& variant,
                   double seconds, const gemm_options& options = {}) {
  conv_detail::conv_action act;
  act.record = &variant;
  act.seconds = seconds;
  conv_detail::run<X, W, Y, void>(std::forward<X>(x), std::forward<W>(w), std::forward<Y>(y),
                                  params, nullptr, options, current_stream(), &act);
}

} // namespace tuning

} // namespace cufuse
