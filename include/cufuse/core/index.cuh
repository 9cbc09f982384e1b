/// \file Positions at which expressions are evaluated, and division by a run-time constant
/// without a hardware divide (the N-d kernels' index math).
#pragma once

#include "config.hpp"
#include "extents.hpp"

#include <cstdint>
#include <type_traits>

namespace cufuse::detail {

/// A position given by its coordinates along `R` dimensions. A node of rank r < R reads the
/// trailing r coordinates (NumPy's right alignment).
template <int R, class I>
struct coords {
  I c[R > 0 ? R : 1];
};

/// A position of the N-d kernel's gathering form: V lanes along the innermost dimension from
/// `p` on, each operand read lane by lane at its own innermost stride (a strided or misaligned
/// view that a 16-byte access cannot read).
template <int R, class I>
struct lanes_from {
  coords<R, I> p;
};

/// A position of the N-d kernel's gathering form across rows: V consecutive elements of a
/// contiguous destination whose rows are at least V long, so that they span at most two rows:
/// lanes [0, in_first) from `first` on along its row, the others from the start of the next row
/// (`second`). Each leaf turns the two positions into two offsets and every lane into one
/// multiply-add and a select.
template <int V, int R, class I>
struct lanes_each {
  coords<R, I> first, second;
  int in_first; // lanes in the first row (V: all)
  I flat;       // the first lane's offset in the destination (row-major, contiguous)
};

/// A position given by its row-major linear index, for the kernel that the host has proven
/// sees every operand contiguous and of the destination's shape.
template <class I>
struct flat_index {
  I i;
};

/// Offset of position `p` in an operand of rank `Rank` with strides `st` (trailing coordinates).
template <int Rank, int R, class I>
CUFUSE_INLINE I offset_at(const strides<Rank>& st, const coords<R, I>& p) {
  static_assert(Rank <= R, "cufuse: internal: position of lower rank than the operand");
  I off = 0;
  CUFUSE_UNROLL
  for (int d = 0; d < Rank; ++d) {
    off += p.c[R - Rank + d] * static_cast<I>(st[d]);
  }
  return off;
}

/// Coordinates of row-major linear index `i` in `shape` (the slow path of `node[i]` in a user's
/// kernel; the library's own kernels never divide per element).
template <int R, class I>
CUFUSE_INLINE coords<R, I> unravel(I i, const extents<R>& shape) {
  coords<R, I> p{};
  CUFUSE_UNROLL
  for (int d = R - 1; d > 0; --d) {
    const I e = static_cast<I>(shape[d]);
    const I q = e != 0 ? i / e : 0;
    p.c[d] = i - q * e;
    i = q;
  }
  if constexpr (R > 0) {
    p.c[0] = i;
  }
  return p;
}

/// Unsigned division by a divisor fixed at launch (Granlund and Montgomery): a multiply-high,
/// an add and a shift. `U` = uint32_t for dividends below 2^31, uint64_t below 2^63.
template <class U>
struct fast_divmod {
  static_assert(std::is_same_v<U, std::uint32_t> || std::is_same_v<U, std::uint64_t>);
  U divisor = 1, multiplier = 0;
  unsigned shift = 0;

  fast_divmod() = default;
  /// Host: prepares division by `d` (d >= 1).
  explicit fast_divmod(U d) : divisor(d) {
    constexpr unsigned bits = sizeof(U) * 8;
    while (shift < bits && (U(1) << shift) < d) {
      ++shift;
    }
    // multiplier = floor(2^bits * (2^shift - d) / d) + 1, computed in twice the width.
    if constexpr (std::is_same_v<U, std::uint32_t>) {
      const std::uint64_t num = (std::uint64_t(1) << shift) - d;
      multiplier = static_cast<U>((num << 32) / d + 1);
    } else {
      const unsigned __int128 num = ((unsigned __int128)1 << shift) - d;
      multiplier = static_cast<U>((num << 64) / d + 1);
    }
  }

  CUFUSE_INLINE U div(U n) const {
#if defined(__CUDA_ARCH__)
    U hi;
    if constexpr (std::is_same_v<U, std::uint32_t>) {
      hi = __umulhi(n, multiplier);
    } else {
      hi = __umul64hi(n, multiplier);
    }
#else
    U hi;
    if constexpr (std::is_same_v<U, std::uint32_t>) {
      hi = static_cast<U>((std::uint64_t(n) * multiplier) >> 32);
    } else {
      hi = static_cast<U>(((unsigned __int128)n * multiplier) >> 64);
    }
#endif
    return (hi + n) >> shift;
  }
  /// q = n / divisor, r = n % divisor.
  CUFUSE_INLINE void divmod(U n, U& q, U& r) const {
    q = div(n);
    r = n - q * divisor;
  }
};

/// The unsigned type of the same width as index type I.
template <class I>
using unsigned_of = std::make_unsigned_t<I>;

} // namespace cufuse::detail
