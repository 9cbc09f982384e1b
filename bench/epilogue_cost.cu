// What an expression epilogue costs a wgmma GEMM, by epilogue and by K: bf16 Y = e(X W^T) on
// 4096 x 4096 x K for K = 1024, 2048, 4096, with e = acc * 1, acc + b, relu(acc + b),
// gelu_tanh(acc) and gelu_tanh(acc + b), each on the ping-pong 128x128 tile and on the
// cooperative 128x256 tile, against the plain GEMM (standard epilogue) of the same tile and
// cuBLAS, all timed in turn round after round (bench::timer::interleaved_ms). Were the
// ping-pong tile's epilogue hidden behind the other warpgroup's main loop, its excess over the
// plain GEMM would shrink as K grows (bench/JOURNAL.md e17). Every fused output is checked
// against its expression applied to the plain GEMM's result; the exit status says whether all
// matched. Prints a table; --out writes JSON; EPI_K and EPI_PROFILE: see main.
#include "fill.cuh"
#include "timing.cuh"

#include <cublas_gemm.hpp>
#include <cufuse/cufuse.cuh>
#include <cufuse/gemm.cuh>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using bf16 = __nv_bfloat16;
using cufuse::index_t;

struct row {
  index_t k;
  std::string tile, what;
  double ms;
};

/// The variant of `names` whose name contains `part`, or "" (the shape does not run it).
std::string pick(const std::vector<std::string>& names, const char* part) {
  for (const std::string& v : names) {
    if (v.find(part) != std::string::npos) {
      return v;
    }
  }
  return "";
}

cufuse::gemm_options with_variant(const std::string& v) {
  cufuse::gemm_options o;
  o.variant = v;
  return o;
}

} // namespace

int main(int argc, char** argv) {
  const char* out = bench::out_arg(argc, argv);
  const cudaDeviceProp prop = bench::print_device();
  const cufuse_tools::cublas_with_workspace cublas;
  const cublasHandle_t h = cublas.get();
  bench::timer tm;
  std::mt19937 rng(1);
  std::vector<row> rows;
  std::size_t mismatches = 0;
  const char* tiles[] = {"128x128x64_wg2pp_s6_tma", "128x256x64_wg2_s4_tma"};
  constexpr index_t m = 4096, n = 4096;
  // EPI_K=k: that K alone; EPI_PROFILE: each contender's check launch alone, no timing (one
  // launch of each kernel for Nsight Compute: bench/profile_epilogue.sh with BENCH=epilogue_cost).
  const char* only_k = std::getenv("EPI_K");
  const bool profile = std::getenv("EPI_PROFILE") != nullptr;
  for (const index_t k : {index_t(1024), index_t(2048), index_t(4096)}) {
    if (only_k != nullptr && std::atoll(only_k) != k) {
      continue;
    }
    cufuse::tensor<bf16, 2> x({m, k}), w({n, k}), y({m, n});
    cufuse::tensor<bf16, 1> b({n});
    bench::uniform_fill(x, 1.0f, rng);
    bench::uniform_fill(w, 0.05f, rng);
    bench::uniform_fill(b, 0.5f, rng);
    const auto wt = cufuse::transpose(w.view());
    using cufuse::acc;
    const auto e_acc = acc * 1.0f;
    const auto e_bias = acc + b;
    const auto e_relu = cufuse::relu(acc + b);
    const auto e_gelu0 = cufuse::gelu_tanh(acc);
    const auto e_gelu = cufuse::gelu_tanh(acc + b);
    // Each fused GEMM's output is checked against its expression applied to the plain GEMM's
    // fp32 result (a wrong store would otherwise pass for a fast one).
    cufuse::tensor<float, 2> yf({m, n});
    cufuse::tensor<bf16, 2> yr({m, n});
    cufuse::gemm(x, wt, yf, 1.0f, 0.0f);
    const auto check = [&](const std::string& name, const std::string& v, const auto& e,
                           const auto& ref) {
      y.fill(bf16(-777.0f));
      cufuse::gemm(x, wt, y, e, with_variant(v));
      yr = ref(yf);
      const std::vector<bf16> got = y.download(), want = yr.download();
      std::size_t bad = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const float g = float(got[i]), r = float(want[i]);
        bad += !(std::fabs(g - r) <= 0.02f + 0.02f * std::fabs(r));
      }
      std::printf("check K %lld %s %s: %zu of %zu differ\n", static_cast<long long>(k), v.c_str(),
                  name.c_str(), bad, got.size());
      mismatches += bad;
    };
    const cufuse::gemm_problem p = cufuse::tuning::problem(x, wt, y, 1.0f, 0.0f, {});
    std::vector<std::string> what{"cuBLAS"};
    std::vector<std::string> tile_of{""};
    std::vector<std::function<void()>> fs{
        [&] { cufuse_tools::cublas_gemm(h, p, cufuse::current_stream()); }};
    for (const char* t : tiles) {
      const std::string plain = pick(cufuse::gemm_variants(x, wt, y), t);
      if (plain.empty()) {
        continue;
      }
      const auto add = [&](const char* name, const auto& e, const auto& ref) {
        const std::string v = pick(cufuse::tuning::epilogue_variants(x, wt, y, e), t);
        if (!v.empty()) {
          check(name, v, e, ref);
          what.emplace_back(name);
          tile_of.emplace_back(t);
          fs.emplace_back([&x, &wt, &y, e, v] { cufuse::gemm(x, wt, y, e, with_variant(v)); });
        }
      };
      what.emplace_back("plain");
      tile_of.emplace_back(t);
      fs.emplace_back([&x, &wt, &y, plain] {
        cufuse::gemm(x, wt, y, 1.0f, 0.0f, cufuse::current_stream(), with_variant(plain));
      });
      add("acc * 1", e_acc, [](const auto& a) { return a * 1.0f; });
      add("acc + b", e_bias, [&b](const auto& a) { return a + b; });
      add("relu(acc + b)", e_relu, [&b](const auto& a) { return cufuse::relu(a + b); });
      add("gelu_tanh(acc)", e_gelu0, [](const auto& a) { return cufuse::gelu_tanh(a); });
      add("gelu_tanh(acc + b)", e_gelu, [&b](const auto& a) { return cufuse::gelu_tanh(a + b); });
    }
    if (profile) {
      for (const auto& f : fs) {
        f();
      }
      BENCH_CHECK(cudaDeviceSynchronize());
      continue;
    }
    const std::vector<double> ms = tm.interleaved_ms(fs, 21, 0.3);
    for (std::size_t i = 0; i < ms.size(); ++i) {
      rows.push_back({k, tile_of[i], what[i], ms[i]});
    }
  }
  std::printf("\nmismatches: %zu\n", mismatches);
  std::printf("\n| K | tile | epilogue | ms | x cuBLAS | x plain (same tile) "
              "|\n|---|---|---|---|---|---|\n");
  double cub = 0, plain = 0;
  for (const row& r : rows) {
    if (r.what == "cuBLAS") {
      cub = r.ms;
    }
    if (r.what == "plain") {
      plain = r.ms;
    }
    std::printf("| %lld | %s | %s | %.4f | %.3f | %.3f |\n", static_cast<long long>(r.k),
                r.tile.c_str(), r.what.c_str(), r.ms, r.ms / cub,
                r.tile.empty() ? 1.0 : r.ms / plain);
  }
  if (out != nullptr) {
    FILE* f = std::fopen(out, "w");
    std::fprintf(f, "{\"device\": \"%s\", \"rows\": [\n", prop.name);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      std::fprintf(f, "  {\"k\": %lld, \"tile\": \"%s\", \"epilogue\": \"%s\", \"ms\": %.6f}%s\n",
                   static_cast<long long>(rows[i].k), rows[i].tile.c_str(), rows[i].what.c_str(),
                   rows[i].ms, i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return mismatches == 0 ? 0 : 1;
}
