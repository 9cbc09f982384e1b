/// \file conv2d's parameters and one call's checked problem: the output size, the shape checks
/// (shape_error naming every shape and parameter), the epilogue operands flattened to the
/// [n p q, k] matrix the kernels write, whether a 1x1 convolution is a plain GEMM, and the
/// kernels' arguments. Host code (with the index map of conv/implicit_gemm.cuh).
#pragma once

#include "../gemm.cuh"
#include "../memory/views.cuh"
#include "implicit_gemm.cuh"

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

} // namespace conv_detail

} // namespace cufuse
