/// \file Launch policy: vector width, index width and grid, with the per-kernel, per-device
/// configuration computed once (occupancy query) and cached, so a steady-state launch costs
/// one cudaGetDevice and one <<<>>>.
#pragma once

#include "../core/error.hpp"
#include "kernel.cuh"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

namespace cufuse::detail {

inline constexpr int max_cached_devices = 64;
inline constexpr int default_eval_waves = 0; // bench/NOTES.md: uncapped matched the hand kernel
/// The int32 path is taken for n < 2^30: every index, and index + grid stride (at most
/// n + 255 when the grid covers all the work), then stays below 2^31.
inline constexpr std::int64_t max_n_for_int32 = std::int64_t(1) << 30;
inline constexpr std::int64_t max_grid_blocks = std::numeric_limits<std::int32_t>::max();

/// Grid cap in resident waves (blocks per SM at full occupancy x SMs x waves); 0 = no cap, one
/// step per thread. Read once from CUFUSE_EVAL_WAVES, default below.
inline int eval_waves() {
  static const int waves = [] {
    const char* s = std::getenv("CUFUSE_EVAL_WAVES");
    return s != nullptr ? std::atoi(s) : default_eval_waves;
  }();
  return waves;
}

/// Blocks per grid cap for `kernel` on the current device; computed on first use per device.
template <auto Kernel>
int cached_max_grid() {
  static std::atomic<int> cache[max_cached_devices] = {};
  int dev = 0;
  CUFUSE_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev >= 0 && dev < max_cached_devices) {
    const int hit = cache[dev].load(std::memory_order_relaxed);
    if (hit > 0) {
      return hit;
    }
  }
  int sms = 0, per_sm = 0;
  CUFUSE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CUFUSE_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, eval_block_size, 0));
  const int waves = eval_waves();
  std::int64_t grid =
      waves > 0 ? std::int64_t(sms) * (per_sm > 0 ? per_sm : 1) * waves : max_grid_blocks;
  grid = grid < max_grid_blocks ? grid : max_grid_blocks;
  if (dev >= 0 && dev < max_cached_devices) {
    cache[dev].store(int(grid), std::memory_order_relaxed);
  }
  return int(grid);
}

/// Launches evaluate_kernel<V, I> over `work` steps of V elements.
template <int V, class I, class Dst, class Expr>
void launch_evaluate(const Dst& dst, const Expr& expr, std::int64_t n, cudaStream_t stream) {
  constexpr auto kernel = &evaluate_kernel<V, I, Dst, Expr>;
  const std::int64_t steps = V == 1 ? n : (n / V > 0 ? n / V : 1);
  const std::int64_t needed = (steps + eval_block_size - 1) / eval_block_size;
  const std::int64_t cap = cached_max_grid<kernel>();
  const unsigned grid = static_cast<unsigned>(needed < cap ? needed : cap);
  kernel<<<grid, eval_block_size, 0, stream>>>(dst, expr, static_cast<I>(n));
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw_cuda(err, "evaluate_kernel<<<>>>", __FILE__, __LINE__,
               "assigning " + std::to_string(n) + " elements of " +
                   std::string(type_name<typename Dst::value_type>()) + ", grid " +
                   std::to_string(grid) + "x" + std::to_string(eval_block_size));
  }
#if defined(CUFUSE_DEBUG_SYNC)
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUFUSE_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture == cudaStreamCaptureStatusNone) {
    CUFUSE_CUDA_CHECK_MSG(cudaStreamSynchronize(stream),
                          "CUFUSE_DEBUG_SYNC after an evaluate_kernel launch");
  }
#endif
}

} // namespace cufuse::detail
