/// \file Expression nodes: scalar (weak), map<Op, Args...> (n-ary), and how operands become
/// nodes. Leaves (views of memory) live in memory/tensor_view.cuh.
#pragma once

#include "../core/concepts.hpp"
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
  static constexpr bool all_contiguous = true;
  static constexpr int min_element_size = 16; // places no constraint on the vector width
  static constexpr int leaf_count = 0;

  S value;

  template <class I>
  CUFUSE_INLINE S eval(I) const {
    return value;
  }
  template <class I>
  CUFUSE_INLINE S operator[](I) const {
    return value;
  }
  template <int V, class I>
  CUFUSE_INLINE scalar_node fetch(I) const {
    return *this;
  }
  CUFUSE_INLINE S at(int) const { return value; }
  bool aligned16() const { return true; }
};

template <class Op, class... Args>
struct map_node;

/// The registers of a map node's children for one vector of V lanes (vectorized path).
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
constexpr int common_rank() {
  int r = 0;
  bool ok = true;
  ((Ranks == 0 ? void() : (r == 0 || r == Ranks ? void(r = Ranks) : void(ok = false))), ...);
  return ok ? r : -1;
}

/// Applies Op elementwise to its children. `Op` says how its result type follows from the
/// children's promotion types (`common` and `result`) and computes in `apply`.
template <class Op, class... Args>
struct map_node {
  static_assert(sizeof...(Args) >= 1, "cufuse: internal: map needs an argument");
  static constexpr int rank = common_rank<Args::rank...>();
  static_assert(rank >= 0, "cufuse: operands have different ranks; reshape one of them so both "
                           "have the same rank (broadcasting is not implicit)");

  using op_type = Op;
  using space = typename common_space<typename Args::space...>::type;
  using common_type = typename Op::template common<typename Args::promo_type...>;
  using value_type = typename Op::template result<common_type, typename Args::value_type...>;
  static_assert(element_type<value_type>,
                "cufuse: this operation's result type is not a cufuse element type");
  using promo_type = value_type;
  using compute_type = opmath_t<value_type>;
  static constexpr bool is_cufuse_node = true;
  static constexpr bool all_contiguous = (Args::all_contiguous && ...);
  /// Memory reads per element (a tensor used twice counts twice).
  static constexpr int leaf_count = (Args::leaf_count + ...);
  static constexpr int min_element_size = [] {
    int m = 16;
    ((m = Args::min_element_size < m ? Args::min_element_size : m), ...);
    return m;
  }();

  Op op;
  pack<Args...> args;

  template <class I>
  CUFUSE_INLINE compute_type eval(I i) const {
    return eval_impl(i, std::index_sequence_for<Args...>{});
  }
  /// Element at linear (row-major) index `i`, in the expression's value type.
  template <class I>
  CUFUSE_INLINE value_type operator[](I i) const {
    return convert<value_type>(eval(i));
  }
  template <int V, class I>
  CUFUSE_INLINE auto fetch(I vi) const {
    return fetch_impl<V>(vi, std::index_sequence_for<Args...>{});
  }

  /// Shape of the expression (the shape of its first non-scalar operand).
  extents<rank == 0 ? 1 : rank> shape() const { return first_shape<0>(); }
  index_t size() const { return shape().size(); }

  bool aligned16() const { return aligned_impl(std::index_sequence_for<Args...>{}); }

private:
  template <class I, std::size_t... Is>
  CUFUSE_INLINE compute_type eval_impl(I i, std::index_sequence<Is...>) const {
    return convert<compute_type>(op.template apply<common_type>(get<Is>(args).eval(i)...));
  }
  template <int V, class I, std::size_t... Is>
  CUFUSE_INLINE auto fetch_impl(I vi, std::index_sequence<Is...>) const {
    using F = fetched_map<map_node, decltype(get<Is>(args).template fetch<V>(vi))...>;
    return F{op, make_pack(get<Is>(args).template fetch<V>(vi)...)};
  }
  template <std::size_t... Is>
  bool aligned_impl(std::index_sequence<Is...>) const {
    return (get<Is>(args).aligned16() && ...);
  }
  template <std::size_t I>
  auto first_shape() const {
    if constexpr (I == sizeof...(Args)) {
      return extents < rank == 0 ? 1 : rank > {}; // unreachable for rank > 0
    } else if constexpr (std::remove_cvref_t<decltype(get<I>(args))>::rank == 0) {
      return first_shape<I + 1>();
    } else {
      return get<I>(args).shape();
    }
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
    return scalar_node<W>{static_cast<W>(x)};
  }
}

template <class X>
using node_t = decltype(to_node(std::declval<const X&>()));

/// Checks that every non-scalar node has the same shape; the message names all of them.
/// Compares extents only; strings are built on the error path alone.
template <class... Nodes>
void check_shapes(const char* what, const Nodes&... nodes) {
  constexpr int r = common_rank<Nodes::rank...>();
  if constexpr (r > 0) {
    extents<r> first{};
    bool have = false, mismatch = false;
    auto visit = [&](const auto& n) {
      if constexpr (std::remove_cvref_t<decltype(n)>::rank > 0) {
        if (!have) {
          first = n.shape();
          have = true;
        } else if (!(n.shape() == first)) {
          mismatch = true;
        }
      }
    };
    (visit(nodes), ...);
    if (mismatch) {
      std::string shapes;
      auto name = [&](const auto& n) {
        if constexpr (std::remove_cvref_t<decltype(n)>::rank > 0) {
          shapes += (shapes.empty() ? "" : " and ") + n.shape().to_string();
        }
      };
      (name(nodes), ...);
      throw shape_error(std::string("cufuse: ") + what + ": operand shapes differ: " + shapes);
    }
  }
}

template <class Op, class... Ns>
map_node<Op, Ns...> make_map_nodes(const char* what, Op op, const Ns&... ns) {
  check_shapes(what, ns...);
  return {op, make_pack(ns...)};
}

/// Builds map<Op, node_t<Xs>...> from operands, checking that their shapes agree.
template <class Op, class... Xs>
auto make_map(const char* what, Op op, const Xs&... xs) {
  return make_map_nodes(what, op, to_node(xs)...);
}

} // namespace detail
} // namespace cufuse
