/// \file extents<Rank>: the shape of a tensor, usable on host and device.
#pragma once

#include "config.hpp"
#include "error.hpp"

#include <concepts>
#include <string>

namespace cufuse {

/// Row-major shape of a rank-`Rank` tensor: `extents<2>{rows, cols}`.
template <int Rank>
struct extents {
  static_assert(Rank >= 1 && Rank <= 8, "cufuse: tensors have rank 1 to 8");
  index_t e[Rank];

  constexpr extents() : e{} {}

  /// From exactly `Rank` integers of any integral type; a negative extent throws shape_error.
  template <std::integral... I>
    requires(sizeof...(I) == Rank)
  constexpr extents(I... i) : e{static_cast<index_t>(i)...} {
    validate();
  }

  CUFUSE_HOST_DEVICE constexpr index_t operator[](int d) const { return e[d]; }
  CUFUSE_HOST_DEVICE constexpr index_t& operator[](int d) { return e[d]; }
  static constexpr int rank() { return Rank; }

  /// Number of elements (product of the extents).
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

  /// "[2, 3]".
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

} // namespace cufuse
