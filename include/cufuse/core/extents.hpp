/// \file extents<Rank>: the shape of a tensor, usable on host and device; NumPy broadcasting of
/// shapes; row-major strides.
#pragma once

#include "config.hpp"
#include "error.hpp"

#include <concepts>
#include <string>

namespace cufuse {

/// Largest rank a tensor, view or expression may have.
inline constexpr int max_rank = 8;

/// Row-major shape of a rank-`Rank` tensor: `extents<2>{rows, cols}`. Rank 0 is one element.
template <int Rank>
struct extents {
  static_assert(Rank >= 0 && Rank <= max_rank, "cufuse: tensors have rank 0 to 8");
  index_t e[Rank > 0 ? Rank : 1];

  CUFUSE_HOST_DEVICE constexpr extents() : e{} {}

  /// From exactly `Rank` integers of any integral type; a negative extent throws shape_error.
  template <std::integral... I>
    requires(sizeof...(I) == Rank && Rank > 0)
  constexpr extents(I... i) : e{static_cast<index_t>(i)...} {
    validate();
  }

  CUFUSE_HOST_DEVICE constexpr index_t operator[](int d) const { return e[d]; }
  CUFUSE_HOST_DEVICE constexpr index_t& operator[](int d) { return e[d]; }
  static constexpr int rank() { return Rank; }

  /// Number of elements (product of the extents; 1 at rank 0).
  CUFUSE_HOST_DEVICE constexpr index_t size() const {
    index_t n = 1;
    for (int d = 0; d < Rank; ++d) {
      n *= e[d];
    }
    return n;
  }

  friend constexpr bool operator==(const extents& a, const extents& b) {
    for (int d = 0; d < Rank; ++d) {
      if (a.e[d] != b.e[d]) {
        return false;
      }
    }
    return true;
  }

  /// "[2, 3]"; "[]" at rank 0.
  std::string to_string() const {
    std::string s = "[";
    for (int d = 0; d < Rank; ++d) {
      s += (d ? ", " : "") + std::to_string(e[d]);
    }
    return s + "]";
  }

private:
  constexpr void validate() const {
    for (int d = 0; d < Rank; ++d) {
      if (e[d] < 0) {
        throw shape_error("cufuse: negative extent in shape " + to_string());
      }
    }
  }
};

template <std::integral... I>
extents(I...) -> extents<int(sizeof...(I))>;

/// Distances in elements between neighbours along each dimension (may be 0: a repeated
/// dimension).
template <int Rank>
struct strides {
  index_t s[Rank > 0 ? Rank : 1];
  CUFUSE_HOST_DEVICE constexpr index_t operator[](int d) const { return s[d]; }
  CUFUSE_HOST_DEVICE constexpr index_t& operator[](int d) { return s[d]; }
  friend constexpr bool operator==(const strides& a, const strides& b) {
    for (int d = 0; d < Rank; ++d) {
      if (a.s[d] != b.s[d]) {
        return false;
      }
    }
    return true;
  }
  std::string to_string() const {
    std::string r = "(";
    for (int d = 0; d < Rank; ++d) {
      r += (d ? ", " : "") + std::to_string(s[d]);
    }
    return r + ")";
  }
};

/// Row-major (C order) strides of a shape.
template <int Rank>
constexpr strides<Rank> row_major_strides(const extents<Rank>& shape) {
  strides<Rank> st{};
  index_t step = 1;
  for (int d = Rank - 1; d >= 0; --d) {
    st[d] = step;
    step *= shape[d];
  }
  return st;
}

/// True when `st` lays `shape` out densely in row-major order; dimensions of extent 1 (whose
/// stride never matters) and empty shapes count as contiguous, as in PyTorch.
template <int Rank>
constexpr bool is_row_major(const extents<Rank>& shape, const strides<Rank>& st) {
  index_t step = 1;
  for (int d = Rank - 1; d >= 0; --d) {
    if (shape[d] == 0) {
      return true;
    }
    if (shape[d] != 1 && st[d] != step) {
      return false;
    }
    step *= shape[d];
  }
  return true;
}

namespace detail {

/// Broadcasts `b` into `acc` (NumPy: right-aligned; extent 1 repeats). Returns false when an
/// extent differs and neither is 1.
template <int R, int Rb>
CUFUSE_HOST_DEVICE constexpr bool broadcast_into(extents<R>& acc, const extents<Rb>& b) {
  static_assert(Rb <= R, "cufuse: internal: broadcast into a lower rank");
  for (int d = 0; d < Rb; ++d) {
    const int a = R - Rb + d;
    const index_t x = acc[a], y = b[d];
    if (x == y || y == 1) {
      continue;
    }
    if (x != 1) {
      return false;
    }
    acc[a] = y;
  }
  return true;
}

/// extents<R> of all ones (the identity of broadcasting).
template <int R>
CUFUSE_HOST_DEVICE constexpr extents<R> ones() {
  extents<R> e;
  for (int d = 0; d < R; ++d) {
    e[d] = 1;
  }
  return e;
}

} // namespace detail
} // namespace cufuse
