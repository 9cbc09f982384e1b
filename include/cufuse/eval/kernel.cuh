/// \file The evaluation kernels, each instantiated once per (destination, expression) type and
/// policy. Each thread evaluates the whole expression tree in registers.
///   evaluate_kernel       every operand contiguous with the destination's shape (linear index)
///   evaluate_nd_kernel    any strides: coordinates from a linear work index by fast division,
///                         vectorized along the innermost dimension where the plan allows
///   evaluate_tile_kernel  an operand contiguous along another dimension than the destination
///                         (a transpose): tiles staged through shared memory, both sides coalesced
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_EVAL_KERNEL_CUH
#endif

#include "../core/pdl.cuh"
#include "bind.cuh"

namespace cufuse::detail {

/// Threads per block of the flat and N-d kernels.
inline constexpr int eval_block_size = 256;
/// Threads per block of the layout-changing kernel (tile_dim x tile_rows).
inline constexpr int tile_block_size = tile_dim * tile_rows;

/// Blocks per SM to ask the register allocator for. A thread of an expression that reads at
/// most two tensors has at most two 16-byte loads in flight, so the SM needs every warp
/// (8 x 256 threads: at most 32 registers) to keep enough bytes moving; with more inputs each
/// thread has more loads in flight, and capping registers would only cause spills.
/// Measured (H200): fp32 GELU-dropout took 40 registers (75% occupancy) and ran 8% below a
/// hand-written kernel; capping the 5-input quickstart kernel at 32 registers spilled.
template <class Expr>
inline constexpr int eval_min_blocks = Expr::leaf_count <= 3 ? 8 : 1;

#ifndef CUFUSE_ND_BLOCK
#define CUFUSE_ND_BLOCK 256
#endif
/// Threads per block of the N-d kernel, and the blocks per SM it asks for: as many threads per
/// SM (so the same register bound) as the flat kernel.
inline constexpr int nd_block_size = CUFUSE_ND_BLOCK;
template <class Expr>
inline constexpr int nd_min_blocks = eval_min_blocks<Expr> * eval_block_size / nd_block_size > 0
                                         ? eval_min_blocks<Expr>* eval_block_size / nd_block_size
                                         : 1;

/// dst[i] = expr[i] for i in [0, n). V > 1: 16-byte vectorized loads and stores of V elements
/// per step (every pointer 16-byte aligned), a scalar tail; V == 1: one element per step.
/// `I` is int32_t when every index fits (cheaper address arithmetic), else int64_t.
template <int V, class I, class Dst, class Expr>
__global__ void __launch_bounds__(eval_block_size, eval_min_blocks<Expr>)
    evaluate_kernel(Dst dst, Expr expr, I n) {
  pdl_release(); // the next kernel may set itself up (core/pdl.cuh)
  pdl_wait();    // a dependent launch: the previous kernel's results first
  using T = typename Dst::value_type;
  const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
  const I tid = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + threadIdx.x;
  if constexpr (V == 1) {
    for (I i = tid; i < n; i += stride) {
      dst.store(flat_index<I>{i}, convert<T>(expr.eval_in(flat_index<I>{i})));
    }
  } else {
    const I nvec = n / V;
    for (I vi = tid; vi < nvec; vi += stride) {
      const auto out = lanes_to<T, V>(expr.template fetch_in<V>(flat_index<I>{vi * V}));
      dst.template store_vec<V>(flat_index<I>{vi * V}, out);
    }
    const I tail = n - nvec * V; // fewer than V elements
    if (tid < tail) {
      const I i = nvec * V + tid;
      dst.store(flat_index<I>{i}, convert<T>(expr.eval_in(flat_index<I>{i})));
    }
  }
}

#ifndef CUFUSE_ND_LANES_MIN_BLOCKS
#define CUFUSE_ND_LANES_MIN_BLOCKS 6
#endif
/// Blocks per SM the lane-by-lane forms ask for: as the vector form, but at most
/// CUFUSE_ND_LANES_MIN_BLOCKS (42 registers at 6) with three or more operands of 8 lanes or
/// more, whose lanes spilled 28-42 bytes at 32 registers (bf16 `X * col + bias`). With fewer
/// operands as the vector form (no spill): 6 and 4 blocks ran 1-8% slower there (JOURNAL s10).
/// Four lanes (fp32) fit in 32 registers: fp32 `X * col + bias` on rows of 50257 ran 0.90x copy
/// at 6 blocks, 0.97x at 8 (JOURNAL s11).
template <int V, class Expr>
inline constexpr int nd_lanes_min_blocks =
    V >= 8 && Expr::leaf_count >= 3 && CUFUSE_ND_LANES_MIN_BLOCKS < nd_min_blocks<Expr>
        ? CUFUSE_ND_LANES_MIN_BLOCKS
        : nd_min_blocks<Expr>;

/// The walk of the N-d kernel: extents of dimensions [first, R), a divisor for each dimension
/// between `first` and the innermost, and one for the vectors of a row.
template <int R, class I>
struct nd_walk {
  using U = unsigned_of<I>;
  I ext[R];
  fast_divmod<U> div[R]; // div[d] for first < d < R - 1
  fast_divmod<U> row_vecs;
  I vecs_per_row; // ext[R - 1] / V
  I work;         // rows x vecs_per_row
  I tail;         // elements after the last vector (single-row walks only)
  int first;
};

/// Coordinates of work item w (the first of V lanes along the innermost dimension).
template <int V, int R, class I>
CUFUSE_INLINE coords<R, I> nd_position(const nd_walk<R, I>& walk, I w) {
  using U = unsigned_of<I>;
  coords<R, I> p;
  U row = 0, col = static_cast<U>(w);
  if (walk.first < R - 1) {
    walk.row_vecs.divmod(static_cast<U>(w), row, col);
  }
  p.c[R - 1] = static_cast<I>(col) * V;
  CUFUSE_UNROLL
  for (int d = R - 2; d >= 0; --d) {
    if (d > walk.first) {
      U q, r;
      walk.div[d].divmod(row, q, r);
      p.c[d] = static_cast<I>(r);
      row = q;
    } else {
      p.c[d] = d == walk.first ? static_cast<I>(row) : I(0);
    }
  }
  return p;
}

#ifndef CUFUSE_ND_UNROLL
#define CUFUSE_ND_UNROLL 2
#endif
#ifndef CUFUSE_ND_SCALAR_UNROLL
#define CUFUSE_ND_SCALAR_UNROLL 4
#endif
#ifndef CUFUSE_ND_LANES_UNROLL
#define CUFUSE_ND_LANES_UNROLL 1
#endif
/// Work items per thread of the N-d kernel, all loaded before the first is stored.
/// - Vectors: 2 with 32-bit indices for 16-bit (or smaller) elements or three or more operands,
///   else 1. Measured on the H200 ([8192, 8192], of copy, 1 / 2 / 4 items; JOURNAL s7): `X * col
///   + bias` bf16 0.893 / 0.925 / 0.583, fp32 0.953 / 0.971 / 0.599; `relu(X + bias)` bf16 0.932
///   / 0.934 / 0.777, fp32 0.982 / 0.974 / 0.860. With 64-bit indices two items spill.
/// - Lanes read one by one (nd_read): a vector's lanes are already V loads in flight.
/// - Scalar (V == 1): 4 elements, as one 2- or 4-byte load per operand and element keeps too few
///   bytes in flight; 1 with 64-bit indices (ptxas spilled at 2 and 4 under the 32-register
///   bound).
///   Measured (H200, fp32 [8192, 8191] from a view one element into each row, JOURNAL s10):
///   0.39x copy at one element, 0.61x at 2, 0.66x at 4, 0.62x at 8.
template <int V, class I, class Expr, nd_read Read = nd_read::vectors>
inline constexpr int nd_unroll =
    V == 1                     ? (sizeof(I) == 4 ? CUFUSE_ND_SCALAR_UNROLL : 1)
    : Read != nd_read::vectors ? CUFUSE_ND_LANES_UNROLL
    : sizeof(I) == 4 && (V >= 8 || Expr::leaf_count >= 3) ? CUFUSE_ND_UNROLL
                                                          : 1;

/// dst = expr over any strides. V > 1: each work item is V consecutive elements of a row
/// (the plan checked contiguity or repetition along it, and alignment), and a thread takes
/// nd_unroll items a block apart (a warp's accesses stay consecutive), their loads issued
/// before any store, so that more bytes are in flight per thread. `Read` (V > 1): how operands
/// are read (nd_read); with flat_lanes the walk's items are V consecutive elements of the
/// contiguous destination in row-major order, the walk's rows one element per "vector".
template <int V, class I, int R, class Dst, class Expr, nd_read Read = nd_read::vectors>
__global__ void __launch_bounds__(nd_block_size, Read == nd_read::vectors
                                                     ? nd_min_blocks<Expr>
                                                     : nd_lanes_min_blocks<V, Expr>)
    evaluate_nd_kernel(Dst dst, Expr expr, nd_walk<R, I> walk) {
  pdl_release();
  pdl_wait();
  using T = typename Dst::value_type;
  constexpr int U = nd_unroll<V, I, Expr, Read>;
  const I block_items = static_cast<I>(blockDim.x) * U;
  const I stride = static_cast<I>(gridDim.x) * block_items;
  const I tid = static_cast<I>(blockIdx.x) * block_items + threadIdx.x;
  if constexpr (V == 1) {
    for (I w0 = tid; w0 < walk.work; w0 += stride) {
      I at[U]; // the destination's offsets: fewer registers than U positions
      T out[U];
      CUFUSE_UNROLL
      for (int u = 0; u < U; ++u) {
        const I w = w0 + static_cast<I>(u) * static_cast<I>(blockDim.x);
        if (w < walk.work) {
          const coords<R, I> p = nd_position<V>(walk, w);
          at[u] = dst.offset(p);
          out[u] = convert<T>(expr.eval_in(p));
        }
      }
      CUFUSE_UNROLL
      for (int u = 0; u < U; ++u) {
        if (w0 + static_cast<I>(u) * static_cast<I>(blockDim.x) < walk.work) {
          dst.ptr[at[u]] = out[u];
        }
      }
    }
  } else {
    constexpr bool flat = Read == nd_read::flat_lanes;
    auto fetch = [&](I w, coords<R, I>& p) {
      if constexpr (flat) {
        lanes_each<V, R, I> q;
        q.first = nd_position<1>(walk, w * V);
        q.flat = w * V;
        const I left = walk.ext[R - 1] - q.first.c[R - 1]; // lanes left in the first row
        q.in_first = left < V ? int(left) : V;
        // the next row's first element: the row coordinates plus one, carried (the last row's
        // successor wraps to row 0; no lane reads it then)
        q.second = q.first;
        q.second.c[R - 1] = 0;
        bool carry = true;
        CUFUSE_UNROLL
        for (int d = R - 2; d >= 0; --d) {
          if (d >= walk.first) {
            const I c = q.second.c[d] + 1;
            const bool wrap = c == walk.ext[d];
            q.second.c[d] = carry ? (wrap ? I(0) : c) : q.second.c[d];
            carry = carry && wrap;
          }
        }
        return lanes_to<T, V>(expr.template fetch_in<V>(q));
      } else {
        p = nd_position<V>(walk, w);
        if constexpr (Read == nd_read::row_lanes) {
          return lanes_to<T, V>(expr.template fetch_in<V>(lanes_from<R, I>{p}));
        } else {
          return lanes_to<T, V>(expr.template fetch_in<V>(p));
        }
      }
    };
    using Out = decltype(fetch(I(0), std::declval<coords<R, I>&>()));
    for (I w0 = tid; w0 < walk.work; w0 += stride) {
      coords<R, I> p[U];
      Out out[U];
      CUFUSE_UNROLL
      for (int u = 0; u < U; ++u) {
        const I w = w0 + static_cast<I>(u) * static_cast<I>(blockDim.x);
        if (w < walk.work) {
          out[u] = fetch(w, p[u]);
        }
      }
      CUFUSE_UNROLL
      for (int u = 0; u < U; ++u) {
        const I w = w0 + static_cast<I>(u) * static_cast<I>(blockDim.x);
        if (w < walk.work) {
          if constexpr (flat) {
            dst.template store_vec<V>(flat_index<I>{w * V}, out[u]);
          } else {
            dst.template store_vec<V>(p[u], out[u]);
          }
        }
      }
    }
    if (tid < walk.tail) {
      coords<R, I> p{};
      if constexpr (flat) {
        p = nd_position<1>(walk, walk.work * V + tid);
      } else {
        p.c[R - 1] = walk.vecs_per_row * V + tid;
      }
      dst.store(p, convert<T>(expr.eval_in(p)));
    }
  }
}

/// The walk of the layout-changing kernel: tiles of tile_dim x tile_dim over dimension `a` and
/// the innermost one, for every combination of the other (outer) dimensions.
/// `I` is int32_t when every index and offset fits (fewer registers: the kernel's occupancy
/// depends on them), else int64_t.
template <int R, class I>
struct tile_walk {
  using U = unsigned_of<I>;
  I ext[R];
  int a;                 // the tile's dimension besides the innermost
  int first;             // dimensions before it have extent 1
  fast_divmod<U> div[R]; // div[d] for the outer dimensions d (not a, not R - 1)
  fast_divmod<U> tiles_b_div, tiles_a_div;
  I tiles;
};

/// Sets coordinate `d` (a run-time dimension) of p to v. Written as an unrolled loop of
/// compile-time indices, so that the coordinates stay in registers (an array indexed at run time
/// would live in local memory).
template <int R, class I>
CUFUSE_INLINE void set_coord(coords<R, I>& p, int d, I v) {
  CUFUSE_UNROLL
  for (int k = 0; k < R; ++k) {
    if (k == d) {
      p.c[k] = v;
    }
  }
}

/// Blocks per SM the layout-changing kernel asks for: with 32-bit indices and at most three
/// operands all 8 (32 registers), as the other kernels; otherwise 5 (48 registers: what ptxas
/// chose without a bound; at 6 or 8 some 64-bit kernels spilled). Measured (H100, bf16
/// `permute(P) + Z`, JOURNAL s2): 64-bit indices, 48 registers: 0.55x copy; 32-bit at 8 blocks:
/// 0.80x.
template <class Expr, class I>
inline constexpr int tile_min_blocks = Expr::leaf_count <= 3 && sizeof(I) == 4 ? 8 : 5;

/// dst = expr where some operands are contiguous along dimension `a` rather than the innermost:
/// the block first copies their tile into shared memory reading along `a`, then evaluates the
/// expression writing along the innermost dimension, reading those operands from the tiles.
/// V > 1 (elements smaller than 4 bytes): each thread moves V consecutive elements in both
/// phases, so a warp access covers 128 bytes; the plan checked alignment and extents.
template <int V, class I, int R, class Dst, class Expr>
__global__ void __launch_bounds__(tile_block_size, tile_min_blocks<Expr, I>)
    evaluate_tile_kernel(Dst dst, Expr expr, tile_walk<R, I> walk) {
  pdl_release();
  pdl_wait();
  using T = typename Dst::value_type;
  using U = unsigned_of<I>;
  constexpr int cols = tile_dim / V;           // threads along a row of the tile
  constexpr int rows = tile_block_size / cols; // rows a step covers
  constexpr int steps = tile_dim / rows;
  extern __shared__ __align__(16) unsigned char smem[];
  const int tx = int(threadIdx.x) % cols, ty = int(threadIdx.x) / cols;
  I ext_a = 1;
  CUFUSE_UNROLL
  for (int k = 0; k < R - 1; ++k) {
    ext_a = k == walk.a ? static_cast<I>(walk.ext[k]) : ext_a;
  }
  const I ext_b = walk.ext[R - 1];
  for (I t = blockIdx.x; t < walk.tiles; t += gridDim.x) {
    U q, tb, ta;
    walk.tiles_b_div.divmod(static_cast<U>(t), q, tb);
    walk.tiles_a_div.divmod(q, q, ta);
    // Outer coordinates, innermost outer dimension first; the outermost takes the quotient.
    coords<R, I> base{};
    int outermost = -1;
    CUFUSE_UNROLL
    for (int k = 0; k < R - 1; ++k) {
      outermost = (outermost < 0 && k >= walk.first && k != walk.a) ? k : outermost;
    }
    CUFUSE_UNROLL
    for (int k = R - 2; k >= 0; --k) {
      if (k != walk.a && k > outermost) {
        U r;
        walk.div[k].divmod(q, q, r);
        base.c[k] = static_cast<I>(r);
      } else if (k == outermost) {
        base.c[k] = static_cast<I>(q);
      }
    }
    const I a0 = static_cast<I>(ta) * tile_dim, b0 = static_cast<I>(tb) * tile_dim;

    // 1. Staged operands: read along a (consecutive threads, consecutive addresses).
    auto stage = [&](const auto& leaf) {
      using L = std::remove_cvref_t<decltype(leaf)>;
      using E = typename L::value_type;
      if (leaf.smem < 0) {
        return;
      }
      E* tile = reinterpret_cast<E*>(smem + leaf.smem);
      lane_regs<E, V> v[steps] = {};
      coords<R, I> p = base;
      set_coord(p, walk.a, a0 + V * tx);
      const bool in_a = a0 + V * tx < ext_a;
      CUFUSE_UNROLL
      for (int j = 0; j < steps; ++j) {
        p.c[R - 1] = b0 + ty + j * rows;
        if (in_a && p.c[R - 1] < ext_b) {
          if constexpr (V == 1) {
            v[j].v[0] = leaf.ptr[leaf.offset(p)];
          } else {
            v[j] = lane_regs<E, V>::load(leaf.ptr + leaf.offset(p)); // no L2 hint here
          }
        }
      }
      CUFUSE_UNROLL
      for (int j = 0; j < steps; ++j) {
        auto* row = tile + (ty + j * rows) * tile_pitch<E>() + V * tx;
        if constexpr (V == 1) {
          row[0] = v[j].v[0];
        } else {
          *reinterpret_cast<lane_regs<E, V>*>(row) = v[j];
        }
      }
    };
    // The other operands' lines for phase 2, asked for now: they arrive while the staged loads
    // do, where phase 2 alone would wait for them after the barrier (a second and third DRAM
    // round trip per tile). Measured (H200, bf16 `permute(P, {0, 2, 1}) + Z`, same call):
    // 0.845x copy -> 0.94x with phase 2 one step at a time (JOURNAL s6).
    if constexpr (CUFUSE_TILE_PREFETCH && Expr::leaf_count > 1) {
      tile_pos<R, I> tq{base, smem, 0, V * tx};
      tq.p.c[R - 1] = b0 + V * tx;
      auto ask = [&](const auto& leaf) { leaf.prefetch_in(tq); };
      if (b0 + V * tx < ext_b) {
        CUFUSE_UNROLL
        for (int j = 0; j < steps; ++j) {
          set_coord(tq.p, walk.a, a0 + ty + j * rows);
          if (a0 + ty + j * rows < ext_a) {
            for_each_leaf(expr, ask);
          }
        }
      }
    }
    for_each_leaf(expr, stage);
    __syncthreads();

    // 2. Evaluate, writing along the innermost dimension, one step at a time: the other
    // operands' loads hit the lines phase 1 asked for. (Before that prefetch, two steps were
    // evaluated before their stores to keep more loads in flight; with it one at a time is
    // faster: 0.896x copy -> 0.939x, H200, JOURNAL s6.)
    tile_pos<R, I> tp{base, smem, 0, V * tx};
    tp.p.c[R - 1] = b0 + V * tx;
    const bool in_b = b0 + V * tx < ext_b;
    CUFUSE_UNROLL
    for (int j = 0; j < steps; ++j) {
      tp.la = ty + j * rows;
      set_coord(tp.p, walk.a, a0 + tp.la);
      if (in_b && a0 + tp.la < ext_a) {
        if constexpr (V == 1) {
          dst.store(tp.p, convert<T>(expr.eval_in(tp)));
        } else {
          const auto out = lanes_to<T, V>(expr.template fetch_in<V>(tp));
          dst.template store_vec<V>(tp.p, out);
        }
      }
    }
    __syncthreads();
  }
}

} // namespace cufuse::detail

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_EVAL_KERNEL_CUH
#undef CUFUSE_DETAIL_FIRST_EVAL_KERNEL_CUH
#undef CUFUSE_DETAIL_FIRST
#include "assign.cuh"
#endif
