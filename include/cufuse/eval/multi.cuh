/// \file Several outputs from ONE kernel: `cufuse::tie(A, B) = cufuse::pack(e1, e2);`.
/// Outputs (2 to 4) share one shape; their expressions broadcast as usual. In the row form
/// (reductions along the innermost axis, reduce/rows.cuh) an output may also be one value per
/// row (shape [..., 1]): layer_norm's output with its per-row mean and rstd.
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_EVAL_MULTI_CUH
#endif

#include "../reduce/evaluate.cuh"

#include <string>

namespace cufuse {
namespace detail {

/// Every position of `shape` (rank R), outputs[k] = exprs[k], unbound trees evaluated at
/// coordinates (each leaf through its own strides).
template <int R, std::size_t K, class Dsts, class Exprs>
__global__ void __launch_bounds__(eval_block_size)
    multi_kernel(Dsts dsts, Exprs exprs, row_walk<R> w, index_t total) {
  pdl_release(); // the next kernel may set itself up (core/pdl.cuh)
  pdl_wait();    // a dependent launch: the previous kernel's results first
  for (index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += index_t(gridDim.x) * blockDim.x) {
    coords<R, index_t> p{};
    std::uint64_t rest = std::uint64_t(i);
    for (int d = R - 1; d >= 0; --d) {
      std::uint64_t q = rest;
      if (d > 0) {
        w.div[d].divmod(rest, rest, q);
      }
      p.c[d] = index_t(q);
    }
    for_index_device<K>([&](auto k) {
      const auto& dst = get<std::remove_cvref_t<decltype(k)>::value>(dsts);
      using T = typename std::remove_cvref_t<decltype(dst)>::value_type;
      dst.ptr[offset_at(dst.str, p)] =
          convert<T>(get<std::remove_cvref_t<decltype(k)>::value>(exprs).eval_in(p));
    });
  }
}

/// outputs[k] = exprs[k] in one kernel, every tree free of reductions and no output overlapping
/// an operand at other elements (checked by the caller).
template <int R, class... Ds, class... Es>
void evaluate_multi(const extents<R>& shape, const pack<Ds...>& dsts, const pack<Es...>& exprs,
                    cudaStream_t stream) {
  constexpr std::size_t K = sizeof...(Es);
  using Space = typename get_first<Ds...>::type::space;
  row_walk<R> w{};
  for (int d = 0; d < R; ++d) {
    w.div[d] = fast_divmod<std::uint64_t>(std::uint64_t(shape[d] > 0 ? shape[d] : 1));
  }
  const index_t total = shape.size();
  if constexpr (std::is_same_v<Space, host_space>) {
    for (index_t i = 0; i < total; ++i) {
      const auto p = unravel(i, shape);
      for_index<K>([&](auto k) {
        const auto& dst = get<std::remove_cvref_t<decltype(k)>::value>(dsts);
        using T = typename std::remove_cvref_t<decltype(dst)>::value_type;
        dst.ptr[offset_at(dst.str, p)] =
            convert<T>(get<std::remove_cvref_t<decltype(k)>::value>(exprs).eval_in(p));
      });
    }
  } else {
    constexpr auto kernel = &multi_kernel<R, K, pack<Ds...>, pack<Es...>>;
    const std::int64_t blocks = (total + eval_block_size - 1) / eval_block_size;
    const std::int64_t cap = cached_max_grid<kernel>();
    const unsigned grid = unsigned(blocks < cap ? blocks : cap);
    launch_eval<kernel>(grid, eval_block_size, 0, stream, no_attribute(), dsts, exprs, w, total);
    check_launch<typename get_first<Ds...>::type::value_type>("multi_kernel<<<>>>", total, grid,
                                                              eval_block_size, stream);
  }
}

/// True when some output overlaps an operand read at other elements, or another output.
template <int R, class... Ds, class... Es>
bool multi_aliases(const extents<R>& shape, const pack<Ds...>& dsts, const pack<Es...>& exprs) {
  bool alias = false;
  for_index<sizeof...(Ds)>([&](auto k) {
    const auto di = destination_info<R>(get<std::remove_cvref_t<decltype(k)>::value>(dsts));
    for_index<sizeof...(Es)>([&](auto j) {
      for (const auto& o : operands_of<R>(get<std::remove_cvref_t<decltype(j)>::value>(exprs))) {
        alias = alias || overlaps_elsewhere(di, o, shape);
      }
      if constexpr (std::remove_cvref_t<decltype(j)>::value !=
                    std::remove_cvref_t<decltype(k)>::value) {
        const auto dj = destination_info<R>(get<std::remove_cvref_t<decltype(j)>::value>(dsts));
        alias =
            alias || overlaps_elsewhere(di, dj, shape) || (di.ptr == dj.ptr && shape.size() > 0);
      }
    });
  });
  return alias;
}

template <class... Ds, class... Es>
void assign_multi(const pack<Ds...>& dsts, const pack<Es...>& exprs, cudaStream_t stream) {
  constexpr std::size_t K = sizeof...(Ds);
  static_assert(sizeof...(Es) == K,
                "cufuse::tie(...) = cufuse::pack(...): as many expressions as outputs");
  static_assert(K >= 2 && K <= 4, "cufuse::tie / pack: 2 to 4 outputs");
  using D0 = typename get_first<Ds...>::type;
  constexpr int R = D0::rank;
  using Space = typename D0::space;
  static_assert(((Ds::rank == R) && ...), "cufuse::tie: every output must have the same rank");
  static_assert((std::is_same_v<typename Ds::space, Space> && ...),
                "cufuse::tie: outputs must all be device tensors or all host tensors");
  static_assert(((Es::rank == 0 || Es::rank == R) && ...),
                "cufuse::pack: each expression's rank must be the outputs' rank (or 0)");
  static_assert(((std::is_same_v<typename Es::space, any_space> ||
                  std::is_same_v<typename Es::space, Space>)&&...),
                "cufuse::pack: cannot mix host and device tensors");
  // The full shape: the largest extent of each dimension over the outputs.
  extents<R> shape = get<0>(dsts).shape();
  for_index<K>([&](auto k) {
    const auto s = get<std::remove_cvref_t<decltype(k)>::value>(dsts).shape();
    for (int d = 0; d < R; ++d) {
      shape[d] = s[d] > shape[d] ? s[d] : shape[d];
    }
  });
  bool ok = true, per_row = false;
  std::string names;
  for_index<K>([&](auto k) {
    const auto& dst = get<std::remove_cvref_t<decltype(k)>::value>(dsts);
    const auto& e = get<std::remove_cvref_t<decltype(k)>::value>(exprs);
    const auto s = dst.shape();
    const bool full = s == shape;
    bool row = R >= 1 && !full;
    for (int d = 0; d < R; ++d) {
      row = row && (d == R - 1 ? s[d] == 1 : s[d] == shape[d]);
    }
    per_row = per_row || row;
    bool match = full || row;
    if constexpr (std::remove_cvref_t<decltype(e)>::rank > 0) {
      match = match && e.shape() == s;
      names += (names.empty() ? "" : "; ") + std::string("output ") + s.to_string() +
               " <- expression " + e.shape().to_string();
    } else {
      names += (names.empty() ? "" : "; ") + std::string("output ") + s.to_string() +
               " <- a rank-0 expression";
    }
    ok = ok && match;
    check_writable(dst);
  });
  if (!ok) {
    throw shape_error("cufuse::tie(...) = pack(...): the outputs must share one shape (or, in "
                      "the row form, be one value per row [..., 1]) and each expression must "
                      "have its output's shape: " +
                      names);
  }
  if (shape.size() == 0) {
    return;
  }
  if constexpr (std::is_same_v<Space, device_space> && R >= 1) {
    constexpr bool fusable = (row_fusable<Es>(R) && ...) && (has_reduction<Es>() || ...) &&
                             (0 + ... + reduction_count<Es>()) <= max_row_slots;
    if constexpr (fusable) {
      if (try_rows_multi<R>(shape, dsts, exprs, stream)) {
        return;
      }
    }
  }
  if (per_row || multi_aliases(shape, dsts, exprs)) {
    // Not one kernel: each output in turn, every right-hand side evaluated first when an output
    // overlaps an operand (as if all were evaluated before any is written).
    temporaries keep;
    auto firsts = [&]<std::size_t... Ks>(std::index_sequence<Ks...>) {
      return make_pack([&] {
        using E = std::remove_cvref_t<decltype(get<Ks>(exprs))>;
        using V = typename E::value_type;
        auto t = std::make_shared<tensor<V, R, Space>>(get<Ks>(dsts).shape(), stream);
        keep.push_back(t);
        cufuse::assign(*t, get<Ks>(exprs), stream);
        return t->node();
      }()...);
    }(std::make_index_sequence<K>{});
    for_index<K>([&](auto k) {
      evaluate(get<std::remove_cvref_t<decltype(k)>::value>(dsts),
               get<std::remove_cvref_t<decltype(k)>::value>(firsts), stream);
    });
    return;
  }
  temporaries temps;
  const auto flat = [&]<std::size_t... Ks>(std::index_sequence<Ks...>) {
    return make_pack(materialize(get<Ks>(exprs), temps, stream)...);
  }(std::make_index_sequence<K>{});
  evaluate_multi<R>(shape, dsts, flat, stream);
}

/// The outputs of tie(...): assigning a pack(...) evaluates every expression in one kernel.
template <class... Ds>
struct tied {
  pack<Ds...> dsts;
  template <class... Es>
  const tied& operator=(const pack<Es...>& exprs) const {
    assign_multi(dsts, exprs, current_stream());
    return *this;
  }
};

} // namespace detail

/// Outputs (tensors or views) for one multi-output assignment: `tie(A, B) = pack(e1, e2)`.
template <class... Xs>
auto tie(Xs&&... xs) {
  return detail::tied<decltype(detail::destination_node(xs))...>{
      detail::make_pack(detail::destination_node(xs)...)};
}

/// Expressions for one multi-output assignment.
template <operand... Xs>
auto pack(const Xs&... xs) {
  return detail::make_pack(detail::to_node(xs)...);
}

} // namespace cufuse

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_EVAL_MULTI_CUH
#undef CUFUSE_DETAIL_FIRST_EVAL_MULTI_CUH
#undef CUFUSE_DETAIL_FIRST
#include "assign.cuh"
#endif
