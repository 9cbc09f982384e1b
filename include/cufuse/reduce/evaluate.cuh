/// \file Assignments of expressions that hold reductions:
///  - `dst = reduce(map)`: one reduction kernel (two when few results split the work);
///  - an expression whose reductions all run along the innermost axis of operands of the
///    destination's shape, kept with extent 1 (softmax, layer_norm, `X - amax(X, -1, keepdim)`):
///    ONE row kernel (reduce/rows.cuh);
///  - anything else: each reduction is first evaluated into a stream-ordered temporary, inner
///    reductions first, then the map reads the temporaries.
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_REDUCE_EVALUATE_CUH
#endif

#include "../eval/assign.cuh"
#include "kernels.cuh"
#include "rows.cuh"

#include <memory>
#include <vector>

namespace cufuse::detail {

/// Stream-ordered temporaries that live until the assignment has enqueued its last kernel.
using temporaries = std::vector<std::shared_ptr<void>>;

inline int device_sm_count() {
  static std::atomic<int> cache[max_cached_devices] = {};
  return per_device(cache, [](int dev) {
    int sms = 0;
    CUFUSE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    return sms;
  });
}

/// Blocks of `block` threads of `Kernel` resident on the whole device at once (one full wave);
/// computed on first use per device.
template <auto Kernel>
index_t resident_blocks(int block) {
  static std::atomic<int> cache[max_cached_devices] = {};
  return per_device(cache, [block](int dev) {
    int per_sm = 0;
    CUFUSE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, block, 0));
    (void)dev;
    return device_sm_count() * (per_sm > 0 ? per_sm : 1);
  });
}

/// Enqueues `Kernel` as the finish kernel of a split reduction: where the device and the driver
/// allow, as a programmatic dependent launch, so that its blocks are launched while the kernel
/// that writes the states finishes and wait there for them (pdl_wait) instead of after a launch
/// gap.
template <class T, auto Kernel, class... Args>
void launch_dependent(const char* name, index_t results, unsigned grid, cudaStream_t stream,
                      Args... args) {
  const cudaError_t e =
      launch_maybe_dependent<Kernel>(dim3(grid), dim3(reduce_block), stream, args...);
  if (e != cudaSuccess) {
    throw_cuda(e, name, __FILE__, __LINE__,
               "finishing " + std::to_string(results) + " results, grid " + std::to_string(grid) +
                   "x" + std::to_string(reduce_block));
  }
  check_launch<T>(name, results, grid, reduce_block, stream);
}

/// Enqueues the finish kernel of a split reduction: a thread per result up to 32 splits, or up
/// to 256 when there are results for 8 blocks of threads and the states fit the thread's
/// registers by groups (finish_in_registers); else a block per result.
template <class T, int R, class Red, class In, class Out>
void launch_finish(Out* out, const Red& red, const reduce_geometry<R>& g,
                   const typename Red::template state<In>* partial, cudaStream_t stream) {
  using S = typename Red::template state<In>;
  const bool per_thread = g.splits <= 32 || (finish_in_registers<S> > 1 && g.splits <= 256 &&
                                             g.results >= 8 * index_t(reduce_block));
  if (!per_thread) {
    const unsigned grid = unsigned(g.results < max_grid_blocks ? g.results : max_grid_blocks);
    launch_dependent<T, reduce_finish_kernel<true, R, Red, In, Out>>(
        "reduce_finish_kernel<<<>>> (a block per result)", g.results, grid, stream, out, red, g,
        partial);
  } else {
    const index_t blocks = (g.results + reduce_block - 1) / reduce_block;
    const unsigned grid = unsigned(blocks < max_grid_blocks ? blocks : max_grid_blocks);
    launch_dependent<T, reduce_finish_kernel<false, R, Red, In, Out>>(
        "reduce_finish_kernel<<<>>>", g.results, grid, stream, out, red, g, partial);
  }
}

/// The geometry of reducing `n` into a destination with strides `dst_str` (of the node's shape).
template <class N, int OutRank>
reduce_geometry<N::arg_rank> geometry_of(const N& n, const strides<OutRank>& dst_str) {
  constexpr int R = N::arg_rank;
  reduce_geometry<R> g{};
  const auto in = n.arg.shape();
  int o = 0;
  for (int d = 0; d < R; ++d) {
    g.div[d] = fast_divmod<std::uint64_t>(std::uint64_t(in[d] > 0 ? in[d] : 1));
    if (n.reduces(d)) {
      g.rd[g.nr++] = d;
      g.reduced |= 1u << d;
      g.first_r = g.first_r < 0 ? d : g.first_r;
      g.count *= in[d];
      if (N::keep) {
        ++o;
      }
    } else {
      g.kd[g.nk++] = d;
      g.first_k = g.first_k < 0 ? d : g.first_k;
      g.out_str[d] = in[d] == 1 ? 0 : dst_str[o];
      g.results *= in[d];
      ++o;
    }
  }
  return g;
}

/// True when every leaf of `arg` has arg's shape, is contiguous (row-major) and starts at a
/// multiple of `vec_bytes / widest` elements: a full reduction can then read it flat.
template <class Arg>
bool flat_reducible(const Arg& arg, int widest) {
  const auto shape = arg.shape();
  constexpr int R = Arg::rank;
  bool ok = true;
  auto check = [&](const auto& l) {
    using L = std::remove_cvref_t<decltype(l)>;
    if constexpr (L::rank != R) {
      ok = false;
    } else {
      const int elem = int(sizeof(typename L::value_type));
      ok = ok && l.shp == shape &&
           reinterpret_cast<std::uintptr_t>(l.ptr) % std::uintptr_t(16 / widest * elem) == 0;
      index_t want = 1;
      for (int d = R - 1; d >= 0; --d) {
        ok = ok && (shape[d] == 1 || l.str[d] == want);
        want *= shape[d];
      }
    }
  };
  for_each_leaf(arg, check);
  return ok;
}

/// True when every leaf of `arg` (rank R) is read along the innermost axis either contiguously,
/// with every V-element group 16-byte aligned, or repeated (stride 0), and that axis has a
/// multiple of V elements: the column kernel may then take V results per thread. Fills `lay`
/// with each leaf's strides over arg's axes (right-aligned; 0 where it repeats).
template <int V, class Arg, int R = Arg::rank>
bool columns_vectorizable(const Arg& arg, bound_layout<R, Arg::leaf_count>& lay) {
  const auto shape = arg.shape();
  if (shape[R - 1] % V != 0) {
    return false;
  }
  bool ok = true;
  int l = 0;
  auto check = [&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    constexpr int LR = L::rank;
    strides<R> st{};
    for (int d = 0; d < LR; ++d) {
      st[R - LR + d] = leaf.shp[d] == 1 ? 0 : leaf.str[d];
    }
    if (st[R - 1] == 1) {
      const auto bytes = std::uintptr_t(V) * sizeof(typename L::value_type);
      ok = ok && reinterpret_cast<std::uintptr_t>(leaf.ptr) % bytes == 0;
      for (int d = 0; d < R - 1; ++d) {
        ok = ok && st[d] % V == 0;
      }
    } else {
      ok = ok && st[R - 1] == 0;
    }
    lay.str[l] = st;
    lay.smem[l] = -1;
    ++l;
  };
  for_each_leaf(arg, check);
  return ok;
}

/// The vector column kernel for reducing node N into T with V results per thread and Y rows of
/// threads.
template <int V, int Y, class N, class T>
constexpr auto columns_vec_kernel() {
  using Arg = typename N::arg_type;
  constexpr int R = N::arg_rank;
  return &reduce_columns_vec_kernel<V, Y, CUFUSE_COLUMNS_UNROLL, R, typename N::reducer_type,
                                    bound_t<Arg, R, Arg::leaf_count>, T>;
}

/// A full reduction of contiguous, aligned operands: the flat kernel (split over blocks, then
/// the finish kernel merges the splits). False when the operands do not allow it.
template <class D, class N>
bool try_reduce_flat(const D& d, const N& n, cudaStream_t stream) {
  using T = typename D::value_type;
  using In = typename N::input_type;
  using S = typename N::state_type;
  using Arg = typename N::arg_type;
  constexpr int R = N::arg_rank;
  constexpr int widest = max_leaf_bytes<Arg>() > 0 ? max_leaf_bytes<Arg>() : 1;
  constexpr int V = 16 / widest > 0 ? 16 / widest : 1;
  if (!flat_reducible(n.arg, widest)) {
    return false;
  }
  constexpr int L = Arg::leaf_count;
  bound_layout<1, L> lay{};
  for (int l = 0; l < L; ++l) {
    lay.str[l] = strides<1>{1};
    lay.smem[l] = -1;
  }
  const auto arg = bind<0>(n.arg, lay);
  const index_t count = n.arg.shape().size();
  constexpr auto kernel =
      &reduce_flat_kernel<V, typename N::reducer_type, std::remove_cvref_t<decltype(arg)>, T>;
  // One wave of equal blocks: a second, partial wave would leave SMs idle at the end.
  const index_t target = resident_blocks<kernel>(reduce_block);
  // at least 16 accesses of V per thread in a split
  const index_t per_split = index_t(reduce_block) * V * 16;
  index_t splits = (count + per_split - 1) / per_split;
  splits = splits < target ? splits : target;
  splits = splits > 1 ? splits : 1;
  index_t chunk = (count + splits - 1) / splits;
  chunk = (chunk + V - 1) / V * V;
  splits = (count + chunk - 1) / chunk;
  S* partial = nullptr;
  if (splits > 1) {
    void* p = nullptr;
    CUFUSE_CUDA_CHECK_MSG(cudaMallocAsync(&p, std::size_t(splits) * sizeof(S), stream),
                          "reduction workspace");
    partial = static_cast<S*>(p);
  }
  kernel<<<unsigned(splits), reduce_block, 0, stream>>>(d.ptr, n.red, arg, count, chunk, partial);
  check_launch<T>("reduce_flat_kernel<<<>>>", count, splits, reduce_block, stream);
  if (partial != nullptr) {
    auto g = geometry_of(n, d.str);
    g.splits = int(splits);
    launch_finish<T, R, typename N::reducer_type, In>(d.ptr, n.red, g, partial, stream);
    CUFUSE_CUDA_CHECK(cudaFreeAsync(partial, stream));
  }
  return true;
}

/// Reduces `n` (whose child holds no reductions) into the destination leaf `d` of its shape.
template <class D, class N>
void reduce_into(const D& d, const N& n, cudaStream_t stream) {
  using T = typename D::value_type;
  using In = typename N::input_type;
  using S = typename N::state_type;
  using Arg = typename N::arg_type;
  constexpr int R = N::arg_rank;
  if constexpr (std::is_same_v<typename D::space, host_space>) {
    const auto shape = d.shape();
    const index_t total = shape.size();
    for (index_t i = 0; i < total; ++i) {
      const auto p = unravel(i, shape);
      d.ptr[offset_at(d.str, p)] = convert<T>(n.eval_in(p));
    }
  } else {
    auto g = geometry_of(n, d.str);
    if (g.results == 0) {
      return;
    }
    if (g.results == 1 && g.count > 0 && try_reduce_flat(d, n, stream)) {
      return;
    }
    const int sms = device_sm_count();
    const index_t target = index_t(sms) * 8; // resident blocks of 256 threads, about
    const bool rows = g.nr > 0 && g.rd[g.nr - 1] == R - 1;
    S* partial = nullptr;
    auto workspace = [&](index_t states) {
      void* p = nullptr;
      CUFUSE_CUDA_CHECK_MSG(cudaMallocAsync(&p, std::size_t(states) * sizeof(S), stream),
                            "reduction workspace");
      partial = static_cast<S*>(p);
    };
    if (rows || g.nr == 0) {
      if (g.count <= 1024 && g.results > 1) {
        g.splits = 1;
        g.chunk = g.count;
        const index_t blocks = (g.results + reduce_warps - 1) / reduce_warps;
        const unsigned grid = unsigned(blocks < max_grid_blocks ? blocks : max_grid_blocks);
        reduce_rows_kernel<true, R>
            <<<grid, reduce_block, 0, stream>>>(d.ptr, n.red, n.arg, g, partial);
        check_launch<T>("reduce_rows_kernel<<<>>>", g.results * g.count, grid, reduce_block,
                        stream);
        return;
      }
      index_t splits = 1;
      if (g.results < target) {
        splits = (target + g.results - 1) / g.results;
        const index_t most = (g.count + 4095) / 4096; // at least 4096 elements per split
        splits = splits < most ? splits : most;
        splits = splits > 1 ? splits : 1;
      }
      g.splits = int(splits);
      g.chunk = (g.count + splits - 1) / splits;
      if (splits > 1) {
        workspace(g.results * splits);
      }
      const index_t units = g.results * splits;
      const unsigned grid = unsigned(units < max_grid_blocks ? units : max_grid_blocks);
      reduce_rows_kernel<false, R>
          <<<grid, reduce_block, 0, stream>>>(d.ptr, n.red, n.arg, g, partial);
      check_launch<T>("reduce_rows_kernel<<<>>>", g.results * g.count, grid, reduce_block, stream);
    } else if constexpr (R >= 2) { // a kept innermost axis and a reduced one: rank 2 or more
      // V results per thread where every operand allows 16-byte accesses along the kept
      // innermost axis (reduce_columns_vec_kernel); else one.
      constexpr int widest = max_leaf_bytes<Arg>() > 0 ? max_leaf_bytes<Arg>() : 1;
      constexpr int V = 16 / widest < 8 ? 16 / widest : 8;
      bool vec = false;
      bound_layout<R, Arg::leaf_count> lay{};
      if constexpr (V > 1) {
        vec = columns_vectorizable<V>(n.arg, lay);
      }
      // Rows of threads: 8 (32 threads, 512 bytes of a row each), or 4 when a row of 64 threads
      // covers the whole kept innermost extent (sum(T, 1) on [256, 1024, 256] fp32: 0.80x ->
      // 0.86x copy on the H200, where sum(X, 0) on [8192, 8192] ran 0.91x -> 0.85x; JOURNAL r11).
      constexpr int wide = CUFUSE_COLUMNS_ROWS, narrow = CUFUSE_COLUMNS_ROWS_NARROW;
      const bool short_rows = n.arg.shape()[R - 1] <= index_t(reduce_block / narrow) * V;
      const int Y = vec && short_rows ? narrow : wide;
      const index_t per_block = vec ? index_t(reduce_block / Y) * V : 32;
      const index_t bx = (g.results + per_block - 1) / per_block;
      index_t splits = 1;
      if (vec) {
        // Splits that fill whole waves of resident blocks: at [8192, 8192], 17 splits of 64
        // block columns made 2.06 waves, and the last 0.06 ran on an almost idle GPU.
        index_t resident = 1;
        if constexpr (V > 1) { // the kernel exists only where it can run
          resident = Y == narrow
                         ? resident_blocks<columns_vec_kernel<V, narrow, N, T>()>(reduce_block)
                         : resident_blocks<columns_vec_kernel<V, wide, N, T>()>(reduce_block);
        }
        splits = resident / bx;
        const index_t most = (g.count + 63) / 64; // at least 64 reduced rows per split
        splits = splits < most ? splits : most;
        splits = splits > 1 ? splits : 1;
        splits = splits < 65535 ? splits : 65535;
      } else if (bx < target) {
        splits = (target + bx - 1) / bx;
        const index_t most = (g.count + 63) / 64; // at least 64 reduced rows per split
        splits = splits < most ? splits : most;
        splits = splits > 1 ? splits : 1;
        splits = splits < 65535 ? splits : 65535;
      }
      g.splits = int(splits);
      g.chunk = (g.count + splits - 1) / splits;
      if (splits > 1) {
        workspace(g.results * splits);
      }
      const dim3 grid(unsigned(bx < max_grid_blocks ? bx : max_grid_blocks), unsigned(splits));
      if constexpr (V > 1) {
        if (vec) {
          const auto arg = bind<0>(n.arg, lay);
          const dim3 block(unsigned(reduce_block / Y), unsigned(Y));
          if (Y == narrow) {
            constexpr auto kernel = columns_vec_kernel<V, narrow, N, T>();
            kernel<<<grid, block, 0, stream>>>(d.ptr, n.red, arg, g, partial);
          } else {
            constexpr auto kernel = columns_vec_kernel<V, wide, N, T>();
            kernel<<<grid, block, 0, stream>>>(d.ptr, n.red, arg, g, partial);
          }
          check_launch<T>("reduce_columns_vec_kernel<<<>>>", g.results * g.count, grid.x,
                          reduce_block, stream);
        }
      }
      if (!vec) {
        reduce_columns_kernel<R>
            <<<grid, dim3(32, column_rows), 0, stream>>>(d.ptr, n.red, n.arg, g, partial);
        check_launch<T>("reduce_columns_kernel<<<>>>", g.results * g.count, grid.x, reduce_block,
                        stream);
      }
    }
    if (partial != nullptr) {
      launch_finish<T, R, typename N::reducer_type, In>(d.ptr, n.red, g, partial, stream);
      CUFUSE_CUDA_CHECK(cudaFreeAsync(partial, stream));
    }
  }
}

template <class N>
auto materialize(const N& n, temporaries& temps, cudaStream_t stream);

template <class Op, class... Args, std::size_t... Is>
auto materialize_map(const map_node<Op, Args...>& m, temporaries& temps, cudaStream_t stream,
                     std::index_sequence<Is...>) {
  using M = map_node<Op, decltype(materialize(get<Is>(m.args), temps, stream))...>;
  // Children in order, so that temporaries are produced in tree order.
  auto kids = pack<decltype(materialize(get<Is>(m.args), temps, stream))...>{
      materialize(get<Is>(m.args), temps, stream)...};
  return M{m.op, kids};
}

/// The tree with every reduction replaced by a leaf over a temporary holding its result.
template <class N>
auto materialize(const N& n, temporaries& temps, cudaStream_t stream) {
  if constexpr (!has_reduction<N>()) {
    return n;
  } else if constexpr (is_reduce_node_v<N>) {
    // The compute type (float for half / bf16), as the row kernel's slots: the map that reads
    // it computes in that type anyway, and `exp(X) / sum(exp(X))` in half does not overflow.
    using T = opmath_t<typename N::value_type>;
    using Space = typename N::space;
    const auto child = materialize(n.arg, temps, stream);
    using C = std::remove_cvref_t<decltype(child)>;
    using M = reduce_node<typename N::reducer_type, C, N::keep, N::axes>;
    const M m{n.red, child, n.mask};
    auto t = std::make_shared<tensor<T, N::rank, Space>>(m.shape(), stream);
    temps.push_back(t);
    if (t->size() > 0) {
      reduce_into(t->mutable_node(), m, stream);
    }
    return t->node();
  } else {
    return materialize_map(n, temps, stream, std::make_index_sequence<map_arity<N>::value>{});
  }
}

#ifndef CUFUSE_ROWS_FOR_SUMS
#define CUFUSE_ROWS_FOR_SUMS 1
#endif
/// A reduction of the innermost axis alone without keepdim (`r = sum(X, 1)` on [m, n]) as the
/// row kernel of its keepdim form, writing d viewed as [m, 1]: the row kernel stages each row
/// with every chunk of a thread in flight, where reduce_rows_kernel reads an element at a time.
/// Taken for many rows of moderate length (at least 4 per SM; 1025 to 12288 columns of 4
/// bytes): short rows go to the warp-per-row kernel, few or very long rows split over blocks.
template <class D, class E>
bool try_rows_of_reduction(const D& d, const E& e, cudaStream_t stream) {
  if constexpr (is_reduce_node_v<E>) {
    constexpr int R = E::arg_rank;
    using K = reduce_node<typename E::reducer_type, typename E::arg_type, true, 1>;
    if constexpr (!E::keep && E::axes == 1 && R == D::rank + 1 && D::rank >= 1 &&
                  row_fusable<K>(R)) {
      if (CUFUSE_ROWS_FOR_SUMS == 0 || e.mask != (1u << (R - 1))) {
        return false;
      }
      const auto in = e.arg.shape();
      const index_t n = in[R - 1], rows = in.size() / (n > 0 ? n : 1);
      if (n <= 1024 || n * index_t(max_leaf_bytes<typename E::arg_type>()) > 48 * 1024 ||
          rows < 4 * index_t(device_sm_count())) {
        return false;
      }
      extents<R> shp;
      strides<R> str;
      for (int k = 0; k < R - 1; ++k) {
        shp[k] = d.shp[k];
        str[k] = d.str[k];
      }
      shp[R - 1] = 1;
      str[R - 1] = 0;
      const leaf<typename D::value_type, R, device_space> kept{d.ptr, shp, str};
      // the row kernel walks the operand's shape; an output of extent 1 there is per row
      return try_rows_multi<R>(in, make_pack(kept), make_pack(K{e.red, e.arg, e.mask}), stream);
    }
  }
  return false;
}

/// dst = e, where e holds reductions (shapes checked by assign).
template <class D, class E>
void evaluate_reductions(const D& d, const E& e, cudaStream_t stream) {
  if constexpr (std::is_same_v<typename D::space, device_space>) {
    if constexpr (row_fusable<E>(D::rank)) {
      if (try_rows(d, e, stream)) {
        return;
      }
    }
    if (try_rows_of_reduction(d, e, stream)) {
      return;
    }
  }
  temporaries temps;
  if constexpr (is_reduce_node_v<E> && E::rank == D::rank) {
    const auto child = materialize(e.arg, temps, stream);
    using C = std::remove_cvref_t<decltype(child)>;
    using M = reduce_node<typename E::reducer_type, C, E::keep, E::axes>;
    const M m{e.red, child, e.mask};
    // Blocks of a split reduction read what others may have written: a destination inside the
    // input gets its result through a temporary.
    bool overlap = false;
    auto visit = [&](const auto& l) {
      using L = std::remove_cvref_t<decltype(l)>;
      const auto lo = reinterpret_cast<std::uintptr_t>(l.ptr);
      const auto hi = lo + std::uintptr_t(span_of(l.shp, l.str)) * sizeof(typename L::value_type);
      const auto dlo = reinterpret_cast<std::uintptr_t>(d.ptr);
      const auto dhi = dlo + std::uintptr_t(span_of(d.shp, d.str)) * sizeof(typename D::value_type);
      overlap = overlap || (lo < dhi && dlo < hi);
    };
    for_each_leaf(child, visit);
    if (!overlap) {
      reduce_into(d, m, stream);
    } else {
      tensor<typename D::value_type, D::rank, typename D::space> t(d.shape(), stream);
      reduce_into(t.mutable_node(), m, stream);
      evaluate(d, t.node(), stream);
    }
  } else {
    evaluate(d, materialize(e, temps, stream), stream);
  }
}

} // namespace cufuse::detail

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_REDUCE_EVALUATE_CUH
#undef CUFUSE_DETAIL_FIRST_REDUCE_EVALUATE_CUH
#undef CUFUSE_DETAIL_FIRST
#include "../eval/assign.cuh"
#endif
