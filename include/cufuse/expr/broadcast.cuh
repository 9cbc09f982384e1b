/// \file broadcast_to: a tensor or view read as a larger shape (NumPy rules: trailing dimensions
/// align; a dimension of extent 1, or a missing leading one, repeats). `X + broadcast_to(b,
/// X.shape())` adds a bias row in the same single kernel.
#pragma once

#include "node.cuh"

#include <string>
#include <type_traits>

namespace cufuse {
namespace detail {

/// A leaf read through strides (in elements); a stride of 0 repeats a dimension. Evaluation
/// unravels the row-major linear index over `shp`, so it takes the scalar kernel path.
template <class T, int Rank, class Space>
struct strided_leaf {
  using value_type = std::remove_const_t<T>;
  using promo_type = value_type;
  using space = Space;
  static constexpr int rank = Rank;
  static constexpr bool is_cufuse_node = true;
  static constexpr bool all_contiguous = false;
  static constexpr int min_element_size = int(sizeof(value_type));
  static constexpr int leaf_count = 1;

  T* ptr;
  extents<Rank> shp;
  index_t stride[Rank];

  CUFUSE_INLINE const extents<Rank>& shape() const { return shp; }
  CUFUSE_INLINE index_t size() const { return shp.size(); }

  template <class I>
  CUFUSE_INLINE I offset(I i) const {
    I off = 0;
    CUFUSE_UNROLL
    for (int d = Rank - 1; d >= 0; --d) {
      const I e = static_cast<I>(shp.e[d]);
      off += (i % e) * static_cast<I>(stride[d]);
      i /= e;
    }
    return off;
  }
  template <class I>
  CUFUSE_INLINE opmath_t<value_type> eval(I i) const {
    return convert<opmath_t<value_type>>(ptr[offset(i)]);
  }
  template <class I>
  CUFUSE_INLINE value_type operator[](I i) const {
    return ptr[offset(i)];
  }
  bool aligned16() const { return false; }
};

} // namespace detail

/// Reads a tensor or view as `shape`: its dimensions align with the trailing dimensions of
/// `shape`, and each must equal the target extent or be 1 (repeated). Throws shape_error
/// naming both shapes otherwise. The result is read-only and evaluates in the same kernel.
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
  detail::strided_leaf<std::remove_pointer_t<decltype(n.ptr)>, Rank, typename N::space> out{
      n.ptr, shape, {}};
  index_t src_stride = 1;
  for (int d = Rank - 1, s = N::rank - 1; d >= 0; --d, --s) {
    if (s < 0) {
      out.stride[d] = 0;
      continue;
    }
    const index_t e = n.shape()[s];
    if (e != shape[d] && e != 1) {
      throw shape_error("cufuse::broadcast_to: cannot broadcast shape " + n.shape().to_string() +
                        " to shape " + shape.to_string());
    }
    out.stride[d] = e == 1 ? 0 : src_stride;
    src_stride *= e;
  }
  return out;
}

} // namespace cufuse
