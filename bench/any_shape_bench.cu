// GEMM at shapes whose rows are not 16-byte aligned (issue: GEMM at any shape): every variant
// that can run each problem (the SIMT ones only below 1e11 FLOP), the library's own choice
// (tuning off: the heuristic) and cuBLAS on the same buffers, in one process. bf16 / fp16
// inputs with fp32 accumulation, and fp32 inputs on TF32 tensor cores (cuBLAS with
// CUBLAS_COMPUTE_32F_FAST_TF32); row-major, NN unless the shape says NT.
// Each variant's result is compared with cuBLAS's before it is timed. Prints every row, then a
// summary per problem (default, best tile reading the operands in place, best on aligned copies
// (`_pack`)) as a Markdown table; writes JSON (--out).
#include <cufuse/gemm.cuh>

#include "cublas_gemm.hpp"
#include "timing.cuh"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

struct shape {
  long long m, n, k;
  const char* note;
  bool tb = false; // B stored n x k (NT)
};

struct result {
  std::string shape, dtype, impl;
  double ms, tflops, vs_cublas;
  double max_rel;
};

template <class T>
std::vector<T> random_host(long long count, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<T> h(static_cast<std::size_t>(count));
  for (auto& x : h) {
    x = T(u(rng));
  }
  return h;
}

template <class T>
double max_rel_diff(const cufuse::tensor<T, 1>& got, const cufuse::tensor<T, 1>& ref) {
  const auto g = got.download(), r = ref.download();
  double scale = 0, worst = 0;
  for (std::size_t i = 0; i < r.size(); i += 97) {
    scale = std::max(scale, std::fabs(double(float(r[i]))));
  }
  for (std::size_t i = 0; i < r.size(); i += 97) {
    worst = std::max(worst, std::fabs(double(float(g[i])) - double(float(r[i]))));
  }
  return scale > 0 ? worst / scale : worst;
}

template <class T>
void run(const shape& s, const char* dtype, cublasHandle_t h, std::vector<result>& out,
         cufuse::gemm_math math = cufuse::gemm_math::fp32) {
  std::mt19937 rng(7);
  const long long lda = s.k, ldb = s.tb ? s.k : s.n, ldc = s.n;
  const long long b_rows = s.tb ? s.n : s.k, b_cols = s.tb ? s.k : s.n;
  cufuse::tensor<T, 1> A(s.m * lda), B(b_rows * ldb), C(s.m * ldc), R(s.m * ldc);
  A.upload(random_host<T>(s.m * lda, rng));
  B.upload(random_host<T>(b_rows * ldb, rng));
  auto a = cufuse::matrix(static_cast<const T*>(A.data()), s.m, s.k, lda);
  auto bs = cufuse::matrix(static_cast<const T*>(B.data()), b_rows, b_cols, ldb);
  auto b = s.tb ? cufuse::transpose(bs) : bs;
  auto c = cufuse::matrix(C.data(), s.m, s.n, ldc);
  auto r = cufuse::matrix(R.data(), s.m, s.n, ldc);
  cufuse::gemm_problem pr = cufuse::tuning::problem(a, b, r);
  pr.math = math;
  cufuse::gemm_options base;
  base.math = math;
  bench::timer tm;
  const double flops = 2.0 * s.m * s.n * s.k;
  const std::string name = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                           std::to_string(s.k) + (s.tb ? " NT" : " NN") + " (" + s.note + ")";
  cufuse_tools::cublas_gemm(h, pr, nullptr);
  BENCH_CHECK(cudaDeviceSynchronize());
  const double ms_cublas = tm.median_ms([&] { cufuse_tools::cublas_gemm(h, pr, nullptr); }, 20);
  out.push_back({name, dtype, "cuBLAS", ms_cublas, flops / ms_cublas * 1e-9, 1.0, 0.0});
  auto time_one = [&](const std::string& label, cufuse::gemm_options o) {
    o.math = math;
    std::fprintf(stderr, "%s %s %s\n", name.c_str(), dtype, label.c_str());      // progress
    BENCH_CHECK(cudaMemset(C.data(), 0xff, std::size_t(s.m * ldc) * sizeof(T))); // NaN poison
    cufuse::gemm(a, b, c, 1.0f, 0.0f, nullptr, o);
    BENCH_CHECK(cudaDeviceSynchronize());
    const double err = max_rel_diff(C, R);
    const double ms = tm.median_ms([&] { cufuse::gemm(a, b, c, 1.0f, 0.0f, nullptr, o); }, 20);
    out.push_back({name, dtype, label, ms, flops / ms * 1e-9, ms_cublas / ms, err});
  };
  time_one("cufuse (default choice)", {});
  const auto chosen = cufuse::gemm_chosen_variant(a, b, c, base);
  out.back().impl += ": " + chosen.value_or("?");
  for (const std::string& v : cufuse::gemm_variants(a, b, c, base)) {
    if (flops > 1e11 && v.find("_simt_") != std::string::npos) {
      continue; // 0.15-0.3x of cuBLAS on these shapes (bench/JOURNAL.md t2), and slow to time
    }
    cufuse::gemm_options o;
    o.variant = v;
    time_one(v, o);
  }
}

} // namespace

int main(int argc, char** argv) {
  std::string path = "any_shape.json", only; // --only DTYPE: that dtype's rows alone
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--out") {
      path = argv[i + 1];
    } else if (std::string(argv[i]) == "--only") {
      only = argv[i + 1];
    }
  }
  const auto want = [&](const char* dtype) { return only.empty() || only == dtype; };
  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  cublasHandle_t h = nullptr;
  cufuse_tools::check_cublas(cublasCreate(&h), "cublasCreate");
  std::vector<result> rows;
  const shape shapes[] = {
      {1000, 3000, 500, "K = 500: A's 16-bit rows 8-byte aligned"},
      {4095, 4095, 4095, "rows of odd length"},
      {8192, 50257, 768, "vocabulary projection, B and C rows of odd length"},
      {8192, 50257, 768, "vocabulary projection, B stored n x k, C rows of odd length", true},
      {4097, 4096, 4096, "odd M, every row aligned"}};
  for (const shape& s : shapes) {
    if (want("bf16")) {
      run<__nv_bfloat16>(s, "bf16", h, rows);
    }
    if (want("fp16")) {
      run<__half>(s, "fp16", h, rows);
    }
    if (want("tf32")) {
      run<float>(s, "tf32", h, rows, cufuse::gemm_math::tf32);
    }
  }
  cublasDestroy(h);
  std::printf("device: %s\n", prop.name);
  std::printf("%-58s %-5s %-46s %9s %8s %8s %9s\n", "shape", "dtype", "implementation", "ms",
              "TFLOP/s", "/cuBLAS", "max rel");
  std::ofstream js(path);
  js << "{\"device\": \"" << prop.name << "\", \"rows\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    std::printf("%-58s %-5s %-46s %9.3f %8.1f %8.3f %9.2e\n", r.shape.c_str(), r.dtype.c_str(),
                r.impl.c_str(), r.ms, r.tflops, r.vs_cublas, r.max_rel);
    js << (i ? ", " : "") << "{\"shape\": \"" << r.shape << "\", \"dtype\": \"" << r.dtype
       << "\", \"impl\": \"" << r.impl << "\", \"ms\": " << r.ms << ", \"tflops\": " << r.tflops
       << ", \"vs_cublas\": " << r.vs_cublas << ", \"max_rel\": " << r.max_rel << "}";
  }
  js << "]}\n";
  // Summary: per problem, the default and the best of each kind, as speed relative to cuBLAS.
  std::printf("\n| shape | dtype | cuBLAS ms | cufuse default | / cuBLAS | best in place | best on "
              "aligned copies |\n|---|---|---|---|---|---|---|\n");
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i + 1;
    double in_place = 0, packed = 0;
    std::string in_name = "-", pack_name = "-";
    for (; j < rows.size() && rows[j].impl != "cuBLAS"; ++j) {
      const auto& r = rows[j];
      if (r.impl.rfind("cufuse", 0) == 0) {
        continue;
      }
      const bool p = r.impl.size() > 5 && r.impl.compare(r.impl.size() - 5, 5, "_pack") == 0;
      double& best = p ? packed : in_place;
      if (r.vs_cublas > best) {
        best = r.vs_cublas;
        (p ? pack_name : in_name) = r.impl;
      }
    }
    const auto& d = rows[i + 1];
    auto cell = [](double ratio, const std::string& name) {
      return ratio > 0 ? std::to_string(ratio).substr(0, 5) + " (" + name + ")" : std::string("-");
    };
    std::printf("| %s | %s | %.3f | %s | %.3f | %s | %s |\n", rows[i].shape.c_str(),
                rows[i].dtype.c_str(), rows[i].ms, d.impl.substr(d.impl.find(':') + 2).c_str(),
                d.vs_cublas, cell(in_place, in_name).c_str(), cell(packed, pack_name).c_str());
    i = j;
  }
  return 0;
}
