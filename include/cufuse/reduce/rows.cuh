/// \file The row kernel: ONE kernel for an expression whose reductions all run along the
/// innermost axis of operands of the destination's shape, kept with extent 1 (softmax,
/// log_softmax, layer_norm, rms_norm, `X - amax(X, -1, keepdim)`, written by hand or through
/// the convenience functions). A block owns a row at a time:
///  1. it copies the row of every operand read more than once (X in softmax) into shared
///     memory: the only read of that row from global memory;
///  2. it computes the reductions, inner ones first (softmax's amax before its sum), each
///     thread folding its columns, the warps' states meeting in shared memory (CUB warp
///     reductions, one barrier per reduction), every thread keeping the row's value;
///  3. it evaluates the expression at every column, reductions reading their values, and
///     stores.
/// A thread handles the same chunks of V columns in every pass (16 bytes of the widest
/// operand: one access each when aligned), so the staged rows need no barrier.
/// Rows too long for shared memory (beyond the device's per-block limit, 227 KB on an H100)
/// are not staged: each reduction then reads the row from global memory again (L2 often
/// holds it), a multi-pass scheme, still one kernel.
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_REDUCE_ROWS_CUH
#endif

#include "../eval/launch.cuh"
#include "kernels.cuh"

#include <cooperative_groups.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>

namespace cufuse::detail {

inline constexpr int rows_max_threads = 512;
/// Shared memory kept back from the device's per-block opt-in limit for the row kernel's
/// static arrays (partial states, CUB's warp storage).
inline constexpr int rows_static_reserve = 8 * 1024;
/// Chunks of a row per thread, at most: sets the block size. Measured on the H100 (bench/
/// reduce_bench.cu sweep, [32768, 4096]): 8 beat 1, 2, 4 and 16 for fp32 and bf16 (more rows
/// in flight per SM; fp32 softmax 0.48 / 0.66 / 0.76 of copy at 2 / 4 / 8). Again on the H200
/// (bf16 softmax / layer_norm at 4 / 8 / 16: 0.91 / 0.72, 0.95 / 0.84, 0.93 / 0.41).
inline std::atomic<int> rows_chunks_per_thread{8};
#ifndef CUFUSE_ROWS_MIN_THREADS
#define CUFUSE_ROWS_MIN_THREADS 32
#endif
/// The row kernel's smallest block (short rows): a power of two from 32. Measured on the H100
/// (reduce_bench, [131072, 1024] rows): 32 threads ran bf16 softmax / layer_norm at 0.87 / 0.84
/// of copy, 64 at 0.65 / 0.60 (twice the rows in flight per SM at the same registers).
inline std::atomic<int> rows_min_threads{CUFUSE_ROWS_MIN_THREADS};
/// Staged bytes per row above which a cluster of blocks shares each row (sm_90, up to 8
/// blocks; see rows_kernel), and the part of a row a block of the cluster stages at most (the
/// cluster is the smallest power of two that gets there). Measured on the H100 (reduce_bench's
/// cluster sweep): fp32 rows of 32768 columns (128 KB) ran softmax / layer_norm at 0.59 / 0.44
/// of copy in one block, 0.73 / 0.64 over 4, 0.71 / 0.62 over 8; bf16 rows of 32768 (64 KB)
/// 0.75 / 0.63 in one block, 0.70 / 0.57 over 2; rows of 32 KB were fastest in one block.
inline std::atomic<int> rows_cluster_from{96 * 1024};
inline std::atomic<int> rows_cluster_bytes{48 * 1024};
/// Whether short rows may share 32-thread blocks, a half-warp each (see try_rows_multi).
inline std::atomic<bool> rows_split{true};
#ifndef CUFUSE_ROWS_HELD
#define CUFUSE_ROWS_HELD 4
#endif
/// The held form's chunks per thread (rows_kernel's Held; 0: no held form), and its largest
/// block: rows of exactly rows_held_chunks chunks per thread of 32, 64 or 128 threads.
inline constexpr int rows_held_chunks = CUFUSE_ROWS_HELD;
inline constexpr int rows_held_threads = 128;
/// The held form runs where the rows are at most rows_held_max_waves times the blocks the device
/// holds at once (0: never), in a grid of one such wave, each block walking rows a grid apart.
/// Measured on the H200 (bench/rows_probe.cu, layer_norm, ms, staged / held in a block per row /
/// held in one wave): bf16 [8192, 1024] (32-thread blocks, 1.9 waves) 0.0137 / 0.0154 / 0.0122;
/// on more rows the staged kernel was as fast or faster in one grid or another and no one grid
/// suited every shape (bf16 [131072, 1024] 0.1356 / 0.1655 / 0.1430, 0.1348 in 4 waves; fp32
/// 0.2537 / 0.2540 / 0.2747; bf16 [16384, 2048] 0.0406 / 0.0370 / 0.0390). bench/JOURNAL.md r16.
inline std::atomic<int> rows_held_max_waves{2};
/// Whether short rows may be held in registers (see try_rows_multi).
inline std::atomic<bool> rows_held{true};
/// Chunks per thread held by the row kernel's last launch (0: not held; for tests).
inline std::atomic<int> rows_last_held{0};
/// Rows per block of the row kernel's last launch (for tests).
inline std::atomic<int> rows_last_split{0};
/// Blocks per row of the row kernel's last launch (for tests).
inline std::atomic<int> rows_last_cluster{0};
/// Reduction passes over a row in the row kernel's last launch: its distinct reductions (for
/// tests; identical ones share a pass).
inline std::atomic<int> rows_last_passes{0};
/// Whether the last row kernel's passes took the direct form (row_walk::direct), for tests.
inline std::atomic<int> rows_last_direct{-1};

/// Shared memory the row kernel may use for staged rows on the current device (it opts in
/// beyond 48 KB): the per-block opt-in limit less the reserve; queried once per device.
inline int rows_smem_budget() {
  static std::atomic<int> cache[max_cached_devices] = {};
  return per_device(cache, [](int dev) {
    int optin = 0;
    CUFUSE_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return optin > 2 * rows_static_reserve ? optin - rows_static_reserve
                                           : 48 * 1024 - rows_static_reserve;
  });
}
inline constexpr int max_row_slots = 16;

#ifndef CUFUSE_ROWS_STAGE_NATIVE
#define CUFUSE_ROWS_STAGE_NATIVE 1
#endif
/// What a staged row holds: the operand's own type. Measured on the H100 ([32768, 4096] bf16,
/// same run): staging bf16 rows as float (converted once) ran softmax / layer_norm / rms_norm
/// at 0.79 / 0.57 / 0.82 of copy, as bf16 (converted at every read) at 0.86 / 0.75 / 0.90: the
/// smaller rows let more blocks share an SM's shared memory, which mattered more than the
/// conversions. fp32 is the same either way.
template <class T>
using staged_t = std::conditional_t<CUFUSE_ROWS_STAGE_NATIVE != 0, T, opmath_t<T>>;

#ifndef CUFUSE_ROWS_DIRECT
#define CUFUSE_ROWS_DIRECT 1
#endif
/// The passes' direct form (row_walk::direct), where every leaf is staged as its own type.
inline constexpr bool rows_direct = CUFUSE_ROWS_DIRECT != 0 && CUFUSE_ROWS_STAGE_NATIVE != 0;

/// Where the row kernel evaluates: element u of the current chunk (a compile-time index once
/// the chunk loops unroll, so the leaves' chunk registers stay registers).
struct row_pos {
  int u;
};

#ifndef CUFUSE_ROWS_UNPACK
#define CUFUSE_ROWS_UNPACK 1
#endif
#ifndef CUFUSE_ROWS_PACKED
#define CUFUSE_ROWS_PACKED 1
#endif
/// V lanes in the compute type C. bf16 to float by bit moves (a bf16 is the upper half of a
/// float, exactly): two instructions per word of two values, where the compiler's conversion
/// takes three (PRMT + IMAD per upper half; ncu on the bf16 layer_norm row kernel counted the
/// conversions at ~30% of its instructions).
template <class C, class T, int V>
CUFUSE_DEVICE __forceinline__ void unpack_lanes(const lane_regs<T, V> r, C* out) {
  if constexpr (CUFUSE_ROWS_UNPACK && std::is_same_v<T, __nv_bfloat16> &&
                std::is_same_v<C, float> && V % 2 == 0) {
    CUFUSE_UNROLL
    for (int k = 0; k < V / 2; ++k) {
      unsigned w; // r is a value (registers): the copy moves no memory
      std::memcpy(&w, &r.v[2 * k], sizeof(w));
      out[2 * k] = __uint_as_float(w << 16);
      out[2 * k + 1] = __uint_as_float(w & 0xffff0000u);
    }
  } else {
    CUFUSE_UNROLL
    for (int u = 0; u < V; ++u) {
      out[u] = convert<C>(r.v[u]);
    }
  }
}

/// The row a block is on: its leading coordinates and the block's first column.
template <int R>
struct row_ctx {
  coords<R, index_t> c;
  int col0;
};

/// A leaf in the row kernel: `ptr` is the operand's base, `last` its stride along the row (0:
/// repeated), `str` its strides. A pass over the row moves the leaves it reads to the row
/// (`rebase` on its own copy of their subtree), so a leaf's row pointer lives through its pass
/// only: rebased once per row for every pass, the row pointers (layer_norm has six leaves) held
/// 12 registers through the whole row, and fp32 layer_norm ran 0.92x of copy instead of 0.98x.
/// Before the tree is evaluated over a chunk of V columns, `load` brings the leaf's V values into
/// registers in one access where it can (its staged row, or its row in memory when contiguous
/// and aligned); the tree then reads `reg[u]`: no index arithmetic and no branch per element.
template <class T, int Rank, int V>
struct row_leaf {
  using value_type = std::remove_const_t<T>;
  using promo_type = std::conditional_t<Rank == 0, zero_dim<value_type>, value_type>;
  using space = any_space;
  using compute_type = opmath_t<value_type>;
  using staged_type = staged_t<value_type>;
  static constexpr int rank = Rank;
  static constexpr bool is_cufuse_node = true;
  static constexpr int min_element_size = int(sizeof(value_type));
  static constexpr int leaf_count = 1;

  T* ptr;
  strides<Rank> str;
  int smem;   // byte offset of its staged row (of staged_type), -1: read from memory
  bool stage; // the first leaf with this staged row copies it
  bool vec;   // its rows are contiguous and 16-byte aligned: staged in 16-byte copies
  /// bf16 values stay packed two to a register until the tree reads them (CUFUSE_ROWS_PACKED):
  /// the same instructions (a shift or a mask per value), half the registers held between the
  /// loads and the math, which lets layer_norm's output pass take two chunks per step. Measured
  /// on the H200 (JOURNAL r12, of copy, unpacked / packed / packed with pairs): bf16 layer_norm
  /// [32768, 4096] 0.826 / 0.861 / 0.880, [4096, 32768] 0.667 / 0.720 / 0.754.
  static constexpr bool packed =
      CUFUSE_ROWS_PACKED != 0 && std::is_same_v<value_type, __nv_bfloat16> &&
      std::is_same_v<compute_type, float> && std::is_same_v<staged_type, value_type> && V % 2 == 0;
  std::conditional_t<packed, unsigned[V / 2 > 0 ? V / 2 : 1], compute_type[V]> reg = {};
  /// Registers a chunk of this leaf holds.
  static constexpr int chunk_regs = int(sizeof(reg) / 4);

  /// Lane u (a compile-time index once unrolled) holds x (of value_type's range when packed).
  CUFUSE_INLINE void set(int u, compute_type x) {
    if constexpr (packed) {
      unsigned b;
      std::memcpy(&b, &x, sizeof(b));
      b >>= 16; // exact: x came from a bf16, or is 0
      // lanes are set in order: the even one starts the word
      reg[u / 2] = u % 2 == 0 ? b : (reg[u / 2] & 0xffffu) | (b << 16);
    } else {
      reg[u] = x;
    }
  }
  /// All V lanes from V values of value_type, in one move when packed.
  CUFUSE_DEVICE __forceinline__ void put(const lane_regs<value_type, V>& r) {
    if constexpr (packed) {
      std::memcpy(&reg[0], &r.v[0], sizeof(reg));
    } else {
      unpack_lanes(r, reg);
    }
  }

  CUFUSE_INLINE index_t last() const {
    if constexpr (Rank == 0) {
      return 0;
    } else {
      return str[Rank - 1];
    }
  }
  /// Column col0 of the row at leading coordinates r.c (of the kernel's rank R >= Rank).
  template <int R>
  CUFUSE_DEVICE __forceinline__ T* at_row(const row_ctx<R>& r) const {
    index_t off = index_t(r.col0) * last();
    if constexpr (Rank > 1) {
      CUFUSE_UNROLL
      for (int d = 0; d < Rank - 1; ++d) {
        off += r.c.c[R - Rank + d] * str[d];
      }
    }
    return ptr + off;
  }
  /// Loads columns [j0, j0 + count) (count <= V; the tail chunk has fewer); `ptr` is rebased.
  CUFUSE_DEVICE __forceinline__ void load(int j0, int count, const unsigned char* staged) {
    using Regs = lane_regs<value_type, V>;
    using Staged = lane_regs<staged_type, V>;
    // The forms in the order of their frequency: a staged row (never of stride 0), a contiguous
    // row (stride 1), a value repeated along the row, any stride.
    if (smem >= 0) {
      const staged_type* row = reinterpret_cast<const staged_type*>(staged + smem) + j0;
      if (count == V) {
        const Staged r = *reinterpret_cast<const Staged*>(row); // one 16-byte access
        put(r);
      } else {
        CUFUSE_UNROLL
        for (int u = 0; u < V; ++u) {
          set(u, u < count ? convert<compute_type>(row[u]) : compute_type(0));
        }
      }
      return;
    }
    if (vec) { // contiguous: no multiplication by the stride
      const value_type* from = ptr + j0;
      if (count == V) {
        put(Regs::load(from));
      } else {
        CUFUSE_UNROLL
        for (int u = 0; u < V; ++u) {
          set(u, u < count ? convert<compute_type>(from[u]) : compute_type(0));
        }
      }
      return;
    }
    const index_t s = last();
    if (s == 0) { // one value for the whole row (a column vector, a rank-0 tensor)
      const compute_type x = convert<compute_type>(ptr[0]);
      CUFUSE_UNROLL
      for (int u = 0; u < V; ++u) {
        set(u, x);
      }
      return;
    }
    const value_type* from = ptr + index_t(j0) * s;
    CUFUSE_UNROLL
    for (int u = 0; u < V; ++u) {
      // every register is written on every load: none stays live from an earlier chunk
      set(u, u < count ? convert<compute_type>(from[u * s]) : compute_type(0));
    }
  }
  /// The direct form (row_walk::direct: every leaf staged, or contiguous and aligned): `ptr`
  /// moves to where load_direct reads this row, its staged row (shared memory, through a
  /// generic address) or its row in memory.
  template <int R>
  CUFUSE_DEVICE __forceinline__ void rebase_direct(const row_ctx<R>& r,
                                                   const unsigned char* staged) {
    static_assert(std::is_same_v<staged_type, value_type>,
                  "cufuse: internal: the direct form reads staged rows as the operand's type");
    ptr = smem >= 0 ? reinterpret_cast<T*>(const_cast<unsigned char*>(staged) + smem) : at_row(r);
  }
  /// A whole chunk at column j0 in one access through `ptr` (after rebase_direct), without
  /// choosing among the leaf's forms.
  CUFUSE_DEVICE __forceinline__ void load_direct(int j0) {
    put(lane_regs<value_type, V>::load(ptr + j0));
  }
  /// The held form (rows_kernel's Held): a whole chunk from the thread's held chunk `h` of the
  /// one staged row (16 bytes; a leaf inside a reduction, which the host checked is that row).
  CUFUSE_DEVICE __forceinline__ void load_held(const uint4& h) {
    if constexpr (V * sizeof(value_type) == sizeof(uint4)) {
      put_words(h);
    }
  }
  /// The held form's output pass: a whole chunk at column j0 from the held chunk `h` where this
  /// leaf reads the staged row, else from its row in memory (`ptr` rebased; contiguous and
  /// aligned).
  CUFUSE_DEVICE __forceinline__ void load_held_or_direct(int j0, const uint4& h) {
    using Regs = lane_regs<value_type, V>;
    if constexpr (sizeof(Regs) == sizeof(uint4)) {
      // a value, not a reference to either: through such a reference the compiler read the
      // chunk from memory byte by byte (16 loads; PTX of the bf16 layer_norm kernel)
      uint4 w = h;
      if (smem < 0) {
        w = load_global_word<0>(reinterpret_cast<const uint4*>(ptr + j0));
      }
      put_words(w);
    } else {
      put(Regs::load(ptr + j0)); // never the staged row: its chunks are 16 bytes
    }
  }
  /// A chunk of 16 bytes of value_type, as words.
  CUFUSE_DEVICE __forceinline__ void put_words(const uint4& h) {
    if constexpr (packed || (std::is_same_v<compute_type, value_type> && sizeof(reg) == 16)) {
      std::memcpy(&reg[0], &h, sizeof(h));
    } else {
      lane_regs<value_type, V> r;
      std::memcpy(&r, &h, sizeof(r));
      unpack_lanes(r, reg);
    }
  }
  CUFUSE_INLINE compute_type eval_in(const row_pos& p) const {
    if constexpr (packed) {
      const unsigned w = p.u % 2 == 0 ? reg[p.u / 2] << 16 : reg[p.u / 2] & 0xffff0000u;
      float x;
      std::memcpy(&x, &w, sizeof(x));
      return x;
    } else {
      return reg[p.u];
    }
  }
};

/// A subtree without leaves whose reductions all run in the row kernel (layer_norm's
/// `rsqrt(mean(c * c) + eps)`, softmax's `1 / sum(e)`): constant along the row, so it is
/// evaluated once per row, after its reductions, instead of at every column.
template <class Sub>
struct row_const {
  using value_type = typename Sub::value_type;
  using promo_type = typename Sub::promo_type;
  using space = any_space;
  using compute_type = typename Sub::compute_type;
  static constexpr int rank = Sub::rank;
  static constexpr bool is_cufuse_node = true;
  static constexpr int min_element_size = 16;
  static constexpr int leaf_count = 0;

  Sub sub;
  compute_type value{};

  CUFUSE_INLINE compute_type eval_in(const row_pos&) const { return value; }
};

/// A reduction in the row kernel: each thread holds its value for the current row.
template <class Red, class Arg, class In, int Slot>
struct row_reduce {
  using value_type = typename Red::template result<In>;
  using promo_type = value_type;
  using space = any_space;
  using compute_type = opmath_t<value_type>;
  using input_type = In;
  using state_type = typename Red::template state<In>;
  using arg_type = Arg;
  static constexpr int rank = Arg::rank;
  static constexpr bool is_cufuse_node = true;
  static constexpr int min_element_size = 16;
  static constexpr int leaf_count = 0;
  static constexpr int slot = Slot;

  Red red;
  Arg arg;
  int from; // the slot that computes its value: Slot, or an earlier identical reduction's
  compute_type value{};

  CUFUSE_INLINE compute_type eval_in(const row_pos&) const { return value; }
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
template <class T, int Rank, int V>
inline constexpr bool is_row_leaf_v<row_leaf<T, Rank, V>> = true;
template <class N>
inline constexpr bool is_row_const_v = false;
template <class Sub>
inline constexpr bool is_row_const_v<row_const<Sub>> = true;

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

/// The sum of Per<leaf>::value over the leaves of N outside its reductions (those N reads at
/// each column; on a bound tree, row constants hold no leaves).
template <template <class> class Per, class N>
constexpr int sum_over_free_leaves() {
  if constexpr (is_leaf_node_v<N> || is_row_leaf_v<N>) {
    return Per<N>::value;
  } else if constexpr (map_arity<N>::value > 0) {
    return []<class Op, class... Args>(map_node<Op, Args...>*) {
      return (0 + ... + sum_over_free_leaves<Per, Args>());
    }(static_cast<N*>(nullptr));
  } else {
    return 0;
  }
}
template <class Leaf>
struct one_per_leaf {
  static constexpr int value = 1;
};
template <class Leaf>
struct chunk_regs_of {
  static constexpr int value = Leaf::chunk_regs;
};

/// Leaves of N outside its reductions: what N reads at each column. On a bound tree: the leaves
/// a pass loads per chunk.
template <class N>
constexpr int free_leaves() {
  return sum_over_free_leaves<one_per_leaf, N>();
}

/// Registers the leaves that a bound tree N reads at each column hold per chunk.
template <class N>
constexpr int free_leaf_regs() {
  return sum_over_free_leaves<chunk_regs_of, N>();
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
  return r >= 1 && E::rank == r && reduction_count<E>() <= max_row_slots && row_fusable_types<E>(r);
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

template <int V, int FirstLeaf, int FirstSlot, int R, int L, class N>
auto bind_rows(const N& n, const row_layout<R, L>& lay);

template <int V, int FirstLeaf, int FirstSlot, int R, int L, class Op, class... Args,
          std::size_t... Is>
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
  return map_node<Op, decltype(bind_rows<V, first(leaves, Is, FirstLeaf),
                                         first(slots, Is, FirstSlot)>(get<Is>(m.args), lay))...>{
      m.op, make_pack(bind_rows<V, first(leaves, Is, FirstLeaf), first(slots, Is, FirstSlot)>(
                get<Is>(m.args), lay)...)};
}

/// The tree the row kernel evaluates: leaves numbered from FirstLeaf in tree order (those
/// inside reductions included), reductions numbered from FirstSlot in post-order; subtrees
/// without leaves that hold reductions become row constants.
template <int V, int FirstLeaf, int FirstSlot, int R, int L, class N>
auto bind_rows(const N& n, const row_layout<R, L>& lay) {
  if constexpr (is_leaf_node_v<N>) {
    using T = std::remove_pointer_t<decltype(n.ptr)>;
    return row_leaf<T, N::rank, V>{n.ptr, n.str, lay.smem[FirstLeaf], lay.stage[FirstLeaf],
                                   lay.vec[FirstLeaf]};
  } else if constexpr (is_reduce_node_v<N>) {
    auto arg = bind_rows<V, FirstLeaf, FirstSlot>(n.arg, lay);
    constexpr int slot = FirstSlot + reduction_count<typename N::arg_type>();
    return row_reduce<typename N::reducer_type, decltype(arg), typename N::input_type, slot>{
        n.red, arg, lay.from[slot]};
  } else if constexpr (map_arity<N>::value > 0) {
    auto m = bind_rows_map<V, FirstLeaf, FirstSlot>(
        n, lay, std::make_index_sequence<map_arity<N>::value>{});
    if constexpr (free_leaves<N>() == 0 && reduction_count<N>() > 0) {
      return row_const<decltype(m)>{m};
    } else {
      return m;
    }
  } else {
    return n;
  }
}

// ---- walking the bound tree in the kernel ------------------------------------------------------

/// Calls f(leaf) for each row_leaf, and f(node) for each row_reduce and row_const after its
/// subtree (post-order), through maps.
#pragma nv_exec_check_disable
template <class N, class F>
CUFUSE_HOST_DEVICE void for_each_row_node(N& n, F& f) {
  if constexpr (is_row_leaf_v<N>) {
    f(n);
  } else if constexpr (is_row_reduce_v<N>) {
    for_each_row_node(n.arg, f);
    f(n);
  } else if constexpr (is_row_const_v<N>) {
    for_each_row_node(n.sub, f);
    f(n);
  } else if constexpr (map_arity<N>::value > 0) {
    [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      (for_each_row_node(get<Is>(n.args), f), ...);
    }(std::make_index_sequence<map_arity<N>::value>{});
  }
}

/// f(leaf) for each leaf that N reads at each column: not those inside reductions or row
/// constants (their values are held for the row). What a pass loads, moves or marks goes
/// through here.
template <class N, class F>
CUFUSE_DEVICE __forceinline__ void for_free_leaves(N& n, F&& f) {
  if constexpr (is_row_leaf_v<N>) {
    f(n);
  } else if constexpr (map_arity<N>::value > 0 && !is_row_reduce_v<N> && !is_row_const_v<N>) {
    [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      (for_free_leaves(get<Is>(n.args), f), ...);
    }(std::make_index_sequence<map_arity<N>::value>{});
  }
}

/// Loads columns [j0, j0 + count) of the leaves that N reads at each column.
template <class N>
CUFUSE_DEVICE void load_chunk(N& n, int j0, int count, const unsigned char* staged) {
  for_free_leaves(n, [&](auto& leaf) { leaf.load(j0, count, staged); });
}

/// load_chunk of a whole chunk in the direct form (after rebase_direct).
template <class N>
CUFUSE_DEVICE void load_chunk_direct(N& n, int j0) {
  for_free_leaves(n, [&](auto& leaf) { leaf.load_direct(j0); });
}

/// load_chunk of a reduction's argument in the held form: its leaves from the held chunk `h`.
template <class N>
CUFUSE_DEVICE void load_chunk_held(N& n, const uint4& h) {
  for_free_leaves(n, [&](auto& leaf) { leaf.load_held(h); });
}

/// load_chunk_direct in the held form's output pass (after rebase): the staged row's leaves from
/// the held chunk `h`.
template <class N>
CUFUSE_DEVICE void load_chunk_held_out(N& n, int j0, const uint4& h) {
  for_free_leaves(n, [&](auto& leaf) { leaf.load_held_or_direct(j0, h); });
}

/// Marks the leaves of N that load_chunk reads as not staged: they read their rows in memory
/// (the held form's per-row outputs: that form has no staged row in shared memory).
template <class N>
CUFUSE_DEVICE void unstage(N& n) {
  for_free_leaves(n, [](auto& leaf) { leaf.smem = -1; });
}

/// Calls f on the first leaf of N inside a reduction (in tree order), if any; true if it did.
template <bool Inside = false, class N, class F>
CUFUSE_DEVICE bool first_reduced_leaf(N& n, F& f) {
  if constexpr (is_row_leaf_v<N>) {
    if constexpr (Inside) {
      f(n);
    }
    return Inside;
  } else if constexpr (is_row_reduce_v<N>) {
    return first_reduced_leaf<true>(n.arg, f);
  } else if constexpr (is_row_const_v<N>) {
    return first_reduced_leaf<Inside>(n.sub, f);
  } else if constexpr (map_arity<N>::value > 0) {
    return [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      return (first_reduced_leaf<Inside>(get<Is>(n.args), f) || ...);
    }(std::make_index_sequence<map_arity<N>::value>{});
  } else {
    return false;
  }
}

/// Moves the leaves of N that load_chunk reads to the row `at` (on a pass's own copy of N).
template <int R, class N>
CUFUSE_DEVICE void rebase(N& n, const row_ctx<R>& at) {
  for_free_leaves(n, [&](auto& leaf) { leaf.ptr = leaf.at_row(at); });
}

/// rebase for the direct form: the leaves' pointers to where load_direct reads. The tail
/// chunk's load_chunk still reads correctly after it (a staged leaf reads through `smem`).
template <int R, class N>
CUFUSE_DEVICE void rebase_direct(N& n, const row_ctx<R>& at, const unsigned char* staged) {
  for_free_leaves(n, [&](auto& leaf) { leaf.rebase_direct(at, staged); });
}

/// The row geometry: `rows` rows of `n` columns; leading coordinates unravel over `shape`.
/// `cluster` blocks (a thread block cluster when > 1) share each row: block rank r takes
/// columns [r * part, (r + 1) * part).
template <int R>
struct row_walk {
  index_t rows = 0, n = 0;
  int n32 = 0, part32 = 0; // n and the columns per block, as int
  int cluster = 1;
  int split = 1;     // rows per block: 2 gives each half-warp of a 32-thread block a row
  int sub_bytes = 0; // staged bytes of a half-warp's row (split 2)
  /// Every leaf staged, or contiguous and aligned, every whole-row output contiguous and
  /// aligned (and rows_direct_for the expression): the passes' whole chunks take the direct
  /// form (one access per leaf through its row pointer, no test of its form per chunk).
  bool direct = false;
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

/// The widest element of the leaves of a user's tree, in bytes (0: none).
template <class N>
constexpr int max_leaf_bytes() {
  if constexpr (is_leaf_node_v<N>) {
    return int(sizeof(typename N::value_type));
  } else if constexpr (is_reduce_node_v<N>) {
    return max_leaf_bytes<typename N::arg_type>();
  } else if constexpr (map_arity<N>::value > 0) {
    return []<class Op, class... Args>(map_node<Op, Args...>*) {
      int m = 0;
      ((m = m > max_leaf_bytes<Args>() ? m : max_leaf_bytes<Args>()), ...);
      return m;
    }(static_cast<N*>(nullptr));
  } else {
    return 0;
  }
}

/// The largest Metric<X>::value over the row reductions X of a bound tree (nested ones and those
/// inside row constants included; 0: none).
template <template <class> class Metric, class N>
constexpr int max_over_reductions() {
  if constexpr (is_row_reduce_v<N>) {
    constexpr int own = Metric<N>::value;
    constexpr int inner = max_over_reductions<Metric, typename N::arg_type>();
    return own > inner ? own : inner;
  } else if constexpr (is_row_const_v<N>) {
    return max_over_reductions<Metric, decltype(N::sub)>();
  } else if constexpr (map_arity<N>::value > 0) {
    return []<class Op, class... Args>(map_node<Op, Args...>*) {
      int m = 0;
      ((m = m > max_over_reductions<Metric, Args>() ? m : max_over_reductions<Metric, Args>()),
       ...);
      return m;
    }(static_cast<N*>(nullptr));
  } else {
    return 0;
  }
}

/// A reduction's state, in bytes.
template <class X>
struct state_size {
  static constexpr int value = int(sizeof(typename X::state_type));
};
/// The largest reduction state of a bound tree, in bytes.
template <class N>
constexpr int max_state_bytes() {
  return max_over_reductions<state_size, N>();
}
template <class... Ts>
constexpr int max_state_bytes_of(const pack<Ts...>*) {
  int m = 8;
  ((m = m > max_state_bytes<Ts>() ? m : max_state_bytes<Ts>()), ...);
  return (m + 15) / 16 * 16;
}
/// Bytes per warp's partial state in the row kernel (a multiple of 16).
template <class Trees>
inline constexpr int rows_state_bytes = max_state_bytes_of(static_cast<const Trees*>(nullptr));

/// Leaves a reduction's pass loads per chunk.
template <class X>
struct arg_free_leaves {
  static constexpr int value = free_leaves<typename X::arg_type>();
};
/// The most leaves any reduction pass inside N loads per chunk.
template <class N>
constexpr int reduce_pass_leaves() {
  return max_over_reductions<arg_free_leaves, N>();
}
template <class... Ts>
constexpr int pass_leaves_of(const pack<Ts...>*) {
  int m = 0;
  ((m = m > free_leaves<Ts>() ? m : free_leaves<Ts>()), ...);
  ((m = m > reduce_pass_leaves<Ts>() ? m : reduce_pass_leaves<Ts>()), ...);
  return m;
}

/// The row kernel's second __launch_bounds__ argument, per expression: 3 blocks of 512 threads
/// (40 registers) when no pass loads more than one leaf per chunk (softmax, log_softmax,
/// `X - amax(X, -1, keepdim)`), else 2 (64 registers: layer_norm's output pass holds x, w and b,
/// V registers each). Measured on the H200 at [32768, 4096], of copy, 64 / 40 registers:
/// softmax bf16 0.901 / 0.952, fp32 0.963 / 0.966, bf16 [4096, 32768] 0.817 / 0.885, fp32
/// [4096, 32768] 0.667 / 0.753; but layer_norm bf16 0.691 / 0.558 and rms_norm bf16 0.939 /
/// 0.821 (ptxas spills at 40). On the H100 (r9) one bound of 64 for every expression had been
/// the best single choice. CUFUSE_ROWS_MIN_BLOCKS sets one bound for every expression.
template <class Trees>
inline constexpr int rows_min_blocks =
#ifdef CUFUSE_ROWS_MIN_BLOCKS
    CUFUSE_ROWS_MIN_BLOCKS;
#else
    pass_leaves_of(static_cast<const Trees*>(nullptr)) <= 1 ? 3 : 2;
#endif

/// Whether the kernel for Trees has the direct form (row_walk::direct): where a pass loads more
/// than one leaf per chunk (layer_norm, rms_norm). With one leaf per pass (softmax, `sum(X, -1)`)
/// the tests it saves are few, and its second loop made ptxas spill under the 40-register bound
/// (`sum(X, 1)` fp32 0.99x -> 0.84x copy; JOURNAL r15).
template <class Trees>
inline constexpr bool rows_direct_for =
    rows_direct && pass_leaves_of(static_cast<const Trees*>(nullptr)) > 1;

/// Whether the kernel for Trees has a held instantiation (rows_kernel's Held): where it has the
/// direct form.
template <class Trees>
inline constexpr bool rows_held_for = rows_held_chunks > 0 && rows_direct_for<Trees>;

/// A pass in its form: f(std::true_type) in the direct form (Trees has it and the launch's
/// operands allow it: `direct`), else f(std::false_type).
template <class Trees, class F>
CUFUSE_DEVICE __forceinline__ auto in_form(bool direct, F&& f) {
  if constexpr (rows_direct_for<Trees>) {
    return direct ? f(std::true_type{}) : f(std::false_type{});
  } else {
    return f(std::false_type{});
  }
}

#ifndef CUFUSE_ROWS_OUT_PAIRS
#define CUFUSE_ROWS_OUT_PAIRS 16
#endif
/// The output pass takes two chunks per step (both chunks' operands loaded before either is
/// computed) when the leaves it reads hold at most CUFUSE_ROWS_OUT_PAIRS registers per chunk
/// (0: never). Measured on the H200 (JOURNAL r12, of copy, one chunk / two): layer_norm fp32
/// [32768, 4096] 0.953 / 0.962, [131072, 1024] 0.954 / 0.972; softmax bf16 [131072, 1024]
/// 0.858 / 0.866; bf16 layer_norm (x, w and b) spilled with 24 registers of unpacked leaves
/// (0.825 / 0.800), and gains with the 12 of packed ones (0.861 / 0.880).
template <class Tree>
inline constexpr bool rows_out_pairs = free_leaf_regs<Tree>() <= CUFUSE_ROWS_OUT_PAIRS;

/// Stores V elements as whole words of up to 16 bytes, one store instruction each (copying
/// the words through a pointer cast let the compiler split a 16-byte store of bf16 values
/// into four 4-byte stores).
template <class T, int V>
CUFUSE_DEVICE void store_words(T* to, const lane_regs<T, V>& r) {
  using Regs = lane_regs<T, V>;
  using W = typename Regs::word_t;
  auto* dst = reinterpret_cast<W*>(to);
  CUFUSE_UNROLL
  for (int c = 0; c < Regs::words; ++c) {
    W w;
    std::memcpy(&w, reinterpret_cast<const unsigned char*>(r.v) + c * sizeof(W), sizeof(W));
    __stwb(dst + c, w);
  }
}

#ifndef CUFUSE_ROWS_CP_ASYNC
#define CUFUSE_ROWS_CP_ASYNC 1
#endif
#ifndef CUFUSE_ROWS_CP_ASYNC_CG
#define CUFUSE_ROWS_CP_ASYNC_CG 1
#endif
/// Staging by cp.async (sm_80+, a leaf staged as its own type, contiguous and aligned rows):
/// every chunk of the thread's part of the row is in flight at once, without registers to
/// hold it; the thread waits for its own copies (rows_stage_wait) before it reads them.
template <class T, class C, int V>
inline constexpr bool rows_cp_async_v =
    CUFUSE_ROWS_CP_ASYNC != 0 && std::is_same_v<T, C> &&
    (V * sizeof(T) == 4 || V * sizeof(T) == 8 || V * sizeof(T) == 16);

/// One chunk of `Bytes` (4, 8 or 16) from global to a shared-memory byte address.
template <int Bytes>
CUFUSE_DEVICE __forceinline__ void rows_cp_async(unsigned to, const void* from,
                                                 [[maybe_unused]] std::uint64_t policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (Bytes == 16 && CUFUSE_STREAM_L2_HINT != 0) { // the policy: CUFUSE_STREAM_L2_HINT
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(to),
                 "l"(from), "l"(policy));
  } else if constexpr (Bytes == 16) { // .cg: around L1, the row is read once
#if CUFUSE_ROWS_CP_ASYNC_CG
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(from));
#else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(from));
#endif
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(to), "l"(from), "n"(Bytes));
  }
#endif
}

/// Waits for this thread's staging copies: its staged chunks are then readable by it.
CUFUSE_DEVICE __forceinline__ void rows_stage_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (CUFUSE_ROWS_CP_ASYNC != 0) {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  }
#endif
}

/// Copies a leaf's row into its staged row (as staged_t): chunks of V columns, by cp.async
/// where it can, else up to B chunks' loads in flight per thread before their stores (a thread
/// keeps the same chunks in every pass).
template <int V, int B, bool Async, int R, class X>
CUFUSE_DEVICE void stage_row(const X& node, const row_ctx<R>& at, unsigned char* staged, int full,
                             int rest, int tid, int threads) {
  using T = typename X::value_type;
  using C = typename X::staged_type;
  using Regs = lane_regs<T, V>;
  C* row = reinterpret_cast<C*>(staged + node.smem);
  const T* src = node.at_row(at);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (Async && rows_cp_async_v<T, C, V>) {
    if (node.vec) {
      constexpr int bytes = int(V * sizeof(T));
      const unsigned base = unsigned(__cvta_generic_to_shared(row));
      const std::uint64_t policy = l2_policy<CUFUSE_STREAM_L2_HINT>();
#pragma unroll 1
      for (int ch = tid; ch < full; ch += threads) {
        rows_cp_async<bytes>(base + unsigned(ch * bytes), src + ch * V, policy);
      }
      if (rest > 0 && tid == int(full % threads)) {
        CUFUSE_UNROLL
        for (int u = 0; u < V; ++u) {
          if (u < rest) {
            row[full * V + u] = src[full * V + u];
          }
        }
      }
      return;
    }
  }
#endif
  if (node.vec) {
    for (int ch0 = tid; ch0 < full; ch0 += B * threads) {
      Regs r[B];
      CUFUSE_UNROLL
      for (int b = 0; b < B; ++b) {
        const int ch = ch0 + b * threads;
        if (ch < full) { // word by word: `r[b] = Regs::load(...)` gave other, unmeasured code
          const auto* from = reinterpret_cast<const typename Regs::word_t*>(src + ch * V);
          auto* to = reinterpret_cast<typename Regs::word_t*>(r[b].v);
          CUFUSE_UNROLL
          for (int c = 0; c < Regs::words; ++c) {
            to[c] = from[c];
          }
        }
      }
      CUFUSE_UNROLL
      for (int b = 0; b < B; ++b) {
        const int ch = ch0 + b * threads;
        if (ch < full) {
          lane_regs<C, V> c;
          CUFUSE_UNROLL
          for (int u = 0; u < V; ++u) {
            c.v[u] = convert<C>(r[b].v[u]);
          }
          *reinterpret_cast<lane_regs<C, V>*>(row + ch * V) = c;
        }
      }
    }
  } else {
    const index_t s = node.last();
    for (int ch = tid; ch < full; ch += threads) {
      CUFUSE_UNROLL
      for (int u = 0; u < V; ++u) {
        row[ch * V + u] = convert<C>(src[(ch * V + u) * s]);
      }
    }
  }
  if (rest > 0 && tid == int(full % threads)) {
    const index_t s = node.last();
    CUFUSE_UNROLL
    for (int u = 0; u < V; ++u) {
      if (u < rest) {
        row[full * V + u] = convert<C>(src[(full * V + u) * s]);
      }
    }
  }
}

/// Trees and Outs: packs of K bound trees and their outputs (tie / pack: K > 1). V: elements
/// per chunk.
///
/// Every pass over a row (staging, each reduction, each output) gives thread t the same
/// chunks of V columns: t, t + threads, ... So a thread only ever reads back the staged
/// elements it wrote itself: no barrier guards the staged rows, and a row needs exactly one
/// __syncthreads per distinct reduction (its warps' partial states meeting in shared memory).
/// Every thread then merges the partials itself, in warp order, and keeps the result in its
/// own copy of the tree (row_reduce::value). The partial buffers alternate between
/// consecutive reductions: a thread can only overwrite a buffer after a barrier that every
/// thread reaches once it has read that buffer.
///
/// Long rows (sm_90): a cluster of w.cluster blocks shares each row, block rank r on columns
/// [r * part, (r + 1) * part), so each block stages only its part and more rows are in flight
/// per SM. A reduction then merges the blocks' states through distributed shared memory: each
/// block publishes its state, one cluster barrier, every thread merges the states of ranks
/// 0, 1, ... in order. The published states alternate between two buffers as the partials do,
/// and a final cluster barrier keeps every block's shared memory alive until all have read it.
/// Clustered: the instantiation for clusters; the other one has none of their steps.
/// Split (short rows, 32-thread blocks, not clustered): each half-warp is a block of 16 threads
/// of its own row, the two staged rows row_walk::sub_bytes apart; its reductions fold over its
/// 16 lanes and need no barrier. Its own instantiation: as a run-time mode of this one, its
/// indices cost every row kernel registers (ptxas: softmax's, bound to 40, spilled 136 bytes).
/// Bound to 64 registers: 32 blocks of 32 threads (the most an SM holds) fill the register file.
/// Held (short rows, not clustered, not split; rows_held_for): each thread holds exactly Held
/// chunks of the row that the reductions read in registers (every leaf inside a reduction reads
/// that one row), loaded once; the reduction passes read them there, unrolled over the chunks
/// without a test per chunk or per leaf; the output pass reads the leaves of that row there too
/// (a test per leaf) and the others from memory (contiguous and aligned). No shared memory for
/// rows. try_rows_multi checks the layout and that the row is exactly Held * blockDim.x chunks.
/// Bound to 64 registers (8 blocks of 128 threads, or 32 of 32).
template <int R, int V, std::size_t K, class Trees, class Outs, bool Clustered, bool Split = false,
          int Held = 0>
__global__ void __launch_bounds__(Held > 0 ? rows_held_threads
                                  : Split  ? 32
                                           : rows_max_threads,
                                  Held > 0 ? 2048 / 2 / rows_held_threads
                                  : Split  ? 32
                                           : rows_min_blocks<Trees>)
    rows_kernel(Outs outs, Trees trees, row_walk<R> w) {
  pdl_wait(); // a dependent launch: the previous kernel's results first (core/pdl.cuh)
  extern __shared__ __align__(16) unsigned char staged_all[];
  constexpr int state_bytes = rows_state_bytes<Trees>;
  __shared__ __align__(16) unsigned char partials[2][32 * state_bytes];
  __shared__ __align__(16) unsigned char published[Clustered ? 2 : 1][state_bytes];
  const index_t n = w.n; // at most INT_MAX (checked on the host): 32-bit columns
  const int clusters = Clustered ? w.cluster : 1;
  int rank = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (Clustered) {
    rank = int(cooperative_groups::this_cluster().block_rank());
  }
#endif
  // 32-bit columns (n <= INT_MAX, checked on the host). The block's columns are computed in
  // int from int operands: with `int(n) - col0 < int(w.part) ? ...` on the 64-bit fields and
  // col0 known to be 0, ptxas (CUDA 13.0, sm_90a) merged the low 16 bits of the minimum with
  // garbage (PRMT 0x7610) and the staging ran past the row.
  const int n32 = w.n32, part32 = w.part32;
  const int col0 = rank * part32;
  int cols = n32 - col0;
  cols = cols < part32 ? cols : part32;
  cols = cols > 0 ? cols : 0;       // this block's columns of a row
  const int full = cols / V;        // chunks of V columns
  const int rest = cols - full * V; // columns in the tail chunk
  static_assert(!(Clustered && Split), "cufuse: internal: a split row kernel is not clustered");
  static_assert(Held == 0 || (!Clustered && !Split && Held % 2 == 0),
                "cufuse: internal: a held row kernel is neither clustered nor split");
  constexpr int split = Split ? 2 : 1;
  const int sub = Split ? int(threadIdx.x) / 16 : 0; // a split kernel runs 32-thread blocks
  const int tid = Split ? int(threadIdx.x) % 16 : int(threadIdx.x);
  const int threads = Split ? 16 : int(blockDim.x);
  const int warp = tid / 32, warps = Split ? 1 : threads / 32;
  unsigned char* staged = Split ? staged_all + sub * w.sub_bytes : staged_all;
  int flip = 0;
  for (index_t row = index_t(blockIdx.x / unsigned(clusters)) * split + sub; row < w.rows;
       row += index_t(gridDim.x / unsigned(clusters)) * split) {
    coords<R, index_t> c{};
    std::uint64_t left = std::uint64_t(row);
    for (int d = R - 2; d >= 0; --d) {
      std::uint64_t q = left;
      if (d > 0) {
        w.div[d].divmod(left, left, q);
      }
      c.c[d] = index_t(q);
    }
    Trees t = trees;
    const row_ctx<R> at{c, col0};
    // 1. stage the rows read more than once (held form: the reductions' row, into registers)
    uint4 held[Held > 0 ? Held : 1];
    if constexpr (Held > 0) {
      auto hold = [&](auto& node) {
        using X = std::remove_cvref_t<decltype(node)>;
        if constexpr (V * sizeof(typename X::value_type) == sizeof(uint4)) {
          const auto* src = reinterpret_cast<const uint4*>(node.at_row(at)) + tid;
          CUFUSE_UNROLL
          for (int i = 0; i < Held; ++i) {
            held[i] = src[i * threads];
          }
        }
      };
      [&]<std::size_t... Ks>(std::index_sequence<Ks...>) {
        (first_reduced_leaf(get<Ks>(t), hold) || ...);
      }(std::make_index_sequence<K>{});
    } else {
      auto stage = [&](auto& node) {
        using X = std::remove_cvref_t<decltype(node)>;
        if constexpr (is_row_leaf_v<X>) {
          if (node.stage) {
            stage_row<V, 4, !Clustered>(node, at, staged, full, rest, tid, threads);
          }
        }
      };
      for_index_device<K>([&](auto k) { for_each_row_node(get<decltype(k)::value>(t), stage); });
    }
    if constexpr (!Clustered && Held == 0) {
      rows_stage_wait();
    }
    // 2. the reductions, inner ones first; row constants once their reductions are known
    auto reduce = [&](auto& node) {
      using X = std::remove_cvref_t<decltype(node)>;
      if constexpr (is_row_const_v<X>) {
        node.value = node.sub.eval_in(row_pos{0});
      } else if constexpr (is_row_reduce_v<X>) {
        if (node.from != X::slot) {
          return; // an identical reduction computed it already
        }
        using In = typename X::input_type;
        using S = typename X::state_type;
        using A = decltype(node.arg.eval_in(row_pos{0}));
        // this thread's chunks: the direct form or the general one, each its own loop
        // a whole chunk at column j0 of the loaded leaves of `arg` into s: all V values evaluated,
        // then added in column order
        auto add_chunk = [&](S& s, auto& arg, int j0) {
          A x[V];
          CUFUSE_UNROLL
          for (int u = 0; u < V; ++u) {
            x[u] = arg.eval_in(row_pos{u});
          }
          CUFUSE_UNROLL
          for (int u = 0; u < V; ++u) {
            node.red.template add<In>(s, x[u], col0 + j0 + u);
          }
        };
        auto fold = [&](auto direct) {
          S s = node.red.template init<In>();
          auto arg = node.arg; // this thread's chunk registers, its leaves on this row
          if constexpr (decltype(direct)::value) {
            rebase_direct(arg, at, staged);
          } else {
            rebase(arg, at);
          }
#pragma unroll 1
          for (int ch = tid; ch < full; ch += threads) {
            const int j0 = ch * V;
            if constexpr (decltype(direct)::value) {
              load_chunk_direct(arg, j0);
            } else {
              load_chunk(arg, j0, V, staged);
            }
            add_chunk(s, arg, j0);
          }
          if (rest > 0 && tid == int(full % threads)) {
            load_chunk(arg, full * V, rest, staged);
            CUFUSE_UNROLL
            for (int u = 0; u < V; ++u) {
              if (u < rest) {
                node.red.template add<In>(s, arg.eval_in(row_pos{u}), col0 + full * V + u);
              }
            }
          }
          return s;
        };
        // the held form: every chunk unrolled, the leaves from their held chunks
        auto fold_held = [&](auto) {
          S s = node.red.template init<In>();
          auto arg = node.arg;
          CUFUSE_UNROLL
          for (int i = 0; i < (Held > 0 ? Held : 1); ++i) {
            const int j0 = (tid + i * threads) * V;
            load_chunk_held(arg, held[i]);
            add_chunk(s, arg, j0);
          }
          return s;
        };
        S s = [&] {
          if constexpr (Held > 0) {
            return fold_held(0);
          } else {
            return in_form<Trees>(w.direct, fold);
          }
        }();
        if constexpr (Split) {
          static_assert(shuffled_state<S>, "cufuse: internal: a split row kernel's state");
          const unsigned lanes = 0xffffu << (threadIdx.x & 16u); // this half-warp
          s = warp_fold<In, 16>(node.red, s, lanes);
          s = lanes_bcast(s, lanes, 0, 16); // lane 0's state to the half-warp
        } else {
          s = warp_fold<In>(node.red, s);
        }
        if constexpr (!Split) {
          S* p = reinterpret_cast<S*>(partials[flip]);
          if (tid % 32 == 0) {
            p[warp] = s;
          }
          __syncthreads();
          s = p[0];
          for (int k = 1; k < warps; ++k) {
            s = node.red.template merge<In>(s, p[k]);
          }
        }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        if constexpr (Clustered) {
          auto cluster = cooperative_groups::this_cluster();
          S* mine = reinterpret_cast<S*>(published[flip]);
          if (tid == 0) {
            *mine = s;
          }
          cluster.sync();
          s = *cluster.map_shared_rank(mine, 0);
          for (int r = 1; r < clusters; ++r) {
            s = node.red.template merge<In>(s, *cluster.map_shared_rank(mine, r));
          }
        }
#endif
        flip ^= 1;
        const auto v = node.red.template finish<In>(s, n);
        // this reduction and its duplicates, in every tree, now hold the row's value
        auto set = [&](auto& m) {
          using M = std::remove_cvref_t<decltype(m)>;
          if constexpr (is_row_reduce_v<M>) {
            if constexpr (std::is_same_v<typename M::compute_type, typename X::compute_type>) {
              if (m.from == X::slot) {
                m.value = v;
              }
            }
          }
        };
        for_index_device<K>([&](auto k) { for_each_row_node(get<decltype(k)::value>(t), set); });
      }
    };
    for_index_device<K>([&](auto k) { for_each_row_node(get<decltype(k)::value>(t), reduce); });
    // 3. the maps, stored
    for_index_device<K>([&](auto k) {
      const auto& o = get<decltype(k)::value>(outs);
      using T = std::remove_pointer_t<decltype(o.ptr)>;
      index_t off = 0;
      for (int d = 0; d < R - 1; ++d) {
        off += c.c[d] * o.str[d];
      }
      if (o.per_row) {
        auto tree = get<decltype(k)::value>(t); // its leaves on this row
        if constexpr (Held > 0) {
          unstage(tree); // no row in shared memory: its leaves read their rows in memory
        }
        rebase(tree, at);
        T* dst = o.ptr + off;
        if (tid == 0 && rank == 0) {
          load_chunk(tree, 0, 1, staged);
          dst[0] = convert<T>(tree.eval_in(row_pos{0}));
        }
        return;
      }
      const index_t os = o.str[R - 1];
      T* dst = o.ptr + off + index_t(col0) * os;
      if constexpr (Held > 0) {
        // every chunk unrolled, two per step (both chunks' operands loaded before either is
        // computed); the staged row's leaves from the held chunks, the others from memory; o is
        // contiguous and aligned
        auto tree = get<decltype(k)::value>(t);
        rebase(tree, at);
        using X = decltype(tree.eval_in(row_pos{0}));
        CUFUSE_UNROLL
        for (int i = 0; i < Held; i += 2) {
          const int j0 = (tid + i * threads) * V, j1 = j0 + threads * V;
          auto tree2 = tree;
          load_chunk_held_out(tree, j0, held[i]);
          load_chunk_held_out(tree2, j1, held[i + 1]);
          X x[V], x2[V];
          CUFUSE_UNROLL
          for (int u = 0; u < V; ++u) {
            x[u] = tree.eval_in(row_pos{u});
            x2[u] = tree2.eval_in(row_pos{u});
          }
          store_words(dst + j0, round_lanes<T>(x));
          store_words(dst + j1, round_lanes<T>(x2));
        }
      } else {
        // the whole chunks, in the direct form or the general one; then the tail chunk
        auto map = [&](auto direct) {
          auto tree = get<decltype(k)::value>(t); // its leaves on this row
          if constexpr (decltype(direct)::value) {
            rebase_direct(tree, at, staged);
          } else {
            rebase(tree, at);
          }
          auto load = [&](auto& tr, int j0) {
            if constexpr (decltype(direct)::value) {
              load_chunk_direct(tr, j0);
            } else {
              load_chunk(tr, j0, V, staged);
            }
          };
          auto store = [&](int j0, const lane_regs<T, V>& r) {
            if (decltype(direct)::value || o.vec) { // direct: o is contiguous and aligned
              store_words(dst + j0, r);
            } else {
              CUFUSE_UNROLL
              for (int u = 0; u < V; ++u) {
                dst[(j0 + u) * os] = r.v[u];
              }
            }
          };
          int ch = tid;
          if constexpr (rows_out_pairs<decltype(tree)>) {
            // two chunks per step: both chunks' operands loaded before either is computed
            using X = decltype(tree.eval_in(row_pos{0}));
#pragma unroll 1
            for (; ch + threads < full; ch += 2 * threads) {
              auto tree2 = tree;
              load(tree, ch * V);
              load(tree2, (ch + threads) * V);
              X x[V], x2[V];
              CUFUSE_UNROLL
              for (int u = 0; u < V; ++u) {
                x[u] = tree.eval_in(row_pos{u});
                x2[u] = tree2.eval_in(row_pos{u});
              }
              const lane_regs<T, V> r = round_lanes<T>(x), r2 = round_lanes<T>(x2);
              store(ch * V, r);
              store((ch + threads) * V, r2);
            }
          }
#pragma unroll 1
          for (; ch < full; ch += threads) {
            const int j0 = ch * V;
            load(tree, j0);
            decltype(tree.eval_in(row_pos{0})) x[V];
            CUFUSE_UNROLL
            for (int u = 0; u < V; ++u) {
              x[u] = tree.eval_in(row_pos{u});
            }
            store(j0, round_lanes<T>(x));
          }
          return tree;
        };
        auto tree = in_form<Trees>(w.direct, map);
        if (rest > 0 && tid == int(full % threads)) {
          load_chunk(tree, full * V, rest, staged);
          CUFUSE_UNROLL
          for (int u = 0; u < V; ++u) {
            if (u < rest) {
              dst[(full * V + u) * os] = convert<T>(tree.eval_in(row_pos{u}));
            }
          }
        }
      }
    });
  }
  // The next kernel may set itself up now, not at the start: this kernel's blocks often leave
  // room on the SMs, where the next kernel's waiting blocks would share the schedulers with the
  // rows still being computed (a softmax between elementwise kernels ran slower so; JOURNAL g37).
  pdl_release();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (Clustered) {
    cooperative_groups::this_cluster().sync(); // the others may still read `published`
  }
#endif
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

/// The bound trees of the row kernel, one per expression.
template <int V, int R, int L, class... Es, std::size_t... Ks>
auto bind_row_trees(const pack<Es...>& exprs, const row_layout<R, L>& lay,
                    std::index_sequence<Ks...>) {
  return make_pack(
      bind_rows<V, leaves_before<Es...>(Ks), slots_before<Es...>(Ks)>(get<Ks>(exprs), lay)...);
}

template <class T>
bool same_bytes(const T& a, const T& b) {
  if constexpr (std::is_empty_v<T>) {
    return true;
  } else {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
  }
}

/// True when two nodes of one type compute the same values: the same operands (pointer, shape
/// and strides), scalars, parameters and axes, compared member by member. Comparing the nodes'
/// bytes also compared their padding, which a copy need not keep: layer_norm's copies of
/// mean(x) compared unequal, and the row kernel ran that reduction twice (three passes over
/// the row instead of two; ncu's per-instruction counts on the H200 showed it).
template <class N>
bool same_node(const N& a, const N& b) {
  if constexpr (is_leaf_node_v<N>) {
    if constexpr (requires { a.shp; }) {
      return a.ptr == b.ptr && a.shp == b.shp && a.str == b.str;
    } else {
      return same_bytes(a, b);
    }
  } else if constexpr (is_reduce_node_v<N>) {
    return same_bytes(a.red, b.red) && a.mask == b.mask && same_node(a.arg, b.arg);
  } else if constexpr (map_arity<N>::value > 0) {
    return same_bytes(a.op, b.op) && [&]<std::size_t... Is>(std::index_sequence<Is...>) {
      return (same_node(get<Is>(a.args), get<Is>(b.args)) && ...);
    }(std::make_index_sequence<map_arity<N>::value>{});
  } else {
    return same_bytes(a, b);
  }
}

/// Blocks of `threads` (32, 64 or 128) threads of `Kernel` that the current device holds at
/// once; once per device and block size.
template <auto Kernel>
int rows_resident_blocks(int threads) {
  static std::atomic<int> cache[3][max_cached_devices] = {};
  const int slot = threads <= 32 ? 0 : threads <= 64 ? 1 : 2;
  return per_device(cache[slot], [threads](int dev) {
    int sms = 0, per_sm = 0;
    CUFUSE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUFUSE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, threads, 0));
    return sms * (per_sm > 0 ? per_sm : 1);
  });
}

/// Lets `Kernel` use `bytes` of dynamic shared memory (beyond 48 KB); once per device.
template <auto Kernel>
void rows_opt_in(int bytes) {
  static std::atomic<int> done[max_cached_devices] = {};
  per_device(done, [bytes](int) {
    CUFUSE_CUDA_CHECK(
        cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return 1;
  });
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
  for_index<K>(
      [&](auto k) { visit_tree(get<std::remove_cvref_t<decltype(k)>::value>(exprs), check); });
  if (!ok) {
    return false;
  }
  const index_t n = shape[R - 1];
  if (n > index_t(std::numeric_limits<int>::max() - 64)) {
    return false; // columns are 32-bit in the row kernel
  }
  // Leaves in tree order (inside reductions too); rows read twice or more are staged once.
  struct info {
    const void* ptr;
    int elem;
    int staged_elem; // bytes of what its staged row holds
    strides<R> str;
    bool reduced; // read inside a reduction
  };
  std::array<info, (L > 0 ? L : 1)> leaves{};
  int next = 0;
  auto collect = [&](const auto& node) {
    using N = std::remove_cvref_t<decltype(node)>;
    if constexpr (is_leaf_node_v<N>) {
      info& i = leaves[next++];
      i.ptr = node.ptr;
      i.elem = int(sizeof(typename N::value_type));
      i.staged_elem = int(sizeof(staged_t<typename N::value_type>));
      for (int k = 0; k < R; ++k) {
        const int s = k - (R - N::rank);
        i.str[k] = s >= 0 ? node.str[s] : 0;
      }
    } else if constexpr (is_reduce_node_v<N>) {
      // post-order: the reduction's own leaves are the last ones seen
      for (int l = next - all_leaves<typename N::arg_type>(); l < next; ++l) {
        leaves[l].reduced = true;
      }
    }
  };
  for_index<K>(
      [&](auto k) { visit_tree(get<std::remove_cvref_t<decltype(k)>::value>(exprs), collect); });
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
  // V columns per chunk: 16 bytes of the widest operand or output. A contiguous row whose
  // start is aligned to a chunk's bytes in every row moves in one access per chunk.
  constexpr int widest = [] {
    int m = 1;
    ((m = m > max_leaf_bytes<Es>() ? m : max_leaf_bytes<Es>()), ...);
    ((m = m > int(sizeof(typename Ds::value_type)) ? m : int(sizeof(typename Ds::value_type))),
     ...);
    return m;
  }();
  constexpr int V = 16 / widest > 0 ? 16 / widest : 1;
  auto rows_aligned = [&](const void* p, int elem, const strides<R>& st) {
    const int align = V * elem;
    if (st[R - 1] != 1 || reinterpret_cast<std::uintptr_t>(p) % align != 0) {
      return false;
    }
    for (int d = 0; d < R - 1; ++d) {
      if ((st[d] * elem) % align != 0) {
        return false;
      }
    }
    return true;
  };
  const int budget = rows_smem_budget();
  // Which leaves a staged row serves (the first leaf of that row stages it).
  std::array<int, (L > 0 ? L : 1)> first_use{};
  index_t row_bytes = 0; // staged bytes of a whole row
  for (int l = 0; l < L; ++l) {
    first_use[l] = -1;
    int uses = 0;
    for (int k = 0; k < L; ++k) {
      if (leaves[k].ptr == leaves[l].ptr && leaves[k].elem == leaves[l].elem &&
          leaves[k].str == leaves[l].str) {
        ++uses;
        first_use[l] = first_use[l] < 0 ? k : first_use[l];
      }
    }
    // Staged: rows read twice or more, and rows a reduction reads (once staged, every chunk
    // of a thread is in flight at once; read chunk by chunk, one 16-byte load per thread was,
    // and `sum(X, -1)` ran far below the copy bandwidth).
    if ((uses < 2 && !leaves[l].reduced) || leaves[l].str[R - 1] == 0) {
      first_use[l] = -1;
    } else if (first_use[l] == l) {
      row_bytes += n * leaves[l].staged_elem;
    }
  }
  using trees_t = decltype(bind_row_trees<V>(exprs, lay, std::make_index_sequence<K>{}));
  using outs_t = decltype(make_pack(row_out<typename Ds::value_type, R>{}...));
  constexpr auto plain_kernel = &rows_kernel<R, V, K, trees_t, outs_t, false>;
  constexpr auto cluster_kernel = &rows_kernel<R, V, K, trees_t, outs_t, true>;
  // Short rows two to a block (below): states that half-warps exchange by shuffles.
  constexpr bool can_split = rows_state_bytes<trees_t> <= 32;
  // Long rows: a cluster of blocks per row, each staging its part.
  int cluster = 1;
  const index_t cluster_bytes = rows_cluster_bytes.load(std::memory_order_relaxed);
  const index_t cluster_from = rows_cluster_from.load(std::memory_order_relaxed);
  if (row_bytes > cluster_from && sm90_kernel<cluster_kernel>()) {
    while (cluster < 8 && row_bytes > cluster_bytes * cluster) {
      cluster *= 2;
    }
  }
  const index_t chunks_total = (n + V - 1) / V;
  const index_t part = (chunks_total + cluster - 1) / cluster * V; // columns per block
  for (int l = 0; l < L; ++l) {
    lay.smem[l] = -1;
    lay.stage[l] = false;
    lay.vec[l] = rows_aligned(leaves[l].ptr, leaves[l].elem, leaves[l].str);
    const int first = first_use[l];
    if (first < 0) {
      continue;
    }
    if (first < l) {
      lay.smem[l] = lay.smem[first];
      continue;
    }
    const index_t need = (part * leaves[l].staged_elem + 15) / 16 * 16;
    if (bytes + need <= budget) {
      lay.smem[l] = bytes;
      lay.stage[l] = true;
      bytes += int(need);
    }
  }
  // Identical reductions (same type, same operands, scalars and parameters: same_node) share
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
        if (reds[k].type == &type_tag<N> && same_node(*static_cast<const N*>(reds[k].node), node)) {
          lay.from[slot] = lay.from[k];
          break;
        }
      }
      reds[slot++] = {&type_tag<N>, &node};
    }
  };
  for_index<K>(
      [&](auto k) { visit_tree(get<std::remove_cvref_t<decltype(k)>::value>(exprs), dedupe); });
  int passes = 0;
  for (int k = 0; k < slot; ++k) {
    passes += lay.from[k] == k;
  }
  const trees_t trees = bind_row_trees<V>(exprs, lay, std::make_index_sequence<K>{});
  const outs_t outs = [&]<std::size_t... Ks>(std::index_sequence<Ks...>) {
    return make_pack(row_out<typename Ds::value_type, R>{
        get<Ks>(dsts).ptr, get<Ks>(dsts).str, get<Ks>(dsts).shp[R - 1] == 1 && shape[R - 1] != 1,
        get<Ks>(dsts).shp[R - 1] == shape[R - 1] &&
            rows_aligned(get<Ks>(dsts).ptr, int(sizeof(typename Ds::value_type)),
                         get<Ks>(dsts).str)}...);
  }(std::make_index_sequence<K>{});
  row_walk<R> w{};
  w.direct = rows_direct_for<trees_t>;
  for (int l = 0; l < L; ++l) {
    w.direct = w.direct && (lay.smem[l] >= 0 || lay.vec[l]);
  }
  for_index<K>([&](auto k) {
    const auto& o = get<std::remove_cvref_t<decltype(k)>::value>(outs);
    w.direct = w.direct && (o.per_row || o.vec);
  });
  w.n = n;
  w.rows = shape.size() / n;
  w.n32 = int(n);
  w.part32 = int(part);
  w.cluster = cluster;
  w.shape = shape;
  for (int k = 0; k < R; ++k) {
    w.div[k] = fast_divmod<std::uint64_t>(std::uint64_t(shape[k] > 0 ? shape[k] : 1));
  }
  // Threads: enough that each has at most rows_chunks_per_thread chunks of its block's part,
  // rows_min_threads (a warp) to 512.
  const index_t chunks = part / V;
  const int per_thread = rows_chunks_per_thread.load(std::memory_order_relaxed);
  int threads = rows_min_threads.load(std::memory_order_relaxed);
  while (threads < rows_max_threads && index_t(threads) * per_thread < chunks) {
    threads *= 2;
  }
  // Short rows in 32-thread blocks: two rows per block, one per half-warp (twice the rows in
  // flight per SM at the same registers; the per-row instructions of a warp serve two rows).
  if (cluster == 1 && threads == 32 && w.rows > 1 && chunks <= index_t(16) * per_thread &&
      can_split && rows_split.load(std::memory_order_relaxed) && 2 * bytes <= budget) {
    w.split = 2;
    w.sub_bytes = bytes;
    bytes *= 2;
  }
  // Short rows held in registers (rows_kernel's Held): every leaf inside a reduction reads the
  // one staged row, contiguous and aligned in 16-byte chunks; every other leaf and whole-row
  // output contiguous and aligned; the row exactly rows_held_chunks chunks per thread of a
  // block of 32 to rows_held_threads; rows for at most rows_held_max_waves waves of blocks.
  int held = 0;
  index_t held_grid = 0;
  if constexpr (rows_held_for<trees_t>) {
    int row = -1; // the staged row's first leaf
    bool fits = cluster == 1 && n % V == 0;
    for (int l = 0; l < L; ++l) {
      if (leaves[l].reduced) {
        const int f = lay.smem[l] >= 0 ? first_use[l] : -1;
        fits = fits && f >= 0 && (row < 0 || f == row) && lay.vec[l] && V * leaves[l].elem == 16;
        row = f;
      }
    }
    // every other leaf contiguous and aligned, and staged only if it reads that row (the output
    // pass takes a staged leaf's chunks from the held ones: `Z * Z * rsqrt(mean(X * X) + eps)`
    // stages Z too, and is not held)
    for (int l = 0; l < L; ++l) {
      if (!leaves[l].reduced) {
        fits = fits && lay.vec[l] && (lay.smem[l] < 0 || first_use[l] == row);
      }
    }
    for_index<K>([&](auto k) {
      const auto& o = get<std::remove_cvref_t<decltype(k)>::value>(outs);
      fits = fits && (o.per_row || o.vec);
    });
    int ht = 32;
    while (ht < rows_held_threads && index_t(ht) * rows_held_chunks < chunks) {
      ht *= 2;
    }
    const int max_waves = rows_held_max_waves.load(std::memory_order_relaxed);
    if (rows_held.load(std::memory_order_relaxed) && max_waves > 0 && fits && row >= 0 &&
        index_t(ht) * rows_held_chunks == chunks) {
      constexpr auto held_kernel =
          &rows_kernel<R, V, K, trees_t, outs_t, false, false, rows_held_chunks>;
      const index_t wave = rows_resident_blocks<held_kernel>(ht);
      if (w.rows <= wave * max_waves) {
        held = rows_held_chunks;
        held_grid = w.rows < wave ? w.rows : wave;
        threads = ht;
        bytes = 0;
        w.split = 1;
        w.sub_bytes = 0;
      }
    }
  }
  if (bytes > 48 * 1024) {
    if (cluster > 1) {
      rows_opt_in<cluster_kernel>(budget);
    } else {
      rows_opt_in<plain_kernel>(budget);
      if constexpr (can_split) {
        rows_opt_in<&rows_kernel<R, V, K, trees_t, outs_t, false, true>>(budget);
      }
    }
  }
  rows_last_cluster.store(cluster, std::memory_order_relaxed);
  rows_last_split.store(w.split, std::memory_order_relaxed);
  rows_last_held.store(held, std::memory_order_relaxed);
  rows_last_passes.store(passes, std::memory_order_relaxed);
  rows_last_direct.store(w.direct ? 1 : 0, std::memory_order_relaxed);
  const index_t most = max_grid_blocks / cluster;
  const index_t blocks = (w.rows + w.split - 1) / w.split;
  const index_t grid = (blocks < most ? blocks : most) * cluster;
  if (cluster > 1) {
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = unsigned(cluster);
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    launch_eval<cluster_kernel>(unsigned(grid), unsigned(threads), std::size_t(bytes), stream, attr,
                                outs, trees, w);
    CUFUSE_CUDA_CHECK_MSG(cudaGetLastError(), "rows_kernel (a cluster of " +
                                                  std::to_string(cluster) + " blocks per row)");
  } else if (held > 0) {
    if constexpr (rows_held_for<trees_t>) {
      constexpr auto held_kernel =
          &rows_kernel<R, V, K, trees_t, outs_t, false, false, rows_held_chunks>;
      launch_eval<held_kernel>(unsigned(held_grid), unsigned(threads), std::size_t(0), stream,
                               no_attribute(), outs, trees, w);
    }
  } else if (w.split == 2) {
    if constexpr (can_split) {
      constexpr auto split_kernel = &rows_kernel<R, V, K, trees_t, outs_t, false, true>;
      launch_eval<split_kernel>(unsigned(grid), unsigned(threads), std::size_t(bytes), stream,
                                no_attribute(), outs, trees, w);
    }
  } else {
    launch_eval<plain_kernel>(unsigned(grid), unsigned(threads), std::size_t(bytes), stream,
                              no_attribute(), outs, trees, w);
  }
  check_launch<typename get_first<Ds...>::type::value_type>(
      "rows_kernel<<<>>>", shape.size(), held > 0 ? held_grid : grid, threads, stream);
  return true;
}

/// dst = e as the row kernel when the shapes and axes allow; false otherwise.
template <class D, class E>
bool try_rows(const D& d, const E& e, cudaStream_t stream) {
  return try_rows_multi<D::rank>(d.shape(), make_pack(d), make_pack(e), stream);
}

} // namespace cufuse::detail

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_REDUCE_ROWS_CUH
#undef CUFUSE_DETAIL_FIRST_REDUCE_ROWS_CUH
#undef CUFUSE_DETAIL_FIRST
#include "../eval/assign.cuh"
#endif
