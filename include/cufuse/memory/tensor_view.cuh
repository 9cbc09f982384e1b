/// \file The leaf node (a pointer and a shape, inside expressions and kernels) and tensor_view,
/// the user's non-owning handle on memory that cufuse does not own.
#pragma once

#include "../core/concepts.hpp"
#include "../core/error.hpp"
#include "../core/extents.hpp"
#include "../core/types.cuh"
#include "stream.hpp"

#include <concepts>
#include <cstdint>
#include <string>
#include <type_traits>

namespace cufuse {

template <class Dst, class Src>
void assign(Dst&& dst, const Src& src, cudaStream_t stream);

namespace detail {

/// V consecutive elements held in registers, loaded or stored as 16-byte vectors.
template <class T, int V>
struct alignas(16) lane_regs {
  static_assert((V * sizeof(T)) % 16 == 0, "cufuse: internal: vector not a multiple of 16 bytes");
  T v[V];
  CUFUSE_INLINE opmath_t<T> at(int k) const { return convert<opmath_t<T>>(v[k]); }
};

/// A contiguous row-major block of memory viewed as a rank-`Rank` tensor; the only node that
/// touches memory. `T` may be const (a read-only leaf).
template <class T, int Rank, class Space>
struct leaf {
  using value_type = std::remove_const_t<T>;
  using promo_type = value_type;
  using space = Space;
  static constexpr int rank = Rank;
  static constexpr bool is_cufuse_node = true;
  static constexpr bool all_contiguous = true;
  static constexpr int min_element_size = int(sizeof(value_type));
  static constexpr int leaf_count = 1;

  T* ptr;
  extents<Rank> shp;

  CUFUSE_INLINE const extents<Rank>& shape() const { return shp; }
  CUFUSE_INLINE index_t size() const { return shp.size(); }

  template <class I>
  CUFUSE_INLINE opmath_t<value_type> eval(I i) const {
    return convert<opmath_t<value_type>>(ptr[i]);
  }
  /// Element at linear (row-major) index `i`.
  template <class I>
  CUFUSE_INLINE value_type operator[](I i) const {
    return ptr[i];
  }

  /// Loads elements [vi*V, vi*V + V) with 16-byte loads (pointer must be 16-byte aligned).
  template <int V, class I>
  CUFUSE_INLINE lane_regs<value_type, V> fetch(I vi) const {
    lane_regs<value_type, V> r;
    constexpr int chunks = int(V * sizeof(value_type) / 16);
    const uint4* src = reinterpret_cast<const uint4*>(ptr) + static_cast<I>(vi) * chunks;
    uint4* dst = reinterpret_cast<uint4*>(r.v);
    CUFUSE_UNROLL
    for (int c = 0; c < chunks; ++c) {
      dst[c] = src[c];
    }
    return r;
  }

  /// Stores V elements at [vi*V, vi*V + V) with 16-byte stores.
  template <int V, class I>
  CUFUSE_INLINE void store_vec(I vi, const lane_regs<value_type, V>& r) const {
    constexpr int chunks = int(V * sizeof(value_type) / 16);
    uint4* dst = reinterpret_cast<uint4*>(ptr) + static_cast<I>(vi) * chunks;
    const uint4* src = reinterpret_cast<const uint4*>(r.v);
    CUFUSE_UNROLL
    for (int c = 0; c < chunks; ++c) {
      dst[c] = src[c];
    }
  }

  bool aligned16() const { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }
};

} // namespace detail

/// A non-owning view of a contiguous row-major tensor in `Space`: wraps memory you own
/// (cudaMalloc, Thrust, PyTorch). Assigning to a view writes its elements; copying a view copies
/// the handle.
template <class T, int Rank, class Space = device_space>
class tensor_view {
  static_assert(element_type<std::remove_const_t<T>>,
                "cufuse: unsupported element type; use float, double, __half, __nv_bfloat16, "
                "int32_t, int64_t, uint8_t or bool");

public:
  using value_type = std::remove_const_t<T>;
  using space = Space;
  static constexpr int rank = Rank;

  /// Wraps `data`. A device view checks once, here, that the pointer is memory the GPU can
  /// read (device, managed or pinned host memory): a view of ordinary host memory would
  /// otherwise fault inside the kernel.
  tensor_view(T* data, extents<Rank> shape) : leaf_{data, shape} {
    if (data == nullptr && shape.size() != 0) {
      throw error("cufuse: view of a null pointer with non-empty shape " + shape.to_string());
    }
    if constexpr (std::is_same_v<Space, device_space>) {
      if (data != nullptr && shape.size() != 0) {
        check_device_accessible(data);
      }
    }
  }
  /// For tensors' own storage: no check needed.
  struct trusted {};
  tensor_view(T* data, extents<Rank> shape, trusted) : leaf_{data, shape} {}
  tensor_view(const tensor_view&) = default;

  /// Evaluates `src` (an expression, tensor, view or scalar) into this view's elements.
  template <class Src>
  tensor_view& operator=(const Src& src) {
    static_assert(!std::is_const_v<T>, "cufuse: cannot assign to a view of const elements");
    cufuse::assign(*this, src, current_stream());
    return *this;
  }
  /// Elementwise copy (not a rebinding of the handle).
  tensor_view& operator=(const tensor_view& src) { return this->operator=<tensor_view>(src); }

  /// Sets every element to `value` (converted to the element type).
  template <scalar_type S>
  void fill(S value) {
    static_assert(!std::is_const_v<T>, "cufuse: cannot fill a view of const elements");
    cufuse::assign(*this, value, current_stream());
  }

  T* data() const noexcept { return leaf_.ptr; }
  const extents<Rank>& shape() const noexcept { return leaf_.shp; }
  index_t size() const noexcept { return leaf_.shp.size(); }
  /// The expression node: pass it to your own kernels and read `node[i]` there.
  detail::leaf<T, Rank, Space> node() const noexcept { return leaf_; }

private:
  static void check_device_accessible(const void* p) {
    cudaPointerAttributes attr{};
    CUFUSE_CUDA_CHECK_MSG(cudaPointerGetAttributes(&attr, p), "checking the pointer of a view");
    if (attr.type == cudaMemoryTypeUnregistered) {
      throw error("cufuse::view: the pointer is ordinary host memory, which the GPU cannot read; "
                  "use cufuse::host_view for host data, or device/pinned/managed memory");
    }
  }

  detail::leaf<T, Rank, Space> leaf_;
};

namespace detail {
template <std::integral I, int Rank>
extents<Rank> checked_extents(const I (&shape)[Rank], const char* who) {
  extents<Rank> e;
  for (int d = 0; d < Rank; ++d) {
    e[d] = static_cast<index_t>(shape[d]);
  }
  for (int d = 0; d < Rank; ++d) {
    if (e[d] < 0) {
      throw shape_error(std::string(who) + ": negative extent in shape " + e.to_string());
    }
  }
  return e;
}
} // namespace detail

/// Wraps device memory you own: `cufuse::view(ptr, {rows, cols})`.
template <class T, std::integral I, int Rank>
tensor_view<T, Rank, device_space> view(T* device_ptr, const I (&shape)[Rank]) {
  return {device_ptr, detail::checked_extents(shape, "cufuse::view")};
}
/// Wraps device memory you own, with a shape already built.
template <class T, int Rank>
tensor_view<T, Rank, device_space> view(T* device_ptr, const extents<Rank>& shape) {
  return {device_ptr, shape};
}

/// Wraps host memory you own; expressions over it evaluate on the CPU.
template <class T, std::integral I, int Rank>
tensor_view<T, Rank, host_space> host_view(T* host_ptr, const I (&shape)[Rank]) {
  return {host_ptr, detail::checked_extents(shape, "cufuse::host_view")};
}
/// Wraps host memory you own, with a shape already built.
template <class T, int Rank>
tensor_view<T, Rank, host_space> host_view(T* host_ptr, const extents<Rank>& shape) {
  return {host_ptr, shape};
}

} // namespace cufuse
