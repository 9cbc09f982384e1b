/// \file GEMM epilogues written as expressions: `cufuse::gemm(A, W, Y, gelu_tanh(acc + bias))`.
/// The placeholder `cufuse::acc` stands for the fp32 accumulator of op(A) op(B) at each output
/// element; the expression is applied in registers before the one store, in every kernel family
/// (the epilogue interface of gemm/epilogue/linear_combination.cuh). The kernels for an
/// epilogue type are instantiated in the file that calls gemm with it (no JIT), for the
/// configurations listed in `fused_configs` below; libcufuse validates, tunes and launches them.
///
/// Included by <cufuse/gemm.cuh>.
#pragma once

#include "../../eval/multi.cuh"
#include "../../expr/functions.cuh"
#include "../../expr/operators.cuh"
#include "../../gemm.cuh"
#include "../fused.hpp"
#include "../launch.cuh"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

/// 1 (default): the 16-bit wgmma kernels of an expression epilogue take the layout at run time,
/// one kernel for the four layouts (expression_epilogue::one_kernel_for_layouts). 0: a kernel per
/// layout, 2.2-2.5x the compile time for about 2% of the fused GEMM's time (bench/JOURNAL.md e8).
#ifndef CUFUSE_EPI_ONE_KERNEL_FOR_LAYOUTS
#define CUFUSE_EPI_ONE_KERNEL_FOR_LAYOUTS 1
#endif

/// 1 (default): the wgmma kernels start the accumulators at an epilogue's bias (`acc + b`, b
/// [n]) instead of adding it in the epilogue (expression_epilogue::folds_bias). 0: the epilogue
/// adds it. A knob for measurements (bench/JOURNAL.md e18), not an interface.
#ifndef CUFUSE_EPI_FOLD_BIAS
#define CUFUSE_EPI_FOLD_BIAS 1
#endif

namespace cufuse {

/// The type of the accumulator placeholder `cufuse::acc`: fp32, and a dimensioned float tensor
/// in promotion (`acc + bf16_bias` computes in float); it has the output's shape. In namespace
/// cufuse, so that `2.0f * acc` finds cufuse's operators.
struct accumulator {
  using value_type = float;
  using promo_type = float;
  using space = any_space;
  using compute_type = float;
  static constexpr int rank = 0;
  static constexpr bool is_cufuse_node = true;
  static constexpr int min_element_size = 4;
  static constexpr int leaf_count = 0;

  template <class Ctx>
  CUFUSE_INLINE float eval_in(const Ctx& c) const {
    return c.acc;
  }
  /// The two accumulators of a pair of adjacent columns (detail::epi_loc2).
  template <int V, class Ctx>
  CUFUSE_INLINE detail::lane_regs<float, 2> fetch_in(const Ctx& c) const {
    static_assert(V == 2, "cufuse: internal: epilogues are evaluated in pairs of columns");
    detail::lane_regs<float, 2> r;
    r.v[0] = c.a0;
    r.v[1] = c.a1;
    return r;
  }
};

namespace detail {

/// Where an epilogue is evaluated: the accumulator and its position in C as stored.
struct epi_pos {
  float acc;
  std::int64_t row, col;
};

/// Where an epilogue is evaluated for two adjacent columns of C: accumulators a0, a1 at dr rows
/// and dc columns from the position each leaf was moved to (epi_leaf::moved: a thread's first
/// position in the tile) and one column further; ok0 / ok1: the position lies inside C
/// (outside, nothing is read, and the value is never stored). Offsets within a tile are 32-bit
/// (epi_leaf::lr, lc), so that an operand's address costs an add to a pointer computed once per
/// tile instead of 64-bit products per element (bench/JOURNAL.md e5).
struct epi_loc2 {
  float a0, a1;
  int dr, dc;
  bool ok0, ok1;
};

/// The same where the epilogue's staged operand (epi_leaf with Staged) lies in shared memory:
/// its pair at (dr, dc) is the 32-bit word (16-bit elements) or the two words (fp32) at `saddr`,
/// loaded there by TMA like C's chunks (gemm/epilogue/wgmma_store.cuh).
struct epi_loc2_staged : epi_loc2 {
  unsigned saddr;
};

/// A leaf of an epilogue, bound to the output's [batch, rows, cols] (stride 0 where it repeats).
/// lr, lc: the row and column strides again, as 32-bit offsets within a tile when they fit
/// (|stride| < local_limit: then a tile's offsets, at most 512 rows or columns, stay below
/// 2^31), else 0 and local_ok() is false (the host then runs the direct stores, which index by
/// 64-bit positions).
///
/// Staged: the epilogue's one operand that may be read from shared memory instead (a residual
/// laid out as C: the last operand of the output's dtype and rank, staged_candidate); whether it
/// is, the host decides per call (gemm_args::epi_operand), and the kernel then evaluates with an
/// epi_loc2_staged.
///
/// RowInvariant: the operand repeats along the output's rows at compile time (a rank-1 operand,
/// [n], aligns with the columns), so a pair's address does not depend on its row, and the
/// loads of a group's pairs in the same columns are one load (a bias was read again at every
/// row: bench/JOURNAL.md e9).
template <class T, class Promo, bool Staged = false, bool RowInvariant = false>
struct epi_leaf {
  using value_type = std::remove_const_t<T>;
  using promo_type = Promo;
  using space = any_space;
  using compute_type = opmath_t<value_type>;
  static constexpr int rank = 0;
  static constexpr bool is_cufuse_node = true;
  static constexpr int min_element_size = int(sizeof(value_type));
  static constexpr int leaf_count = 1;
  static constexpr bool staged = Staged;
  static constexpr bool row_invariant = RowInvariant;

  static constexpr index_t local_limit = index_t(1) << 22;

  T* ptr;
  index_t sb, sr, sc;
  int lr = 0, lc = 0;

  static constexpr int local(index_t s) { return s < local_limit && s > -local_limit ? int(s) : 0; }
  CUFUSE_INLINE bool local_ok() const { return lr == sr && lc == sc; }
  /// The leaf with (row, col) as its origin for fetch_in(epi_loc2).
  CUFUSE_INLINE epi_leaf moved(std::int64_t row, std::int64_t col) const {
    epi_leaf m = *this;
    m.ptr += row * sr + col * sc;
    return m;
  }

  CUFUSE_INLINE compute_type eval_in(const epi_pos& p) const {
    return convert<compute_type>(ptr[p.row * sr + p.col * sc]);
  }
  /// A pair of adjacent columns at (dr, dc) from the leaf's origin (moved): two predicated loads
  /// without a branch, at addresses affine in the position, so that the loads of a group of
  /// pairs go out together ahead of their use (wgmma_store.cuh) and their address arithmetic
  /// reduces to 32-bit offsets from one pointer. (Choosing one 2-element load where the leaf is
  /// contiguous, or one load where it repeats, put each pair's loads behind a branch: bias +
  /// GELU 1.21x -> 1.48x cuBLAS.)
  template <int V, class Ctx>
  CUFUSE_INLINE lane_regs<value_type, 2> fetch_in(const Ctx& p) const {
    static_assert(V == 2, "cufuse: internal: epilogues are evaluated in pairs of columns");
    lane_regs<value_type, 2> r;
    if constexpr (Staged && std::is_same_v<Ctx, epi_loc2_staged>) {
      // The pair as C's chunk holds it (positions outside C read TMA's zero fill, never stored).
      static_assert(sizeof(value_type) == 2 || sizeof(value_type) == 4,
                    "cufuse: internal: a staged operand has C's 16- or 32-bit elements");
      if constexpr (sizeof(value_type) == 2) {
        const unsigned w = gemm_detail::ld_shared_b32(p.saddr);
        __builtin_memcpy(&r.v[0], &w, 4);
      } else {
        unsigned w[2];
        gemm_detail::ld_shared_u32x2(p.saddr, w[0], w[1]);
        __builtin_memcpy(&r.v[0], &w[0], 8);
      }
    } else {
      const T* at = ptr + ((RowInvariant ? 0 : p.dr * lr) + p.dc * lc);
      r.v[0] = p.ok0 ? at[0] : value_type{};
      r.v[1] = p.ok1 ? at[lc] : value_type{};
    }
    return r;
  }
};

/// A row-invariant operand (epi_leaf with RowInvariant: a rank-1 operand, [n]) read once per
/// tile: its pairs at a thread's columns col0 + 8 j (j < NP, the columns of a wgmma fragment,
/// whatever its row) are loaded while the tile's last MMAs run (cols_of, by
/// wgmma_tma_store::preload) and kept in registers as one word per pair; the store's pair at dc
/// takes word dc / 8, a constant once the store is unrolled. Read per group of pairs instead, a
/// bias cost a generic load per two outputs, its 64-bit address and descriptor moves (about 1.5
/// of the 13 instructions per output of bias + GELU) and waited on the L2 in each group
/// (bench/JOURNAL.md e9, e15).
template <class T, class Promo, int NP>
struct epi_cols {
  using value_type = std::remove_const_t<T>;
  using promo_type = Promo;
  using space = any_space;
  using compute_type = opmath_t<value_type>;
  using regs = lane_regs<value_type, 2>;
  using word_t = typename regs::word_t;
  static_assert(regs::words == 1 && sizeof(regs) == sizeof(word_t),
                "cufuse: internal: a pair of an operand is one word");
  static constexpr int rank = 0;
  static constexpr bool is_cufuse_node = true;
  static constexpr int min_element_size = int(sizeof(value_type));
  static constexpr int leaf_count = 1;
  /// 32-bit registers the pairs take.
  static constexpr int registers = NP * int((sizeof(word_t) + 3) / 4);

  word_t w[NP];

  template <int V, class Ctx>
  CUFUSE_INLINE regs fetch_in(const Ctx& p) const {
    static_assert(V == 2, "cufuse: internal: epilogues are evaluated in pairs of columns");
    regs r;
    __builtin_memcpy(&r, &w[p.dc >> 3], sizeof(r));
    return r;
  }
};

/// Registers per thread that the row-invariant operands read once per tile may take together
/// (cols_of): a bf16 bias on the 128x256 tile, or an fp32 one on a 128-column tile, beside the
/// 128 accumulators and the store's pipeline (larger budgets were not tried: e15).
inline constexpr int cols_budget = 32;

/// The registers `N`'s (bound) row-invariant leaves take as epi_cols of NP pairs, given `Left`
/// registers: each leaf in tree order, if it fits in what the leaves before it left.
template <int NP, int Left, class N>
struct cols_used {
  static constexpr int value = 0;
};
/// The same for the first I of a sequence of nodes (all of them by default).
template <int NP, int Left, int I, class... Ns>
struct cols_used_first {
  static constexpr int value = 0;
};
template <int NP, int Left, int I, class N, class... Rest>
  requires(I > 0)
struct cols_used_first<NP, Left, I, N, Rest...> {
  static constexpr int first = cols_used<NP, Left, N>::value;
  static constexpr int value = first + cols_used_first<NP, Left - first, I - 1, Rest...>::value;
};
template <int NP, int Left, class T, class P>
struct cols_used<NP, Left, epi_leaf<T, P, false, true>> {
  static constexpr int need = epi_cols<T, P, NP>::registers;
  static constexpr int value = need <= Left ? need : 0;
};
template <int NP, int Left, class Op, class... Args>
struct cols_used<NP, Left, map_node<Op, Args...>> {
  static constexpr int value = cols_used_first<NP, Left, int(sizeof...(Args)), Args...>::value;
};
/// What child I of map node `N` may take, given `Left` for N.
template <int NP, int Left, class N, int I>
struct cols_child_left;
template <int NP, int Left, class Op, class... Args, int I>
struct cols_child_left<NP, Left, map_node<Op, Args...>, I> {
  static constexpr int value = Left - cols_used_first<NP, Left, I, Args...>::value;
};

/// `n` (bound, moved to a thread's first position in a tile) with its row-invariant leaves read
/// into epi_cols of NP pairs, as many as fit in `Left` registers (cols_used; the others are
/// read per group of pairs as before); `on` false (a tile at C's edge, which the stores read
/// otherwise): nothing is read. One word per pair where the operand is contiguous and aligned,
/// else two element loads (a branch per tile, not per pair).
template <int NP, int Left, class N>
CUFUSE_INLINE auto cols_of(const N& n, bool on) {
  if constexpr (map_arity<N>::value > 0) {
    return [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      using R = map_node<typename N::op_type,
                         decltype(cols_of<NP, cols_child_left<NP, Left, N, int(Is)>::value>(
                             get<Is>(n.args), on))...>;
      return R{n.op, make_pack(cols_of<NP, cols_child_left<NP, Left, N, int(Is)>::value>(
                         get<Is>(n.args), on)...)};
    }(std::make_index_sequence<map_arity<N>::value>{});
  } else if constexpr (cols_used<NP, Left, N>::value > 0) {
    using C = epi_cols<typename std::remove_pointer_t<decltype(n.ptr)>, typename N::promo_type, NP>;
    using word_t = typename C::word_t;
    C c;
    if (!on) {
      CUFUSE_UNROLL
      for (int j = 0; j < NP; ++j) {
        c.w[j] = word_t{};
      }
    } else if (n.lc == 1 && reinterpret_cast<std::uintptr_t>(n.ptr) % sizeof(word_t) == 0) {
      const auto* at = reinterpret_cast<const word_t*>(n.ptr);
      CUFUSE_UNROLL
      for (int j = 0; j < NP; ++j) {
        c.w[j] = at[4 * j]; // 8 columns on
      }
    } else {
      CUFUSE_UNROLL
      for (int j = 0; j < NP; ++j) {
        typename C::regs r;
        r.v[0] = n.ptr[8 * j * n.lc];
        r.v[1] = n.ptr[(8 * j + 1) * n.lc];
        __builtin_memcpy(&c.w[j], &r, sizeof(r));
      }
    }
    return c;
  } else {
    return n;
  }
}

/// The leaf of `N` (tree order, from 0) that an epilogue of output type TY and rank R stages:
/// the last of element type TY and rank 2 to R (it may then be laid out as C), else -1. The
/// last, since a residual is usually added last (`relu(acc * col + shift) + R`, where a column
/// `col` [m, 1] of C's dtype is a candidate by type as well).
template <class TY, int R, class N>
struct staged_candidate {
  static constexpr int value = -1;
};
template <class TY, int R, class T, int L, class S>
struct staged_candidate<TY, R, leaf<T, L, S>> {
  static constexpr int value =
      std::is_same_v<std::remove_const_t<T>, TY> && L >= 2 && L <= R ? 0 : -1;
};
template <class TY, int R, class Op, class... Args>
struct staged_candidate<TY, R, map_node<Op, Args...>> {
  static constexpr int value = [] {
    int found = -1, before = 0;
    const int at[] = {staged_candidate<TY, R, Args>::value...};
    const int leaves[] = {Args::leaf_count...};
    for (std::size_t i = 0; i < sizeof...(Args); ++i) {
      found = at[i] >= 0 ? before + at[i] : found;
      before += leaves[i];
    }
    return found;
  }();
};

template <class N>
inline constexpr bool mentions_acc_v = std::is_same_v<N, accumulator>;
template <class Op, class... Args>
inline constexpr bool mentions_acc_v<map_node<Op, Args...>> = (mentions_acc_v<Args> || ...);

/// Every node an epilogue may hold: acc, scalars, leaves and maps of them.
template <class N>
inline constexpr bool epilogue_node_v = std::is_same_v<N, accumulator> || is_leaf_node_v<N>;
template <class S>
inline constexpr bool epilogue_node_v<scalar_node<S>> = true;
template <class Op, class... Args>
inline constexpr bool epilogue_node_v<map_node<Op, Args...>> = (epilogue_node_v<Args> && ...);

/// The number of leaves of the children of `N` before child I.
template <class N, std::size_t I>
constexpr int leaves_before() {
  return []<std::size_t... Is>(std::index_sequence<Is...>) {
    return (0 + ... +
            std::remove_cvref_t<decltype(get<Is>(std::declval<const N&>().args))>::leaf_count);
  }(std::make_index_sequence<I>{});
}

/// `n` with each leaf bound to the output's shape `out` ([batch, rows, cols]); throws
/// shape_error naming the shapes when a leaf does not broadcast to it. Leaf number `Stage` (tree
/// order; none if negative) becomes the staged operand (epi_leaf's Staged).
template <int Stage = -1, class N>
auto bind_epilogue(const N& n, const extents<3>& out, int out_rank) {
  if constexpr (is_leaf_node_v<N>) {
    using T = std::remove_pointer_t<decltype(n.ptr)>;
    constexpr int L = N::rank;
    static_assert(!std::is_same_v<typename N::space, host_space>,
                  "cufuse::gemm: an epilogue runs on the GPU; it cannot read a host tensor");
    static_assert(L <= 3, "cufuse::gemm: an epilogue's tensors have rank 0 to 3");
    index_t st[3] = {0, 0, 0};
    bool ok = L <= out_rank;
    for (int d = 3 - out_rank; d < 3 && ok; ++d) {
      const int ld = d - (3 - L);
      if (ld < 0) {
        continue;
      }
      if (n.shp[ld] == out[d]) {
        st[d] = out[d] == 1 ? 0 : n.str[ld];
      } else if (n.shp[ld] != 1) {
        ok = false;
      }
    }
    if (!ok) {
      std::string o = "[";
      for (int d = 3 - out_rank; d < 3; ++d) {
        o += (d > 3 - out_rank ? ", " : "") + std::to_string(out[d]);
      }
      throw shape_error("cufuse::gemm: an epilogue operand of shape " + n.shp.to_string() +
                        " does not broadcast to the output's shape " + o + "]");
    }
    // Read-only, whatever the operand's constness: the bound type (and with it the epilogue's
    // tuning key, epilogue_name) depends on the dtypes, the operations and the operands' ranks
    // being 1 only.
    using B = epi_leaf<const std::remove_const_t<T>, typename N::promo_type, Stage == 0,
                       L == 1 && Stage != 0>;
    return B{n.ptr, st[0], st[1], st[2], B::local(st[1]), B::local(st[2])};
  } else if constexpr (map_arity<N>::value > 0) {
    return [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      using bound =
          map_node<typename N::op_type, decltype(bind_epilogue<Stage - leaves_before<N, Is>()>(
                                            get<Is>(n.args), out, out_rank))...>;
      return bound{n.op, make_pack(bind_epilogue<Stage - leaves_before<N, Is>()>(
                             get<Is>(n.args), out, out_rank)...)};
    }(std::make_index_sequence<map_arity<N>::value>{});
  } else {
    return n;
  }
}

/// `n` (bound) with every leaf moved to batch b.
template <class N>
CUFUSE_INLINE N at_batch_of(const N& n, int b) {
  if constexpr (map_arity<N>::value > 0) {
    return [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      return N{n.op, make_pack(at_batch_of(get<Is>(n.args), b)...)};
    }(std::make_index_sequence<map_arity<N>::value>{});
  } else if constexpr (requires { n.sb; }) {
    N m = n;
    m.ptr += b * n.sb;
    return m;
  } else {
    return n;
  }
}

/// `n` (bound) with every leaf moved to (row, col) (epi_leaf::moved).
template <class N>
CUFUSE_INLINE N moved_of(const N& n, std::int64_t row, std::int64_t col) {
  if constexpr (map_arity<N>::value > 0) {
    return [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      return N{n.op, make_pack(moved_of(get<Is>(n.args), row, col)...)};
    }(std::make_index_sequence<map_arity<N>::value>{});
  } else if constexpr (requires { n.sb; }) {
    return n.moved(row, col);
  } else {
    return n;
  }
}

/// Whether every leaf of `n` (bound) has 32-bit strides within a tile (epi_leaf::local_ok).
template <class N>
CUFUSE_INLINE bool local_ok_of(const N& n) {
  if constexpr (map_arity<N>::value > 0) {
    return [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      return (local_ok_of(get<Is>(n.args)) && ...);
    }(std::make_index_sequence<map_arity<N>::value>{});
  } else if constexpr (requires { n.sb; }) {
    return n.local_ok();
  } else {
    return true;
  }
}

/// Whether a leaf of `n` (bound) is staged (epi_leaf's Staged).
template <class N>
inline constexpr bool has_staged_v = false;
template <class T, class P>
inline constexpr bool has_staged_v<epi_leaf<T, P, true, false>> = true;
template <class Op, class... Args>
inline constexpr bool has_staged_v<map_node<Op, Args...>> = (has_staged_v<Args> || ...);

/// How many times `N` (bound) reads the accumulator.
template <class N>
inline constexpr int acc_uses_v = std::is_same_v<N, accumulator> ? 1 : 0;
template <class Op, class... Args>
inline constexpr int acc_uses_v<map_node<Op, Args...>> = (0 + ... + acc_uses_v<Args>);

/// A bias the wgmma kernels may start their accumulators at: a row-invariant operand (epi_leaf
/// with RowInvariant, [n]) of a type that computes in fp32 (bf16, fp16, fp32).
template <class N>
inline constexpr bool foldable_bias_v = false;
template <class T, class P>
inline constexpr bool foldable_bias_v<epi_leaf<T, P, false, true>> =
    std::is_same_v<opmath_t<std::remove_const_t<T>>, float>;

/// `acc + b` (1) or `b + acc` (2) with b a foldable bias and an fp32 sum, else 0.
template <class N>
inline constexpr int acc_plus_bias_v = 0;
template <class A, class B>
inline constexpr int acc_plus_bias_v<map_node<ops::plus, A, B>> =
    !std::is_same_v<typename map_node<ops::plus, A, B>::value_type, float> ? 0
    : std::is_same_v<A, accumulator> && foldable_bias_v<B>                 ? 1
    : std::is_same_v<B, accumulator> && foldable_bias_v<A>                 ? 2
                                                                           : 0;

/// Whether `N` holds an acc_plus_bias node.
template <class N>
inline constexpr bool has_acc_plus_bias_v = false;
template <class Op, class... Args>
inline constexpr bool has_acc_plus_bias_v<map_node<Op, Args...>> =
    acc_plus_bias_v<map_node<Op, Args...>> != 0 || (has_acc_plus_bias_v<Args> || ...);

/// `n` (bound) with its `acc + b` node (acc_plus_bias_v) replaced by the accumulator: what the
/// epilogue computes once the accumulators start at b (expression_epilogue::folds_bias).
template <class N>
CUFUSE_INLINE auto fold_bias(const N& n) {
  if constexpr (acc_plus_bias_v<N> != 0) {
    return accumulator{};
  } else if constexpr (map_arity<N>::value > 0) {
    return [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      using R = map_node<typename N::op_type, decltype(fold_bias(get<Is>(n.args)))...>;
      return R{n.op, make_pack(fold_bias(get<Is>(n.args))...)};
    }(std::make_index_sequence<map_arity<N>::value>{});
  } else {
    return n;
  }
}

/// The b of `n`'s `acc + b` node.
template <class N>
CUFUSE_INLINE const auto& bias_of(const N& n) {
  if constexpr (acc_plus_bias_v<N> == 1) {
    return get<1>(n.args);
  } else if constexpr (acc_plus_bias_v<N> == 2) {
    return get<0>(n.args);
  } else {
    constexpr std::size_t at = []<std::size_t... Is>(std::index_sequence<Is...>) {
      std::size_t found = 0;
      ((found = has_acc_plus_bias_v<std::remove_cvref_t<decltype(get<Is>(n.args))>> ? Is : found),
       ...);
      return found;
    }(std::make_index_sequence<map_arity<N>::value>{});
    return bias_of(get<at>(n.args));
  }
}

/// The staged leaf of `n` (bound) as gemm_detail::staged_operand (its batch-0 address).
template <class N>
void find_staged(const N& n, gemm_detail::staged_operand& out) {
  if constexpr (map_arity<N>::value > 0) {
    [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      (find_staged(get<Is>(n.args), out), ...);
    }(std::make_index_sequence<map_arity<N>::value>{});
  } else if constexpr (requires { N::staged; }) {
    if constexpr (N::staged) {
      out = gemm_detail::staged_operand{n.ptr, n.sb, n.sr, n.sc};
    }
  }
}

/// An output of an epilogue besides C (tie's second and later): element (row, col) of batch b at
/// ptr + b sb + row sr + col sc.
template <class T>
struct epi_output {
  T* ptr;
  index_t sb, sr, sc;
};

template <class E, class Extras, class Outs, class C>
struct expression_epilogue;

/// The epilogue interface (gemm/epilogue/linear_combination.cuh) over bound expressions: `E`
/// gives C (of element type `C`), each of `Xs` a further output, written through the matching
/// epi_output.
template <class E, class... Xs, class... Us, class C>
struct expression_epilogue<E, pack<Xs...>, pack<epi_output<Us>...>, C> {
  static_assert(sizeof...(Xs) == sizeof...(Us), "cufuse: internal: one output per expression");
  /// C's element type: the wgmma stores pack for it alone (no branch on the output's dtype at
  /// run time, no store form for the other dtypes: bench/JOURNAL.md e10).
  using out_element = C;
  static constexpr bool loads = true;
  static constexpr bool extra_outputs = sizeof...(Xs) > 0;
  /// The 16-bit wgmma kernels of an expression epilogue take the layout (transposes) at run
  /// time: one kernel with four main loops and one epilogue instead of four kernels (launch.cuh,
  /// kernel_of), since the epilogue's stores are most of a kernel's code and compile time. A
  /// bf16 `relu(acc + b) + R` file compiles in 45 s instead of 112 s; the fused GEMM takes
  /// about 2% longer (bench/JOURNAL.md e7, e8). CUFUSE_EPI_ONE_KERNEL_FOR_LAYOUTS=0: a kernel
  /// per layout.
  static constexpr bool one_kernel_for_layouts = CUFUSE_EPI_ONE_KERNEL_FOR_LAYOUTS != 0;
  /// An operand may be staged in shared memory (a residual laid out as C: epi_leaf's Staged).
  static constexpr bool staged = has_staged_v<E>;

  E e;
  pack<Xs...> extras; // bound expressions of the further outputs
  pack<epi_output<Us>...> outs;

  CUFUSE_DEVICE_FN expression_epilogue at_batch(int b) const {
    if (b == 0) {
      return *this;
    }
    expression_epilogue r = *this;
    r.e = at_batch_of(e, b);
    [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      ((get<Is>(r.extras) = at_batch_of(get<Is>(extras), b)), ...);
      ((get<Is>(r.outs).ptr += b * get<Is>(outs).sb), ...);
    }(std::index_sequence_for<Xs...>{});
    return r;
  }
  /// The epilogue adds a bias to the accumulator (`gelu_tanh(acc + b)`, `acc + b + R`, b [n]),
  /// which it reads once (no further outputs): the wgmma kernels start each tile's accumulators
  /// at b instead of 0 and store through `folded()`, the expression with `acc + b` replaced by
  /// acc (gemm/kernel/wgmma.cuh). The add and the bias' registers leave the epilogue, which
  /// runs beside the other warpgroup's main loop on the ping-pong tile (bench/JOURNAL.md e18).
  static constexpr bool folds_bias = CUFUSE_EPI_FOLD_BIAS != 0 && sizeof...(Xs) == 0 &&
                                     acc_uses_v<E> == 1 && has_acc_plus_bias_v<E>;
  using folded_type =
      expression_epilogue<decltype(fold_bias(std::declval<const E&>())), pack<>, pack<>, C>;
  CUFUSE_DEVICE_FN folded_type folded() const { return folded_type{fold_bias(e), {}, {}}; }
  /// The bias' pairs at a thread's NP fragment columns of a tile (n0 + 8 j + 2 q and the column
  /// after, j < NP), one word per pair as stored (folds_bias): loaded for a warpgroup's next
  /// tile while its current tile's last MMAs run, held through the current tile's epilogue and
  /// set into the accumulators before the next main loop. Loaded at the main loop's start
  /// instead, the loads' latency came before each tile's first MMA: bias + GELU on the ping-pong
  /// tile 0.0578 -> 0.0616 ms, on the cooperative 128x256 0.0657 -> 0.0756 (bench/JOURNAL.md e18).
  template <int NP>
  struct bias_pairs {
    using leaf_t = std::remove_cvref_t<decltype(bias_of(std::declval<const E&>()))>;
    using T = typename leaf_t::value_type;
    using word_t = std::conditional_t<sizeof(T) == 2, unsigned, uint2>;
    static_assert(sizeof(word_t) == 2 * sizeof(T), "cufuse: internal: a bias pair is one word");
    word_t w[NP];

    /// Columns from C's `n` on are 0 (never stored). A contiguous, aligned bias inside C: one
    /// load per pair; else two element loads.
    CUFUSE_DEVICE_FN void load(const expression_epilogue& ep, int n0, int q, int n) {
      const auto& b = bias_of(ep.e);
      const int c0 = n0 + 2 * q;
      if (n0 + 8 * NP <= n && b.sc == 1 &&
          reinterpret_cast<std::uintptr_t>(b.ptr) % sizeof(word_t) == 0) {
        const auto* at = reinterpret_cast<const word_t*>(b.ptr + c0);
        CUFUSE_UNROLL
        for (int j = 0; j < NP; ++j) {
          w[j] = at[4 * j]; // 8 columns on
        }
      } else {
        CUFUSE_UNROLL
        for (int j = 0; j < NP; ++j) {
          const int c = c0 + 8 * j;
          T v[2];
          v[0] = c < n ? b.ptr[index_t(c) * b.sc] : T{};
          v[1] = c + 1 < n ? b.ptr[index_t(c + 1) * b.sc] : T{};
          __builtin_memcpy(&w[j], v, sizeof(word_t));
        }
      }
    }
    /// Pair j as two floats.
    CUFUSE_DEVICE_FN void at(int j, float& v0, float& v1) const {
      T v[2];
      __builtin_memcpy(v, &w[j], sizeof(word_t));
      v0 = convert<float>(v[0]);
      v1 = convert<float>(v[1]);
    }
  };
  /// The wgmma kernel loads the staged operand's chunks into its epilogue buffers as it would
  /// C's (the host set p.epi_operand: the operand is laid out as C; launch_wgmma).
  CUFUSE_DEVICE_FN bool reads_c(const gemm_detail::gemm_args& p) const {
    return staged && p.epi_operand != 0;
  }
  /// Host: the staged operand (staged only).
  gemm_detail::staged_operand staged_operand() const {
    gemm_detail::staged_operand s{};
    find_staged(e, s);
    return s;
  }
  template <bool RC>
  CUFUSE_DEVICE_FN float value(const gemm_detail::gemm_args&, float acc, float, std::int64_t row,
                               std::int64_t col) const {
    return convert<float>(e.eval_in(epi_pos{acc, row, col}));
  }
  /// Pairs of adjacent columns, in two steps: `fetch_local`, on the epilogue moved to a
  /// thread's first position in a tile (`at_origin(row, col)`), reads every operand's values at
  /// (row + dr, col + dc) and (row + dr, col + dc + 1) where they lie inside C (ok0, ok1;
  /// epi_loc2) and keeps them with the accumulators a0, a1; `value_pair` computes the two outputs
  /// from them. Between the two, the wgmma epilogue stores the previous group of pairs, so the
  /// loads are in flight meanwhile.
  using fetched_pair = decltype(std::declval<const E&>().template fetch_in<2>(epi_loc2{}));
  CUFUSE_DEVICE_FN expression_epilogue at_origin(std::int64_t row, std::int64_t col) const {
    expression_epilogue r = *this;
    r.e = moved_of(e, row, col);
    return r;
  }
  /// at_origin with the row-invariant operands' pairs at the thread's NP fragment columns read
  /// into registers, as many as cols_budget allows (cols_of; `on` false: a tile the stores read
  /// otherwise). Where that is any (cols_registers), the wgmma stores take them, read while the
  /// tile's last MMAs run (wgmma_tma_store::preload).
  template <int NP>
  static constexpr int cols_registers = cols_used<NP, cols_budget, E>::value;
  template <int NP>
  CUFUSE_DEVICE_FN auto at_origin_cols(std::int64_t row, std::int64_t col, bool on) const {
    using E2 = decltype(cols_of<NP, cols_budget>(e, on));
    return expression_epilogue<E2, pack<Xs...>, pack<epi_output<Us>...>, C>{
        cols_of<NP, cols_budget>(moved_of(e, row, col), on), extras, outs};
  }
  CUFUSE_DEVICE_FN fetched_pair fetch_local(float a0, float a1, int dr, int dc, bool ok0,
                                            bool ok1) const {
    return e.template fetch_in<2>(epi_loc2{a0, a1, dr, dc, ok0, ok1});
  }
  /// The same with the staged operand's pair read from shared memory at `saddr`.
  CUFUSE_DEVICE_FN fetched_pair fetch_local(float a0, float a1, int dr, int dc, bool ok0, bool ok1,
                                            unsigned saddr) const {
    return e.template fetch_in<2>(epi_loc2_staged{{a0, a1, dr, dc, ok0, ok1}, saddr});
  }
  /// Whether fetch_local may read this epilogue's operands (local_ok_of); if not, the host runs
  /// the direct stores.
  bool local_strides() const { return local_ok_of(e); }
  template <class F>
  CUFUSE_DEVICE_FN static void value_pair(const F& f, float& v0, float& v1) {
    v0 = convert<float>(f.at(0));
    v1 = convert<float>(f.at(1));
  }
  template <int Cnt>
  CUFUSE_DEVICE_FN void store_extra(std::int64_t row, std::int64_t col, const float (&acc)[Cnt],
                                    int cnt) const {
    [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      (store_one(get<Is>(extras), get<Is>(outs), row, col, acc, cnt), ...);
    }(std::index_sequence_for<Xs...>{});
  }

private:
  template <class X, class T, int Cnt>
  CUFUSE_DEVICE_FN static void store_one(const X& x, const epi_output<T>& o, std::int64_t row,
                                         std::int64_t col, const float (&acc)[Cnt], int cnt) {
    CUFUSE_UNROLL
    for (int j = 0; j < Cnt; ++j) {
      if (j < cnt) {
        o.ptr[row * o.sr + (col + j) * o.sc] = convert<T>(x.eval_in(epi_pos{acc[j], row, col + j}));
      }
    }
  }
};

} // namespace detail

/// The accumulator of a GEMM's product at each output element, for epilogue expressions:
/// `cufuse::gemm(A, W, Y, cufuse::relu(cufuse::acc + bias))`.
inline constexpr accumulator acc{};

namespace gemm_detail {

/// The configurations an expression epilogue instantiates, per input type: those that win the
/// plain GEMM (bench/results), so that a file's compile time stays bounded. bf16 / fp16: the four
/// wgmma tiles (sm_90a) and 64x128 split over clusters of two (M <= 128), mma.sync 128x128 and
/// its 4-way split-K (small outputs, long K, and pre-Hopper GPUs), SIMT at any alignment. fp32:
/// SIMT (fp32 math; cp.async, any alignment, 4-way split-K) and TF32: the four wgmma tiles (NN, NT,
/// TT), mma.sync 128x128 (TN) and its 4-way split-K.
template <class T>
struct fused_configs {
  using type = variant_list<
      wgmma<T, wgmma_tile{.bm = 128, .bn = 256, .stages = 4}>,
      wgmma<T, wgmma_tile{.bm = 128, .bn = 128, .stages = 6}>,
      wgmma<T, wgmma_tile{.bm = 64, .bn = 128, .stages = 4, .min_blocks = 2}>,
      wgmma<T, wgmma_tile{.bm = 128, .bn = 128, .stages = 6, .pingpong = true}>,
      wgmma<T, wgmma_tile{.bm = 64, .bn = 128, .stages = 6, .splits = 2, .cluster = true}>,
      mma<T, mma_tile{.bm = 128, .bn = 128, .bk = 64, .wm = 2, .wn = 2, .stages = 3}>,
      mma<T, mma_tile{.bm = 64, .bn = 64, .bk = 32, .wm = 2, .wn = 2, .stages = 4, .splits = 4}>,
      simt<T, simt_tile{.bm = 64, .bn = 64, .bk = 16, .rm = 1, .rn = 1, .vec = 1}>>;
};
template <>
struct fused_configs<float> {
  using type = variant_list<
      simt<float,
           simt_tile{.bm = 128, .bn = 128, .bk = 32, .rm = 2, .rn = 2, .vec = 4, .stages = 3}>,
      simt<float, simt_tile{.bm = 64, .bn = 64, .bk = 16, .rm = 1, .rn = 1, .vec = 1}>,
      simt<float, simt_tile{.bm = 64, .bn = 64, .bk = 16, .rm = 1, .rn = 1, .vec = 4, .splits = 4}>,
      wgmma<float, wgmma_tile{.bm = 128, .bn = 256, .stages = 4}>,
      wgmma<float, wgmma_tile{.bm = 128, .bn = 128, .stages = 6}>,
      wgmma<float, wgmma_tile{.bm = 64, .bn = 128, .stages = 4, .min_blocks = 2}>,
      wgmma<float, wgmma_tile{.bm = 128, .bn = 128, .stages = 6, .pingpong = true}>,
      mma<float, mma_tile{.bm = 128, .bn = 128, .bk = 32, .wm = 2, .wn = 2, .stages = 3}>,
      mma<float,
          mma_tile{.bm = 64, .bn = 64, .bk = 32, .wm = 2, .wn = 2, .stages = 4, .splits = 4}>>;
};

/// A stable name of an epilogue type for tuning keys: "x" and 16 hex digits of a hash of its
/// (mangled) type name. Named by the bound epilogue (expression_epilogue): operations, scalar
/// types, the operands' dtypes, C's dtype and which operands have rank 1 (epi_leaf's
/// RowInvariant), not whether an operand is a tensor or a view, nor its other strides (run-time
/// values of the same kernels), so that `cufuse-tune --epilogue` and tuning::tune_epilogue
/// write the key a program's own expression looks up.
template <class E>
std::string epilogue_name() {
  std::uint64_t h = 1469598103934665603ull;
  for (const char* c = typeid(E).name(); *c != '\0'; ++c) {
    h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  }
  static const char* digits = "0123456789abcdef";
  std::string s = "x";
  for (int i = 15; i >= 0; --i) {
    s += digits[(h >> (4 * i)) & 15];
  }
  return s;
}

/// The kernels of epilogue type `Epi` on `T` inputs, instantiated here (one object per type).
template <class T, class Epi>
const fused_set& fused_set_of() {
  static const fused_set s = []<class... C>(variant_list<C...>) {
    return fused_set{
        epilogue_name<Epi>(),
        {fused_kernel{variant_name<C>(), &launch_variant<C, Epi>, &prepare_variant<C, Epi>}...}};
  }(typename fused_configs<T>::type{});
  return s;
}

/// Whether [p, p + bytes) and [q, q + bytes2) share memory.
inline bool overlaps(const void* p, std::size_t bytes, const void* q, std::size_t bytes2) {
  const auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(q);
  return a < b + bytes2 && b < a + bytes;
}

/// The memory a leaf or matrix spans (first to last element, in bytes).
template <class L>
std::pair<const void*, std::size_t> span_of_leaf(const L& l) {
  std::size_t last = 0;
  for (int d = 0; d < L::rank; ++d) {
    if (l.shp[d] == 0) {
      return {l.ptr, 0};
    }
    last += static_cast<std::size_t>((l.shp[d] - 1) * (l.str[d] < 0 ? -l.str[d] : l.str[d]));
  }
  return {l.ptr, (last + 1) * sizeof(*l.ptr)};
}

/// What run_epilogue does with the problem: run it (no member set), or instead put the names
/// of the variants the epilogue's kernels offer for it into `*list`, or record `*record` (a
/// variant name) measured at `seconds` as its choice in the tuning database, or put the
/// variant the tuner has settled on for it into `*chosen`.
struct epilogue_action {
  std::vector<std::string>* list = nullptr;
  const std::string* record = nullptr;
  double seconds = 0.0;
  std::optional<std::string>* chosen = nullptr;
};

/// The GEMM with an epilogue: `outs` are the destinations (leaves; the first is C), `exprs`
/// their expressions (unbound nodes); `act`: run, list or record (epilogue_action).
template <class A, class B, class... Ds, class... Es>
void run_epilogue(A&& a, B&& b, const detail::pack<Ds...>& outs, const detail::pack<Es...>& exprs,
                  bool batched, const gemm_options& options, cudaStream_t stream,
                  const epilogue_action& act = {}) {
  static_assert(sizeof...(Ds) == sizeof...(Es),
                "cufuse::gemm: give as many epilogue expressions as outputs (tie / pack)");
  static_assert((detail::epilogue_node_v<Es> && ...),
                "cufuse::gemm: an epilogue holds cufuse::acc, tensors / views, scalars and "
                "elementwise operations (no reductions)");
  static_assert((detail::mentions_acc_v<Es> || ...),
                "cufuse::gemm: the epilogue does not use cufuse::acc (the product); write e.g. "
                "cufuse::gemm(A, B, Y, cufuse::acc + bias)");
  static_assert(((!std::is_same_v<typename Ds::space, host_space>)&&...),
                "cufuse::gemm: the outputs must be device tensors or views");
  using D0 = std::remove_cvref_t<decltype(detail::get<0>(outs))>;
  using TY = typename D0::value_type;
  constexpr int R = D0::rank;
  static_assert(R == 2 || R == 3,
                "cufuse::gemm: the output is a matrix (rank 2, or 3 for gemm_batched)");
  static_assert(((Ds::rank == R) && ...), "cufuse::gemm: the outputs must have the same rank");
  const D0& y = detail::get<0>(outs);
  const tensor_view<TY, R, device_space> yv(y.ptr, y.shp, y.str);
  const auto am = as_matrix(a);
  const auto bm = as_matrix(b);
  const auto ym = as_matrix(yv);
  if (ym.transposed) {
    throw shape_error("cufuse::gemm: the output of shape " + y.shp.to_string() + " with strides " +
                      y.str.to_string() + " has no unit stride along its last dimension");
  }
  problem p = make_problem(am, bm, ym, 1.0f, 0.0f, options, batched);
  const extents<3> out3{p.batch, p.m, p.n};
  // Each further output has the first's shape; an epilogue reads an output only at the
  // element it writes.
  [&]<std::size_t... Is>(std::index_sequence<Is...>) {
    (
        [&] {
          if (!(detail::get<Is>(outs).shp == y.shp)) {
            throw shape_error("cufuse::gemm: the outputs of tie(...) have different shapes: " +
                              y.shp.to_string() + " and " + detail::get<Is>(outs).shp.to_string());
          }
        }(),
        ...);
  }(std::index_sequence_for<Ds...>{});
  // C's expression stages its last operand of C's dtype and rank (a residual: loaded by TMA
  // with C's chunks when the call's layout allows; launch_wgmma).
  using E0 = std::remove_cvref_t<decltype(detail::get<0>(exprs))>;
  constexpr int stage = detail::staged_candidate<TY, R, E0>::value;
  auto bound = [&]<std::size_t... Is>(std::index_sequence<0, Is...>) {
    return detail::make_pack(detail::bind_epilogue<stage>(detail::get<0>(exprs), out3, R),
                             detail::bind_epilogue(detail::get<Is>(exprs), out3, R)...);
  }(std::index_sequence_for<Es...>{});
  // Leaves that share memory with an output must read exactly the element being written.
  auto check_alias = [&](const auto& leaf) {
    const auto ls = span_of_leaf(leaf);
    auto against = [&](const auto& o) {
      const auto os = span_of_leaf(o);
      if (!overlaps(ls.first, ls.second, os.first, os.second)) {
        return;
      }
      bool same = false;
      using L = std::remove_cvref_t<decltype(leaf)>;
      if constexpr (L::rank == R) {
        same = static_cast<const void*>(leaf.ptr) == static_cast<const void*>(o.ptr) &&
               sizeof(*leaf.ptr) == sizeof(*o.ptr) && leaf.shp == o.shp;
        for (int d = 0; same && d < R; ++d) {
          same = leaf.str[d] == o.str[d] || leaf.shp[d] == 1;
        }
      }
      if (!same) {
        throw error("cufuse::gemm: an epilogue operand of shape " + leaf.shp.to_string() +
                    " shares memory with an output of shape " + o.shp.to_string() +
                    " at other elements; copy it first");
      }
    };
    [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      (against(detail::get<Is>(outs)), ...);
    }(std::index_sequence_for<Ds...>{});
  };
  [&]<std::size_t... Is>(std::index_sequence<Is...>) {
    (detail::for_each_leaf(detail::get<Is>(exprs), check_alias), ...);
  }(std::index_sequence_for<Es...>{});
  using AT = element_of<A>;
  using T = std::remove_const_t<AT>;
  // The epilogue object: the first expression gives C, the others their outputs.
  auto make = [&]<std::size_t... Is>(std::index_sequence<0, Is...>) {
    [[maybe_unused]] auto out_of = [&](const auto& o) {
      using OT = std::remove_cvref_t<decltype(*o.ptr)>;
      const index_t sb = R == 3 ? o.str[0] : 0;
      return detail::epi_output<OT>{o.ptr, sb, o.str[R - 2], o.str[R - 1]};
    };
    auto extras = detail::make_pack(detail::get<Is>(bound)...);
    auto extra_outs = detail::make_pack(out_of(detail::get<Is>(outs))...);
    using Epi = detail::expression_epilogue<std::remove_cvref_t<decltype(detail::get<0>(bound))>,
                                            decltype(extras), decltype(extra_outs),
                                            std::remove_const_t<TY>>;
    const Epi epi{detail::get<0>(bound), extras, extra_outs};
    const fused_set& set = fused_set_of<T, Epi>();
    if (act.list != nullptr) {
      *act.list = fused_variants(p, set);
    } else if (act.record != nullptr) {
      record_fused(p, set, *act.record, act.seconds);
    } else if (act.chosen != nullptr) {
      *act.chosen = chosen_fused(p, set);
    } else {
      run_fused(p, set, &epi, stream, options);
    }
  };
  make(std::index_sequence_for<Es...>{});
}

template <class X>
auto destination_of(X&& x) {
  return detail::destination_node(x);
}

template <class X>
inline constexpr bool is_pack_v = false;
template <class... Xs>
inline constexpr bool is_pack_v<detail::pack<Xs...>> = true;

/// gemm / gemm_batched with an epilogue: Y a tensor / view and one expression, or tie(...) and
/// pack(...).
template <class A, class B, class Y, class E>
void run_epilogue_of(A&& a, B&& b, Y&& y, const E& epilogue, bool batched,
                     const gemm_options& options, cudaStream_t stream,
                     const epilogue_action& act = {}) {
  if constexpr (requires { y.dsts; }) {
    static_assert(is_pack_v<E>, "cufuse::gemm: with cufuse::tie(Y, P, ...) as the output, give "
                                "the epilogue as cufuse::pack(e_Y, e_P, ...)");
    if constexpr (is_pack_v<E>) {
      run_epilogue(a, b, y.dsts, epilogue, batched, options, stream, act);
    }
  } else {
    run_epilogue(a, b, detail::make_pack(destination_of(y)),
                 detail::make_pack(detail::to_node(epilogue)), batched, options, stream, act);
  }
}

} // namespace gemm_detail

/// Y = epilogue(op(A) op(B)): `epilogue` is an expression over `cufuse::acc` (the fp32 product at
/// each element) and tensors / views that broadcast to Y's shape (bias [n], column [m, 1],
/// residual [m, n], any dtype), applied in registers before the one store. Y: A's element type
/// or float. `Y` may also be `cufuse::tie(Y, P, ...)` with `cufuse::pack(e_Y, e_P, ...)`: further
/// outputs of the same shape from the same accumulators. The kernels are instantiated in this
/// file for the configurations of gemm_detail::fused_configs; the tuner keys on the epilogue.
template <gemm_detail::matrix_like A, gemm_detail::matrix_like B, class Y, class E>
  requires(!std::is_convertible_v<E, float>)
void gemm(A&& a, B&& b, Y&& y, const E& epilogue, const gemm_options& options = {},
          cudaStream_t stream = current_stream()) {
  gemm_detail::run_epilogue_of(a, b, y, epilogue, false, options, stream);
}

/// The same over a strided batch: rank-3 A, B and Y ([batch, rows, cols]); the epilogue's
/// operands broadcast to [batch, m, n].
template <gemm_detail::matrix_like A, gemm_detail::matrix_like B, class Y, class E>
  requires(!std::is_convertible_v<E, float>)
void gemm_batched(A&& a, B&& b, Y&& y, const E& epilogue, const gemm_options& options = {},
                  cudaStream_t stream = current_stream()) {
  gemm_detail::run_epilogue_of(a, b, y, epilogue, true, options, stream);
}

} // namespace cufuse

// The tuning API over these epilogues (after everything it calls is declared).
#include "tuning.cuh"
