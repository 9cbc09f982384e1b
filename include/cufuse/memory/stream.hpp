/// \file The thread-local current stream on which assignments and allocations are issued.
#pragma once

#include "../core/config.hpp"

#include <cuda_runtime_api.h>

namespace cufuse {

namespace detail {
inline cudaStream_t& current_stream_ref() noexcept {
  thread_local cudaStream_t stream = nullptr; // the default stream
  return stream;
}
} // namespace detail

/// The stream this thread's assignments run on (default: the default stream, 0).
inline cudaStream_t current_stream() noexcept { return detail::current_stream_ref(); }

/// Sets this thread's current stream; prefer stream_guard, which restores the previous one.
inline void set_current_stream(cudaStream_t s) noexcept { detail::current_stream_ref() = s; }

/// Makes `s` the current stream of this thread for the guard's lifetime.
class stream_guard {
public:
  explicit stream_guard(cudaStream_t s) noexcept : previous_(current_stream()) {
    set_current_stream(s);
  }
  ~stream_guard() { set_current_stream(previous_); }
  stream_guard(const stream_guard&) = delete;
  stream_guard& operator=(const stream_guard&) = delete;

private:
  cudaStream_t previous_;
};

} // namespace cufuse
