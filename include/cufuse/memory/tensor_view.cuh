/// \file The leaf node (a pointer and a shape, inside expressions and kernels) and tensor_view,
/// the user's non-owning handle on memory that cufuse does not own.
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_MEMORY_TENSOR_VIEW_CUH
#endif

#include "../core/concepts.hpp"
#include "../core/error.hpp"
#include "../core/extents.hpp"
#include "../core/index.cuh"
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

/// The unsigned type of N bytes in which vectors move (N = 1, 2, 4, 8 or 16).
template <int N>
struct vec_word;
template <>
struct vec_word<16> {
  using type = uint4;
};
template <>
struct vec_word<8> {
  using type = uint2;
};
template <>
struct vec_word<4> {
  using type = unsigned;
};
template <>
struct vec_word<2> {
  using type = unsigned short;
};
template <>
struct vec_word<1> {
  using type = unsigned char;
};

/// The L2 eviction priority of the operand reads of the kernels that read and write whole
/// arrays (the N-d and flat kernels' vector loads, the row kernel's staging copies): 2 evict
/// last (the default), 1 evict first, 0 none. Lines read with evict_last outlast the output's
/// dirty lines in L2, so that those drain to memory first. Measured on the H200 (ratio to the
/// copy, hint 0 / 2, same call; JOURNAL m2): fp32 layer_norm [32768, 4096] 0.959 / 0.992, bf16
/// softmax 0.953 / 0.974, fp32 `relu(X + bias)` [8192, 8192] 0.988 / 0.997, bf16 0.939 / 0.953;
/// evict_first made every row kernel 3-4% slower. Reductions without a full-size output read
/// without a hint (evict_last made `sum(T, 1)` [256, 1024, 256] 0.85x -> 0.76x copy), and so do
/// the layout-changing kernel's tiles (0.5-1% slower with it) and the clustered rows (no gain).
/// The cost: the hinted lines stay in L2 after the kernel until writes displace them, and a
/// next kernel that reads the same data twice finds less of it there (bench/l2_after.cu;
/// docs/design.md).
#ifndef CUFUSE_STREAM_L2_HINT
#define CUFUSE_STREAM_L2_HINT 2
#endif
static_assert(CUFUSE_STREAM_L2_HINT >= 0 && CUFUSE_STREAM_L2_HINT <= 2,
              "cufuse: CUFUSE_STREAM_L2_HINT must be 0 (no hint), 1 (evict first) or 2 (evict "
              "last)");
/// The fraction of the hinted lines that take the evict_last priority (the others keep theirs).
#ifndef CUFUSE_STREAM_L2_FRACTION
#define CUFUSE_STREAM_L2_FRACTION 1.0
#endif
#define CUFUSE_DETAIL_STR2(x) #x
#define CUFUSE_DETAIL_STR(x) CUFUSE_DETAIL_STR2(x)
/// An L2 eviction policy (createpolicy): 1 evict first, 2 evict last, else none.
template <int Hint>
CUFUSE_DEVICE __forceinline__ std::uint64_t l2_policy() {
  std::uint64_t p = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (Hint == 1) {
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  } else if constexpr (Hint == 2) {
    asm("createpolicy.fractional.L2::evict_last.b64 %0, " CUFUSE_DETAIL_STR(
            CUFUSE_STREAM_L2_FRACTION) ";\n"
        : "=l"(p));
  }
#endif
  return p;
}

/// One word from global memory (not shared memory) with an L2 eviction policy, as above (16-byte
/// words; smaller ones plainly).
template <int Hint, class W>
CUFUSE_INLINE W load_global_word(const W* from) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (Hint != 0 && std::is_same_v<W, uint4>) {
    W w;
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
                 : "l"(from), "l"(l2_policy<Hint>()));
    return w;
  }
#endif
  return *from;
}

/// V consecutive elements held in registers, loaded or stored as words of up to 16 bytes.
template <class T, int V>
struct alignas(V * sizeof(T) < 16 ? V * sizeof(T) : 16) lane_regs {
  static constexpr int bytes = int(V * sizeof(T));
  static constexpr int word = bytes < 16 ? bytes : 16;
  static_assert(bytes % word == 0 && (word & (word - 1)) == 0,
                "cufuse: internal: a vector of a size that is not a power of two");
  using word_t = typename vec_word<word>::type;
  static constexpr int words = bytes / word;
  T v[V];
  CUFUSE_INLINE opmath_t<T> at(int k) const { return convert<opmath_t<T>>(v[k]); }
  /// V elements from memory at `from`, aligned to the vector's size: one access per word.
  /// Hint != 0: `from` is global memory, read with that L2 policy (load_global_word).
  template <int Hint = 0>
  CUFUSE_INLINE static lane_regs load(const T* from) {
    lane_regs r;
    const auto* src = reinterpret_cast<const word_t*>(from);
    auto* dst = reinterpret_cast<word_t*>(r.v);
    CUFUSE_UNROLL
    for (int c = 0; c < words; ++c) {
      dst[c] = load_global_word<Hint>(src + c);
    }
    return r;
  }
};

/// V values of the compute type rounded to T, as one lane_regs. Half and bf16 from float round
/// two values per instruction (cvt.rn.{f16x2,bf16x2}.f32); one conversion per value took a
/// second instruction per pair to merge the halves into a word (ptxas on the bf16 row kernel:
/// eight F2FP and four PRMT per 8 outputs, against four F2FP).
template <class T, int V, class C>
CUFUSE_INLINE lane_regs<T, V> round_lanes(const C (&x)[V]) {
  lane_regs<T, V> r;
  if constexpr (V % 2 == 0 && std::is_same_v<C, float> &&
                (std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>)) {
    CUFUSE_UNROLL
    for (int k = 0; k < V / 2; ++k) {
      if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        const __nv_bfloat162 h = __floats2bfloat162_rn(x[2 * k], x[2 * k + 1]);
        r.v[2 * k] = h.x;
        r.v[2 * k + 1] = h.y;
      } else {
        const __half2 h = __floats2half2_rn(x[2 * k], x[2 * k + 1]);
        r.v[2 * k] = h.x;
        r.v[2 * k + 1] = h.y;
      }
    }
  } else {
    CUFUSE_UNROLL
    for (int u = 0; u < V; ++u) {
      r.v[u] = convert<T>(x[u]);
    }
  }
  return r;
}

/// The V lanes of a fetched vector (a leaf's registers or a map's lanes, read by `at`) as values
/// of T: a leaf's registers of type T as they are, anything else rounded by round_lanes.
template <class T, int V, class Lanes>
CUFUSE_INLINE lane_regs<T, V> lanes_to(const Lanes& lanes) {
  if constexpr (std::is_same_v<Lanes, lane_regs<T, V>>) {
    return lanes;
  } else {
    std::remove_cvref_t<decltype(lanes.at(0))> x[V];
    CUFUSE_UNROLL
    for (int k = 0; k < V; ++k) {
      x[k] = lanes.at(k);
    }
    return round_lanes<T>(x);
  }
}

/// A block of memory viewed as a rank-`Rank` tensor through strides (in elements); the only
/// node that touches memory. `T` may be const (a read-only leaf). Strides of dimensions of
/// extent 1 are stored as 0, so a leaf broadcasts against any shape by reading the trailing
/// coordinates of a position (NumPy's rules).
template <class T, int Rank, class Space>
struct leaf {
  using value_type = std::remove_const_t<T>;
  using promo_type = std::conditional_t<Rank == 0, zero_dim<value_type>, value_type>;
  using space = Space;
  static constexpr int rank = Rank;
  static constexpr bool is_cufuse_node = true;
  static constexpr int min_element_size = int(sizeof(value_type));
  static constexpr int leaf_count = 1;

  T* ptr;
  extents<Rank> shp;
  strides<Rank> str;

  CUFUSE_INLINE const extents<Rank>& shape() const { return shp; }
  CUFUSE_INLINE index_t size() const { return shp.size(); }

  /// Value at a position of rank >= Rank, in the compute type.
  template <int R, class I>
  CUFUSE_INLINE opmath_t<value_type> eval_in(const coords<R, I>& p) const {
    return convert<opmath_t<value_type>>(ptr[offset_at(str, p)]);
  }
  /// Element at row-major linear index `i` of this leaf's shape.
  template <class I>
  CUFUSE_INLINE value_type operator[](I i) const {
    if constexpr (Rank <= 1) {
      return ptr[Rank == 0 ? I(0) : i * static_cast<I>(str[0])];
    } else {
      return ptr[offset_at(str, unravel(i, shp))];
    }
  }
  /// Element at a multi-index.
  template <std::integral... I>
    requires(sizeof...(I) == Rank)
  CUFUSE_INLINE value_type operator()(I... idx) const {
    return ptr[offset_at(str, coords<Rank, index_t>{{static_cast<index_t>(idx)...}})];
  }
};

/// The leaf of memory `ptr` with shape `shape` and strides `st`: extent-1 strides become 0.
template <class T, int Rank, class Space>
leaf<T, Rank, Space> make_leaf(T* ptr, const extents<Rank>& shape, const strides<Rank>& st) {
  leaf<T, Rank, Space> l{ptr, shape, st};
  for (int d = 0; d < Rank; ++d) {
    if (shape[d] == 1) {
      l.str[d] = 0;
    }
  }
  return l;
}

} // namespace detail

/// A non-owning, possibly strided view of a tensor in `Space`: wraps memory you own
/// (cudaMalloc, Thrust, PyTorch) or a part of a tensor (cufuse::slice, transpose, permute,
/// reshape, unsqueeze). Assigning to a view writes its elements; copying a view copies the
/// handle. The memory must outlive the view.
template <class T, int Rank, class Space = device_space>
class tensor_view {
  static_assert(element_type<std::remove_const_t<T>>,
                "cufuse: unsupported element type; use float, double, __half, __nv_bfloat16, "
                "int32_t, int64_t, uint8_t or bool");

public:
  using value_type = std::remove_const_t<T>;
  using element_type = T;
  using space = Space;
  static constexpr int rank = Rank;

  /// Wraps contiguous row-major `data`. A device view checks once, here, that the pointer is
  /// memory the GPU can read (device, managed or pinned host memory): a view of ordinary host
  /// memory would otherwise fault inside the kernel.
  tensor_view(T* data, extents<Rank> shape) : tensor_view(data, shape, row_major_strides(shape)) {}
  /// Wraps `data` with explicit strides in elements (non-negative; 0 repeats a dimension, which
  /// makes the view read-only in practice: assigning to it throws).
  tensor_view(T* data, extents<Rank> shape, strides<Rank> st)
      : ptr_(data), shape_(shape), str_(st) {
    for (int d = 0; d < Rank; ++d) {
      if (st[d] < 0) {
        throw shape_error("cufuse: negative stride in view of shape " + shape.to_string() +
                          " with strides " + st.to_string());
      }
    }
    if (data == nullptr && shape.size() != 0) {
      throw error("cufuse: view of a null pointer with non-empty shape " + shape.to_string());
    }
    if constexpr (std::is_same_v<Space, device_space>) {
      if (data != nullptr && shape.size() != 0) {
        check_device_accessible(data);
      }
    }
  }
  /// For memory cufuse already knows (a tensor's storage, a view derived from a view).
  struct trusted {};
  tensor_view(T* data, extents<Rank> shape, strides<Rank> st, trusted)
      : ptr_(data), shape_(shape), str_(st) {}
  tensor_view(const tensor_view&) = default;
  /// A view of const elements from a view of mutable ones.
  template <class U>
    requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>)
  tensor_view(const tensor_view<U, Rank, Space>& v)
      : ptr_(v.data()), shape_(v.shape()), str_(v.strides()) {}

  /// Evaluates `src` (an expression, tensor, view or scalar) into this view's elements.
  template <class Src>
  const tensor_view& operator=(const Src& src) const {
    static_assert(!std::is_const_v<T>, "cufuse: cannot assign to a view of const elements");
    if constexpr (!std::is_const_v<T>) { // nothing more to instantiate: one error, not eight
      cufuse::assign(*this, src, current_stream());
    }
    return *this;
  }
  /// Elementwise copy (not a rebinding of the handle).
  const tensor_view& operator=(const tensor_view& src) const {
    return this->operator=<tensor_view>(src);
  }

  /// Sets every element to `value` (converted to the element type).
  template <scalar_type S>
  void fill(S value) const {
    static_assert(!std::is_const_v<T>, "cufuse: cannot fill a view of const elements");
    if constexpr (!std::is_const_v<T>) {
      cufuse::assign(*this, value, current_stream());
    }
  }

  /// Address of the element at index 0 along every dimension.
  T* data() const noexcept { return ptr_; }
  const extents<Rank>& shape() const noexcept { return shape_; }
  /// Distance in elements between neighbours along each dimension.
  const cufuse::strides<Rank>& strides() const noexcept { return str_; }
  index_t size() const noexcept { return shape_.size(); }
  /// True when the elements are dense in row-major order (extent-1 strides ignored).
  bool is_contiguous() const noexcept { return is_row_major(shape_, str_); }
  /// The expression node: pass it to your own kernels and read `node[i]` or `node(i, j)` there.
  detail::leaf<T, Rank, Space> node() const noexcept {
    return detail::make_leaf<T, Rank, Space>(ptr_, shape_, str_);
  }

private:
  static void check_device_accessible(const void* p) {
    cudaPointerAttributes attr{};
    CUFUSE_CUDA_CHECK_MSG(cudaPointerGetAttributes(&attr, p), "checking the pointer of a view");
    if (attr.type == cudaMemoryTypeUnregistered) {
      throw error("cufuse::view: the pointer is ordinary host memory, which the GPU cannot read; "
                  "use cufuse::host_view for host data, or device/pinned/managed memory");
    }
  }

  T* ptr_;
  extents<Rank> shape_;
  cufuse::strides<Rank> str_;
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
template <std::integral J, int Rank>
strides<Rank> strides_of(const J (&st)[Rank]) {
  strides<Rank> s{};
  for (int d = 0; d < Rank; ++d) {
    s[d] = static_cast<index_t>(st[d]);
  }
  return s;
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

/// Wraps device memory you own with strides in elements: `cufuse::view(ptr, {rows, cols},
/// {ld, 1})` for a matrix with leading dimension ld.
template <class T, std::integral I, std::integral J, int Rank>
tensor_view<T, Rank, device_space> view(T* device_ptr, const I (&shape)[Rank],
                                        const J (&st)[Rank]) {
  return {device_ptr, detail::checked_extents(shape, "cufuse::view"), detail::strides_of(st)};
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

/// Wraps host memory you own with strides in elements.
template <class T, std::integral I, std::integral J, int Rank>
tensor_view<T, Rank, host_space> host_view(T* host_ptr, const I (&shape)[Rank],
                                           const J (&st)[Rank]) {
  return {host_ptr, detail::checked_extents(shape, "cufuse::host_view"), detail::strides_of(st)};
}

} // namespace cufuse

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_MEMORY_TENSOR_VIEW_CUH
#undef CUFUSE_DETAIL_FIRST_MEMORY_TENSOR_VIEW_CUH
#undef CUFUSE_DETAIL_FIRST
#include "../eval/assign.cuh"
#endif
