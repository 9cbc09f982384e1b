// A spin kernel that holds a stream, so that the host enqueues a timed call while the device is
// busy and CUDA events around the call time the device's work alone (cufuse-tune, bench/).
#pragma once

#include <cuda_runtime_api.h>

namespace cufuse_tools {
namespace {

/// Spins one thread for `ns` nanoseconds of the GPU's global timer.
__global__ void hold_stream(long long ns) {
  long long t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

} // namespace
} // namespace cufuse_tools
