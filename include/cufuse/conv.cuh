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
///    `gemm_options::math` is tf32) where channels come in 16-byte chunks; fp16 / bf16 with any
///    other channel count or layout on a tensor-core tile that gathers element by element; else
///    the SIMT kernel (conv/simt.cuh: exact fp32 FMAs, any shape, layout and alignment).
///    `conv2d_variants` lists them; `gemm_options::variant` picks one, else a heuristic does.
#pragma once

#include "conv/problem.cuh"
#include "conv/variants.cuh"
#include "gemm.cuh"

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace cufuse {

namespace conv_detail {

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
                                            detail::pack<>, std::remove_const_t<TY>>;
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

} // namespace tuning

namespace conv_detail {
/// tuning::tune_conv2d with (E a type) or without (E void) a fused epilogue.
template <class X, class W, class Y, class E>
tuning::conv2d_choice tune(X&& x, W&& w, Y&& y, const conv2d_params& params, const E* epilogue,
                           const gemm_options& options, int repeats, cudaStream_t stream) {
  if (repeats < 1) {
    throw error("cufuse::tuning::tune_conv2d: repeats must be >= 1, got " +
                std::to_string(repeats));
  }
  std::pair<std::string, double> best;
  conv_action act;
  act.best = &best;
  act.repeats = repeats;
  run<X, W, Y, E>(std::forward<X>(x), std::forward<W>(w), std::forward<Y>(y), params, epilogue,
                  options, stream, &act);
  return {best.first, best.second};
}
} // namespace conv_detail

namespace tuning {

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
  return conv_detail::tune<X, W, Y, void>(std::forward<X>(x), std::forward<W>(w),
                                          std::forward<Y>(y), params, nullptr, options, repeats,
                                          stream);
}

/// tune_conv2d for a convolution with a fused epilogue (its own key: the epilogue's type).
template <class X, class W, class Y, class E>
  requires(!std::is_same_v<std::remove_cvref_t<E>, gemm_options>)
conv2d_choice tune_conv2d(X&& x, W&& w, Y&& y, const conv2d_params& params, const E& epilogue,
                          const gemm_options& options = {}, int repeats = 5,
                          cudaStream_t stream = current_stream()) {
  return conv_detail::tune<X, W, Y, E>(std::forward<X>(x), std::forward<W>(w), std::forward<Y>(y),
                                       params, &epilogue, options, repeats, stream);
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
