/// \file Views that reinterpret a tensor's memory without copying: slice (ranges with steps,
/// integer indices), transpose, permute, reshape, unsqueeze, squeeze. Each takes a tensor or a
/// view (device or host) and returns a tensor_view, which is an expression operand and an
/// assignment target:
///
///   auto rows = cufuse::slice(X, cufuse::range(0, m, 2), cufuse::all);  // every other row
///   cufuse::slice(X, cufuse::range(0, 8), cufuse::all) = 0.0f;          // assign into a slice
///   Y = cufuse::transpose(X) + 1.0f;                                     // a strided operand
///
/// A view does not own memory: the tensor must outlive it (views of temporaries do not compile).
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_MEMORY_VIEWS_CUH
#endif

#include "../reduce/node.cuh"
#include "tensor.cuh"

#include <concepts>
#include <string>
#include <type_traits>

namespace cufuse {

/// Indices begin, begin + step, ... below end, along one dimension. Negative begin and end
/// count from the end (Python); end <= begin is an empty range. Bounds outside
/// [-extent, extent] and steps below 1 throw shape_error.
struct range {
  index_t begin = 0, end = 0, step = 1;
  constexpr range(index_t b, index_t e, index_t s = 1) : begin(b), end(e), step(s) {}
};

// cufuse::all (every index along one dimension; also the reduction) is in reduce/node.cuh.

namespace detail {

template <class T, int R, class S>
tensor_view<T, R, S> as_view(tensor<T, R, S>& t) {
  return t.view();
}
template <class T, int R, class S>
tensor_view<const T, R, S> as_view(const tensor<T, R, S>& t) {
  return t.view();
}
template <class T, int R, class S>
tensor_view<T, R, S> as_view(const tensor_view<T, R, S>& v) {
  return v;
}

template <class X>
concept viewable = requires(X& x) { as_view(x); };

template <class X>
inline constexpr bool is_tensor_v = false;
template <class T, int R, class S>
inline constexpr bool is_tensor_v<tensor<T, R, S>> = true;

/// The view of `x`, refusing temporary tensors (the view would dangle).
template <class X>
auto view_of(X&& x) {
  static_assert(!(is_tensor_v<std::remove_cvref_t<X>> && std::is_rvalue_reference_v<X&&>),
                "cufuse: a view of a temporary tensor would dangle; name the tensor first");
  return as_view(x);
}

template <class V, int NewRank>
using view_like = tensor_view<typename V::element_type, NewRank, typename V::space>;

/// A view of `v`'s memory with a new shape and strides, `offset` elements further on.
template <int NewRank, class V>
view_like<V, NewRank> derived_view(const V& v, index_t offset, const extents<NewRank>& shape,
                                   const strides<NewRank>& st) {
  using out = view_like<V, NewRank>;
  return out(v.data() + offset, shape, st, typename out::trusted{});
}

/// A dimension given as in PyTorch (negative counts from the end) within [0, rank).
inline int normalize_dim(index_t d, int rank, const char* who, const std::string& shape) {
  if (d < -rank || d >= rank) {
    throw shape_error(std::string(who) + ": dimension " + std::to_string(d) +
                      " out of range for a rank-" + std::to_string(rank) + " view of shape " +
                      shape);
  }
  return int(d < 0 ? d + rank : d);
}

template <class I>
inline constexpr bool is_slice_index_v =
    std::is_integral_v<I> || std::is_same_v<I, range> || std::is_same_v<I, all_t>;

} // namespace detail

/// A view of part of `x`: one index per leading dimension (the rest are `all`). An integer
/// index picks one position and drops that dimension; `range(b, e, step)` keeps a strided part
/// of it; `all` keeps it whole.
template <class X, class... Idx>
  requires detail::viewable<std::remove_cvref_t<X>>
auto slice(X&& x, const Idx&... idx) {
  const auto v = detail::view_of(std::forward<X>(x));
  using V = std::remove_cvref_t<decltype(v)>;
  constexpr int R = V::rank;
  static_assert(sizeof...(Idx) <= R, "cufuse::slice: more indices than the view has dimensions");
  static_assert((detail::is_slice_index_v<Idx> && ...),
                "cufuse::slice: each index is an integer, cufuse::range(begin, end, step) or "
                "cufuse::all");
  constexpr int NR = R - (int(std::is_integral_v<Idx>) + ... + 0);
  extents<NR> shape;
  strides<NR> st{};
  index_t offset = 0;
  int d = 0, out = 0;
  auto fail = [&](const std::string& what, index_t bound) {
    throw shape_error("cufuse::slice: " + what + " " + std::to_string(bound) +
                      " out of range for dimension " + std::to_string(d) + " of extent " +
                      std::to_string(v.shape()[d]) + " (shape " + v.shape().to_string() + ")");
  };
  auto one = [&](const auto& i) {
    using I = std::remove_cvref_t<decltype(i)>;
    const index_t e = v.shape()[d], s = v.strides()[d];
    if constexpr (std::is_integral_v<I>) {
      const index_t k = static_cast<index_t>(i);
      if (k < -e || k >= e) {
        fail("index", k);
      }
      offset += (k < 0 ? k + e : k) * s;
    } else if constexpr (std::is_same_v<I, all_t>) {
      shape[out] = e;
      st[out++] = s;
    } else {
      if (i.step < 1) {
        throw shape_error("cufuse::slice: range step must be positive, got " +
                          std::to_string(i.step) + " (dimension " + std::to_string(d) + ")");
      }
      if (i.begin < -e || i.begin > e) {
        fail("range begin", i.begin);
      }
      if (i.end < -e || i.end > e) {
        fail("range end", i.end);
      }
      const index_t b = i.begin < 0 ? i.begin + e : i.begin;
      const index_t en = i.end < 0 ? i.end + e : i.end;
      const index_t count = en > b ? (en - b + i.step - 1) / i.step : 0;
      offset += count > 0 ? b * s : 0;
      shape[out] = count;
      st[out++] = s * i.step;
    }
    ++d;
  };
  (one(idx), ...);
  for (; d < R; ++d) {
    shape[out] = v.shape()[d];
    st[out++] = v.strides()[d];
  }
  return detail::derived_view<NR>(v, offset, shape, st);
}

/// Swaps dimensions d0 and d1 (negative counts from the end): a strided view.
template <class X>
  requires detail::viewable<std::remove_cvref_t<X>>
auto transpose(X&& x, index_t d0, index_t d1) {
  const auto v = detail::view_of(std::forward<X>(x));
  using V = std::remove_cvref_t<decltype(v)>;
  constexpr int R = V::rank;
  static_assert(R >= 1, "cufuse::transpose: a rank-0 view has no dimensions to swap");
  const int a = detail::normalize_dim(d0, R, "cufuse::transpose", v.shape().to_string());
  const int b = detail::normalize_dim(d1, R, "cufuse::transpose", v.shape().to_string());
  extents<R> shape = v.shape();
  strides<R> st = v.strides();
  std::swap(shape[a], shape[b]);
  std::swap(st[a], st[b]);
  return detail::derived_view<R>(v, 0, shape, st);
}

/// Swaps the last two dimensions (a matrix transpose; also what gemm takes as op(X) = X^T).
template <class X>
  requires detail::viewable<std::remove_cvref_t<X>>
auto transpose(X&& x) {
  static_assert(std::remove_cvref_t<decltype(detail::as_view(x))>::rank >= 2,
                "cufuse::transpose(x) swaps the last two dimensions: x needs rank >= 2");
  return transpose(std::forward<X>(x), -2, -1);
}

/// Reorders the dimensions: dimension i of the result is dimension order[i] of x.
template <class X, std::size_t N>
  requires detail::viewable<std::remove_cvref_t<X>>
auto permute(X&& x, const int (&order)[N]) {
  const auto v = detail::view_of(std::forward<X>(x));
  using V = std::remove_cvref_t<decltype(v)>;
  constexpr int R = V::rank;
  static_assert(int(N) == R, "cufuse::permute: give one entry per dimension of the view");
  extents<R> shape;
  strides<R> st{};
  bool seen[R > 0 ? R : 1] = {};
  for (int i = 0; i < R; ++i) {
    const int d = detail::normalize_dim(order[i], R, "cufuse::permute", v.shape().to_string());
    if (seen[d]) {
      std::string o;
      for (int j = 0; j < R; ++j) {
        o += (j ? ", " : "") + std::to_string(order[j]);
      }
      throw shape_error("cufuse::permute: {" + o + "} is not a permutation of the " +
                        std::to_string(R) + " dimensions of shape " + v.shape().to_string());
    }
    seen[d] = true;
    shape[i] = v.shape()[d];
    st[i] = v.strides()[d];
  }
  return detail::derived_view<R>(v, 0, shape, st);
}

/// The same elements with a new shape (one extent may be -1: inferred). Needs a contiguous
/// view; throws shape_error for a strided one or a different element count.
template <class X, int N>
  requires detail::viewable<std::remove_cvref_t<X>>
auto reshape(X&& x, extents<N> shape) {
  const auto v = detail::view_of(std::forward<X>(x));
  if (!v.is_contiguous()) {
    throw shape_error("cufuse::reshape: the view of shape " + v.shape().to_string() +
                      " with strides " + v.strides().to_string() +
                      " is not contiguous; reshape needs contiguous memory (evaluate it into a "
                      "tensor first)");
  }
  return detail::derived_view<N>(v, 0, shape, row_major_strides(shape));
}
/// reshape with the new shape in braces: `reshape(X, {m, n / 4, 4})`, `reshape(X, {-1})`.
template <class X, std::integral I, std::size_t N>
  requires detail::viewable<std::remove_cvref_t<X>>
auto reshape(X&& x, const I (&shape)[N]) {
  const auto v = detail::as_view(x);
  extents<int(N)> e;
  int infer = -1;
  index_t known = 1;
  for (int d = 0; d < int(N); ++d) {
    e[d] = static_cast<index_t>(shape[d]);
    if (e[d] == -1 && infer < 0) {
      infer = d;
    } else if (e[d] < 0) {
      throw shape_error("cufuse::reshape: invalid extent " + std::to_string(e[d]) +
                        " (only one -1 may be inferred)");
    } else {
      known *= e[d];
    }
  }
  if (infer >= 0) {
    e[infer] = known != 0 ? v.size() / known : 0;
  }
  if (e.size() != v.size()) {
    throw shape_error("cufuse::reshape: cannot reshape shape " + v.shape().to_string() + " (" +
                      std::to_string(v.size()) + " elements) to " + e.to_string() + " (" +
                      std::to_string(e.size()) + " elements)");
  }
  return reshape(std::forward<X>(x), e);
}

/// Inserts a dimension of extent 1 at position d (in [-rank - 1, rank]; negative counts from
/// the end): `unsqueeze(bias, 0)` is [1, n].
template <class X>
  requires detail::viewable<std::remove_cvref_t<X>>
auto unsqueeze(X&& x, index_t d) {
  const auto v = detail::view_of(std::forward<X>(x));
  using V = std::remove_cvref_t<decltype(v)>;
  constexpr int R = V::rank;
  static_assert(R < max_rank, "cufuse::unsqueeze: the view already has the largest rank");
  const int at = detail::normalize_dim(d, R + 1, "cufuse::unsqueeze", v.shape().to_string());
  extents<R + 1> shape;
  strides<R + 1> st{};
  for (int i = 0, j = 0; i <= R; ++i) {
    if (i == at) {
      shape[i] = 1;
      st[i] = j < R ? v.strides()[j] * v.shape()[j] : 1;
    } else {
      shape[i] = v.shape()[j];
      st[i] = v.strides()[j];
      ++j;
    }
  }
  return detail::derived_view<R + 1>(v, 0, shape, st);
}

/// Removes dimension d, which must have extent 1.
template <class X>
  requires detail::viewable<std::remove_cvref_t<X>>
auto squeeze(X&& x, index_t d) {
  const auto v = detail::view_of(std::forward<X>(x));
  using V = std::remove_cvref_t<decltype(v)>;
  constexpr int R = V::rank;
  static_assert(R >= 1, "cufuse::squeeze: a rank-0 view has no dimension to remove");
  const int at = detail::normalize_dim(d, R, "cufuse::squeeze", v.shape().to_string());
  if (v.shape()[at] != 1) {
    throw shape_error("cufuse::squeeze: dimension " + std::to_string(d) + " of shape " +
                      v.shape().to_string() + " has extent " + std::to_string(v.shape()[at]) +
                      ", not 1");
  }
  extents<R - 1> shape;
  strides<R - 1> st{};
  for (int i = 0, j = 0; i < R; ++i) {
    if (i != at) {
      shape[j] = v.shape()[i];
      st[j++] = v.strides()[i];
    }
  }
  return detail::derived_view<R - 1>(v, 0, shape, st);
}

} // namespace cufuse

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_MEMORY_VIEWS_CUH
#undef CUFUSE_DETAIL_FIRST_MEMORY_VIEWS_CUH
#undef CUFUSE_DETAIL_FIRST
#include "../eval/assign.cuh"
#endif
