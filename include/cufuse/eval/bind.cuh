/// \file What the evaluation kernels see: the expression tree with every leaf replaced by a
/// bound leaf (a pointer and one stride per dimension of the destination, in the order and
/// collapsed form the host's plan chose), and the positions at which kernels evaluate it.
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_EVAL_BIND_CUH
#endif

#include "../core/index.cuh"
#include "../expr/node.cuh"

#include <cstdint>
#include <type_traits>
#include <utility>

namespace cufuse::detail {

/// Threads along a tile of the layout-changing kernel, and rows each step covers.
inline constexpr int tile_dim = 64;
inline constexpr int tile_rows = 4;

#ifndef CUFUSE_TILE_ACCESS
#define CUFUSE_TILE_ACCESS 8
#endif
/// Bytes per access of the layout-changing kernel for elements smaller than 4 bytes (several
/// elements per thread and access, in both phases). Measured on the H100 (bf16 `permute(P,
/// {0, 2, 1}) + Z` [64, 1024, 1024], same run): 4-byte accesses 0.80x copy, 8-byte 0.94x,
/// 16-byte 0.93x (eight 2-byte column reads per access from the staged tile, bank conflicts).
inline constexpr int tile_access = CUFUSE_TILE_ACCESS;
static_assert(tile_access == 4 || tile_access == 8 || tile_access == 16,
              "cufuse: CUFUSE_TILE_ACCESS must be 4, 8 or 16 (bytes per access)");

/// Row pitch (in elements) of a staged tile of `elem`-byte elements: padded so that reading a
/// column touches 32 different banks (4-byte elements), rows aligned for the accesses.
CUFUSE_HOST_DEVICE constexpr int tile_pitch_of(int elem) {
  return elem >= 4 ? tile_dim + 1 : tile_dim + tile_access / elem;
}
/// Bytes of shared memory one staged tile takes (16-byte multiples, so the next is aligned).
CUFUSE_HOST_DEVICE constexpr int tile_bytes_of(int elem) {
  return (tile_dim * tile_pitch_of(elem) * elem + 15) / 16 * 16;
}
template <class T>
CUFUSE_HOST_DEVICE constexpr int tile_pitch() {
  return tile_pitch_of(int(sizeof(T)));
}

/// 1: phase 1 of the layout-changing kernel asks L1 for the other operands' lines of phase 2
/// (bound_leaf::prefetch_in); 0 turns it off (for measurements against it).
#ifndef CUFUSE_TILE_PREFETCH
#define CUFUSE_TILE_PREFETCH 1
#endif

/// How the vectorized N-d kernel reads its operands: 16-byte vectors (every operand contiguous or
/// repeated along the innermost dimension, aligned); lane by lane along one row (the
/// destination's rows hold whole vectors, some operand is strided or misaligned); lane by lane
/// from two positions, the item's first and the next row's start (a contiguous destination
/// whose rows do not hold whole vectors: a vector spans at most two rows).
enum class nd_read { vectors, row_lanes, flat_lanes };

/// A position inside a tile of the layout-changing kernel: its coordinates, and where it lies
/// in the staged tiles (`la` along the tile's dimension a, `lb` along the innermost).
template <int R, class I>
struct tile_pos {
  coords<R, I> p;
  const unsigned char* smem;
  int la, lb;
};

/// `bound_leaf::smem` of a leaf read from memory (no staged tile), and of one that the N-d
/// kernel's lane-by-lane forms may still read in 16-byte vectors: contiguous and aligned along
/// the row (row_lanes), or laid out as the destination and aligned (flat_lanes).
inline constexpr int leaf_direct = -1;
inline constexpr int leaf_vectors = -2;

/// A leaf bound to the destination's layout: `str[d]` is its stride along the destination's
/// (reordered, collapsed) dimension d, 0 where it repeats. `smem`: byte offset of its staged
/// tile in the layout-changing kernel, leaf_direct (or leaf_vectors) when it is read from memory.
/// `Hint`: the L2 eviction policy of its vector loads (l2_policy; CUFUSE_STREAM_L2_HINT).
template <class T, int R, class Promo, int Hint = 0>
struct bound_leaf {
  using value_type = std::remove_const_t<T>;
  using promo_type = Promo;
  using space = any_space;
  using compute_type = opmath_t<value_type>;
  static constexpr int rank = R;
  static constexpr bool is_cufuse_node = true;
  static constexpr int min_element_size = int(sizeof(value_type));
  static constexpr int leaf_count = 1;

  T* ptr;
  strides<R> str;
  int smem;

  template <class I>
  CUFUSE_INLINE I offset(const coords<R, I>& p) const {
    return offset_at(str, p);
  }

  // -- the flat kernel: every operand contiguous, of the destination's shape
  template <class I>
  CUFUSE_INLINE compute_type eval_in(const flat_index<I>& p) const {
    return convert<compute_type>(ptr[p.i]);
  }
  template <int V, class I>
  CUFUSE_INLINE lane_regs<value_type, V> fetch_in(const flat_index<I>& p) const {
    return load_vec<V>(ptr + p.i);
  }

  // -- the N-d kernel
  template <class I>
  CUFUSE_INLINE compute_type eval_in(const coords<R, I>& p) const {
    return convert<compute_type>(ptr[offset(p)]);
  }
  /// V lanes along the innermost dimension: a 16-byte load where the leaf is contiguous there,
  /// one load repeated where it is broadcast (stride 0); the host allows nothing else.
  template <int V, class I>
  CUFUSE_INLINE lane_regs<value_type, V> fetch_in(const coords<R, I>& p) const {
    const I off = offset(p);
    if constexpr (sizeof(value_type) == 2 && V % 2 == 0) {
      // 2-byte elements: the repeated element is made a word of two once, and the two paths
      // meet word by word: one select per word, where they met element by element (a byte
      // permute each). Measured (H200, bf16 [8192, 8192], same call): `X * col + bias` 0.843x
      // copy -> 0.886x, `relu(X + bias)` 0.931x -> 0.938x (JOURNAL s6).
      const bool rep = str[R - 1] == 0;
      lane_regs<value_type, V> r{};
      unsigned short x = 0;
      if (rep) {
        x = reinterpret_cast<const unsigned short*>(ptr)[off];
      } else {
        r = load_vec<V>(ptr + off);
      }
      const unsigned xx = unsigned(x) | (unsigned(x) << 16);
      auto* w = reinterpret_cast<unsigned*>(r.v);
      CUFUSE_UNROLL
      for (int k = 0; k < V / 2; ++k) {
        w[k] = rep ? xx : w[k];
      }
      return r;
    }
    return lanes_at<V>(off);
  }

  /// V lanes from `g.p` on, one load per lane at the leaf's innermost stride (0 where it repeats:
  /// the lanes read one address): the gathering form, for views no vector access can read. The
  /// lanes' loads are independent, so a thread has V of them in flight.
  template <int V, class I>
  CUFUSE_INLINE lane_regs<value_type, V> fetch_in(const lanes_from<R, I>& g) const {
    const I off = offset(g.p);
    if (smem == leaf_vectors) {
      return load_vec<V>(ptr + off);
    }
    const I step = static_cast<I>(str[R - 1]);
    lane_regs<value_type, V> r;
    CUFUSE_UNROLL
    for (int k = 0; k < V; ++k) {
      r.v[k] = ptr[off + static_cast<I>(k) * step];
    }
    return r;
  }

  /// V lanes at their own coordinates, one load each (the gathering form across rows), or one
  /// vector at the destination's offset where the leaf is laid out as the destination.
  template <int V, class I>
  CUFUSE_INLINE lane_regs<value_type, V> fetch_in(const lanes_each<V, R, I>& g) const {
    if (smem == leaf_vectors) {
      return load_vec<V>(ptr + g.flat);
    }
    const I step = static_cast<I>(str[R - 1]);
    const I off0 = offset(g.first);
    const I off1 = offset(g.second) - static_cast<I>(g.in_first) * step;
    lane_regs<value_type, V> r;
    CUFUSE_UNROLL
    for (int k = 0; k < V; ++k) {
      r.v[k] = ptr[(k < g.in_first ? off0 : off1) + static_cast<I>(k) * step];
    }
    return r;
  }

  /// V lanes at element `off`: a vector load where the leaf is contiguous along the innermost
  /// dimension, one element copied to every lane where it repeats there; the forms meet lane by
  /// lane.
  template <int V, class I>
  CUFUSE_INLINE lane_regs<value_type, V> lanes_at(I off) const {
    if (str[R - 1] == 0) {
      lane_regs<value_type, V> r;
      const value_type x = ptr[off];
      CUFUSE_UNROLL
      for (int k = 0; k < V; ++k) {
        r.v[k] = x;
      }
      return r;
    }
    return load_vec<V>(ptr + off);
  }

  // -- the layout-changing kernel
  template <class I>
  CUFUSE_INLINE compute_type eval_in(const tile_pos<R, I>& t) const {
    if (smem >= 0) {
      const auto* tile = reinterpret_cast<const value_type*>(t.smem + smem);
      return convert<compute_type>(tile[t.lb * tile_pitch<value_type>() + t.la]);
    }
    return convert<compute_type>(ptr[offset(t.p)]);
  }

  /// V lanes along the innermost dimension in the layout-changing kernel: from the staged tile
  /// (rows lb .. lb + V - 1 of column la), or as in the N-d kernel.
  template <int V, class I>
  CUFUSE_INLINE lane_regs<value_type, V> fetch_in(const tile_pos<R, I>& t) const {
    if (smem >= 0) {
      const auto* tile = reinterpret_cast<const value_type*>(t.smem + smem);
      lane_regs<value_type, V> r;
      CUFUSE_UNROLL
      for (int k = 0; k < V; ++k) {
        r.v[k] = tile[(t.lb + k) * tile_pitch<value_type>() + t.la];
      }
      return r;
    }
    // Lane by lane: measured 1% faster here than fetch_in<V>(t.p)'s word form for 2-byte
    // elements (bf16 `permute(P, {0, 2, 1}) + Z`, H200, JOURNAL s6).
    return lanes_at<V>(offset(t.p));
  }

  /// Phase 1 of the layout-changing kernel: asks L1 for the line that phase 2 will read at `t`
  /// (operands read from memory along the innermost dimension; none for the staged ones or the
  /// repeated ones), so that phase 2's loads do not wait on DRAM after the barrier.
  template <class I>
  CUFUSE_INLINE void prefetch_in(const tile_pos<R, I>& t) const {
    if (smem < 0 && str[R - 1] != 0) {
      asm volatile("prefetch.global.L1 [%0];" ::"l"(ptr + offset(t.p)));
    }
  }

  // -- stores (the destination)
  template <class Pos>
  CUFUSE_INLINE void store(const Pos& p, value_type v) const {
    if constexpr (requires { p.i; }) {
      ptr[p.i] = v;
    } else {
      ptr[offset(p)] = v;
    }
  }
  template <int V, class Pos>
  CUFUSE_INLINE void store_vec(const Pos& p, const lane_regs<value_type, V>& r) const {
    value_type* at;
    if constexpr (requires { p.i; }) {
      at = ptr + p.i;
    } else {
      at = ptr + offset(p);
    }
    using Regs = lane_regs<value_type, V>;
    auto* dst = reinterpret_cast<typename Regs::word_t*>(at);
    const auto* src = reinterpret_cast<const typename Regs::word_t*>(r.v);
    CUFUSE_UNROLL
    for (int c = 0; c < Regs::words; ++c) {
      dst[c] = src[c];
    }
  }

  /// V elements from memory at `at`, aligned to the vector's size (the plan checked).
  template <int V>
  CUFUSE_INLINE static lane_regs<value_type, V> load_vec(const value_type* at) {
    return lane_regs<value_type, V>::template load<Hint>(at);
  }
};

// ---- visiting leaves in tree order (left to right) -------------------------------------------

template <class N>
inline constexpr bool is_leaf_node_v = false;
template <class T, int Rank, class Space>
inline constexpr bool is_leaf_node_v<leaf<T, Rank, Space>> = true;
template <class T, int R, class P, int H>
inline constexpr bool is_leaf_node_v<bound_leaf<T, R, P, H>> = true;

template <class N>
struct map_arity {
  static constexpr std::size_t value = 0;
};
template <class Op, class... Args>
struct map_arity<map_node<Op, Args...>> {
  static constexpr std::size_t value = sizeof...(Args);
};

template <class N, class F>
CUFUSE_HOST_DEVICE void for_each_leaf(const N& n, F& f);

// Host code calls these with host lambdas, kernels with device lambdas: the execution-space
// check is the caller's.
#pragma nv_exec_check_disable
template <class Op, class... Args, class F, std::size_t... Is>
CUFUSE_HOST_DEVICE void for_each_leaf_of_map(const map_node<Op, Args...>& m, F& f,
                                             std::index_sequence<Is...>) {
  (for_each_leaf(get<Is>(m.args), f), ...);
}

/// Calls f(leaf) on each leaf of `n` in tree order (the order bind() numbers them).
#pragma nv_exec_check_disable
template <class N, class F>
CUFUSE_HOST_DEVICE void for_each_leaf(const N& n, F& f) {
  if constexpr (is_leaf_node_v<N>) {
    f(n);
  } else if constexpr (map_arity<N>::value > 0) {
    for_each_leaf_of_map(n, f, std::make_index_sequence<map_arity<N>::value>{});
  }
}

// ---- binding: the user's tree -> the kernel's tree --------------------------------------------

/// Each leaf's strides in the plan's layout and its staged tile (-1: none), in tree order.
template <int R, int L>
struct bound_layout {
  strides<R> str[L > 0 ? L : 1];
  int smem[L > 0 ? L : 1];
};

template <int First, int Hint = 0, int R, int L, class N>
auto bind(const N& n, const bound_layout<R, L>& lay);

/// The number of the first leaf of child `i` of a map whose first leaf is number `First`.
template <int First, class... Args>
constexpr int first_leaf_of(std::size_t i) {
  const int counts[] = {Args::leaf_count...};
  int f = First;
  for (std::size_t j = 0; j < i; ++j) {
    f += counts[j];
  }
  return f;
}

template <int First, int Hint, int R, int L, class Op, class... Args, std::size_t... Is>
auto bind_map(const map_node<Op, Args...>& m, const bound_layout<R, L>& lay,
              std::index_sequence<Is...>) {
  using bound =
      map_node<Op,
               decltype(bind<first_leaf_of<First, Args...>(Is), Hint>(get<Is>(m.args), lay))...>;
  return bound{m.op,
               make_pack(bind<first_leaf_of<First, Args...>(Is), Hint>(get<Is>(m.args), lay)...)};
}

/// The tree the kernels evaluate: leaves become bound_leaf with the plan's strides, leaf
/// number `First` onwards, their vector loads with L2 policy `Hint`; scalars and ops stay as
/// they are.
template <int First, int Hint, int R, int L, class N>
auto bind(const N& n, const bound_layout<R, L>& lay) {
  if constexpr (is_leaf_node_v<N>) {
    return bound_leaf<std::remove_pointer_t<decltype(n.ptr)>, R, typename N::promo_type, Hint>{
        n.ptr, lay.str[First], lay.smem[First]};
  } else if constexpr (map_arity<N>::value > 0) {
    return bind_map<First, Hint>(n, lay, std::make_index_sequence<map_arity<N>::value>{});
  } else {
    return n;
  }
}

/// The bound tree's type.
template <class N, int R, int L>
using bound_t =
    decltype(bind<0>(std::declval<const N&>(), std::declval<const bound_layout<R, L>&>()));

} // namespace cufuse::detail

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_EVAL_BIND_CUH
#undef CUFUSE_DETAIL_FIRST_EVAL_BIND_CUH
#undef CUFUSE_DETAIL_FIRST
#include "assign.cuh"
#endif
