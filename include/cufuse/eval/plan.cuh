/// \file The host's plan for one assignment: in which order and grouping of dimensions the
/// kernel walks the destination, which kernel runs (flat, N-d, or layout-changing), the vector
/// width, the index width, and whether the destination overlaps an operand read at other
/// elements (then the expression goes through a temporary).
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_EVAL_PLAN_CUH
#endif

#include "../core/extents.hpp"
#include "bind.cuh"

#include <array>
#include <cstdint>

namespace cufuse::detail {

/// Which evaluation kernel an assignment runs.
enum class eval_kind {
  flat, ///< every operand contiguous with the destination's shape: a linear index
  nd,   ///< anything else: coordinates, vectorized along the innermost dimension where possible
  tile  ///< an operand is contiguous along another dimension than the destination: staged tiles
};

/// Memory one operand occupies and how it is laid over the destination's dimensions.
template <int R>
struct operand_info {
  const void* ptr = nullptr;
  int elem = 0;   // bytes per element
  strides<R> str; // over the destination's dimensions (0 where it repeats)
};

/// Smallest extents worth a staged tile along each of its two dimensions.
inline constexpr index_t min_tile_extent = 8;
/// Shared memory the layout-changing kernel may use without opting in to more.
inline constexpr int max_tile_smem = 48 * 1024;

/// The plan of one assignment of an expression with L leaves to a rank-R destination (R >= 1).
template <int R, int L>
struct eval_plan {
  eval_kind kind = eval_kind::nd;
  int vec = 1;                     ///< vector width along the innermost dimension (1: scalar)
  nd_read read = nd_read::vectors; ///< N-d kernel, vec > 1: how operands are read
  bool wide = false;               ///< some index or offset needs 64 bits
  bool temporary = false;          ///< the destination overlaps an operand read at other elements
  index_t n = 0;
  int first = R - 1;  ///< dimensions before `first` have extent 1 (collapsed away)
  int tile_a = -1;    ///< layout-changing kernel: the tile's other dimension
  int smem_bytes = 0; ///< layout-changing kernel: staged tiles
  extents<R> ext;     ///< the walk's extents (reordered, collapsed, right-aligned)
  strides<R> dst;     ///< the destination's strides over them
  bound_layout<R, L> leaves;
};

/// Largest offset (in elements) an operand reaches over `ext`, plus one.
template <int R>
index_t span_of(const extents<R>& ext, const strides<R>& st) {
  index_t s = 1;
  for (int d = 0; d < R; ++d) {
    s += (ext[d] - 1) * st[d];
  }
  return s;
}

/// True when the destination and an operand touch a common byte but the operand is not read
/// at exactly the element being written (same address, same element size, same strides).
template <int R>
bool overlaps_elsewhere(const operand_info<R>& dst, const operand_info<R>& src,
                        const extents<R>& shape) {
  const auto lo_d = reinterpret_cast<std::uintptr_t>(dst.ptr);
  const auto lo_s = reinterpret_cast<std::uintptr_t>(src.ptr);
  const auto hi_d = lo_d + std::uintptr_t(span_of(shape, dst.str)) * std::uintptr_t(dst.elem);
  const auto hi_s = lo_s + std::uintptr_t(span_of(shape, src.str)) * std::uintptr_t(src.elem);
  if (lo_d >= hi_s || lo_s >= hi_d) {
    return false;
  }
  if (lo_d != lo_s || dst.elem != src.elem) {
    return true;
  }
  for (int d = 0; d < R; ++d) {
    if (shape[d] != 1 && dst.str[d] != src.str[d]) {
      return true;
    }
  }
  return false;
}

/// True when `s` keeps V-element alignment along every dimension but `skip` (-1: none) and the
/// innermost.
template <int R>
bool strides_multiple(const strides<R>& s, int v, int skip) {
  for (int d = 0; d < R - 1; ++d) {
    if (d != skip && s[d] % v != 0) {
      return false;
    }
  }
  return true;
}

/// The layout-changing kernel may move `tv` elements per thread and access (tv x the smallest
/// element = tile_access bytes) when every vector stays aligned and inside the tile: staged
/// operands are of the smallest element size, extents are multiples of tv, and every operand read
/// along the innermost dimension is contiguous (aligned) or repeated there.
template <int R, int L>
bool tile_vec_ok(const eval_plan<R, L>& pl, const operand_info<R>& dst,
                 const std::array<operand_info<R>, L>& src, int tv) {
  constexpr int in = R - 1;
  auto aligned = [](const void* p, int bytes) {
    return reinterpret_cast<std::uintptr_t>(p) % std::uintptr_t(bytes) == 0;
  };
  if (tv < 2 || pl.ext[in] % tv != 0 || pl.ext[pl.tile_a] % tv != 0 ||
      !aligned(dst.ptr, tv * dst.elem) || !strides_multiple(pl.dst, tv, -1)) {
    return false;
  }
  for (int l = 0; l < L; ++l) {
    const strides<R>& s = pl.leaves.str[l];
    if (pl.leaves.smem[l] >= 0) {
      if (src[l].elem * tv != tile_access || !aligned(src[l].ptr, tile_access) || s[in] % tv != 0 ||
          !strides_multiple(s, tv, pl.tile_a)) {
        return false;
      }
    } else if (s[in] == 1) {
      if (!aligned(src[l].ptr, tv * src[l].elem) || !strides_multiple(s, tv, -1)) {
        return false;
      }
    } else if (s[in] != 0) {
      return false;
    }
  }
  return true;
}

/// Plans the assignment of operands `src` to `dst` over `shape`. `vec_width`: the vector width
/// the expression's element sizes allow (16 bytes / smallest element); `device`: a GPU
/// evaluation (the host path never vectorizes nor stages tiles).
template <int R, int L>
eval_plan<R, L> make_plan(const operand_info<R>& dst, const extents<R>& shape,
                          const std::array<operand_info<R>, L>& src, int vec_width, bool device) {
  static_assert(R >= 1, "cufuse: internal: plans are made for rank >= 1");
  eval_plan<R, L> pl;
  pl.n = shape.size();
  for (int l = 0; l < L; ++l) {
    pl.temporary = pl.temporary || overlaps_elsewhere(dst, src[l], shape);
  }

  // 1. The destination's dimensions of extent > 1, outermost (largest stride) first.
  int order[R];
  int k = 0;
  for (int d = 0; d < R; ++d) {
    if (shape[d] != 1) {
      order[k++] = d;
    }
  }
  for (int i = 1; i < k; ++i) { // stable insertion sort by destination stride, descending
    for (int j = i; j > 0 && dst.str[order[j - 1]] < dst.str[order[j]]; --j) {
      const int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  }

  // 2. Merge neighbours that every operand walks as one (outer stride = inner stride x extent).
  index_t ext[R];
  index_t st[R][L + 1]; // [dim][0: destination, 1 + l: operand l]
  auto stride_of = [&](int op, int d) { return op == 0 ? dst.str[d] : src[op - 1].str[d]; };
  int m = 0;
  for (int i = 0; i < k; ++i) {
    const int d = order[i];
    bool merge = m > 0;
    for (int op = 0; merge && op <= L; ++op) {
      merge = st[m - 1][op] == stride_of(op, d) * shape[d];
    }
    if (merge) {
      ext[m - 1] *= shape[d];
      for (int op = 0; op <= L; ++op) {
        st[m - 1][op] = stride_of(op, d);
      }
    } else {
      ext[m] = shape[d];
      for (int op = 0; op <= L; ++op) {
        st[m][op] = stride_of(op, d);
      }
      ++m;
    }
  }
  if (m == 0) { // one element
    ext[0] = 1;
    for (int op = 0; op <= L; ++op) {
      st[0][op] = 0;
    }
    m = 1;
  }

  // 3. Right-align the walk: dimensions [first, R) are the merged ones.
  pl.first = R - m;
  for (int d = 0; d < R; ++d) {
    const int s = d - pl.first;
    pl.ext[d] = s >= 0 ? ext[s] : 1;
    pl.dst[d] = s >= 0 ? st[s][0] : 0;
    for (int l = 0; l < L; ++l) {
      pl.leaves.str[l][d] = s >= 0 ? st[s][1 + l] : 0;
      pl.leaves.smem[l] = leaf_direct;
    }
  }

  // 4. Index width: 32 bits while every index, offset and grid stride stays below 2^31.
  constexpr index_t int32_limit = index_t(1) << 30;
  pl.wide = pl.n >= int32_limit || span_of(pl.ext, pl.dst) >= int32_limit;
  for (int l = 0; l < L; ++l) {
    pl.wide = pl.wide || span_of(pl.ext, pl.leaves.str[l]) >= int32_limit;
  }
  if (!device) {
    return pl;
  }

  // 5. The kernel.
  constexpr int in = R - 1;
  const auto aligned = [&](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  bool flat = m == 1 && pl.dst[in] == 1 && aligned(dst.ptr) && vec_width > 1;
  for (int l = 0; l < L; ++l) {
    flat = flat && pl.leaves.str[l][in] == 1 && aligned(src[l].ptr);
  }
  if (flat) {
    pl.kind = eval_kind::flat;
    pl.vec = vec_width;
    return pl;
  }

  // A leaf read across the innermost dimension but contiguous along another: stage tiles.
  if (pl.dst[in] == 1 && pl.ext[in] >= min_tile_extent) {
    for (int l = 0; l < L && pl.tile_a < 0; ++l) {
      const index_t s = pl.leaves.str[l][in];
      if (s == 0 || s == 1) {
        continue;
      }
      for (int a = 0; a < in; ++a) { // dimensions before `first` have extent 1: skipped
        if (pl.leaves.str[l][a] == 1 && pl.ext[a] >= min_tile_extent) {
          pl.tile_a = a;
          break;
        }
      }
    }
    if (pl.tile_a >= 0) {
      for (int l = 0; l < L; ++l) {
        const index_t s = pl.leaves.str[l][in];
        const int bytes = tile_bytes_of(src[l].elem);
        if (s != 0 && s != 1 && pl.leaves.str[l][pl.tile_a] == 1 &&
            pl.smem_bytes + bytes <= max_tile_smem) {
          pl.leaves.smem[l] = pl.smem_bytes;
          pl.smem_bytes += bytes;
        }
      }
      pl.kind = eval_kind::tile;
      const int tv = vec_width >= 8 ? vec_width / (16 / tile_access) : 1;
      pl.vec = tile_vec_ok<R, L>(pl, dst, src, tv) ? tv : 1;
      return pl;
    }
  }

  // The N-d kernel; vectorized when every operand is contiguous or repeated along the innermost
  // dimension, aligned, and the vectors stay inside rows. When only the destination's vectors
  // are possible, they are still written whole and the operands read lane by lane (nd_read;
  // 32-bit indices, the 64-bit walk runs the scalar kernel): a strided or misaligned view, or
  // rows that do not hold whole vectors, then cost loads, not a thread per element.
  bool vec = vec_width > 1 && pl.dst[in] == 1 && aligned(dst.ptr) &&
             (pl.ext[in] % vec_width == 0 || m == 1);
  auto outer_multiple = [&](const strides<R>& s) {
    for (int d = 0; d < in; ++d) {
      if (s[d] % vec_width != 0) {
        return false;
      }
    }
    return true;
  };
  vec = vec && outer_multiple(pl.dst);
  const bool dst_vec = vec;
  for (int l = 0; l < L && vec; ++l) {
    const index_t s = pl.leaves.str[l][in];
    vec = s == 0 || (s == 1 && aligned(src[l].ptr) && outer_multiple(pl.leaves.str[l]));
  }
  pl.kind = eval_kind::nd;
  pl.vec = vec ? vec_width : 1;
  if (!vec && !pl.wide && vec_width > 1) {
    bool contiguous = pl.dst[in] == 1 && aligned(dst.ptr);
    for (int d = pl.first; d < in && contiguous; ++d) {
      contiguous = pl.dst[d] == pl.dst[d + 1] * pl.ext[d + 1];
    }
    // flat_lanes: rows at least a vector long, so that a vector spans at most two of them
    if (dst_vec || (contiguous && pl.ext[in] >= vec_width)) {
      pl.read = dst_vec ? nd_read::row_lanes : nd_read::flat_lanes;
      pl.vec = vec_width;
      // operands a vector can still read: contiguous and aligned along the row (row_lanes), laid
      // out as the destination and aligned (flat_lanes: X in `X + bias` over rows of odd length)
      for (int l = 0; l < L; ++l) {
        const strides<R>& s = pl.leaves.str[l];
        bool v = aligned(src[l].ptr);
        if (pl.read == nd_read::row_lanes) {
          v = v && s[in] == 1 && outer_multiple(s);
        } else {
          for (int d = pl.first; d <= in && v; ++d) {
            v = s[d] == pl.dst[d] || pl.ext[d] == 1;
          }
        }
        pl.leaves.smem[l] = v ? leaf_vectors : leaf_direct;
      }
    }
  }
  return pl;
}

} // namespace cufuse::detail

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_EVAL_PLAN_CUH
#undef CUFUSE_DETAIL_FIRST_EVAL_PLAN_CUH
#undef CUFUSE_DETAIL_FIRST
#include "assign.cuh"
#endif
