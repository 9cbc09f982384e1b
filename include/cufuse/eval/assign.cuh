/// \file dst = expr: shape check on the host, then one kernel launch (device) or one loop (host).
#pragma once

#include "../expr/node.cuh"
#include "../ops/user.cuh"
#include "launch.cuh"

#include <string>
#include <type_traits>

namespace cufuse {
namespace detail {

/// False when a node holds a __device__-only functor (it cannot run on host tensors).
template <class E>
struct host_callable : std::true_type {};
template <class Op, class... Args>
struct host_callable<map_node<Op, Args...>>
    : std::bool_constant<(host_callable<Args>::value && ...)> {};
template <class F, class R, class... Args>
struct host_callable<map_node<ops::user<F, R>, Args...>>
    : std::bool_constant<ops::user<F, R>::host_callable && (host_callable<Args>::value && ...)> {};

template <class T, int Rank, class Space>
leaf<T, Rank, Space> destination_node(tensor<T, Rank, Space>& t) {
  return t.mutable_node();
}
template <class T, int Rank, class Space>
leaf<T, Rank, Space> destination_node(const tensor_view<T, Rank, Space>& v) {
  static_assert(!std::is_const_v<T>, "cufuse: cannot assign to a view of const elements");
  return v.node();
}
template <class X>
void destination_node(const X&) {
  static_assert(sizeof(X) == 0, "cufuse::assign: the destination must be a tensor or a view");
}

/// Host loop: the CPU fallback, and what CI runs.
template <class Dst, class Expr>
void evaluate_host(const Dst& dst, const Expr& expr, index_t n) {
  using T = typename Dst::value_type;
  for (index_t i = 0; i < n; ++i) {
    dst.ptr[i] = convert<T>(expr.eval(i));
  }
}

/// Chooses the policy (vector width, index width) and launches.
template <class Dst, class Expr>
void evaluate_device(const Dst& dst, const Expr& expr, index_t n, cudaStream_t stream) {
  using T = typename Dst::value_type;
  constexpr int min_size =
      Expr::min_element_size < int(sizeof(T)) ? Expr::min_element_size : int(sizeof(T));
  constexpr int vec = 16 / min_size;
  if constexpr (Expr::all_contiguous && vec > 1) {
    if (dst.aligned16() && expr.aligned16()) {
      if (n < max_n_for_int32) {
        launch_evaluate<vec, std::int32_t>(dst, expr, n, stream);
      } else {
        launch_evaluate<vec, std::int64_t>(dst, expr, n, stream);
      }
      return;
    }
  }
  launch_evaluate<1, std::int64_t>(dst, expr, n, stream);
}

} // namespace detail

/// Evaluates `src` (expression, tensor, view or scalar) into `dst` (tensor or view) on `stream`:
/// one kernel for a device destination, a loop for a host one. Throws shape_error naming both
/// shapes when they differ; a scalar fills. Same-index aliasing (A = A * 2 + B) is fine;
/// reading other elements of the destination is not.
template <class Dst, class Src>
void assign(Dst&& dst, const Src& src, cudaStream_t stream) {
  const auto d = detail::destination_node(dst);
  const auto e = detail::to_node(src);
  using D = std::remove_cvref_t<decltype(d)>;
  using E = std::remove_cvref_t<decltype(e)>;
  static_assert(E::rank == 0 || E::rank == D::rank,
                "cufuse: the expression's rank differs from the destination's rank");
  static_assert(std::is_same_v<typename E::space, any_space> ||
                    std::is_same_v<typename E::space, typename D::space>,
                "cufuse: cannot assign a host expression to a device tensor or the reverse; copy "
                "with upload()/download()");
  if constexpr (E::rank > 0) {
    if (!(e.shape() == d.shape())) {
      throw shape_error("cufuse: cannot assign an expression of shape " + e.shape().to_string() +
                        " to a destination of shape " + d.shape().to_string());
    }
  }
  const index_t n = d.size();
  if (n == 0) {
    return;
  }
  if constexpr (std::is_same_v<typename D::space, host_space>) {
    static_assert(detail::host_callable<E>::value,
                  "cufuse: this expression holds a __device__-only lambda, so it cannot run on "
                  "host tensors; make the lambda __host__ __device__");
    detail::evaluate_host(d, e, n);
  } else {
    detail::evaluate_device(d, e, n, stream);
  }
}

/// assign on the current stream.
template <class Dst, class Src>
void assign(Dst&& dst, const Src& src) {
  assign(static_cast<Dst&&>(dst), src, current_stream());
}

} // namespace cufuse
