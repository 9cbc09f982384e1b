// Timing shared by the C++ benchmarks: a checked CUDA call, the device's name, CUDA-event
// medians, and the host cost of back-to-back calls.
#pragma once

#include <cuda_runtime_api.h>

#include "../src/tools/hold_stream.cuh"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

using cufuse_tools::hold_stream; // the host enqueues what follows while the device is busy

/// The FILE of `--out FILE` among the arguments, else `fallback`.
inline const char* out_arg(int argc, char** argv, const char* fallback = nullptr) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--out") == 0) {
      return argv[i + 1];
    }
  }
  return fallback;
}

/// Device 0's properties, its name printed first ("device: NAME").
inline cudaDeviceProp print_device() {
  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s\n", prop.name);
  return prop;
}

struct timer {
  cudaEvent_t start, stop;
  /// Median ms of the last median_ms() measured the old way: events around one call on an idle
  /// device, so that the host's launch of the call is counted as device time.
  double launch_ms = 0;
  timer() {
    BENCH_CHECK(cudaEventCreate(&start));
    BENCH_CHECK(cudaEventCreate(&stop));
  }
  ~timer() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  /// Median milliseconds of one call of f over `reps` timed calls, after warm-up: CUDA events
  /// around one call each, recorded while a 200 us spin kernel holds the stream, so the time is
  /// the device's alone (the host's launch cost is measured separately, measure_host_cost). Also
  /// sets launch_ms (events around one call on an idle device, the host launch included).
  double median_ms(const std::function<void()>& f, int reps = 30) {
    for (int w = 0; w < 3; ++w) {
      f();
    }
    BENCH_CHECK(cudaDeviceSynchronize());
    launch_ms = median(f, reps, 0);
    return median(f, reps, 200'000);
  }

  /// Medians (ms) of each of `fs`, timed in turn: every round times each once, after the same
  /// hold as median_ms, so that all of them see the same device state. A device under its power
  /// limit lowers its clocks as it heats: timed one after the other, the first contender of a
  /// long GEMM ran at cooler, faster clocks than the ones timed after a sweep (bench/JOURNAL.md
  /// e14). Rounds of all of them run untimed for `warm_s` seconds first, so that the medians are
  /// the sustained state's.
  std::vector<double> interleaved_ms(const std::vector<std::function<void()>>& fs, int reps = 31,
                                     double warm_s = 0.5) {
    const auto t0 = std::chrono::steady_clock::now();
    do {
      for (const auto& f : fs) {
        f();
      }
      BENCH_CHECK(cudaDeviceSynchronize());
    } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < warm_s);
    std::vector<std::vector<double>> ms(fs.size());
    for (int r = 0; r < reps; ++r) {
      for (std::size_t i = 0; i < fs.size(); ++i) {
        ms[i].push_back(call_ms(fs[i], 200'000));
      }
    }
    std::vector<double> med;
    for (auto& v : ms) {
      std::sort(v.begin(), v.end());
      med.push_back(v[v.size() / 2]);
    }
    return med;
  }

private:
  /// Milliseconds of one call of f between two events, behind a spin of hold_ns if > 0.
  double call_ms(const std::function<void()>& f, long long hold_ns) {
    if (hold_ns > 0) {
      hold_stream<<<1, 1>>>(hold_ns);
      BENCH_CHECK(cudaGetLastError());
    }
    BENCH_CHECK(cudaEventRecord(start));
    f();
    BENCH_CHECK(cudaEventRecord(stop));
    BENCH_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    BENCH_CHECK(cudaEventElapsedTime(&t, start, stop));
    return t;
  }

  double median(const std::function<void()>& f, int reps, long long hold_ns) {
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) {
      ms.push_back(call_ms(f, hold_ns));
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }
};

/// The device-to-device copy bandwidth (read + write) of `bytes`, the floor the memory-bound
/// benchmarks are compared with: device time (timer::median_ms) and with the host launch.
struct copy_rate {
  double gbps, launch_gbps;
};
inline copy_rate measure_copy(std::size_t bytes = std::size_t(1) << 30) {
  void *a = nullptr, *b = nullptr;
  BENCH_CHECK(cudaMalloc(&a, bytes));
  BENCH_CHECK(cudaMalloc(&b, bytes));
  BENCH_CHECK(cudaMemset(a, 1, bytes));
  timer tm;
  const double ms =
      tm.median_ms([&] { BENCH_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); });
  const copy_rate r{2.0 * double(bytes) / (ms * 1e-3) / 1e9,
                    2.0 * double(bytes) / (tm.launch_ms * 1e-3) / 1e9};
  BENCH_CHECK(cudaFree(a));
  BENCH_CHECK(cudaFree(b));
  return r;
}

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
