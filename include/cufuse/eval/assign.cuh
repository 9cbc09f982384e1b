/// \file dst = expr: shape check on the host, then one kernel launch (device) or one loop (host).
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_EVAL_ASSIGN_CUH
#endif

#include "../expr/node.cuh"
#include "../ops/user.cuh"
#include "../reduce/node.cuh"
#include "launch.cuh"
#include "plan.cuh"

#include <array>

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

template <class Red, class Arg, bool Keep, int NAxes>
struct host_callable<reduce_node<Red, Arg, Keep, NAxes>> : host_callable<Arg> {};

/// dst = e for an expression holding reductions (reduce/evaluate.cuh).
template <class D, class E>
void evaluate_reductions(const D& d, const E& e, cudaStream_t stream);

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

/// The operands of an expression as the plan sees them, over a rank-R destination.
template <int R, class E>
std::array<operand_info<R>, E::leaf_count> operands_of(const E& e) {
  std::array<operand_info<R>, E::leaf_count> out{};
  int next = 0;
  auto visit = [&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    operand_info<R>& o = out[next++];
    o.ptr = leaf.ptr;
    o.elem = int(sizeof(typename L::value_type));
    for (int d = 0; d < R; ++d) {
      const int s = d - (R - L::rank);
      o.str[d] = s >= 0 ? leaf.str[s] : 0;
    }
  };
  for_each_leaf(e, visit);
  return out;
}

/// The destination as the plan sees it (rank 0 is walked as rank 1 of extent 1).
template <int R, class D>
operand_info<R> destination_info(const D& d) {
  operand_info<R> o{};
  o.ptr = d.ptr;
  o.elem = int(sizeof(typename D::value_type));
  for (int d2 = 0; d2 < D::rank; ++d2) {
    o.str[d2] = d.str[d2];
  }
  return o;
}

/// Host loop over the plan's walk: the CPU fallback, and what CI runs.
template <int R, int L, class BD, class BE>
void evaluate_host(const BD& dst, const BE& expr, const eval_plan<R, L>& pl) {
  using T = typename BD::value_type;
  coords<R, index_t> p{};
  for (index_t i = 0; i < pl.n; ++i) {
    dst.store(p, convert<T>(expr.eval_in(p)));
    for (int d = R - 1; d >= pl.first; --d) { // odometer
      if (++p.c[d] < pl.ext[d]) {
        break;
      }
      p.c[d] = 0;
    }
  }
}

/// Host loop of the flat case: a linear index.
template <class D, class E, int R, int L>
void evaluate_flat_host(const D& d, const E& e, const eval_plan<R, L>& pl) {
  using T = typename D::value_type;
  const auto be = bind<0>(e, pl.leaves);
  for (index_t i = 0; i < pl.n; ++i) {
    d.ptr[i] = convert<T>(be.eval_in(flat_index<index_t>{i}));
  }
}

/// True when some leaf of the (bound) tree N is zero-dimensional (a rank-0 tensor).
template <class N>
constexpr bool has_zero_dim_leaf() {
  if constexpr (is_leaf_node_v<N>) {
    return is_zero_dim_v<typename N::promo_type>;
  } else if constexpr (map_arity<N>::value > 0) {
    return []<class Op, class... Args>(map_node<Op, Args...>*) {
      return (has_zero_dim_leaf<Args>() || ...);
    }(static_cast<N*>(nullptr));
  } else {
    return false;
  }
}

#ifndef CUFUSE_ND_SCALAR_NARROW
#define CUFUSE_ND_SCALAR_NARROW 1
#endif
/// The scalar N-d kernel with 32-bit indices where they fit (one more instantiation; 0: the
/// 64-bit kernel alone). Measured (H200, JOURNAL s10): an fp32 view one element into each row,
/// two elements per thread, 0.51x copy with 64-bit indices, 0.61x with 32-bit.
inline constexpr bool nd_scalar_narrow = CUFUSE_ND_SCALAR_NARROW != 0;

/// Runs the plan's kernel. Which kernels are instantiated is part of the compile-time budget:
/// a rank-1 destination with no rank-0 operand gets the flat kernel (32- and 64-bit), the
/// scalar N-d one (64-bit) and the N-d kernel reading lanes along its row (32-bit: strided and
/// misaligned operands), which cover it (broadcasting there can only come from an extent-1
/// vector); rank >= 2, or a rank-0 operand, adds the vectorized N-d kernels (32- and 64-bit,
/// and the other lane-by-lane form), the scalar one at 32 bits and, at rank >= 2, the tiles.
template <int R, int L, class BD, class BE>
void evaluate_device(const BD& dst, const BE& expr, const eval_plan<R, L>& pl,
                     cudaStream_t stream) {
  constexpr int min_size =
      BE::min_element_size < BD::min_element_size ? BE::min_element_size : BD::min_element_size;
  constexpr int vec = 16 / min_size;
  static_assert(vec > 1, "cufuse: internal: elements wider than 8 bytes");
  constexpr bool nd_vectorized = R >= 2 || has_zero_dim_leaf<BE>();
  switch (pl.kind) {
  case eval_kind::flat:
    if (!pl.wide) {
      launch_evaluate<vec, std::int32_t>(dst, expr, pl.n, stream);
    } else if constexpr (nd_vectorized) {
      launch_evaluate_nd<vec, std::int64_t>(dst, expr, pl, stream);
    } else {
      launch_evaluate<vec, std::int64_t>(dst, expr, pl.n, stream);
    }
    return;
  case eval_kind::tile:
    if constexpr (R >= 2) { // the plan stages tiles only across two dimensions
      // tile_access-byte accesses of the smallest element
      constexpr int tile_vec = vec >= 8 ? vec / (16 / tile_access) : 1;
      if constexpr (tile_vec > 1) {
        if (pl.vec > 1) {
          if (pl.wide) {
            launch_evaluate_tile<tile_vec, std::int64_t>(dst, expr, pl, stream);
          } else {
            launch_evaluate_tile<tile_vec, std::int32_t>(dst, expr, pl, stream);
          }
          return;
        }
      }
      if (pl.wide) {
        launch_evaluate_tile<1, std::int64_t>(dst, expr, pl, stream);
      } else {
        launch_evaluate_tile<1, std::int32_t>(dst, expr, pl, stream);
      }
    }
    return;
  case eval_kind::nd:
    if constexpr (nd_vectorized) {
      if (pl.vec > 1) {
        if (pl.read == nd_read::row_lanes) { // the plan gathers with 32-bit indices only
          launch_evaluate_nd<vec, std::int32_t, nd_read::row_lanes>(dst, expr, pl, stream);
        } else if (pl.read == nd_read::flat_lanes) {
          launch_evaluate_nd<vec, std::int32_t, nd_read::flat_lanes>(dst, expr, pl, stream);
        } else if (pl.wide) {
          launch_evaluate_nd<vec, std::int64_t>(dst, expr, pl, stream);
        } else {
          launch_evaluate_nd<vec, std::int32_t>(dst, expr, pl, stream);
        }
        return;
      }
    } else if (pl.vec > 1 && pl.read == nd_read::row_lanes) {
      // rank 1: a strided or misaligned operand (`y[1:] - y[:-1]`), lanes along the one row
      launch_evaluate_nd<vec, std::int32_t, nd_read::row_lanes>(dst, expr, pl, stream);
      return;
    }
    if constexpr (nd_scalar_narrow && nd_vectorized) {
      if (!pl.wide) {
        launch_evaluate_nd<1, std::int32_t>(dst, expr, pl, stream);
        return;
      }
    }
    launch_evaluate_nd<1, std::int64_t>(dst, expr, pl, stream);
    return;
  }
}

/// Vector width the expression's element sizes allow (16 bytes / the smallest element).
template <class D, class E>
constexpr int vec_width_of() {
  constexpr int es = int(sizeof(typename D::value_type));
  constexpr int m = E::min_element_size < es ? E::min_element_size : es;
  return 16 / m;
}

/// Evaluates `e` into destination leaf `d` as `pl` says (no overlap: checked by the caller).
template <class D, class E, int R, int L>
void evaluate_planned(const D& d, const E& e, const eval_plan<R, L>& pl, cudaStream_t stream) {
  using T = std::remove_pointer_t<decltype(d.ptr)>;
  const auto bd = bound_leaf<T, R, typename D::promo_type>{d.ptr, pl.dst, -1};
  // operands read with the streaming L2 policy (CUFUSE_STREAM_L2_HINT; none on the host)
  const auto be = bind<0, CUFUSE_STREAM_L2_HINT>(e, pl.leaves);
  if constexpr (std::is_same_v<typename D::space, host_space>) {
    evaluate_host(bd, be, pl);
  } else {
    evaluate_device(bd, be, pl, stream);
  }
}

/// The common case, checked without building a plan: the destination and every operand are
/// row-major with the destination's shape, 16-byte aligned, and each operand is either the
/// destination itself or disjoint from it. Then the flat kernel runs as it is.
template <class D, class E>
bool is_flat_case(const D& d, const E& e) {
  constexpr index_t int32_limit = index_t(1) << 30;
  const index_t n = d.size();
  const auto lo = reinterpret_cast<std::uintptr_t>(d.ptr);
  const auto hi = lo + std::uintptr_t(n) * sizeof(typename D::value_type);
  bool ok = n < int32_limit && lo % 16 == 0 && is_row_major(d.shp, d.str);
  auto visit = [&](const auto& l) {
    using L = std::remove_cvref_t<decltype(l)>;
    if constexpr (L::rank != D::rank) {
      ok = false;
    } else {
      const auto p = reinterpret_cast<std::uintptr_t>(l.ptr);
      const auto q = p + std::uintptr_t(n) * sizeof(typename L::value_type);
      const bool same = p == lo && sizeof(typename L::value_type) == sizeof(typename D::value_type);
      ok = ok && p % 16 == 0 && l.shp == d.shp && is_row_major(l.shp, l.str) &&
           (same || q <= lo || p >= hi);
    }
  };
  for_each_leaf(e, visit);
  return ok;
}

/// dst = e, with the expression's shape already checked against the destination's.
template <class D, class E>
void evaluate(const D& d, const E& e, cudaStream_t stream) {
  constexpr int R = D::rank > 0 ? D::rank : 1;
  constexpr bool on_device = std::is_same_v<typename D::space, device_space>;
  if constexpr (D::rank > 0) {
    if (is_flat_case(d, e)) {
      eval_plan<R, E::leaf_count> pl{}; // only the flat kernel's fields are read
      pl.kind = eval_kind::flat;
      pl.n = d.size();
      for (int l = 0; l < E::leaf_count; ++l) {
        pl.leaves.smem[l] = -1;
      }
      if constexpr (on_device) {
        evaluate_planned(d, e, pl, stream);
      } else {
        evaluate_flat_host(d, e, pl);
      }
      return;
    }
  }
  extents<R> shape = ones<R>();
  for (int i = 0; i < D::rank; ++i) {
    shape[i] = d.shp[i];
  }
  const auto pl = make_plan<R, E::leaf_count>(destination_info<R>(d), shape, operands_of<R>(e),
                                              vec_width_of<D, E>(), on_device);
  if (!pl.temporary) {
    evaluate_planned(d, e, pl, stream);
    return;
  }
  // The destination overlaps an operand read at other elements: evaluate the whole right-hand
  // side first (into stream-ordered scratch), then copy.
  using T = typename D::value_type;
  tensor<T, D::rank, typename D::space> scratch(d.shp, stream);
  const auto s = scratch.mutable_node();
  evaluate_planned(s, e,
                   make_plan<R, E::leaf_count>(destination_info<R>(s), shape, operands_of<R>(e),
                                               vec_width_of<D, E>(), on_device),
                   stream);
  const auto copy = scratch.node();
  evaluate_planned(d, copy,
                   make_plan<R, 1>(destination_info<R>(d), shape, operands_of<R>(copy),
                                   vec_width_of<D, decltype(copy)>(), on_device),
                   stream);
}

/// Throws when writing through `d` would write some element twice (a repeated dimension).
template <class D>
void check_writable(const D& d) {
  for (int i = 0; i < D::rank; ++i) {
    if (d.shp[i] > 1 && d.str[i] == 0) {
      throw shape_error("cufuse: cannot assign to a view that repeats elements (stride 0 along "
                        "dimension " +
                        std::to_string(i) + " of shape " + d.shp.to_string() + ")");
    }
  }
}

} // namespace detail

/// Evaluates `src` (expression, tensor, view or scalar) into `dst` (tensor or view) on `stream`:
/// one kernel for a device destination, a loop for a host one. The expression's shape must equal
/// the destination's (its operands broadcast among themselves, not into the destination), except
/// that a scalar or rank-0 expression fills. Throws shape_error naming both shapes otherwise.
/// Aliasing: reading the destination at the element being written (A = A * 2 + B) is one kernel;
/// when the destination overlaps an operand read at other elements (a shifted slice of itself,
/// X = transpose(X)), the right-hand side is evaluated into a temporary first, as if it were
/// evaluated before the assignment.
template <class Dst, class Src>
void assign(Dst&& dst, const Src& src, cudaStream_t stream) {
  const auto d = detail::destination_node(dst);
  const auto e = detail::to_node(src);
  using D = std::remove_cvref_t<decltype(d)>;
  using E = std::remove_cvref_t<decltype(e)>;
  static_assert(E::rank == 0 || E::rank == D::rank,
                "cufuse: the expression's rank differs from the destination's rank (operands "
                "broadcast among themselves, not into the destination)");
  static_assert(std::is_same_v<typename E::space, any_space> ||
                    std::is_same_v<typename E::space, typename D::space>,
                "cufuse: cannot assign a host expression to a device tensor or the reverse; copy "
                "with upload()/download()");
  if constexpr (std::is_same_v<typename D::space, host_space>) {
    static_assert(detail::host_callable<E>::value,
                  "cufuse: this expression holds a __device__-only lambda, so it cannot run on "
                  "host tensors; make the lambda __host__ __device__");
  }
  if constexpr (E::rank > 0) {
    const auto es = e.shape();
    if (!(es == d.shape())) {
      throw shape_error("cufuse: cannot assign an expression of shape " + es.to_string() +
                        " to a destination of shape " + d.shape().to_string());
    }
  }
  if (d.size() == 0) {
    return;
  }
  detail::check_writable(d);
  if constexpr (detail::has_reduction<E>()) {
    detail::evaluate_reductions(d, e, stream);
  } else {
    detail::evaluate(d, e, stream);
  }
}

/// assign on the current stream.
template <class Dst, class Src>
void assign(Dst&& dst, const Src& src) {
  assign(static_cast<Dst&&>(dst), src, current_stream());
}

} // namespace cufuse

// Reductions inside assignments (it includes this file: keep it last).
#include "../reduce/evaluate.cuh"

#ifdef CUFUSE_DETAIL_FIRST_EVAL_ASSIGN_CUH
#undef CUFUSE_DETAIL_FIRST_EVAL_ASSIGN_CUH
#undef CUFUSE_DETAIL_FIRST
#endif
