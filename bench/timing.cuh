// Timing shared by the C++ benchmarks: a checked CUDA call, CUDA-event medians, and the host
// cost of back-to-back calls.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define BENCH_CHECK(call)                                                                          \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__,         \
                   __LINE__, #call);                                                               \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

namespace bench {

struct timer {
  cudaEvent_t start, stop;
  timer() {
    BENCH_CHECK(cudaEventCreate(&start));
    BENCH_CHECK(cudaEventCreate(&stop));
  }
  ~timer() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  /// Median milliseconds of one call of f over `reps` timed calls, after warm-up.
  double median_ms(const std::function<void()>& f, int reps = 30) {
    for (int w = 0; w < 3; ++w) {
      f();
    }
    BENCH_CHECK(cudaDeviceSynchronize());
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) {
      BENCH_CHECK(cudaEventRecord(start));
      f();
      BENCH_CHECK(cudaEventRecord(stop));
      BENCH_CHECK(cudaEventSynchronize(stop));
      float t = 0;
      BENCH_CHECK(cudaEventElapsedTime(&t, start, stop));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }
};

/// Host-side microseconds per call: median over rounds of `calls` back-to-back calls, timed on
/// the host clock until the last call returns (issue cost), and until the device is idle (wall).
struct host_cost {
  double issue_us, wall_us;
};
host_cost measure_host_cost(const std::function<void()>& f, int calls = 500, int rounds = 21) {
  std::vector<double> issue, wall;
  for (int w = 0; w < 200; ++w) {
    f();
  }
  BENCH_CHECK(cudaDeviceSynchronize());
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c) {
      f();
    }
    const auto t1 = std::chrono::steady_clock::now();
    BENCH_CHECK(cudaDeviceSynchronize());
    const auto t2 = std::chrono::steady_clock::now();
    issue.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
    wall.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count() / calls);
  }
  std::sort(issue.begin(), issue.end());
  std::sort(wall.begin(), wall.end());
  return {issue[issue.size() / 2], wall[wall.size() / 2]};
}

} // namespace bench
