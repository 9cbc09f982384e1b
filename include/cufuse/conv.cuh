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
///  - every other convolution: a SIMT implicit-GEMM kernel (exact fp32 FMAs, any shape, stride,
///    padding, dilation and alignment), instantiated in the calling file for its epilogue type.
///    Tensor-core implicit-GEMM variants and their tuning are not built yet.
#pragma once

#include "gemm.cuh"
#include "memory/views.cuh"

#include <array>
#include <string>
#include <type_traits>

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

/// What the implicit-GEMM kernel receives. X and W are read through element strides (any
/// layout, any alignment); Y is written as [n p q, k] rows `ldy` elements apart.
struct conv_args {
  const void* x;
  const void* w;
  void* y;
  index_t n, h, wd, c, k, r, s, p, q;
  index_t xs[4], ws[4]; // strides of X (n, h, w, c) and W (k, r, s, c), in elements
  index_t ldy;
  index_t sh, sw, ph, pw, dh, dw;
  int out_type; // gemm_detail::dtype of Y
};

/// The implicit GEMM's index map (host and device, so that the host tests check it): output
/// pixel m = (img p + i) q + j reads its window from X's image `xbase` at input rows / columns
/// from (h0, w0) (negative: the padding); reduction index kg is the filter tap (fr, fs, ch), ch
/// fastest, as W's KRSC rows are laid out.
struct pixel_origin {
  index_t xbase, h0, w0;
};
struct filter_tap {
  index_t fr, fs, ch;
};
CUFUSE_HOST_DEVICE inline pixel_origin origin_of(const conv_args& a, index_t m) {
  const index_t pq = a.p * a.q;
  const index_t img = m / pq, rem = m - img * pq;
  const index_t op = rem / a.q, oq = rem - op * a.q;
  return {img * a.xs[0], op * a.sh - a.ph, oq * a.sw - a.pw};
}
CUFUSE_HOST_DEVICE inline filter_tap tap_of(const conv_args& a, index_t kg) {
  const index_t ch = kg % a.c, rs = kg / a.c;
  return {rs / a.s, rs % a.s, ch};
}
/// X's element for pixel origin `o` and tap `t`, or -1 where it lies in the padding.
CUFUSE_HOST_DEVICE inline index_t x_offset(const conv_args& a, const pixel_origin& o,
                                           const filter_tap& t) {
  const index_t hh = o.h0 + t.fr * a.dh, ww = o.w0 + t.fs * a.dw;
  if (hh < 0 || hh >= a.h || ww < 0 || ww >= a.wd) {
    return -1;
  }
  return o.xbase + hh * a.xs[1] + ww * a.xs[2] + t.ch * a.xs[3];
}
/// W's element for output channel oc and tap `t`.
CUFUSE_HOST_DEVICE inline index_t w_offset(const conv_args& a, index_t oc, const filter_tap& t) {
  return oc * a.ws[0] + t.fr * a.ws[1] + t.fs * a.ws[2] + t.ch * a.ws[3];
}

/// The shared tile of one reduction step: 16 reduction elements x 64 pixels (A) and x 64
/// channels (B), rows padded to 68 floats (16-byte aligned rows for the float4 reads).
struct conv_tile {
  static constexpr int BM = 64, BN = 64, BK = 16;
  alignas(16) float a[BK][BM + 4];
  alignas(16) float b[BK][BN + 4];
};

/// One thread of the SIMT implicit-GEMM kernel, in the phases between its barriers (host and
/// device code, so that the host tests can run a block's threads phase by phase). Block
/// (bx, by) computes output pixels 64 bx .. and channels 64 by ..; thread `tid` gathers
/// reduction column tid % 16 of tile rows tid / 16 + 16 i, and computes the 4 x 4 outputs at
/// pixels 4 (tid / 16) .. and channels 4 (tid % 16) ...
template <class T>
struct conv_thread {
  static constexpr int BM = conv_tile::BM, BN = conv_tile::BN, BK = conv_tile::BK;
  int tid;
  index_t m0, n0;
  pixel_origin org[4]; // the input windows of this thread's gathered pixels
  bool row_ok[4];
  float acc[4][4];

  CUFUSE_INLINE conv_thread(const conv_args& a, index_t bx, index_t by, int t)
      : tid(t), m0(bx * BM), n0(by * BN) {
    const index_t rows = a.n * a.p * a.q;
    CUFUSE_UNROLL
    for (int i = 0; i < 4; ++i) {
      const index_t m = m0 + t / BK + 16 * i;
      row_ok[i] = m < rows;
      org[i] = origin_of(a, row_ok[i] ? m : 0);
      CUFUSE_UNROLL
      for (int j = 0; j < 4; ++j) {
        acc[i][j] = 0.0f;
      }
    }
  }

  /// This thread's share of the tile of reduction elements k0 .. k0 + 15 (zero outside X, its
  /// padding, the pixels and the channels).
  CUFUSE_INLINE void gather(const conv_args& a, index_t k0, conv_tile& tile) const {
    const T* x = static_cast<const T*>(a.x);
    const T* w = static_cast<const T*>(a.w);
    const int kk = tid % BK;
    const index_t kg = k0 + kk;
    const bool col_ok = kg < a.r * a.s * a.c;
    const filter_tap t = tap_of(a, col_ok ? kg : 0);
    CUFUSE_UNROLL
    for (int i = 0; i < 4; ++i) {
      const index_t off = col_ok && row_ok[i] ? x_offset(a, org[i], t) : -1;
      tile.a[kk][tid / BK + 16 * i] = off >= 0 ? detail::convert<float>(x[off]) : 0.0f;
    }
    CUFUSE_UNROLL
    for (int i = 0; i < 4; ++i) {
      const index_t oc = n0 + tid / BK + 16 * i;
      tile.b[kk][tid / BK + 16 * i] =
          col_ok && oc < a.k ? detail::convert<float>(w[w_offset(a, oc, t)]) : 0.0f;
    }
  }

  /// The tile's products into this thread's 4 x 4 accumulators.
  CUFUSE_INLINE void compute(const conv_tile& tile) {
    const int tx = tid % 16, ty = tid / 16;
    CUFUSE_UNROLL
    for (int j = 0; j < BK; ++j) {
      const float4 av = *reinterpret_cast<const float4*>(&tile.a[j][ty * 4]);
      const float4 bv = *reinterpret_cast<const float4*>(&tile.b[j][tx * 4]);
      const float ar[4] = {av.x, av.y, av.z, av.w}, br[4] = {bv.x, bv.y, bv.z, bv.w};
      CUFUSE_UNROLL
      for (int i = 0; i < 4; ++i) {
        CUFUSE_UNROLL
        for (int jj = 0; jj < 4; ++jj) {
          acc[i][jj] = fmaf(ar[i], br[jj], acc[i][jj]);
        }
      }
    }
  }

  /// Calls f(pixel, channel, sum) for each of this thread's outputs inside Y (the kernel with a
  /// device lambda, the host tests with a host one).
#pragma nv_exec_check_disable
  template <class F>
  CUFUSE_INLINE void outputs(const conv_args& a, F&& f) const {
    const int tx = tid % 16, ty = tid / 16;
    const index_t rows = a.n * a.p * a.q;
    CUFUSE_UNROLL
    for (int i = 0; i < 4; ++i) {
      const index_t m = m0 + ty * 4 + i;
      CUFUSE_UNROLL
      for (int jj = 0; jj < 4; ++jj) {
        const index_t oc = n0 + tx * 4 + jj;
        if (m < rows && oc < a.k) {
          f(m, oc, acc[i][jj]);
        }
      }
    }
  }
};

/// Y = epilogue(X * W): 64 output pixels x 64 output channels per block of 256 threads, each
/// thread 4 x 4 outputs in fp32; 16 reduction elements (r, s, c) per step, gathered into shared
/// memory with zero fill outside the padded input. The reduction index runs fastest over c, so
/// neighbouring threads read neighbouring channels (NHWC and KRSC keep c contiguous).
template <class T, class Epi>
__global__ void __launch_bounds__(256) conv2d_simt_kernel(const conv_args a, const Epi epi) {
  __shared__ conv_tile tile;
  conv_thread<T> th(a, blockIdx.x, blockIdx.y, static_cast<int>(threadIdx.x));
  const index_t red = a.r * a.s * a.c;
  for (index_t k0 = 0; k0 < red; k0 += conv_tile::BK) {
    th.gather(a, k0, tile);
    __syncthreads();
    th.compute(tile);
    __syncthreads();
  }
  gemm_detail::gemm_args g{};
  g.alpha = 1.0f;
  g.beta = 0.0f;
  g.out_type = a.out_type;
  th.outputs(a, [&](index_t m, index_t oc, float sum) {
    gemm_detail::store_out(a.y, m * a.ldy + oc, epi.template value<false>(g, sum, 0.0f, m, oc),
                           a.out_type);
  });
}

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

/// Launches the SIMT implicit-GEMM kernel with epilogue object `epi`.
template <class T, class P, class Epi>
void launch_simt(const P& pr, const conv2d_params& prm, const Epi& epi, cudaStream_t stream) {
  const conv_args a = args_of(pr, prm);
  const index_t rows = a.n * a.p * a.q;
  if (rows == 0 || a.k == 0) {
    return;
  }
  const index_t gx = (rows + 63) / 64, gy = (a.k + 63) / 64;
  if (gx > 0x7fffffff || gy > 65535) {
    throw error("cufuse::conv2d: the output is too large for one launch (" + std::to_string(rows) +
                " pixels x " + std::to_string(a.k) + " channels)");
  }
  conv2d_simt_kernel<T, Epi><<<dim3(unsigned(gx), unsigned(gy)), 256, 0, stream>>>(a, epi);
  CUFUSE_CUDA_CHECK_MSG(cudaGetLastError(), "launching cufuse::conv2d's SIMT kernel");
}

template <class X, class W, class Y, class E>
void run(X&& xt, W&& wt, Y&& yt, const conv2d_params& prm, const E* epilogue,
         const gemm_options& options, cudaStream_t stream) {
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
  if (rows == 0 || ys[3] == 0) {
    return;
  }
  using YE = typename decltype(pr.y)::element_type;
  using YM = tensor_view<YE, 2, device_space>;
  const YM ym(pr.y.data(), extents<2>{rows, ys[3]}, strides<2>{pr.ldy, 1}, typename YM::trusted{});
  if (is_gemm(pr, prm)) {
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
    if constexpr (std::is_same_v<E, void>) {
      gemm(xm, transpose(wm), ym, 1.0f, 0.0f, stream, options);
    } else {
      gemm(xm, transpose(wm), ym, flatten_epilogue(detail::to_node(*epilogue), ys), options,
           stream);
    }
    return;
  }
  if constexpr (std::is_same_v<E, void>) {
    launch_simt<T>(pr, prm, gemm_detail::linear_combination{}, stream);
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
    launch_simt<T>(pr, prm, Epi{bound, {}, {}}, stream);
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

} // namespace cufuse
