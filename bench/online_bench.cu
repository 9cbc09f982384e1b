// What online tuning costs a program that calls cufuse::gemm in each synchronization pattern:
// the calls until the tuner commits, the wall time of the first `calls` calls against cuBLAS's
// for the same calls issued the same way, and the steady state afterwards. One pattern per
// process (the tuner starts empty; no database file). Writes one JSON line per run (--out,
// appended).
//   online_bench --pattern b2b|sync1|sync10|burst300 --dtype bf16|f32 [--calls N] [--size S]
#include <cufuse/gemm.cuh>

#include "cublas_gemm.hpp"
#include "timing.cuh"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

struct options {
  std::string pattern = "b2b", dtype = "bf16", out = "online.jsonl";
  int calls = 1200;
  long long size = 4096;
};

/// Whether the program synchronizes after call i (0-based) in this pattern.
bool sync_after(const std::string& pattern, int i) {
  if (pattern == "sync1") {
    return true;
  }
  if (pattern == "sync10") {
    return i % 10 == 9;
  }
  if (pattern == "burst300") {
    return i >= 299;
  }
  return false; // b2b: back to back, one synchronization at the end
}

template <class T>
int run(const options& o) {
  const long long n = o.size;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<T> h(static_cast<std::size_t>(n * n));
  for (auto& x : h) {
    x = T(u(rng));
  }
  cufuse::tensor<T, 2> A({n, n}), B({n, n});
  cufuse::tensor<T, 2> C({n, n});
  A.upload(h);
  B.upload(h);
  cudaStream_t s = nullptr;
  BENCH_CHECK(cudaStreamCreate(&s));
  cufuse::tuning::set_mode(cufuse::tune_mode::online);
  cublasHandle_t hb = nullptr;
  cufuse_tools::check_cublas(cublasCreate(&hb), "cublasCreate");
  const cufuse::gemm_problem p = cufuse::tuning::problem(A, B, C);

  using clock = std::chrono::steady_clock;
  auto issue = [&](auto&& call) { // o.calls calls in the pattern; wall seconds until done
    BENCH_CHECK(cudaStreamSynchronize(s));
    const auto t0 = clock::now();
    for (int i = 0; i < o.calls; ++i) {
      call(i);
      if (sync_after(o.pattern, i)) {
        BENCH_CHECK(cudaStreamSynchronize(s));
      }
    }
    BENCH_CHECK(cudaStreamSynchronize(s));
    return std::chrono::duration<double>(clock::now() - t0).count();
  };
  // cuBLAS first (its own warm-up), then cufuse from an empty tuner for this key: the library
  // itself is initialized first (device state, variant registry) by a small call with tuning
  // off, as cuBLAS's warm-up call initializes cuBLAS.
  cufuse_tools::cublas_gemm(hb, p, s);
  {
    cufuse::tuning::set_mode(cufuse::tune_mode::off);
    cufuse::tensor<T, 2> a({64, 64}), b({64, 64}), c({64, 64});
    a.fill(T(1.0f));
    b.fill(T(1.0f));
    cufuse::gemm(a, b, c, 1.0f, 0.0f, s);
    BENCH_CHECK(cudaStreamSynchronize(s));
    cufuse::tuning::set_mode(cufuse::tune_mode::online);
  }
  const double t_cublas = issue([&](int) { cufuse_tools::cublas_gemm(hb, p, s); });
  int commit_at = -1;
  const double t_cufuse = issue([&](int i) {
    cufuse::gemm(A, B, C, 1.0f, 0.0f, s);
    if (commit_at < 0 && cufuse::gemm_chosen_variant(A, B, C)) {
      commit_at = i + 1;
    }
  });
  const std::string chosen = cufuse::gemm_chosen_variant(A, B, C).value_or("(exploring)");
  // Steady state: synchronized calls timed with events, medians.
  bench::timer tm;
  const double ms_cufuse = tm.median_ms([&] { cufuse::gemm(A, B, C, 1.0f, 0.0f, nullptr); }, 30);
  const double ms_cublas = tm.median_ms([&] { cufuse_tools::cublas_gemm(hb, p, nullptr); }, 30);
  std::printf("%-8s %-4s %5d calls: commit after %5d calls (%s); wall %8.1f ms vs cuBLAS %8.1f "
              "ms (%.2fx its time); steady state %.3f ms vs %.3f ms (%.2fx its speed)\n",
              o.pattern.c_str(), o.dtype.c_str(), o.calls, commit_at, chosen.c_str(),
              t_cufuse * 1e3, t_cublas * 1e3, t_cufuse / t_cublas, ms_cufuse, ms_cublas,
              ms_cublas / ms_cufuse);
  std::ofstream js(o.out, std::ios::app);
  js << "{\"pattern\": \"" << o.pattern << "\", \"dtype\": \"" << o.dtype << "\", \"size\": " << n
     << ", \"calls\": " << o.calls << ", \"commit_after\": " << commit_at << ", \"chosen\": \""
     << chosen << "\", \"wall_ms\": " << t_cufuse * 1e3
     << ", \"cublas_wall_ms\": " << t_cublas * 1e3 << ", \"steady_ms\": " << ms_cufuse
     << ", \"cublas_steady_ms\": " << ms_cublas << "}\n";
  cublasDestroy(hb);
  BENCH_CHECK(cudaStreamDestroy(s));
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--pattern") {
      o.pattern = v;
    } else if (k == "--dtype") {
      o.dtype = v;
    } else if (k == "--calls") {
      o.calls = std::stoi(v);
    } else if (k == "--size") {
      o.size = std::stoll(v);
    } else if (k == "--out") {
      o.out = v;
    }
  }
  return o.dtype == "f32" ? run<float>(o) : run<__nv_bfloat16>(o);
}
