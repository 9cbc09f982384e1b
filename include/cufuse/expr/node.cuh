/// \file Expression nodes: scalar (weak), map<Op, Args...> (n-ary), and how operands become
/// nodes. Leaves (views of memory) live in memory/tensor_view.cuh.
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_EXPR_NODE_CUH
#endif

#include "../core/concepts.hpp"
#include "../core/index.cuh"
#include "../core/pack.hpp"
#include "../core/types.cuh"
#include "../memory/tensor.cuh"

#include <string>
#include <type_traits>
#include <utility>

namespace cufuse {
namespace detail {

/// A C++ scalar in an expression. Weak in promotion: `half_tensor * 2.0` stays half.
template <class S>
struct scalar_node {
  using value_type = S; // double, int64_t or bool
  using promo_type = weak<S>;
  using space = any_space;
  static constexpr int rank = 0; // fits any shape
  static constexpr bool is_cufuse_node = true;
  static constexpr int min_element_size = 16; // places no constraint on the vector width
  static constexpr int leaf_count = 0;

  S value;

  template <class Ctx>
  CUFUSE_INLINE S eval_in(const Ctx&) const {
    return value;
  }
  template <int V, class Ctx>
  CUFUSE_INLINE scalar_node fetch_in(const Ctx&) const {
    return *this;
  }
  template <class I>
  CUFUSE_INLINE S operator[](I) const {
    return value;
  }
  CUFUSE_INLINE S at(int) const { return value; }
};

/// The registers of a map node's children for one vector of V lanes (vectorized kernels).
template <class Node, class... Fetched>
struct fetched_map {
  typename Node::op_type op;
  pack<Fetched...> args;

  CUFUSE_INLINE typename Node::compute_type at(int k) const {
    return at_impl(k, std::index_sequence_for<Fetched...>{});
  }
  template <std::size_t... Is>
  CUFUSE_INLINE typename Node::compute_type at_impl(int k, std::index_sequence<Is...>) const {
    return convert<typename Node::compute_type>(
        op.template apply<typename Node::common_type>(get<Is>(args).at(k)...));
  }
};

template <class... Spaces>
struct common_space;
template <>
struct common_space<> {
  using type = any_space;
};
template <class S, class... Rest>
struct common_space<S, Rest...> {
  using rest = typename common_space<Rest...>::type;
  static constexpr bool ok =
      std::is_same_v<S, any_space> || std::is_same_v<rest, any_space> || std::is_same_v<S, rest>;
  static_assert(ok, "cufuse: cannot mix host and device tensors in one expression");
  using type = std::conditional_t<std::is_same_v<S, any_space>, rest, S>;
};

template <int... Ranks>
constexpr int max_rank_of() {
  int r = 0;
  ((r = Ranks > r ? Ranks : r), ...);
  return r;
}

/// True for a node that carries a shape (tensors, views, expressions over them; not scalars).
template <class N>
concept shaped = requires(const N& n) { n.shape(); };

/// Applies Op elementwise to its children, broadcasting them against each other (NumPy rules:
/// shapes align on the right; extent-1 and missing leading dimensions repeat). `Op` says how
/// its result type follows from the children's promotion types (`common` and `result`) and
/// computes in `apply`.
template <class Op, class... Args>
struct map_node {
  static_assert(sizeof...(Args) >= 1, "cufuse: internal: map needs an argument");
  static constexpr int rank = max_rank_of<Args::rank...>();

  using op_type = Op;
  using space = typename common_space<typename Args::space...>::type;
  using common_type = typename Op::template common<typename Args::promo_type...>;
  using value_type = typename Op::template result<common_type, typename Args::value_type...>;
  static_assert(element_type<value_type>,
                "cufuse: this operation's result type is not a cufuse element type");
  /// Dimensioned when any child is; else zero-dimensional (PyTorch's promotion tiers).
  using promo_type = std::conditional_t<
      ((!is_weak_v<typename Args::promo_type> && !is_zero_dim_v<typename Args::promo_type>) || ...),
      value_type, zero_dim<value_type>>;
  using compute_type = opmath_t<value_type>;
  static constexpr bool is_cufuse_node = true;
  /// Memory reads per element (a tensor used twice counts twice).
  static constexpr int leaf_count = (Args::leaf_count + ...);
  static constexpr int min_element_size = [] {
    int m = 16;
    ((m = Args::min_element_size < m ? Args::min_element_size : m), ...);
    return m;
  }();

  Op op;
  pack<Args...> args;

  /// Value at a position (coordinates, or a linear index in the flat kernel), compute type.
  template <class Ctx>
  CUFUSE_INLINE compute_type eval_in(const Ctx& p) const {
    return eval_impl(p, std::index_sequence_for<Args...>{});
  }
  /// The children's registers for V consecutive elements along the innermost dimension.
  template <int V, class Ctx>
  CUFUSE_INLINE auto fetch_in(const Ctx& p) const {
    return fetch_impl<V>(p, std::index_sequence_for<Args...>{});
  }

  /// Element at row-major linear index `i` of shape(), in the value type. In your own kernel,
  /// `node(i, j)` avoids the per-dimension division that a linear index needs at rank >= 2.
  template <class I>
  CUFUSE_INLINE value_type operator[](I i) const {
    if constexpr (rank <= 1) {
      return convert<value_type>(eval_in(coords<rank, I>{{i}}));
    } else {
      return convert<value_type>(eval_in(unravel(i, shape())));
    }
  }
  /// Element at a multi-index of shape().
  template <std::integral... I>
    requires(sizeof...(I) == rank)
  CUFUSE_INLINE value_type operator()(I... idx) const {
    return convert<value_type>(eval_in(coords<rank, index_t>{{static_cast<index_t>(idx)...}}));
  }

  /// The broadcast shape of the children.
  CUFUSE_HOST_DEVICE extents<rank> shape() const {
    extents<rank> acc = ones<rank>();
    shape_impl(acc, std::index_sequence_for<Args...>{});
    return acc;
  }
  CUFUSE_HOST_DEVICE index_t size() const { return shape().size(); }

private:
  template <class Ctx, std::size_t... Is>
  CUFUSE_INLINE compute_type eval_impl(const Ctx& p, std::index_sequence<Is...>) const {
    return convert<compute_type>(op.template apply<common_type>(get<Is>(args).eval_in(p)...));
  }
  template <int V, class Ctx, std::size_t... Is>
  CUFUSE_INLINE auto fetch_impl(const Ctx& p, std::index_sequence<Is...>) const {
    using F = fetched_map<map_node, decltype(get<Is>(args).template fetch_in<V>(p))...>;
    return F{op, make_pack(get<Is>(args).template fetch_in<V>(p)...)};
  }
  template <std::size_t... Is>
  CUFUSE_HOST_DEVICE void shape_impl(extents<rank>& acc, std::index_sequence<Is...>) const {
    auto one = [&](const auto& a) {
      if constexpr (shaped<std::remove_cvref_t<decltype(a)>>) {
        (void)broadcast_into(acc, a.shape());
      }
    };
    (one(get<Is>(args)), ...);
  }
};

// ---- operands -------------------------------------------------------------------------------

template <class X>
concept has_node = requires(const X& x) {
  { x.node() } -> expression;
};

template <class X>
concept node_like = expression<X>;

} // namespace detail

/// Anything that can appear in an expression: a node, a tensor, a view, or a C++ scalar.
template <class X>
concept operand = detail::node_like<std::remove_cvref_t<X>> ||
                  detail::has_node<std::remove_cvref_t<X>> || scalar_type<std::remove_cvref_t<X>>;

/// An operand that carries a shape (not a bare scalar): at least one of these must appear in
/// every operator call, so that cufuse never hijacks arithmetic on plain numbers.
template <class X>
concept tensor_operand =
    detail::node_like<std::remove_cvref_t<X>> || detail::has_node<std::remove_cvref_t<X>>;

namespace detail {

/// Turns an operand into its node: nodes as they are, tensors and views through node(),
/// scalars into weak scalar nodes.
template <class X>
auto to_node(const X& x) {
  if constexpr (node_like<X>) {
    return x;
  } else if constexpr (has_node<X>) {
    return x.node();
  } else {
    static_assert(scalar_type<X>, "cufuse: this is not an expression, tensor, view or scalar");
    using W = typename unweak<weak_of<X>>::type;
    return scalar_node<W>{convert<W>(x)};
  }
}

template <class X>
using node_t = decltype(to_node(std::declval<const X&>()));

/// Checks that the non-scalar nodes broadcast together; the message names every shape.
/// Compares extents only; strings are built on the error path alone.
template <class... Nodes>
void check_broadcast(const char* what, const Nodes&... nodes) {
  constexpr int r = max_rank_of<Nodes::rank...>();
  extents<r> acc = ones<r>();
  bool ok = true;
  auto visit = [&](const auto& n) {
    if constexpr (shaped<std::remove_cvref_t<decltype(n)>>) {
      ok = broadcast_into(acc, n.shape()) && ok;
    }
  };
  (visit(nodes), ...);
  if (!ok) {
    std::string shapes;
    auto name = [&](const auto& n) {
      if constexpr (shaped<std::remove_cvref_t<decltype(n)>>) {
        shapes += (shapes.empty() ? "" : ", ") + n.shape().to_string();
      }
    };
    (name(nodes), ...);
    throw shape_error(std::string("cufuse: ") + what +
                      ": operand shapes do not broadcast together (NumPy rules): " + shapes);
  }
}

template <class Op, class... Ns>
map_node<Op, Ns...> make_map_nodes(const char* what, Op op, const Ns&... ns) {
  check_broadcast(what, ns...);
  return {op, make_pack(ns...)};
}

/// Builds map<Op, node_t<Xs>...> from operands, checking that their shapes broadcast.
template <class Op, class... Xs>
auto make_map(const char* what, Op op, const Xs&... xs) {
  return make_map_nodes(what, op, to_node(xs)...);
}

} // namespace detail
} // namespace cufuse

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_EXPR_NODE_CUH
#undef CUFUSE_DETAIL_FIRST_EXPR_NODE_CUH
#undef CUFUSE_DETAIL_FIRST
#include "../eval/assign.cuh"
#endif
