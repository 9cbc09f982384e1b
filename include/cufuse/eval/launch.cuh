/// \file Launch policy: vector width, index width and grid, with the per-kernel, per-device
/// configuration computed once (occupancy query) and cached, so a steady-state launch costs
/// one cudaGetDevice and one launch (on sm_90 a programmatic dependent one: core/pdl.cuh).
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_EVAL_LAUNCH_CUH
#endif

#include "../core/error.hpp"
#include "../core/pdl.cuh"
#include "kernel.cuh"
#include "plan.cuh"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

namespace cufuse::detail {

inline constexpr int max_cached_devices = 64;
inline constexpr int default_eval_waves = 0; // bench/JOURNAL.md: uncapped matched the hand kernel
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

/// `compute(dev)` (a positive int) for the current device, computed on first use per device and
/// cached in `cache`.
template <class F>
int per_device(std::atomic<int> (&cache)[max_cached_devices], F&& compute) {
  int dev = 0;
  CUFUSE_CUDA_CHECK(cudaGetDevice(&dev));
  const bool cached = dev >= 0 && dev < max_cached_devices;
  if (cached) {
    const int hit = cache[dev].load(std::memory_order_relaxed);
    if (hit > 0) {
      return hit;
    }
  }
  const int value = compute(dev);
  if (cached) {
    cache[dev].store(value, std::memory_order_relaxed);
  }
  return value;
}

/// True when the current device is sm_90 or later and `Kernel`'s code was compiled for sm_90 or
/// later, so that the kernel's sm_90 steps (compiled only where __CUDA_ARCH__ >= 900) are in it:
/// thread-block clusters, programmatic dependent launch. Both the binary and the PTX it came
/// from: code JIT-compiled for an H100 from compute_80 PTX has the binary version 90 but none of
/// those steps.
template <auto Kernel>
bool sm90_kernel() {
  static std::atomic<int> cache[max_cached_devices] = {};
  return per_device(cache, [](int dev) {
           int major = 0;
           CUFUSE_CUDA_CHECK(
               cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
           cudaFuncAttributes attr{};
           CUFUSE_CUDA_CHECK(cudaFuncGetAttributes(&attr, Kernel));
           return major >= 9 && attr.binaryVersion >= 90 && attr.ptxVersion >= 90 ? 2 : 1;
         }) == 2;
}

/// Enqueues Kernel<<<grid, block, 0, stream>>>(args...): as a programmatic dependent launch
/// (launched while the kernel before it in the stream finishes; Kernel calls pdl_wait before it
/// reads that kernel's results, core/pdl.cuh) where the device, Kernel's code and the driver
/// allow, else as an ordinary launch. Returns the launch's error (taken from the runtime).
/// The split reductions' finish kernels and the GEMM's split-K reduction launch this way.
template <auto Kernel, class... Args>
cudaError_t launch_maybe_dependent(dim3 grid, dim3 block, cudaStream_t stream, Args... args) {
  if (sm90_kernel<Kernel>() && dependent_launches()) {
    cudaLaunchAttribute attr[1] = {dependent_launch_attribute()};
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = 0;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    const cudaError_t e = cudaLaunchKernelEx(&cfg, Kernel, args...);
    if (e != cudaSuccess) {
      (void)cudaGetLastError(); // the error is returned, not left for the next check
    }
    return e;
  }
  Kernel<<<grid, block, 0, stream>>>(args...);
  return cudaGetLastError();
}

/// Enqueues Kernel<<<grid, block, smem, stream>>>(args...) for an assignment or a row kernel:
/// as a programmatic dependent launch where the device, Kernel's code and the driver allow
/// (Kernel calls pdl_wait before its first global access: core/pdl.cuh), else as an ordinary
/// launch.
/// A launch error is left for check_launch, as <<<>>> leaves it. `attr0`: one more attribute
/// (a cluster shape), or none when its id is cudaLaunchAttributeIgnore.
template <auto Kernel, class... Args>
void launch_eval(dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                 cudaLaunchAttribute attr0, const Args&... args) {
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (attr0.id != cudaLaunchAttributeIgnore) {
    attr[n++] = attr0;
  }
  if (sm90_kernel<Kernel>() && dependent_launches()) {
    attr[n++] = dependent_launch_attribute();
  }
  if (n == 0) {
    Kernel<<<grid, block, smem, stream>>>(args...);
    return;
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = n;
  (void)cudaLaunchKernelEx(&cfg, Kernel, args...); // its error: cudaGetLastError, check_launch
}

/// No extra launch attribute (launch_eval).
inline cudaLaunchAttribute no_attribute() {
  cudaLaunchAttribute a{};
  a.id = cudaLaunchAttributeIgnore;
  return a;
}

/// Blocks per grid cap for `kernel` on the current device; computed on first use per device.
template <auto Kernel, int Block = eval_block_size>
int cached_max_grid() {
  static std::atomic<int> cache[max_cached_devices] = {};
  return per_device(cache, [](int dev) {
    int sms = 0, per_sm = 0;
    CUFUSE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUFUSE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, Block, 0));
    const int waves = eval_waves();
    std::int64_t grid =
        waves > 0 ? std::int64_t(sms) * (per_sm > 0 ? per_sm : 1) * waves : max_grid_blocks;
    grid = grid < max_grid_blocks ? grid : max_grid_blocks;
    return int(grid);
  });
}

/// Checks a launch; the message names the kernel, the element count and the grid.
template <class T>
void check_launch(const char* kernel, std::int64_t n, std::int64_t grid, int block,
                  cudaStream_t stream) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw_cuda(err, kernel, __FILE__, __LINE__,
               "assigning " + std::to_string(n) + " elements of " + std::string(type_name<T>()) +
                   ", grid " + std::to_string(grid) + "x" + std::to_string(block));
  }
#if defined(CUFUSE_DEBUG_SYNC)
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUFUSE_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture == cudaStreamCaptureStatusNone) {
    CUFUSE_CUDA_CHECK_MSG(cudaStreamSynchronize(stream),
                          std::string("CUFUSE_DEBUG_SYNC after ") + kernel);
  }
#else
  (void)stream;
#endif
}

/// Grid for `steps` work items of one thread each, capped as cached_max_grid says.
template <auto Kernel, int Block = eval_block_size>
unsigned grid_for(std::int64_t steps) {
  const std::int64_t needed = (steps + Block - 1) / Block;
  const std::int64_t cap = cached_max_grid<Kernel, Block>();
  const std::int64_t g = needed < cap ? needed : cap;
  return static_cast<unsigned>(g > 0 ? g : 1);
}

/// Launches evaluate_kernel<V, I> over n elements (V at a time).
template <int V, class I, class Dst, class Expr>
void launch_evaluate(const Dst& dst, const Expr& expr, std::int64_t n, cudaStream_t stream) {
  constexpr auto kernel = &evaluate_kernel<V, I, Dst, Expr>;
  const unsigned grid = grid_for<kernel>(V == 1 ? n : n / V);
  launch_eval<kernel>(grid, eval_block_size, 0, stream, no_attribute(), dst, expr,
                      static_cast<I>(n));
  check_launch<typename Dst::value_type>("evaluate_kernel<<<>>>", n, grid, eval_block_size, stream);
}

/// Launches evaluate_nd_kernel<V, I, Read> over the plan's walk.
template <int V, class I, nd_read Read = nd_read::vectors, int R, int L, class Dst, class Expr>
void launch_evaluate_nd(const Dst& dst, const Expr& expr, const eval_plan<R, L>& pl,
                        cudaStream_t stream) {
  using U = unsigned_of<I>;
  nd_walk<R, I> walk{};
  walk.first = pl.first;
  for (int d = 0; d < R; ++d) {
    walk.ext[d] = static_cast<I>(pl.ext[d]);
    if (d > pl.first && d < R - 1) {
      walk.div[d] = fast_divmod<U>(static_cast<U>(pl.ext[d]));
    }
  }
  // flat_lanes: positions of single elements (a row of ext elements), items of V of them
  constexpr int W = Read == nd_read::flat_lanes ? 1 : V;
  walk.vecs_per_row = static_cast<I>(pl.ext[R - 1] / W);
  walk.row_vecs = fast_divmod<U>(static_cast<U>(walk.vecs_per_row > 0 ? walk.vecs_per_row : 1));
  if constexpr (Read == nd_read::flat_lanes) {
    walk.work = static_cast<I>(pl.n / V);
    walk.tail = static_cast<I>(pl.n % V);
  } else {
    walk.work = static_cast<I>(pl.n / pl.ext[R - 1] * walk.vecs_per_row);
    walk.tail = static_cast<I>(pl.ext[R - 1] - walk.vecs_per_row * V); // the plan: single row
  }
  constexpr auto kernel = &evaluate_nd_kernel<V, I, R, Dst, Expr, Read>;
  constexpr int per_thread = nd_unroll<V, I, Expr, Read>;
  const I steps = (walk.work + per_thread - 1) / per_thread; // a thread takes several items
  const unsigned grid = grid_for<kernel, nd_block_size>(steps > walk.tail ? steps : walk.tail);
  launch_eval<kernel>(grid, nd_block_size, 0, stream, no_attribute(), dst, expr, walk);
  check_launch<typename Dst::value_type>("evaluate_nd_kernel<<<>>>", pl.n, grid, nd_block_size,
                                         stream);
}

/// Launches evaluate_tile_kernel over the plan's tiles.
template <int V, class I, int R, int L, class Dst, class Expr>
void launch_evaluate_tile(const Dst& dst, const Expr& expr, const eval_plan<R, L>& pl,
                          cudaStream_t stream) {
  using U = unsigned_of<I>;
  tile_walk<R, I> walk{};
  walk.a = pl.tile_a;
  walk.first = pl.first;
  index_t outer = 1;
  for (int d = 0; d < R; ++d) {
    walk.ext[d] = static_cast<I>(pl.ext[d]);
    if (d >= pl.first && d < R - 1 && d != pl.tile_a) {
      walk.div[d] = fast_divmod<U>(static_cast<U>(pl.ext[d]));
      outer *= pl.ext[d];
    }
  }
  const index_t tiles_a = (pl.ext[pl.tile_a] + tile_dim - 1) / tile_dim;
  const index_t tiles_b = (pl.ext[R - 1] + tile_dim - 1) / tile_dim;
  walk.tiles_a_div = fast_divmod<U>(static_cast<U>(tiles_a));
  walk.tiles_b_div = fast_divmod<U>(static_cast<U>(tiles_b));
  const index_t tiles = outer * tiles_a * tiles_b;
  walk.tiles = static_cast<I>(tiles);
  const std::int64_t grid = tiles < max_grid_blocks ? tiles : max_grid_blocks;
  constexpr auto kernel = &evaluate_tile_kernel<V, I, R, Dst, Expr>;
  launch_eval<kernel>(unsigned(grid), tile_block_size, std::size_t(pl.smem_bytes), stream,
                      no_attribute(), dst, expr, walk);
  check_launch<typename Dst::value_type>("evaluate_tile_kernel<<<>>>", pl.n, grid, tile_block_size,
                                         stream);
}

} // namespace cufuse::detail

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_EVAL_LAUNCH_CUH
#undef CUFUSE_DETAIL_FIRST_EVAL_LAUNCH_CUH
#undef CUFUSE_DETAIL_FIRST
#include "assign.cuh"
#endif
