/// \file broadcast_to: a tensor or view read as a larger shape (NumPy rules: trailing dimensions
/// align; a dimension of extent 1, or a missing leading one, repeats). Operators broadcast
/// implicitly (`X + bias`); broadcast_to is the explicit form, e.g. to assign a repeated row.
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_EXPR_BROADCAST_CUH
#endif

#include "node.cuh"

#include <string>
#include <type_traits>

namespace cufuse {

/// Reads a tensor or view as `shape`: its dimensions align with the trailing dimensions of
/// `shape`, and each must equal the target extent or be 1 (repeated). Throws shape_error
/// naming both shapes otherwise. The result is a read-only view (stride 0 where it repeats).
template <tensor_operand X, int Rank>
auto broadcast_to(const X& x, const extents<Rank>& shape) {
  const auto n = detail::to_node(x);
  using N = decltype(n);
  static_assert(
      requires { n.ptr; },
      "cufuse::broadcast_to: broadcast a tensor or a view (evaluate an expression into "
      "a tensor first)");
  static_assert(N::rank <= Rank, "cufuse::broadcast_to: the target rank is lower than the rank "
                                 "of the tensor being broadcast");
  using T = std::remove_const_t<std::remove_pointer_t<decltype(n.ptr)>>;
  strides<Rank> st{};
  for (int d = Rank - 1, s = N::rank - 1; d >= 0; --d, --s) {
    if (s < 0) {
      st[d] = 0;
      continue;
    }
    const index_t e = n.shape()[s];
    if (e != shape[d] && e != 1) {
      throw shape_error("cufuse::broadcast_to: cannot broadcast shape " + n.shape().to_string() +
                        " to shape " + shape.to_string());
    }
    st[d] = e == 1 ? 0 : n.str[s];
  }
  using view_t = tensor_view<const T, Rank, typename N::space>;
  return view_t(n.ptr, shape, st, typename view_t::trusted{});
}

} // namespace cufuse

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_EXPR_BROADCAST_CUH
#undef CUFUSE_DETAIL_FIRST_EXPR_BROADCAST_CUH
#undef CUFUSE_DETAIL_FIRST
#include "../eval/assign.cuh"
#endif
