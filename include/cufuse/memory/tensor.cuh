/// \file tensor<T, Rank, Space>: owning, move-only storage in device or host memory.
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_MEMORY_TENSOR_CUH
#endif

#include "tensor_view.cuh"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace cufuse {

/// An owning row-major tensor. Device tensors are allocated stream-ordered (cudaMallocAsync) on
/// the stream current at construction and freed on that same stream, which must outlive the
/// tensor. Move-only; `clone()` deep-copies; `A = expr` evaluates elementwise into A.
template <class T, int Rank, class Space = device_space>
class tensor {
  static_assert(element_type<T>, "cufuse: unsupported element type; use float, double, __half, "
                                 "__nv_bfloat16, int32_t, int64_t, uint8_t or bool");
  static_assert(std::is_same_v<Space, device_space> || std::is_same_v<Space, host_space>,
                "cufuse: the space of a tensor is cufuse::device_space or cufuse::host_space");

public:
  using value_type = T;
  using space = Space;
  static constexpr int rank = Rank;
  static constexpr bool on_device = std::is_same_v<Space, device_space>;

  /// An empty tensor (every extent 0).
  tensor()
    requires(Rank > 0)
  = default;
  /// Rank 0: one uninitialised element (a device scalar that broadcasts against any shape).
  tensor()
    requires(Rank == 0)
      : tensor(extents<0>{}) {}

  /// Uninitialised storage of `shape`; device memory comes from `stream` (default: current).
  explicit tensor(const extents<Rank>& shape, cudaStream_t stream = current_stream())
      : shape_(shape), stream_(stream) {
    allocate();
  }
  /// `tensor<float, 1> v({n})`, `tensor<float, 2> m({rows, cols})`: the braces are the shape
  /// (this overload makes `{n}` unambiguous at rank 1 with every host compiler).
  template <std::integral I>
    requires(Rank > 0)
  explicit tensor(const I (&shape)[Rank], cudaStream_t stream = current_stream())
      : tensor(detail::checked_extents(shape, "cufuse::tensor"), stream) {}

  tensor(tensor&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), shape_(std::exchange(other.shape_, {})),
        stream_(other.stream_), moved_from_(std::exchange(other.moved_from_, true)) {}

  tensor& operator=(tensor&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      shape_ = std::exchange(other.shape_, {});
      stream_ = other.stream_;
      moved_from_ = std::exchange(other.moved_from_, true);
    }
    return *this;
  }

  tensor(const tensor&) = delete; // use clone()

  /// Elementwise copy into this tensor's storage (shapes must match); not a reallocation.
  tensor& operator=(const tensor& src) {
    if (this != &src) {
      cufuse::assign(*this, src, current_stream());
    }
    return *this;
  }

  /// Evaluates an expression, tensor, view or scalar into this tensor, on the current stream.
  template <class Src>
  tensor& operator=(const Src& src) {
    cufuse::assign(*this, src, current_stream());
    return *this;
  }

  ~tensor() { release(); }

  const extents<Rank>& shape() const noexcept { return shape_; }
  index_t size() const noexcept { return shape_.size(); }
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  /// The stream the storage was allocated on (and will be freed on).
  cudaStream_t stream() const noexcept { return stream_; }
  bool moved_from() const noexcept { return moved_from_; }

  /// A non-owning view of the whole tensor.
  tensor_view<T, Rank, Space> view() {
    check_live("view");
    return {data_, shape_, row_major_strides(shape_),
            typename tensor_view<T, Rank, Space>::trusted{}};
  }
  tensor_view<const T, Rank, Space> view() const {
    check_live("view");
    return {data_, shape_, row_major_strides(shape_),
            typename tensor_view<const T, Rank, Space>::trusted{}};
  }

  /// The expression node for this tensor; throws for a moved-from tensor.
  detail::leaf<const T, Rank, Space> node() const {
    check_live("use in an expression");
    return detail::make_leaf<const T, Rank, Space>(data_, shape_, row_major_strides(shape_));
  }
  detail::leaf<T, Rank, Space> mutable_node() {
    check_live("assignment");
    return detail::make_leaf<T, Rank, Space>(data_, shape_, row_major_strides(shape_));
  }

  /// A deep copy with the same shape, allocated on the current stream.
  tensor clone() const {
    check_live("clone");
    tensor out(shape_);
    copy_bytes(out.data_, data_, bytes(), out.stream_);
    return out;
  }

  /// Sets every element to `value` (converted to T).
  template <scalar_type S>
  void fill(S value) {
    check_live("fill");
    cufuse::assign(*this, value, current_stream());
  }

  /// Copies host data in; the element count must equal size(). Ordered on the current stream.
  void upload(std::span<const T> host) {
    check_live("upload");
    check_count(host.size(), "upload");
    copy_bytes(data_, host.data(), host.size_bytes(), current_stream(), to_device);
  }
  void upload(const std::vector<T>& host)
    requires(!std::is_same_v<T, bool>)
  {
    upload(std::span<const T>(host.data(), host.size()));
  }
  /// std::vector<bool> is bit-packed, so bool tensors get their own overload.
  void upload(const std::vector<bool>& host)
    requires std::is_same_v<T, bool>
  {
    check_live("upload");
    check_count(host.size(), "upload");
    std::vector<unsigned char> tmp(host.begin(), host.end());
    static_assert(sizeof(bool) == 1, "cufuse: bool must be one byte");
    copy_bytes(data_, tmp.data(), bytes(), current_stream(), to_device);
    sync_if_device(current_stream()); // tmp dies here
  }

  /// Copies all elements to the host; waits for the current stream.
  std::vector<T> download() const {
    check_live("download");
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<unsigned char> tmp(static_cast<std::size_t>(size()));
      copy_bytes(tmp.data(), data_, bytes(), current_stream(), to_host);
      sync_if_device(current_stream());
      return std::vector<bool>(tmp.begin(), tmp.end());
    } else {
      std::vector<T> out(static_cast<std::size_t>(size()));
      copy_bytes(out.data(), data_, bytes(), current_stream(), to_host);
      sync_if_device(current_stream());
      return out;
    }
  }

  /// Host tensors only: element at a multi-index.
  template <std::integral... I>
    requires(sizeof...(I) == Rank && std::is_same_v<Space, host_space>)
  T& operator()(I... idx) {
    return data_[linear(idx...)];
  }
  template <std::integral... I>
    requires(sizeof...(I) == Rank && std::is_same_v<Space, host_space>)
  const T& operator()(I... idx) const {
    return data_[linear(idx...)];
  }

private:
  enum direction { to_device, to_host, same_space };

  std::size_t bytes() const { return static_cast<std::size_t>(size()) * sizeof(T); }

  template <class... I>
  index_t linear(I... idx) const {
    if constexpr (Rank == 0) {
      return 0;
    }
    const index_t ix[Rank > 0 ? Rank : 1] = {static_cast<index_t>(idx)...};
    index_t off = 0;
    for (int d = 0; d < Rank; ++d) {
      off = off * shape_[d] + ix[d];
    }
    return off;
  }

  void allocate() {
    const std::size_t n = bytes();
    if (n == 0) {
      return;
    }
    if constexpr (on_device) {
      void* p = nullptr;
      CUFUSE_CUDA_CHECK_MSG(cudaMallocAsync(&p, n, stream_), "allocating " + std::to_string(n) +
                                                                 " bytes for a tensor of shape " +
                                                                 shape_.to_string());
      data_ = static_cast<T*>(p);
    } else {
      data_ = static_cast<T*>(::operator new(n, std::align_val_t{64}));
    }
  }

  void release() noexcept {
    if (data_ != nullptr) {
      if constexpr (on_device) {
        // A destructor cannot throw; a failure here means the context is already broken, and
        // the error that broke it was (or will be) reported by the call that caused it.
        if (cudaFreeAsync(data_, stream_) != cudaSuccess) {
          (void)cudaGetLastError();
        }
      } else {
        ::operator delete(data_, std::align_val_t{64});
      }
      data_ = nullptr;
    }
  }

  void check_live(const char* what) const {
    if (moved_from_) {
      throw error(std::string("cufuse: ") + what +
                  " of a moved-from tensor (its storage was transferred by std::move)");
    }
  }

  void check_count(std::size_t n, const char* what) const {
    if (static_cast<index_t>(n) != size()) {
      throw shape_error(std::string("cufuse: ") + what + ": host data has " + std::to_string(n) +
                        " elements, tensor of shape " + shape_.to_string() + " has " +
                        std::to_string(size()));
    }
  }

  static void copy_bytes(void* dst, const void* src, std::size_t n, cudaStream_t stream,
                         direction dir = same_space) {
    if (n == 0) {
      return;
    }
    if constexpr (on_device) {
      const cudaMemcpyKind kind = dir == to_device ? cudaMemcpyHostToDevice
                                  : dir == to_host ? cudaMemcpyDeviceToHost
                                                   : cudaMemcpyDeviceToDevice;
      CUFUSE_CUDA_CHECK_MSG(cudaMemcpyAsync(dst, src, n, kind, stream),
                            std::to_string(n) + " bytes");
    } else {
      std::memcpy(dst, src, n);
    }
  }

  static void sync_if_device(cudaStream_t stream) {
    if constexpr (on_device) {
      CUFUSE_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
  }

  T* data_ = nullptr;
  extents<Rank> shape_{};
  cudaStream_t stream_ = nullptr;
  bool moved_from_ = false;
};

/// A rank-1 device tensor.
template <class T>
using device_vector = tensor<T, 1, device_space>;

/// A tensor in host memory; the same expressions evaluate on the CPU.
template <class T, int Rank>
using host_tensor = tensor<T, Rank, host_space>;

} // namespace cufuse

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_MEMORY_TENSOR_CUH
#undef CUFUSE_DETAIL_FIRST_MEMORY_TENSOR_CUH
#undef CUFUSE_DETAIL_FIRST
#include "../eval/assign.cuh"
#endif
