/// \file The reduction kernels: `dst = reduce(map)`, the map evaluated inside (no temporary for
/// the input). Two shapes of work, chosen by whether the innermost axis of the input is reduced:
///  - rows: threads of a warp (short rows) or a block (long rows) walk the reduced elements of
///    one result, consecutive threads on consecutive elements; few results (a full reduction)
///    split each one over several blocks;
///  - columns: the innermost axis is kept, so consecutive threads take consecutive results (V
///    of them each, in one 16-byte access, where every operand allows) and walk the reduced
///    axes together (coalesced), eight rows of threads per block, split over blocks when there
///    are few results;
///  - flat: a full reduction whose operands are all contiguous and aligned reads the input as
///    one array in 16-byte accesses, one wave of resident blocks.
/// A split reduction writes one state per (result, split) to a stream-ordered workspace and a
/// second kernel merges them in split order (deterministic): a thread per result, or a block
/// per result when there are many splits. Warp reductions are CUB's; the step
/// across the warps of a block is a few lines here because the block size is chosen at run time.
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_REDUCE_KERNELS_CUH
#endif

#include "../core/index.cuh"
#include "../core/pdl.cuh"
#include "node.cuh"

#include <cub/warp/warp_reduce.cuh>

#include <cstdint>

namespace cufuse::detail {

inline constexpr int reduce_block = 256;
inline constexpr int reduce_warps = reduce_block / 32;
inline constexpr int column_rows = reduce_block / 32; // threads along the reduced axes
inline constexpr int reduce_unroll = 4;
#ifndef CUFUSE_FLAT_UNROLL
#define CUFUSE_FLAT_UNROLL 4
#endif
#ifndef CUFUSE_FLAT_INTERLEAVE
/// 1: the flat kernel's grid sweeps the array together (access k of the grid's thread t at
/// t + k * threads); 0: each block folds a contiguous chunk. Measured on the H100 (same run,
/// 2^28 fp32): sum(B * C) 0.93 / 1.02x copy, argmax 0.94 / 0.98x, var 0.91 / 0.98x for 0 / 1;
/// a thousand blocks each streaming its own region kept the DRAM less busy than one sweep.
#define CUFUSE_FLAT_INTERLEAVE 1
#endif
/// Accesses in flight per thread in the flat kernel.
inline constexpr int flat_unroll = CUFUSE_FLAT_UNROLL;

/// How the reduced and kept axes of a rank-R input are walked: a result index o unravels over
/// the kept axes, a reduced index r over the reduced ones (row-major, the last fastest).
template <int R>
struct reduce_geometry {
  int nk = 0, nr = 0;
  int kd[R > 0 ? R : 1] = {}, rd[R > 0 ? R : 1] = {}; // kept / reduced axes, in order
  unsigned reduced = 0;                               // bit d: axis d is reduced
  int first_k = -1, first_r = -1;                     // outermost kept / reduced axis
  fast_divmod<std::uint64_t> div[R > 0 ? R : 1];      // per axis: its extent
  index_t out_str[R > 0 ? R : 1] = {};                // per kept axis: destination stride
  index_t results = 1, count = 1;                     // O results, N reduced elements each
  index_t chunk = 0;                                  // reduced elements per split
  int splits = 1;
};

// The walks below run over the axes in a loop the compiler unrolls (R is a constant), so every
// coordinate stays in a register: indexing q.c[] by a run-time axis number would put it in
// local memory. The outermost axis of each set takes the remaining quotient undivided.

/// Sets the kept coordinates of o in q; returns the destination offset of result o.
template <int R>
CUFUSE_INLINE index_t place_result(const reduce_geometry<R>& g, index_t o, coords<R, index_t>& q) {
  index_t off = 0;
  std::uint64_t rest = std::uint64_t(o);
  CUFUSE_UNROLL
  for (int d = R - 1; d >= 0; --d) {
    if (!((g.reduced >> d) & 1u)) {
      std::uint64_t c = rest;
      if (d != g.first_k) {
        g.div[d].divmod(rest, rest, c);
      }
      q.c[d] = index_t(c);
      off += index_t(c) * g.out_str[d];
    }
  }
  return off;
}

/// Sets the reduced coordinates of r in q.
template <int R>
CUFUSE_INLINE void place_reduced(const reduce_geometry<R>& g, index_t r, coords<R, index_t>& q) {
  std::uint64_t rest = std::uint64_t(r);
  CUFUSE_UNROLL
  for (int d = R - 1; d >= 0; --d) {
    if ((g.reduced >> d) & 1u) {
      std::uint64_t c = rest;
      if (d != g.first_r) {
        g.div[d].divmod(rest, rest, c);
      }
      q.c[d] = index_t(c);
    }
  }
}

/// Folds reduced elements [begin, end) with stride `step` into s: reduce_unroll evaluations in
/// flight before they are added (in index order).
template <class In, class Red, class Arg, int R, class S>
CUFUSE_DEVICE void fold_range(const Red& red, const Arg& arg, const reduce_geometry<R>& g,
                              coords<R, index_t> q, index_t begin, index_t end, index_t step,
                              S& s) {
  using X = decltype(arg.eval_in(q));
  index_t r = begin;
  for (; r + (reduce_unroll - 1) * step < end; r += reduce_unroll * step) {
    X x[reduce_unroll];
    CUFUSE_UNROLL
    for (int u = 0; u < reduce_unroll; ++u) {
      place_reduced(g, r + u * step, q);
      x[u] = arg.eval_in(q);
    }
    CUFUSE_UNROLL
    for (int u = 0; u < reduce_unroll; ++u) {
      red.template add<In>(s, x[u], r + u * step);
    }
  }
  for (; r < end; r += step) {
    place_reduced(g, r, q);
    red.template add<In>(s, arg.eval_in(q), r);
  }
}

/// Whether reducer Red folds a step's float values at once (`Red::fold`; var).
template <class Red>
inline constexpr bool folds_float_steps = requires { Red::folds_float_steps; };

template <class Red, class In>
struct merge_op {
  Red red;
  template <class S>
  CUFUSE_DEVICE S operator()(const S& a, const S& b) const {
    return red.template merge<In>(a, b);
  }
};

#ifndef CUFUSE_FOLD_XOR
/// 1: whole warps fold by warp_fold's XOR shuffles; 0: by cub::WarpReduce (measured the same on
/// the H200's row-kernel table, JOURNAL r13).
#define CUFUSE_FOLD_XOR 1
#endif
/// Whether a reduction state crosses lanes as 32-bit words by shuffles (warp_fold, lanes_bcast).
template <class S>
inline constexpr bool shuffled_state = std::is_trivially_copyable_v<S> && sizeof(S) <= 32;

/// s passed word by word through `shfl` (one 32-bit shuffle of a word).
template <class S, class F>
CUFUSE_DEVICE S shuffle_words(const S& s, F shfl) {
  constexpr int words = int((sizeof(S) + 3) / 4);
  unsigned w[words] = {};
  __builtin_memcpy(w, &s, sizeof(S));
  CUFUSE_UNROLL
  for (int k = 0; k < words; ++k) {
    w[k] = shfl(w[k]);
  }
  S r;
  __builtin_memcpy(&r, w, sizeof(S));
  return r;
}

/// s of lane `from` of each group of `width` lanes (mask: the lanes taking part).
template <class S>
CUFUSE_DEVICE S lanes_bcast(S s, unsigned mask, int from, int width) {
  return shuffle_words(s, [&](unsigned x) { return __shfl_sync(mask, x, from, width); });
}

/// Reduces s over groups of `Lanes` lanes (a warp, or half-warps: lane 0 of each group gets its
/// result); every lane in `mask` takes part. A state of 32-bit words is exchanged by XOR
/// shuffles, in the order of cub::WarpReduce's shuffle steps (offsets 1, 2, ...: lane 0's merges
/// are the same). Written here because cub::WarpReduce with a reduction operator of ours tests
/// the lane bounds at every step (an ISETP and two selects: 38 instructions per fold of a float
/// in the row kernel, ncu), and half-warps of a split row kernel fold with one half possibly
/// idle (an odd row count), which a mask names.
template <class In, int Lanes = 32, class Red, class S>
CUFUSE_DEVICE S warp_fold(const Red& red, S s, unsigned mask = 0xffffffffu) {
  if constexpr (shuffled_state<S> && (Lanes < 32 || CUFUSE_FOLD_XOR)) {
    CUFUSE_UNROLL
    for (int offset = 1; offset < Lanes; offset *= 2) {
      const S other =
          shuffle_words(s, [&](unsigned x) { return __shfl_xor_sync(mask, x, offset); });
      s = red.template merge<In>(s, other);
    }
    return s;
  } else {
    static_assert(Lanes == 32, "cufuse: internal: a state that cannot be shuffled, in half-warps");
    using warp_reduce = cub::WarpReduce<S>;
    __shared__ typename warp_reduce::TempStorage temp[32]; // up to 1024 threads
    return warp_reduce(temp[threadIdx.x / 32]).Reduce(s, merge_op<Red, In>{red});
  }
}

/// Reduces s over the block (thread 0 gets the result; the warps merge in warp order).
template <class In, class Red, class S>
CUFUSE_DEVICE S block_fold(const Red& red, S s) {
  __shared__ S partial[32];
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int warps = int(blockDim.x) / 32;
  s = warp_fold<In>(red, s);
  if (lane == 0) {
    partial[warp] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < warps; ++w) {
      s = red.template merge<In>(s, partial[w]);
    }
  }
  __syncthreads(); // partial[] may be reused by the caller's next fold
  return s;
}

template <class Out, class In, class Red, class S>
CUFUSE_DEVICE void finish_result(Out* out, index_t off, const Red& red, const S& s, index_t n) {
  out[off] = convert<Out>(red.template finish<In>(s, n));
}

/// Rows: a warp per result when the reduced count is at most a warp's share (`per_warp`), else
/// blocks per result (g.splits of them, each on g.chunk reduced elements). Split results write
/// their state to `partial[o * splits + split]`.
template <bool PerWarp, int R, class Red, class Arg, class Out>
__global__ void __launch_bounds__(reduce_block)
    reduce_rows_kernel(Out* out, Red red, Arg arg, reduce_geometry<R> g,
                       typename Red::template state<typename Arg::value_type>* partial) {
  pdl_release(); // the finish kernel may start early (it waits for this one)
  using In = typename Arg::value_type;
  coords<R, index_t> q{};
  if constexpr (PerWarp) {
    const index_t warps_total = index_t(gridDim.x) * reduce_warps;
    const int lane = int(threadIdx.x) % 32;
    for (index_t o = index_t(blockIdx.x) * reduce_warps + threadIdx.x / 32; o < g.results;
         o += warps_total) {
      const index_t off = place_result(g, o, q);
      auto s = red.template init<In>();
      fold_range<In>(red, arg, g, q, lane, g.count, 32, s);
      s = warp_fold<In>(red, s);
      if (lane == 0) {
        finish_result<Out, In>(out, off, red, s, g.count);
      }
    }
  } else {
    const index_t units = g.results * g.splits;
    for (index_t u = blockIdx.x; u < units; u += gridDim.x) {
      const index_t o = u / g.splits;
      const int split = int(u - o * g.splits);
      const index_t off = place_result(g, o, q);
      const index_t begin = index_t(split) * g.chunk;
      const index_t end = begin + g.chunk < g.count ? begin + g.chunk : g.count;
      auto s = red.template init<In>();
      fold_range<In>(red, arg, g, q, begin + threadIdx.x, end, index_t(blockDim.x), s);
      s = block_fold<In>(red, s);
      if (threadIdx.x == 0) {
        if (g.splits == 1) {
          finish_result<Out, In>(out, off, red, s, g.count);
        } else {
          partial[u] = s;
        }
      }
    }
  }
}

/// Columns: block (32, column_rows); x along results (consecutive in memory), y along the
/// reduced elements; blockIdx.y is the split.
template <int R, class Red, class Arg, class Out>
__global__ void __launch_bounds__(reduce_block)
    reduce_columns_kernel(Out* out, Red red, Arg arg, reduce_geometry<R> g,
                          typename Red::template state<typename Arg::value_type>* partial) {
  pdl_release(); // the finish kernel may start early (it waits for this one)
  using In = typename Arg::value_type;
  using S = typename Red::template state<In>;
  __shared__ S rows[column_rows][33];
  const int split = int(blockIdx.y);
  const index_t begin = index_t(split) * g.chunk;
  const index_t end = begin + g.chunk < g.count ? begin + g.chunk : g.count;
  for (index_t base = index_t(blockIdx.x) * 32; base < g.results; base += index_t(gridDim.x) * 32) {
    const index_t o = base + threadIdx.x;
    coords<R, index_t> q{};
    index_t off = 0;
    auto s = red.template init<In>();
    if (o < g.results) {
      off = place_result(g, o, q);
      fold_range<In>(red, arg, g, q, begin + threadIdx.y, end, index_t(column_rows), s);
    }
    rows[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && o < g.results) {
      for (int y = 1; y < column_rows; ++y) {
        s = red.template merge<In>(s, rows[y][threadIdx.x]);
      }
      if (g.splits == 1) {
        finish_result<Out, In>(out, off, red, s, g.count);
      } else {
        partial[o * g.splits + split] = s;
      }
    }
    __syncthreads();
  }
}

#ifndef CUFUSE_COLUMNS_ROWS
/// Rows of threads in a block of reduce_columns_vec_kernel (see there), and the fewer rows of
/// longer ones taken when one such row covers the kept innermost extent (reduce_into).
#define CUFUSE_COLUMNS_ROWS 8
#endif
#ifndef CUFUSE_COLUMNS_ROWS_NARROW
#define CUFUSE_COLUMNS_ROWS_NARROW 4
#endif
#ifndef CUFUSE_COLUMNS_UNROLL
/// Reduced elements in flight per thread of reduce_columns_vec_kernel. Two (32 registers, eight
/// blocks per SM) against four (46 registers, five blocks), 32 x 8 threads on the H200:
/// sum(X, 0) on [8192, 8192] fp32 0.85-0.87x -> 0.89-0.92x copy; more was slower
/// (bench/JOURNAL.md r11).
#define CUFUSE_COLUMNS_UNROLL 2
#endif

/// Columns, V results per thread: the innermost (kept) axis has a multiple of V elements and
/// every operand is contiguous and aligned along it, or repeats there. Block (256 / Y, Y):
/// thread x owns results base + V x .. base + V x + V - 1 and reads them in one access per
/// reduced element (16 bytes of the widest operand), U reduced elements in flight; the Y rows of
/// threads split the reduced elements and merge in order through shared memory.
template <int V, int Y, int U, int R, class Red, class Arg, class Out>
__global__ void __launch_bounds__(reduce_block)
    reduce_columns_vec_kernel(Out* out, Red red, Arg arg, reduce_geometry<R> g,
                              typename Red::template state<typename Arg::value_type>* partial) {
  pdl_release(); // the finish kernel may start early (it waits for this one)
  using In = typename Arg::value_type;
  using S = typename Red::template state<In>;
  constexpr int X = reduce_block / Y;
  __shared__ S rows[Y > 1 ? Y : 1][Y > 1 ? X + 1 : 1];
  const int split = int(blockIdx.y);
  const index_t begin = index_t(split) * g.chunk;
  const index_t end = begin + g.chunk < g.count ? begin + g.chunk : g.count;
  const index_t span = index_t(X) * V;
  for (index_t base = index_t(blockIdx.x) * span; base < g.results;
       base += index_t(gridDim.x) * span) {
    const index_t o = base + index_t(threadIdx.x) * V;
    coords<R, index_t> q{};
    index_t off = 0;
    S s[V];
    CUFUSE_UNROLL
    for (int k = 0; k < V; ++k) {
      s[k] = red.template init<In>();
    }
    if (o < g.results) {
      off = place_result(g, o, q);
      const index_t step = index_t(Y);
      index_t r = begin + threadIdx.y;
      for (; r + (U - 1) * step < end; r += U * step) {
        decltype(arg.template fetch_in<V>(q)) x[U];
        CUFUSE_UNROLL
        for (int u = 0; u < U; ++u) {
          place_reduced(g, r + u * step, q);
          x[u] = arg.template fetch_in<V>(q);
        }
        CUFUSE_UNROLL
        for (int u = 0; u < U; ++u) {
          CUFUSE_UNROLL
          for (int k = 0; k < V; ++k) {
            red.template add<In>(s[k], x[u].at(k), r + u * step);
          }
        }
      }
      for (; r < end; r += step) {
        place_reduced(g, r, q);
        const auto x = arg.template fetch_in<V>(q);
        CUFUSE_UNROLL
        for (int k = 0; k < V; ++k) {
          red.template add<In>(s[k], x.at(k), r);
        }
      }
    }
    CUFUSE_UNROLL
    for (int k = 0; k < V; ++k) {
      S t = s[k];
      if constexpr (Y > 1) { // the rows of threads merge in order, one of the V results at a time
        rows[threadIdx.y][threadIdx.x] = t;
        __syncthreads();
        if (threadIdx.y == 0) {
          for (int y = 1; y < Y; ++y) {
            t = red.template merge<In>(t, rows[y][threadIdx.x]);
          }
        }
        __syncthreads();
      }
      if (threadIdx.y == 0 && o < g.results) {
        if (g.splits == 1) {
          finish_result<Out, In>(out, off + index_t(k) * g.out_str[R - 1], red, t, g.count);
        } else {
          partial[(o + k) * g.splits + split] = t;
        }
      }
    }
  }
}

/// A full reduction over operands that are all contiguous with the input's shape and aligned:
/// the input read as one flat array, V elements per access (16 bytes of the widest operand),
/// flat_unroll accesses in flight per thread. The grid's threads take consecutive accesses
/// and step over the whole grid (CUFUSE_FLAT_INTERLEAVE; else block b folds [b * chunk,
/// (b + 1) * chunk), chunk a multiple of V); each thread adds its values in increasing index
/// order. Block b writes its state to partial[b], or the result when there is one block.
template <int V, class Red, class Arg, class Out>
__global__ void __launch_bounds__(reduce_block)
    reduce_flat_kernel(Out* out, Red red, Arg arg, index_t n, index_t chunk,
                       typename Red::template state<typename Arg::value_type>* partial) {
  pdl_release(); // the finish kernel may start early (it waits for this one)
  using In = typename Arg::value_type;
#if CUFUSE_FLAT_INTERLEAVE
  // the grid sweeps the array together: thread t of the grid takes accesses t, t + threads, ...
  (void)chunk;
  const index_t end = n;
  const index_t step = index_t(gridDim.x) * blockDim.x * V;
  index_t i = (index_t(blockIdx.x) * blockDim.x + threadIdx.x) * V;
#else
  const index_t begin = index_t(blockIdx.x) * chunk;
  const index_t end = begin + chunk < n ? begin + chunk : n;
  const index_t step = index_t(blockDim.x) * V;
  index_t i = begin + index_t(threadIdx.x) * V;
#endif
  // Three levels of states, so that a thread's float sum never adds one value to a much larger
  // running total: the values of one step, then 16 steps, then the thread's total. (The large
  // error seen once came from the split merge instead; see reduce_finish_kernel.)
  auto s = red.template init<In>();
  auto mid = red.template init<In>();
  int steps = 0;
  for (; i + (flat_unroll - 1) * step + V <= end; i += flat_unroll * step) {
    decltype(arg.template fetch_in<V>(flat_index<index_t>{i})) x[flat_unroll];
    CUFUSE_UNROLL
    for (int u = 0; u < flat_unroll; ++u) {
      x[u] = arg.template fetch_in<V>(flat_index<index_t>{i + u * step});
    }
    using X = std::remove_cvref_t<decltype(x[0].at(0))>;
    auto t = red.template init<In>();
    if constexpr (folds_float_steps<Red> && std::is_same_v<X, float>) {
      // the reducer folds a step's values at once (var: float sums around the step's mean)
      X v[flat_unroll * V];
      CUFUSE_UNROLL
      for (int u = 0; u < flat_unroll; ++u) {
        CUFUSE_UNROLL
        for (int k = 0; k < V; ++k) {
          v[u * V + k] = x[u].at(k);
        }
      }
      t = red.template fold<In>(v);
    } else {
      CUFUSE_UNROLL
      for (int u = 0; u < flat_unroll; ++u) {
        CUFUSE_UNROLL
        for (int k = 0; k < V; ++k) {
          red.template add<In>(t, x[u].at(k), i + u * step + k);
        }
      }
    }
    mid = red.template merge<In>(mid, t);
    if (++steps == 16) {
      s = red.template merge<In>(s, mid);
      mid = red.template init<In>();
      steps = 0;
    }
  }
  s = red.template merge<In>(s, mid);
  for (; i < end; i += step) {
    if (i + V <= end) {
      const auto x = arg.template fetch_in<V>(flat_index<index_t>{i});
      CUFUSE_UNROLL
      for (int k = 0; k < V; ++k) {
        red.template add<In>(s, x.at(k), i + k);
      }
    } else {
      for (index_t j = i; j < end; ++j) {
        red.template add<In>(s, arg.eval_in(flat_index<index_t>{j}), j);
      }
    }
  }
  s = block_fold<In>(red, s);
  if (threadIdx.x == 0) {
    if (gridDim.x == 1) {
      out[0] = convert<Out>(red.template finish<In>(s, n));
    } else {
      partial[blockIdx.x] = s;
    }
  }
}

#ifndef CUFUSE_FINISH_REGISTERS
#define CUFUSE_FINISH_REGISTERS 1
#endif
/// Splits whose states reduce_finish_kernel's thread holds in registers at once (see there):
/// up to 32 of at most 8 bytes (a float sum, an fp32 extremum), 8 of larger states; one with
/// CUFUSE_FINISH_REGISTERS=0 (a state at a time, as before the groups).
template <class S>
inline constexpr int finish_in_registers =
    CUFUSE_FINISH_REGISTERS == 0 ? 1 : (sizeof(S) <= 8 ? 32 : 8);

/// Merges the splits of each result in split order and stores it. Two shapes:
///  - a thread per result (few splits each, or up to 256 with many results): pairwise, as a
///    binary counter over a stack of states (split k merges with its left neighbours as the
///    bits of k say), in groups of states held in registers (finish_in_registers);
///  - a block per result (many splits, few results: a full reduction has ~8 per SM): thread t
///    merges a contiguous run of splits, then the block merges the threads' states in order.
/// Both keep a float sum of many similar partials accurate: merging a thousand of them one after
/// another let the roundings of the running sum add up to 9e-6 relative (the mean of 2^28
/// values around 1e4); pairwise or in short runs it stays within a few 1e-8. The block shape
/// also keeps the merge off the critical path: one thread walking 1056 partials of a full
/// reduction took ~0.15-0.4 ms, as long as reading 0.5-1 GB.
template <bool PerBlock, int R, class Red, class In, class Out>
__global__ void __launch_bounds__(reduce_block)
    reduce_finish_kernel(Out* out, Red red, reduce_geometry<R> g,
                         const typename Red::template state<In>* partial) {
  pdl_wait(); // the states of the kernel before (programmatic dependent launch)
  using S = typename Red::template state<In>;
  coords<R, index_t> q{};
  if constexpr (PerBlock) {
    const int per_thread = (g.splits + int(blockDim.x) - 1) / int(blockDim.x);
    for (index_t o = blockIdx.x; o < g.results; o += gridDim.x) {
      const S* p = partial + o * g.splits;
      const int begin = int(threadIdx.x) * per_thread;
      const int end = begin + per_thread < g.splits ? begin + per_thread : g.splits;
      S s = red.template init<In>();
      for (int k = begin; k < end; ++k) {
        s = red.template merge<In>(s, p[k]);
      }
      s = block_fold<In>(red, s);
      if (threadIdx.x == 0) {
        finish_result<Out, In>(out, place_result(g, o, q), red, s, g.count);
      }
    }
  } else {
    // The pairwise order of a binary counter over the splits (split k merges with its left
    // neighbours as the bits of k say), computed C splits at a time: a group's states are all
    // loaded before its first merge and merged level by level in registers, and the groups,
    // aligned subtrees of C leaves, go through the counter's stack. A stack of single splits
    // (C = 1) waited on one load per split, in local memory.
    constexpr int C = finish_in_registers<S>;
    const int splits = g.splits;
    for (index_t o = index_t(blockIdx.x) * blockDim.x + threadIdx.x; o < g.results;
         o += index_t(gridDim.x) * blockDim.x) {
      const index_t off = place_result(g, o, q);
      const S* p = partial + o * splits;
      S stack[32];
      int top = 0;
      for (int base = 0, group = 0; base < splits; base += C, ++group) {
        const int count = splits - base < C ? splits - base : C;
        S v[C];
        CUFUSE_UNROLL
        for (int k = 0; k < C; ++k) {
          if (k < count) {
            v[k] = p[base + k];
          }
        }
        CUFUSE_UNROLL
        for (int w = 1; w < C; w *= 2) {
          CUFUSE_UNROLL
          for (int k = 0; k + w < C; k += 2 * w) {
            if (k + w < count) {
              v[k] = red.template merge<In>(v[k], v[k + w]);
            }
          }
        }
        S x = v[0];
        for (int j = group; j & 1; j >>= 1) {
          x = red.template merge<In>(stack[--top], x);
        }
        stack[top++] = x;
      }
      S s = stack[--top];
      while (top > 0) {
        s = red.template merge<In>(stack[--top], s);
      }
      finish_result<Out, In>(out, off, red, s, g.count);
    }
  }
}

} // namespace cufuse::detail

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_REDUCE_KERNELS_CUH
#undef CUFUSE_DETAIL_FIRST_REDUCE_KERNELS_CUH
#undef CUFUSE_DETAIL_FIRST
#include "../eval/assign.cuh"
#endif
