/// \file The row kernel: ONE kernel for an expression whose reductions all run along the
/// innermost axis of operands of the destination's shape, kept with extent 1 (softmax,
/// log_softmax, layer_norm, rms_norm, `X - amax(X, -1, keepdim)`, written by hand or through
/// the convenience functions). A block owns a row at a time:
///  1. it copies the row of every operand read more than once (X in softmax) into shared
///     memory: the only read of that row from global memory;
///  2. it computes the reductions, inner ones first (softmax's amax before its sum), each
///     thread folding its columns and the block merging (CUB warp reductions), the result in a
///     shared slot;
///  3. it evaluates the expression at every column, reductions reading their slots, and stores.
/// Rows too long for the shared-memory budget are not staged: each reduction then reads the
/// row from global memory again (L2 often holds it), a multi-pass scheme, still one kernel.
#pragma once

#include "../eval/launch.cuh"
#include "kernels.cuh"

#include <array>
#include <cstring>

namespace cufuse::detail {

/// Shared memory the row kernel may use for staged rows (it opts in beyond 48 KB).
inline constexpr int rows_smem_budget = 96 * 1024;
inline constexpr int max_row_slots = 16;

/// Where the row kernel evaluates: column j of the current row; staged rows; reduction slots.
struct row_pos {
  index_t j;
  const unsigned char* smem;
  const unsigned char* slots;
};

/// A leaf in the row kernel: `ptr` is rebased to the current row, `last` is its stride along
/// the row (0: repeated), `rstr` its strides along the row's leading coordinates.
template <class T, int Rank>
struct row_leaf {
  using value_type = std::remove_const_t<T>;
  using promo_type = std::conditional_t<Rank == 0, zero_dim<value_type>, value_type>;
  using space = any_space;
  using compute_type = opmath_t<value_type>;
  static constexpr int rank = Rank;
  static constexpr bool is_cufuse_node = true;
  static constexpr int min_element_size = int(sizeof(value_type));
  static constexpr int leaf_count = 1;

  T* ptr;
  strides<Rank> str;
  int smem;   // byte offset of its staged row, -1: read from memory
  bool stage; // the first leaf with this staged row copies it
  bool vec;   // its rows are contiguous and 16-byte aligned: staged in 16-byte copies

  CUFUSE_INLINE index_t last() const {
    if constexpr (Rank == 0) {
      return 0;
    } else {
      return str[Rank - 1];
    }
  }
  CUFUSE_INLINE compute_type eval_in(const row_pos& p) const {
    if (smem >= 0) {
      return convert<compute_type>(reinterpret_cast<const value_type*>(p.smem + smem)[p.j]);
    }
    return convert<compute_type>(ptr[p.j * last()]);
  }
};

/// A reduction in the row kernel: its value for the current row sits in slot `Slot`.
template <class Red, class Arg, class In, int Slot>
struct row_reduce {
  using value_type = typename Red::template result<In>;
  using promo_type = value_type;
  using space = any_space;
  using compute_type = opmath_t<value_type>;
  using input_type = In;
  static constexpr int rank = Arg::rank;
  static constexpr bool is_cufuse_node = true;
  static constexpr int min_element_size = 16;
  static constexpr int leaf_count = 0;
  static constexpr int slot = Slot;

  Red red;
  Arg arg;
  int from; // the slot that holds its value: Slot, or an earlier identical reduction's

  CUFUSE_INLINE compute_type eval_in(const row_pos& p) const {
    return *reinterpret_cast<const compute_type*>(p.slots + 8 * from);
  }
};

template <class T, class... Ts>
struct get_first {
  using type = T;
};

template <class N>
inline constexpr bool is_row_reduce_v = false;
template <class Red, class Arg, class In, int Slot>
inline constexpr bool is_row_reduce_v<row_reduce<Red, Arg, In, Slot>> = true;
template <class N>
inline constexpr bool is_row_leaf_v = false;
template <class T, int Rank>
inline constexpr bool is_row_leaf_v<row_leaf<T, Rank>> = true;

// ---- counting and checking the user's tree ---------------------------------------------------

/// Leaves of N, those inside reductions included.
template <class N>
constexpr int all_leaves() {
  if constexpr (is_leaf_node_v<N>) {
    return 1;
  } else if constexpr (is_reduce_node_v<N>) {
    return all_leaves<typename N::arg_type>();
  } else if constexpr (map_arity<N>::value > 0) {
    return []<class Op, class... Args>(map_node<Op, Args...>*) {
      return (0 + ... + all_leaves<Args>());
    }(static_cast<N*>(nullptr));
  } else {
    return 0;
  }
}

/// Reductions in N, nested ones included.
template <class N>
constexpr int reduction_count() {
  if constexpr (is_reduce_node_v<N>) {
    return 1 + reduction_count<typename N::arg_type>();
  } else if constexpr (map_arity<N>::value > 0) {
    return []<class Op, class... Args>(map_node<Op, Args...>*) {
      return (0 + ... + reduction_count<Args>());
    }(static_cast<N*>(nullptr));
  } else {
    return 0;
  }
}

/// True when every reduction of N keeps one axis of a rank-R operand (the row form, as far as
/// types tell; the axis and the shapes are checked at run time).
template <class N>
constexpr bool row_fusable_types(int r) {
  if constexpr (is_reduce_node_v<N>) {
    return N::keep && N::axes == 1 && N::arg_rank == r &&
           row_fusable_types<typename N::arg_type>(r);
  } else if constexpr (map_arity<N>::value > 0) {
    return [r]<class Op, class... Args>(map_node<Op, Args...>*) {
      return (row_fusable_types<Args>(r) && ...);
    }(static_cast<N*>(nullptr));
  } else {
    return true;
  }
}

template <class E>
constexpr bool row_fusable(int r) {
  return r >= 1 && E::rank == r && reduction_count<E>() <= max_row_slots &&
         row_fusable_types<E>(r);
}

// ---- binding ---------------------------------------------------------------------------------

template <int R, int L>
struct row_layout {
  int smem[L > 0 ? L : 1];
  bool stage[L > 0 ? L : 1];
  bool vec[L > 0 ? L : 1];
  int from[max_row_slots]; // per slot: the slot that computes it (itself unless a duplicate)
};

/// A distinct address per type: compares node types at run time.
template <class N>
inline constexpr char type_tag = 0;

template <int FirstLeaf, int FirstSlot, int R, int L, class N>
auto bind_rows(const N& n, const row_layout<R, L>& lay);

template <int FirstLeaf, int FirstSlot, int R, int L, class Op, class... Args, std::size_t... Is>
auto bind_rows_map(const map_node<Op, Args...>& m, const row_layout<R, L>& lay,
                   std::index_sequence<Is...>) {
  constexpr int leaves[] = {all_leaves<Args>()...};
  constexpr int slots[] = {reduction_count<Args>()...};
  constexpr auto first = [](const int* c, std::size_t i, int base) {
    for (std::size_t k = 0; k < i; ++k) {
      base += c[k];
    }
    return base;
  };
  return map_node<Op, decltype(bind_rows<first(leaves, Is, FirstLeaf), first(slots, Is, FirstSlot)>(
                          get<Is>(m.args), lay))...>{
      m.op, make_pack(bind_rows<first(leaves, Is, FirstLeaf), first(slots, Is, FirstSlot)>(
                get<Is>(m.args), lay)...)};
}

/// The tree the row kernel evaluates: leaves numbered from FirstLeaf in tree order (those
/// inside reductions included), reductions numbered from FirstSlot in post-order.
template <int FirstLeaf, int FirstSlot, int R, int L, class N>
auto bind_rows(const N& n, const row_layout<R, L>& lay) {
  if constexpr (is_leaf_node_v<N>) {
    using T = std::remove_pointer_t<decltype(n.ptr)>;
    return row_leaf<T, N::rank>{n.ptr, n.str, lay.smem[FirstLeaf], lay.stage[FirstLeaf],
                                lay.vec[FirstLeaf]};
  } else if constexpr (is_reduce_node_v<N>) {
    auto arg = bind_rows<FirstLeaf, FirstSlot>(n.arg, lay);
    constexpr int slot = FirstSlot + reduction_count<typename N::arg_type>();
    return row_reduce<typename N::reducer_type, decltype(arg), typename N::input_type, slot>{
        n.red, arg, lay.from[slot]};
  } else if constexpr (map_arity<N>::value > 0) {
    return bind_rows_map<FirstLeaf, FirstSlot>(n, lay,
                                               std::make_index_sequence<map_arity<N>::value>{});
  } else {
    return n;
  }
}

// ---- walking the bound tree in the kernel ------------------------------------------------------

/// Calls f(leaf) for each row_leaf, and f(reduction) for each row_reduce after its argument's
/// (post-order), through maps.
#pragma nv_exec_check_disable
template <class N, class F>
CUFUSE_HOST_DEVICE void for_each_row_node(N& n, F& f) {
  if constexpr (is_row_leaf_v<N>) {
    f(n);
  } else if constexpr (is_row_reduce_v<N>) {
    for_each_row_node(n.arg, f);
    f(n);
  } else if constexpr (map_arity<N>::value > 0) {
    [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      (for_each_row_node(get<Is>(n.args), f), ...);
    }(std::make_index_sequence<map_arity<N>::value>{});
  }
}

/// The row geometry: `rows` rows of `n` columns; leading coordinates unravel over `shape`.
template <int R>
struct row_walk {
  index_t rows = 0, n = 0;
  extents<R> shape;
  fast_divmod<std::uint64_t> div[R];
};

/// An output of the row kernel: the whole row, or (per_row) one value per row at column 0.
template <class T, int R>
struct row_out {
  T* ptr;
  strides<R> str;
  bool per_row;
  bool vec; // rows contiguous and 16-byte aligned: 16-byte stores
};

/// Moves every leaf's pointer to the start of row `c` (the leading coordinates).
template <int R, class Tree>
CUFUSE_DEVICE void rebase(Tree& t, const coords<R, index_t>& c) {
  auto f = [&](auto& node) {
    using X = std::remove_cvref_t<decltype(node)>;
    if constexpr (is_row_leaf_v<X>) {
      index_t off = 0;
      if constexpr (X::rank > 1) {
        for (int d = 0; d < X::rank - 1; ++d) {
          off += c.c[R - X::rank + d] * node.str[d];
        }
      }
      node.ptr += off;
    }
  };
  for_each_row_node(t, f);
}

/// f(integral_constant<k>) for k < N, on the host.
template <std::size_t N, class F>
void for_index(F&& f) {
  [&]<std::size_t... Ks>(std::index_sequence<Ks...>) {
    (f(std::integral_constant<std::size_t, Ks>{}), ...);
  }(std::make_index_sequence<N>{});
}
/// The same in a kernel.
template <std::size_t N, class F>
CUFUSE_DEVICE void for_index_device(F&& f) {
  [&]<std::size_t... Ks>(std::index_sequence<Ks...>) {
    (f(std::integral_constant<std::size_t, Ks>{}), ...);
  }(std::make_index_sequence<N>{});
}

/// Trees and Outs: packs of K bound trees and their outputs (tie / pack: K > 1).
template <int R, std::size_t K, class Trees, class Outs>
__global__ void __launch_bounds__(1024) rows_kernel(Outs outs, Trees trees, row_walk<R> w) {
  extern __shared__ __align__(16) unsigned char staged[];
  __shared__ __align__(8) unsigned char slots[8 * max_row_slots];
  const index_t n = w.n;
  const int tid = int(threadIdx.x), threads = int(blockDim.x);
  for (index_t row = blockIdx.x; row < w.rows; row += gridDim.x) {
    coords<R, index_t> c{};
    std::uint64_t rest = std::uint64_t(row);
    for (int d = R - 2; d >= 0; --d) {
      std::uint64_t q = rest;
      if (d > 0) {
        w.div[d].divmod(rest, rest, q);
      }
      c.c[d] = index_t(q);
    }
    Trees t = trees;
    for_index_device<K>([&](auto k) { rebase(get<std::remove_cvref_t<decltype(k)>::value>(t), c); });
    // 1. stage the rows read more than once
    auto stage = [&](auto& node) {
      using X = std::remove_cvref_t<decltype(node)>;
      if constexpr (is_row_leaf_v<X>) {
        if (node.stage) {
          auto* dst = reinterpret_cast<typename X::value_type*>(staged + node.smem);
          if (node.vec) {
            constexpr int V = 16 / int(sizeof(typename X::value_type));
            const auto* src = reinterpret_cast<const uint4*>(node.ptr);
            auto* to = reinterpret_cast<uint4*>(dst);
            const int words = int(n / V);
            for (int j = tid; j < words; j += threads) {
              to[j] = src[j];
            }
          } else {
            const index_t s = node.last();
            for (index_t j = tid; j < n; j += threads) {
              dst[j] = node.ptr[j * s];
            }
          }
        }
      }
    };
    for_index_device<K>([&](auto k) { for_each_row_node(get<std::remove_cvref_t<decltype(k)>::value>(t), stage); });
    __syncthreads();
    // 2. the reductions, inner ones first
    auto reduce = [&](auto& node) {
      using X = std::remove_cvref_t<decltype(node)>;
      if constexpr (is_row_reduce_v<X>) {
        if (node.from != X::slot) {
          return; // an identical reduction computed it already
        }
        using In = typename X::input_type;
        auto s = node.red.template init<In>();
        for (index_t j = tid; j < n; j += threads) {
          node.red.template add<In>(s, node.arg.eval_in(row_pos{j, staged, slots}), j);
        }
        s = block_fold<In>(node.red, s);
        if (tid == 0) {
          *reinterpret_cast<typename X::compute_type*>(slots + 8 * X::slot) =
              node.red.template finish<In>(s, n);
        }
        __syncthreads();
      }
    };
    for_index_device<K>([&](auto k) { for_each_row_node(get<std::remove_cvref_t<decltype(k)>::value>(t), reduce); });
    // 3. the maps, stored
    for_index_device<K>([&](auto k) {
      const auto& o = get<std::remove_cvref_t<decltype(k)>::value>(outs);
      using T = std::remove_pointer_t<decltype(o.ptr)>;
      index_t off = 0;
      for (int d = 0; d < R - 1; ++d) {
        off += c.c[d] * o.str[d];
      }
      T* dst = o.ptr + off;
      const index_t os = o.str[R - 1];
      const auto& tree = get<std::remove_cvref_t<decltype(k)>::value>(t);
      if (o.vec) {
        constexpr int V = 16 / int(sizeof(T));
        lane_regs<T, V> r;
        for (int jv = tid; jv < int(n / V); jv += threads) {
          CUFUSE_UNROLL
          for (int u = 0; u < V; ++u) {
            r.v[u] = convert<T>(tree.eval_in(row_pos{index_t(jv) * V + u, staged, slots}));
          }
          reinterpret_cast<uint4*>(dst)[jv] = *reinterpret_cast<const uint4*>(r.v);
        }
      } else {
        const index_t end = o.per_row ? 1 : n;
        for (index_t j = tid; j < end; j += threads) {
          dst[j * os] = convert<T>(tree.eval_in(row_pos{j, staged, slots}));
        }
      }
    });
    __syncthreads(); // the next row reuses the staged rows and slots
  }
}

/// Visits the user's trees: f on reductions (post-order) and leaves, through maps.
template <class N, class F>
void visit_tree(const N& node, F& f) {
  if constexpr (is_reduce_node_v<N>) {
    visit_tree(node.arg, f);
    f(node);
  } else if constexpr (is_leaf_node_v<N>) {
    f(node);
  } else if constexpr (map_arity<N>::value > 0) {
    [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      (visit_tree(get<Is>(node.args), f), ...);
    }(std::make_index_sequence<map_arity<N>::value>{});
  }
}

template <class... Es>
constexpr int leaves_before(std::size_t k) {
  const int c[] = {all_leaves<Es>()..., 0};
  int s = 0;
  for (std::size_t i = 0; i < k; ++i) {
    s += c[i];
  }
  return s;
}
template <class... Es>
constexpr int slots_before(std::size_t k) {
  const int c[] = {reduction_count<Es>()..., 0};
  int s = 0;
  for (std::size_t i = 0; i < k; ++i) {
    s += c[i];
  }
  return s;
}

/// Runs outputs[k] = exprs[k] (k < K) as ONE row kernel when the shapes and axes allow; false
/// otherwise (nothing was issued). `shape`: the full shape; an output whose shape has extent 1
/// in the last dimension where `shape` does not is written once per row.
template <int R, class... Ds, class... Es>
bool try_rows_multi(const extents<R>& shape, const pack<Ds...>& dsts, const pack<Es...>& exprs,
                    cudaStream_t stream) {
  constexpr std::size_t K = sizeof...(Es);
  constexpr int L = (0 + ... + all_leaves<Es>());
  static_assert((0 + ... + reduction_count<Es>()) <= max_row_slots);
  bool ok = shape[R - 1] > 0;
  auto check = [&](const auto& node) {
    using N = std::remove_cvref_t<decltype(node)>;
    if constexpr (is_reduce_node_v<N>) {
      ok = ok && node.mask == (1u << (R - 1)) && node.arg.shape() == shape;
    }
  };
  for_index<K>([&](auto k) { visit_tree(get<std::remove_cvref_t<decltype(k)>::value>(exprs), check); });
  if (!ok) {
    return false;
  }
  const index_t n = shape[R - 1];
  // Leaves in tree order (inside reductions too); rows read twice or more are staged once.
  struct info {
    const void* ptr;
    int elem;
    strides<R> str;
  };
  std::array<info, (L > 0 ? L : 1)> leaves{};
  int next = 0;
  auto collect = [&](const auto& node) {
    using N = std::remove_cvref_t<decltype(node)>;
    if constexpr (is_leaf_node_v<N>) {
      info& i = leaves[next++];
      i.ptr = node.ptr;
      i.elem = int(sizeof(typename N::value_type));
      for (int k = 0; k < R; ++k) {
        const int s = k - (R - N::rank);
        i.str[k] = s >= 0 ? node.str[s] : 0;
      }
    }
  };
  for_index<K>([&](auto k) { visit_tree(get<std::remove_cvref_t<decltype(k)>::value>(exprs), collect); });
  // An output that overlaps an operand read at other elements (a shifted or transposed view of
  // it) would be read after it is written: not this kernel. The same layout is fine: a row is
  // read whole before it is written.
  bool alias = false;
  for_index<K>([&](auto k) {
    const auto& dst = get<std::remove_cvref_t<decltype(k)>::value>(dsts);
    operand_info<R> di{};
    di.ptr = dst.ptr;
    di.elem = int(sizeof(typename std::remove_cvref_t<decltype(dst)>::value_type));
    di.str = dst.str;
    for (int l = 0; l < L; ++l) {
      operand_info<R> o{};
      o.ptr = leaves[l].ptr;
      o.elem = leaves[l].elem;
      o.str = leaves[l].str;
      alias = alias || overlaps_elsewhere(di, o, shape);
    }
  });
  if (alias) {
    return false;
  }
  row_layout<R, L> lay{};
  int bytes = 0;
  // Rows that are contiguous, 16-byte aligned and a whole number of 16-byte words move in
  // 16-byte accesses.
  auto rows_aligned = [&](const void* p, int elem, const strides<R>& st) {
    if (st[R - 1] != 1 || reinterpret_cast<std::uintptr_t>(p) % 16 != 0 || (n * elem) % 16 != 0) {
      return false;
    }
    for (int d = 0; d < R - 1; ++d) {
      if ((st[d] * elem) % 16 != 0) {
        return false;
      }
    }
    return true;
  };
  for (int l = 0; l < L; ++l) {
    lay.smem[l] = -1;
    lay.stage[l] = false;
    lay.vec[l] = rows_aligned(leaves[l].ptr, leaves[l].elem, leaves[l].str);
    int uses = 0, first = -1;
    for (int k = 0; k < L; ++k) {
      if (leaves[k].ptr == leaves[l].ptr && leaves[k].elem == leaves[l].elem &&
          leaves[k].str == leaves[l].str) {
        ++uses;
        first = first < 0 ? k : first;
      }
    }
    if (uses < 2 || leaves[l].str[R - 1] == 0) {
      continue;
    }
    if (first < l) {
      lay.smem[l] = lay.smem[first];
      continue;
    }
    const index_t need = (n * leaves[l].elem + 15) / 16 * 16;
    if (bytes + need <= rows_smem_budget) {
      lay.smem[l] = bytes;
      lay.stage[l] = true;
      bytes += int(need);
    }
  }
  // Identical reductions (same type, same bytes: same operands, scalars and parameters) share
  // one slot: layer_norm's mean(x) appears three times and is computed once.
  struct seen {
    const void* type;
    const void* node;
  };
  std::array<seen, max_row_slots> reds{};
  int slot = 0;
  auto dedupe = [&](const auto& node) {
    using N = std::remove_cvref_t<decltype(node)>;
    if constexpr (is_reduce_node_v<N>) {
      lay.from[slot] = slot;
      for (int k = 0; k < slot; ++k) {
        if (reds[k].type == &type_tag<N> && std::memcmp(reds[k].node, &node, sizeof(N)) == 0) {
          lay.from[slot] = lay.from[k];
          break;
        }
      }
      reds[slot++] = {&type_tag<N>, &node};
    }
  };
  for_index<K>([&](auto k) { visit_tree(get<std::remove_cvref_t<decltype(k)>::value>(exprs), dedupe); });
  const auto trees = [&]<std::size_t... Ks>(std::index_sequence<Ks...>) {
    return make_pack(
        bind_rows<leaves_before<Es...>(Ks), slots_before<Es...>(Ks)>(get<Ks>(exprs), lay)...);
  }(std::make_index_sequence<K>{});
  const auto outs = [&]<std::size_t... Ks>(std::index_sequence<Ks...>) {
    return make_pack(row_out<typename Ds::value_type, R>{
        get<Ks>(dsts).ptr, get<Ks>(dsts).str, get<Ks>(dsts).shp[R - 1] == 1 && shape[R - 1] != 1,
        get<Ks>(dsts).shp[R - 1] == shape[R - 1] &&
            rows_aligned(get<Ks>(dsts).ptr, int(sizeof(typename Ds::value_type)),
                         get<Ks>(dsts).str)}...);
  }(std::make_index_sequence<K>{});
  row_walk<R> w{};
  w.n = n;
  w.rows = shape.size() / n;
  w.shape = shape;
  for (int k = 0; k < R; ++k) {
    w.div[k] = fast_divmod<std::uint64_t>(std::uint64_t(shape[k] > 0 ? shape[k] : 1));
  }
  int threads = 64;
  while (threads < 1024 && threads * 8 < n) {
    threads *= 2;
  }
  constexpr auto kernel =
      &rows_kernel<R, K, std::remove_cvref_t<decltype(trees)>, std::remove_cvref_t<decltype(outs)>>;
  if (bytes > 48 * 1024) {
    static std::atomic<bool> opted_in[max_cached_devices] = {};
    int dev = 0;
    CUFUSE_CUDA_CHECK(cudaGetDevice(&dev));
    if (dev < 0 || dev >= max_cached_devices || !opted_in[dev].load()) {
      CUFUSE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             rows_smem_budget));
      if (dev >= 0 && dev < max_cached_devices) {
        opted_in[dev].store(true);
      }
    }
  }
  const index_t grid = w.rows < max_grid_blocks ? w.rows : max_grid_blocks;
  kernel<<<unsigned(grid), threads, bytes, stream>>>(outs, trees, w);
  check_launch<typename get_first<Ds...>::type::value_type>("rows_kernel<<<>>>", shape.size(),
                                                            grid, threads, stream);
  return true;
}

/// dst = e as the row kernel when the shapes and axes allow; false otherwise.
template <class D, class E>
bool try_rows(const D& d, const E& e, cudaStream_t stream) {
  return try_rows_multi<D::rank>(d.shape(), make_pack(d), make_pack(e), stream);
}

} // namespace cufuse::detail
