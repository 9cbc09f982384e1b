// What online tuning costs a program that calls cufuse::gemm in each synchronization pattern:
// the calls until the tuner commits, the wall time of the first `calls` calls against the same
// calls of the variant finally chosen (forced) and of cuBLAS, issued the same way; the first
// call's variant (the prior) and the committed one against the best of every variant timed
// afterwards (the exhaustive answer); and the steady state. One pattern per process (the tuner
// starts empty; no database file). Writes one JSON line per run (--out, appended).
//   online_bench --pattern b2b|sync1|sync10|burst300 --dtype bf16|f32 [--out-dtype bf16|f32]
//                [--calls N] [--size S | --m M --n N --k K]
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
  std::string pattern = "b2b", dtype = "bf16", out_dtype, out = "online.jsonl";
  int calls = 1200;
  long long m = 4096, n = 4096, k = 4096;
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

template <class T, class TC>
int run(const options& o) {
  const long long m = o.m, n = o.n, k = o.k;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto random = [&](long long count) {
    std::vector<T> h(static_cast<std::size_t>(count));
    for (auto& x : h) {
      x = T(u(rng));
    }
    return h;
  };
  cufuse::tensor<T, 2> A({m, k}), B({k, n});
  cufuse::tensor<TC, 2> C({m, n});
  A.upload(random(m * k));
  B.upload(random(k * n));
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
    cufuse::tensor<T, 2> a({64, 64}), b({64, 64});
    cufuse::tensor<TC, 2> c({64, 64});
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
  // Back to back, the calls are queued faster than the timed ones finish: the commit then comes
  // once the backlog has drained, at one of the next calls (counted past o.calls), or already
  // by the time the last call returns (counted as o.calls).
  if (commit_at < 0 && cufuse::gemm_chosen_variant(A, B, C)) {
    commit_at = o.calls;
  }
  for (int extra = 0; extra < 1000 && !cufuse::gemm_chosen_variant(A, B, C); ++extra) {
    cufuse::gemm(A, B, C, 1.0f, 0.0f, s);
    BENCH_CHECK(cudaStreamSynchronize(s));
    if (cufuse::gemm_chosen_variant(A, B, C)) {
      commit_at = o.calls + extra + 1;
    }
  }
  const std::string chosen = cufuse::gemm_chosen_variant(A, B, C).value_or("(exploring)");
  // The same calls of the committed variant, forced (no tuner), issued the same way.
  cufuse::gemm_options forced;
  forced.variant = chosen;
  double t_chosen = 0;
  if (chosen != "(exploring)") {
    cufuse::gemm(A, B, C, 1.0f, 0.0f, s, forced); // its warm-up
    t_chosen = issue([&](int) { cufuse::gemm(A, B, C, 1.0f, 0.0f, s, forced); });
  }
  // Every variant, synchronized and timed with events (medians of 10): the exhaustive answer.
  bench::timer tm;
  std::string best;
  double best_ms = 0, prior_ms = 0, chosen_ms = 0;
  for (const std::string& v : cufuse::gemm_variants(A, B, C)) {
    cufuse::gemm_options f;
    f.variant = v;
    const double ms = tm.median_ms([&] { cufuse::gemm(A, B, C, 1.0f, 0.0f, nullptr, f); }, 10);
    if (best.empty() || ms < best_ms) {
      best = v;
      best_ms = ms;
    }
    chosen_ms = v == chosen ? ms : chosen_ms;
  }
  // Steady state: synchronized calls timed with events, medians.
  const double ms_cufuse = tm.median_ms([&] { cufuse::gemm(A, B, C, 1.0f, 0.0f, nullptr); }, 30);
  const double ms_cublas = tm.median_ms([&] { cufuse_tools::cublas_gemm(hb, p, nullptr); }, 30);
  // The first call's variant: the prior, which without a database is the heuristic's choice
  // (tuning off answers it for the same problem). Last: changing the mode resets the tuner.
  cufuse::tuning::set_mode(cufuse::tune_mode::off);
  cufuse::gemm(A, B, C, 1.0f, 0.0f, s);
  const std::string prior = cufuse::gemm_chosen_variant(A, B, C).value_or("?");
  for (const std::string& v : cufuse::gemm_variants(A, B, C)) {
    if (v == prior) {
      cufuse::gemm_options f;
      f.variant = v;
      prior_ms = tm.median_ms([&] { cufuse::gemm(A, B, C, 1.0f, 0.0f, nullptr, f); }, 10);
    }
  }
  const std::string shape = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  const std::string dt = o.dtype + ">" + (o.out_dtype.empty() ? o.dtype : o.out_dtype);
  std::printf(
      "%-8s %-9s %s %5d calls: commit after %5d (%s); wall %8.1f ms, the chosen variant's "
      "%8.1f ms (%.3fx), cuBLAS %8.1f ms (%.2fx); prior %s at %.2fx the best's speed; "
      "chosen %.1f%% behind the best (%s); steady %.3f ms vs cuBLAS %.3f ms\n",
      o.pattern.c_str(), dt.c_str(), shape.c_str(), o.calls, commit_at, chosen.c_str(),
      t_cufuse * 1e3, t_chosen * 1e3, t_chosen > 0 ? t_cufuse / t_chosen : 0.0, t_cublas * 1e3,
      t_cufuse / t_cublas, prior.c_str(), prior_ms > 0 ? best_ms / prior_ms : 0.0,
      chosen_ms > 0 ? (chosen_ms / best_ms - 1) * 100 : -1.0, best.c_str(), ms_cufuse, ms_cublas);
  std::ofstream js(o.out, std::ios::app);
  js << "{\"pattern\": \"" << o.pattern << "\", \"dtype\": \"" << dt << "\", \"shape\": \"" << shape
     << "\", \"calls\": " << o.calls << ", \"commit_after\": " << commit_at << ", \"chosen\": \""
     << chosen << "\", \"wall_ms\": " << t_cufuse * 1e3
     << ", \"chosen_wall_ms\": " << t_chosen * 1e3 << ", \"cublas_wall_ms\": " << t_cublas * 1e3
     << ", \"prior\": \"" << prior << "\", \"prior_ms\": " << prior_ms << ", \"best\": \"" << best
     << "\", \"best_ms\": " << best_ms << ", \"chosen_ms\": " << chosen_ms
     << ", \"steady_ms\": " << ms_cufuse << ", \"cublas_steady_ms\": " << ms_cublas << "}\n";
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
      o.m = o.n = o.k = std::stoll(v);
    } else if (k == "--m") {
      o.m = std::stoll(v);
    } else if (k == "--n") {
      o.n = std::stoll(v);
    } else if (k == "--k") {
      o.k = std::stoll(v);
    } else if (k == "--out-dtype") {
      o.out_dtype = v;
    } else if (k == "--out") {
      o.out = v;
    }
  }
  if (o.dtype == "f32") {
    return run<float, float>(o);
  }
  return o.out_dtype == "f32" ? run<__nv_bfloat16, float>(o) : run<__nv_bfloat16, __nv_bfloat16>(o);
}
