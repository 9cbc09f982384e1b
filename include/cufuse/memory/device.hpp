/// \file Questions about the GPU that programs ask before choosing the device or the host path.
#pragma once

#include "../core/config.hpp"

#include <cuda_runtime_api.h>

namespace cufuse {

/// Number of usable CUDA devices; 0 when there is no GPU or no driver (never throws).
inline int device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

/// True when at least one CUDA device can be used.
inline bool device_available() noexcept { return device_count() > 0; }

} // namespace cufuse
