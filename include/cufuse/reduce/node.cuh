/// \file The reduction node: `sum(x, axis)` and friends are expressions like any other. The
/// node holds its child expression, the reduced axes and whether they are kept (extent 1).
/// Assignments never evaluate it element by element: they run it as its own kernel, fused into
/// the row kernel, or into a temporary (eval/assign.cuh). In your own kernel, `node(i, j)` loops
/// over the reduced elements (correct, but O(reduced size) per element).
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_REDUCE_NODE_CUH
#endif

#include "../expr/node.cuh"
#include "../expr/operators.cuh"
#include "reducers.cuh"

#include <string>

namespace cufuse {

/// Tag: keep the reduced axes with extent 1 (`sum(X, -1, cufuse::keepdim)` is [m, 1]).
struct keepdim_t {};
inline constexpr keepdim_t keepdim{};

/// var / std: divide by n - correction (PyTorch's default 1, Bessel's correction).
struct correction {
  double value = 1;
};

namespace detail {

/// `Red` over the axes in `mask` of `Arg` (NAxes of them; all when NAxes == Arg::rank), keeping
/// them with extent 1 when Keep.
template <class Red, class Arg, bool Keep, int NAxes>
struct reduce_node {
  using reducer_type = Red;
  using arg_type = Arg;
  using input_type = typename Arg::value_type;
  using state_type = typename Red::template state<input_type>;
  using value_type = typename Red::template result<input_type>;
  using compute_type = opmath_t<value_type>;
  static constexpr int arg_rank = Arg::rank;
  static constexpr int rank = Keep ? Arg::rank : Arg::rank - NAxes;
  static constexpr bool keep = Keep;
  static constexpr int axes = NAxes;
  /// A reduction to rank 0 is zero-dimensional in promotion, like a rank-0 tensor (PyTorch).
  using promo_type = std::conditional_t<rank == 0, zero_dim<value_type>, value_type>;
  using space = typename Arg::space;
  static constexpr bool is_cufuse_node = true;
  static constexpr int leaf_count = 0;        // never read by the elementwise plan
  static constexpr int min_element_size = 16; // nor vectorized
  static_assert(element_type<value_type>, "cufuse: internal: reduction result type");

  Red red;
  Arg arg;
  unsigned mask; // bit d: axis d of arg is reduced

  CUFUSE_HOST_DEVICE bool reduces(int d) const { return ((mask >> d) & 1u) != 0; }

  /// The shape of the result.
  CUFUSE_HOST_DEVICE extents<rank> shape() const { return reduced_shape(arg.shape()); }
  CUFUSE_HOST_DEVICE extents<rank> reduced_shape(const extents<arg_rank>& in) const {
    extents<rank> out;
    int o = 0;
    for (int d = 0; d < arg_rank; ++d) {
      if (!reduces(d)) {
        out[o++] = in[d];
      } else if (Keep) {
        out[o++] = 1;
      }
    }
    return out;
  }
  CUFUSE_HOST_DEVICE index_t size() const { return shape().size(); }
  /// Number of elements folded into each result.
  CUFUSE_HOST_DEVICE index_t reduced_count() const {
    const auto in = arg.shape();
    index_t n = 1;
    for (int d = 0; d < arg_rank; ++d) {
      n *= reduces(d) ? in[d] : 1;
    }
    return n;
  }

  /// The result at a position (its trailing `rank` coordinates; extent-1 dimensions repeat).
  template <int R, class I>
  CUFUSE_HOST_DEVICE compute_type eval_in(const coords<R, I>& p) const {
    const auto in = arg.shape();
    coords<arg_rank, I> q{};
    int o = 0;
    for (int d = 0; d < arg_rank; ++d) {
      if (!reduces(d)) {
        q.c[d] = in[d] == 1 ? I(0) : p.c[R - rank + o];
        ++o;
      } else if (Keep) {
        ++o;
      }
    }
    return fold_at(q, in);
  }

  /// Folds the reduced axes with the kept coordinates of `q` fixed: r runs row-major over the
  /// reduced axes (the index argmax reports).
  template <class I>
  CUFUSE_HOST_DEVICE compute_type fold_at(coords<arg_rank, I> q,
                                          const extents<arg_rank>& in) const {
    index_t n = 1;
    for (int d = 0; d < arg_rank; ++d) {
      n *= reduces(d) ? in[d] : 1;
    }
    auto s = red.template init<input_type>();
    for (index_t r = 0; r < n; ++r) {
      index_t rest = r;
      for (int d = arg_rank - 1; d >= 0; --d) {
        if (reduces(d)) {
          q.c[d] = static_cast<I>(rest % in[d]);
          rest /= in[d];
        }
      }
      red.template add<input_type>(s, arg.eval_in(q), r);
    }
    return red.template finish<input_type>(s, n);
  }

  template <class I>
  CUFUSE_HOST_DEVICE value_type operator[](I i) const {
    if constexpr (rank <= 1) {
      return convert<value_type>(eval_in(coords<rank, I>{{i}}));
    } else {
      return convert<value_type>(eval_in(unravel(i, shape())));
    }
  }
  template <std::integral... I>
    requires(sizeof...(I) == rank)
  CUFUSE_HOST_DEVICE value_type operator()(I... idx) const {
    return convert<value_type>(eval_in(coords<rank, index_t>{{static_cast<index_t>(idx)...}}));
  }
};

template <class N>
inline constexpr bool is_reduce_node_v = false;
template <class Red, class Arg, bool Keep, int NAxes>
inline constexpr bool is_reduce_node_v<reduce_node<Red, Arg, Keep, NAxes>> = true;

/// True when the tree N holds a reduction anywhere.
template <class N>
constexpr bool has_reduction() {
  if constexpr (is_reduce_node_v<N>) {
    return true;
  } else if constexpr (requires { typename N::op_type; }) {
    return []<class Op, class... Args>(map_node<Op, Args...>*) {
      return (has_reduction<Args>() || ...);
    }(static_cast<N*>(nullptr));
  } else {
    return false;
  }
}

/// The reduced-axes mask for `axes` of a rank-`rank` operand (negative axes count from the end);
/// throws shape_error for an axis out of range or named twice.
template <std::size_t K>
unsigned axes_mask(const char* what, const int (&axes)[K], int rank) {
  unsigned m = 0;
  for (std::size_t i = 0; i < K; ++i) {
    const int a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank) {
      throw shape_error(std::string("cufuse::") + what + ": axis " + std::to_string(axes[i]) +
                        " is out of range for an operand of rank " + std::to_string(rank) +
                        " (valid: " + std::to_string(-rank) + " to " + std::to_string(rank - 1) +
                        ")");
    }
    if ((m >> a) & 1u) {
      throw shape_error(std::string("cufuse::") + what + ": axis " + std::to_string(axes[i]) +
                        " is named twice");
    }
    m |= 1u << a;
  }
  return m;
}

/// Builds the node; `empty_ok` false (amax, argmax, ...) throws when a reduced axis is empty.
template <bool Keep, int NAxes, class Red, class X>
auto make_reduce(Red red, const X& x, unsigned mask) {
  auto a = to_node(x);
  using A = decltype(a);
  static_assert(NAxes <= A::rank, "cufuse: internal: more axes than the operand's rank");
  reduce_node<Red, A, Keep, NAxes> n{red, a, mask};
  constexpr bool needs_elements =
      std::is_same_v<Red, reducers::amax> || std::is_same_v<Red, reducers::amin> ||
      std::is_same_v<Red, reducers::argmax> || std::is_same_v<Red, reducers::argmin>;
  if constexpr (needs_elements) {
    if constexpr (A::rank > 0) {
      const auto s = a.shape();
      for (int d = 0; d < A::rank; ++d) {
        if (n.reduces(d) && s[d] == 0) {
          throw shape_error(std::string("cufuse::") + Red::name +
                            ": cannot reduce an empty axis (axis " + std::to_string(d) +
                            " of shape " + s.to_string() + "): there is no identity");
        }
      }
    }
  }
  return n;
}

template <class X>
constexpr int rank_of = node_t<X>::rank;

template <class X>
unsigned all_axes() {
  return rank_of<X> >= 32 ? ~0u : (1u << rank_of<X>)-1u;
}

} // namespace detail

// ---- the reductions ------------------------------------------------------------------------
// NAME(x): all elements, rank 0. NAME(x, axis) / NAME(x, {a, b}): those axes (negative counts
// from the end), removed; with cufuse::keepdim, kept with extent 1.

#define CUFUSE_REDUCTION(NAME, RED)                                                                \
  template <tensor_operand X>                                                                      \
  auto NAME(const X& x) {                                                                          \
    return detail::make_reduce<false, detail::rank_of<X>>(RED{}, x, detail::all_axes<X>());        \
  }                                                                                                \
  template <tensor_operand X>                                                                      \
  auto NAME(const X& x, int axis) {                                                                \
    return detail::make_reduce<false, 1>(RED{}, x,                                                 \
                                         detail::axes_mask(#NAME, {axis}, detail::rank_of<X>));    \
  }                                                                                                \
  template <tensor_operand X>                                                                      \
  auto NAME(const X& x, int axis, keepdim_t) {                                                     \
    return detail::make_reduce<true, 1>(RED{}, x,                                                  \
                                        detail::axes_mask(#NAME, {axis}, detail::rank_of<X>));     \
  }

#define CUFUSE_REDUCTION_AXES(NAME, RED)                                                           \
  CUFUSE_REDUCTION(NAME, RED)                                                                      \
  template <tensor_operand X, std::size_t K>                                                       \
  auto NAME(const X& x, const int(&axes)[K]) {                                                     \
    return detail::make_reduce<false, int(K)>(RED{}, x,                                            \
                                              detail::axes_mask(#NAME, axes, detail::rank_of<X>)); \
  }                                                                                                \
  template <tensor_operand X, std::size_t K>                                                       \
  auto NAME(const X& x, const int(&axes)[K], keepdim_t) {                                          \
    return detail::make_reduce<true, int(K)>(RED{}, x,                                             \
                                             detail::axes_mask(#NAME, axes, detail::rank_of<X>));  \
  }

/// Sum (integers and bool give int64; half/bf16 accumulate in float).
CUFUSE_REDUCTION_AXES(sum, reducers::sum)
/// Product.
CUFUSE_REDUCTION_AXES(prod, reducers::prod)
/// Arithmetic mean (floating inputs; an empty reduction gives NaN).
CUFUSE_REDUCTION_AXES(mean, reducers::mean)
/// Largest element; NaN propagates. Reducing an empty axis throws shape_error.
CUFUSE_REDUCTION_AXES(amax, reducers::amax)
/// Smallest element; NaN propagates.
CUFUSE_REDUCTION_AXES(amin, reducers::amin)
/// 2-norm, sqrt(sum(x^2)).
CUFUSE_REDUCTION_AXES(norm, reducers::norm)
/// True when some element is nonzero.
CUFUSE_REDUCTION_AXES(any, reducers::any)
/// Number of nonzero elements (int64).
CUFUSE_REDUCTION_AXES(count_nonzero, reducers::count_nonzero)
/// log(sum(exp(x))), computed without overflow.
CUFUSE_REDUCTION_AXES(logsumexp, reducers::logsumexp)
/// Index of the largest element (int64; the first among ties; NaN wins). Without an axis, the
/// row-major index into the flattened operand, as PyTorch.
CUFUSE_REDUCTION(argmax, reducers::argmax)
/// Index of the smallest element.
CUFUSE_REDUCTION(argmin, reducers::argmin)
#undef CUFUSE_REDUCTION_AXES
#undef CUFUSE_REDUCTION

/// `cufuse::all` is two things, both named by PyTorch / NumPy conventions: in a slice, every
/// index along that dimension (`slice(X, range(0, 8), cufuse::all)`); called, the reduction
/// that is true when every element is nonzero (`cufuse::all(X > 0, 1)`).
struct all_t {
  template <tensor_operand X>
  auto operator()(const X& x) const {
    return detail::make_reduce<false, detail::rank_of<X>>(reducers::all{}, x,
                                                          detail::all_axes<X>());
  }
  template <tensor_operand X>
  auto operator()(const X& x, int axis) const {
    return detail::make_reduce<false, 1>(reducers::all{}, x,
                                         detail::axes_mask("all", {axis}, detail::rank_of<X>));
  }
  template <tensor_operand X>
  auto operator()(const X& x, int axis, keepdim_t) const {
    return detail::make_reduce<true, 1>(reducers::all{}, x,
                                        detail::axes_mask("all", {axis}, detail::rank_of<X>));
  }
  template <tensor_operand X, std::size_t K>
  auto operator()(const X& x, const int (&axes)[K]) const {
    return detail::make_reduce<false, int(K)>(reducers::all{}, x,
                                              detail::axes_mask("all", axes, detail::rank_of<X>));
  }
  template <tensor_operand X, std::size_t K>
  auto operator()(const X& x, const int (&axes)[K], keepdim_t) const {
    return detail::make_reduce<true, int(K)>(reducers::all{}, x,
                                             detail::axes_mask("all", axes, detail::rank_of<X>));
  }
};
inline constexpr all_t all{};

#define CUFUSE_MOMENT(NAME, ROOT)                                                                  \
  template <tensor_operand X>                                                                      \
  auto NAME(const X& x, correction c = {}) {                                                       \
    return detail::make_reduce<false, detail::rank_of<X>>(reducers::var{c.value, ROOT}, x,         \
                                                          detail::all_axes<X>());                  \
  }                                                                                                \
  template <tensor_operand X>                                                                      \
  auto NAME(const X& x, int axis, correction c = {}) {                                             \
    return detail::make_reduce<false, 1>(reducers::var{c.value, ROOT}, x,                          \
                                         detail::axes_mask(#NAME, {axis}, detail::rank_of<X>));    \
  }                                                                                                \
  template <tensor_operand X>                                                                      \
  auto NAME(const X& x, int axis, keepdim_t, correction c = {}) {                                  \
    return detail::make_reduce<true, 1>(reducers::var{c.value, ROOT}, x,                           \
                                        detail::axes_mask(#NAME, {axis}, detail::rank_of<X>));     \
  }                                                                                                \
  template <tensor_operand X, std::size_t K>                                                       \
  auto NAME(const X& x, const int(&axes)[K], correction c = {}) {                                  \
    return detail::make_reduce<false, int(K)>(reducers::var{c.value, ROOT}, x,                     \
                                              detail::axes_mask(#NAME, axes, detail::rank_of<X>)); \
  }                                                                                                \
  template <tensor_operand X, std::size_t K>                                                       \
  auto NAME(const X& x, const int(&axes)[K], keepdim_t, correction c = {}) {                       \
    return detail::make_reduce<true, int(K)>(reducers::var{c.value, ROOT}, x,                      \
                                             detail::axes_mask(#NAME, axes, detail::rank_of<X>));  \
  }

/// Variance with `correction` (default 1, as PyTorch): sum((x - mean)^2) / (n - correction).
CUFUSE_MOMENT(var, false)
/// Standard deviation: sqrt(var).
CUFUSE_MOMENT(std, true)
#undef CUFUSE_MOMENT

/// sum(a * b) over all elements (a and b broadcast together).
template <tensor_operand A, tensor_operand B>
auto dot(const A& a, const B& b) {
  return sum(a * b);
}

} // namespace cufuse

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_REDUCE_NODE_CUH
#undef CUFUSE_DETAIL_FIRST_REDUCE_NODE_CUH
#undef CUFUSE_DETAIL_FIRST
#include "../eval/assign.cuh"
#endif
