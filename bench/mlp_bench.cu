// GEMM epilogues from expressions, and the transformer MLP block built on them, against cuBLAS
// in the same process (PyTorch eager and torch.compile: bench/torch_mlp.py, same shapes).
//
//   gemm_bias_gelu   Y = gelu_tanh(X W^T + b), bf16 (and fp32 with TF32 math)
//   gemm_bias_relu_res  Y = relu(X W^T + b) + R, bf16
//   mlp              y = x + W2 gelu_tanh(W1 layer_norm(x) + b1) + b2, bf16
//
// For each, cuBLAS's GEMM(s) alone (no epilogue: the floor the fused versions are measured
// against; with the 32 MiB workspace that PyTorch sets on Hopper), cufuse's plain GEMM(s) and
// cufuse with the epilogue fused. cufuse's variants are the best of those the call can run (what
// cufuse-tune would store), named in the table. Each row's time: the median of CUDA-event timings,
// the workload's contenders timed in turn round after round after half a second of untimed rounds
// (the sustained state, every contender at the same clocks). --out writes JSON; --small leaves
// out the 16384-token block, --quick all but the bf16 single GEMMs, --blocks all but the MLP
// blocks; MLP_PDL_AB=1 adds the block with and without programmatic dependent launches;
// --scale-shift runs only
// Y = relu(X W^T * scale + shift) (fp32 scale [n], bf16 shift [n]: two rank-1 operands).
#include "fill.cuh"
#include "timing.cuh"

#include <cublas_gemm.hpp>
#include <cufuse/cufuse.cuh>
#include <cufuse/gemm.cuh>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using bf16 = __nv_bfloat16;
using cufuse::index_t;

struct row {
  std::string workload, dtype, what, variant;
  double ms;
};
std::vector<row> rows;

void report(const std::string& workload, const std::string& dtype, const std::string& what,
            double ms, const std::string& variant = "") {
  rows.push_back({workload, dtype, what, variant, ms});
  std::printf("%-34s %-5s %-28s %9.4f ms  %s\n", workload.c_str(), dtype.c_str(), what.c_str(), ms,
              variant.c_str());
  std::fflush(stdout);
}

/// The fastest of `names` for `run(name)` and its median time, all of them timed in turn in
/// every round (bench::timer::interleaved_ms). With MLP_ALL set in the environment, every
/// variant's time is printed too.
std::pair<std::string, double> best_of(const std::vector<std::string>& names,
                                       const std::function<void(const std::string&)>& run,
                                       bench::timer& tm) {
  static const bool all = std::getenv("MLP_ALL") != nullptr;
  std::vector<std::function<void()>> fs;
  for (const std::string& v : names) {
    fs.push_back([&run, v] { run(v); });
  }
  const std::vector<double> ms = tm.interleaved_ms(fs, 15, 0.2);
  std::pair<std::string, double> best{"", std::numeric_limits<double>::infinity()};
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (all) {
      std::printf("    %-52s %9.4f ms\n", names[i].c_str(), ms[i]);
    }
    if (ms[i] < best.second) {
      best = {names[i], ms[i]};
    }
  }
  return best;
}

cufuse::gemm_options with_variant(cufuse::gemm_options o, const std::string& v) {
  o.variant = v;
  return o;
}

/// Y = epilogue(X W^T) against cuBLAS X W^T alone and cufuse's plain X W^T.
template <class T, class E>
void gemm_epilogue(const std::string& workload, const char* dtype, index_t m, index_t n, index_t k,
                   cufuse::gemm_math math, cublasHandle_t h, bench::timer& tm, const E& make_epi,
                   std::mt19937& rng) {
  cufuse::tensor<T, 2> x({m, k}), w({n, k}), y({m, n}), r({m, n});
  cufuse::tensor<T, 1> b({n});
  bench::uniform_fill(x, 1.0f, rng);
  bench::uniform_fill(w, 0.05f, rng);
  bench::uniform_fill(b, 0.5f, rng);
  bench::uniform_fill(r, 1.0f, rng);
  cufuse::gemm_options opt;
  opt.math = math;
  const auto wt = cufuse::transpose(w.view());
  const cufuse::gemm_problem p = cufuse::tuning::problem(x, wt, y, 1.0f, 0.0f, opt);
  const auto cublas = [&] { cufuse_tools::cublas_gemm(h, p, cufuse::current_stream()); };
  const auto plain = best_of(
      cufuse::gemm_variants(x, wt, y, opt),
      [&](const std::string& v) {
        cufuse::gemm(x, wt, y, 1.0f, 0.0f, cufuse::current_stream(), with_variant(opt, v));
      },
      tm);
  const auto epi = make_epi(b, r);
  const auto fused = best_of(
      cufuse::tuning::epilogue_variants(x, wt, y, epi, opt),
      [&](const std::string& v) { cufuse::gemm(x, wt, y, epi, with_variant(opt, v)); }, tm);
  // The chosen variants and cuBLAS, timed in turn (the rows' times; the sweeps above only chose).
  // The fused GEMM follows the plain one: a cufuse GEMM kernel that follows a different one of
  // ours pays ~1.6 us more (bench/JOURNAL.md t11), as in a model, where GEMMs follow other
  // kernels.
  const auto op = with_variant(opt, plain.first), of = with_variant(opt, fused.first);
  const std::vector<double> ms = tm.interleaved_ms({
      cublas,
      [&] { cufuse::gemm(x, wt, y, 1.0f, 0.0f, cufuse::current_stream(), op); },
      [&] { cufuse::gemm(x, wt, y, epi, of); },
  });
  report(workload, dtype, "cuBLAS GEMM alone", ms[0]);
  report(workload, dtype, "cufuse GEMM alone", ms[1], plain.first);
  report(workload, dtype, "cufuse GEMM + epilogue", ms[2], fused.first);
}

void mlp(index_t tokens, index_t d, index_t hid, cublasHandle_t h, bench::timer& tm,
         std::mt19937& rng) {
  const std::string workload =
      "mlp " + std::to_string(tokens) + " tok d " + std::to_string(d) + " h " + std::to_string(hid);
  cufuse::tensor<bf16, 2> x({tokens, d}), w1({hid, d}), w2({d, hid}), xn({tokens, d}),
      hh({tokens, hid}), y({tokens, d});
  cufuse::tensor<bf16, 1> g({d}), beta({d}), b1({hid}), b2({d});
  bench::uniform_fill(x, 1.0f, rng);
  bench::uniform_fill(w1, 0.05f, rng);
  bench::uniform_fill(w2, 0.03f, rng);
  bench::uniform_fill(g, 1.0f, rng);
  bench::uniform_fill(beta, 0.5f, rng);
  bench::uniform_fill(b1, 0.5f, rng);
  bench::uniform_fill(b2, 0.5f, rng);
  const auto w1t = cufuse::transpose(w1.view());
  const auto w2t = cufuse::transpose(w2.view());
  // Every GEMM below reads what the block computes (the GEMMs alone too): the layer norm's
  // output, and GEMM 1's output as GEMM 2's input. Left uninitialized they would be whatever the
  // allocator returns (zeros draw less power, so the tensor cores run at higher clocks).
  xn = cufuse::layer_norm(x, g, beta, 1e-5f);
  const cufuse::gemm_problem p1 = cufuse::tuning::problem(xn, w1t, hh);
  const cufuse::gemm_problem p2 = cufuse::tuning::problem(hh, w2t, y);
  const auto plain1 = best_of(
      cufuse::gemm_variants(xn, w1t, hh),
      [&](const std::string& v) {
        cufuse::gemm(xn, w1t, hh, 1.0f, 0.0f, cufuse::current_stream(), with_variant({}, v));
      },
      tm);
  const auto plain2 = best_of(
      cufuse::gemm_variants(hh, w2t, y),
      [&](const std::string& v) {
        cufuse::gemm(hh, w2t, y, 1.0f, 0.0f, cufuse::current_stream(), with_variant({}, v));
      },
      tm);
  const auto e1 = cufuse::gelu_tanh(cufuse::acc + b1);
  const auto e2 = cufuse::acc + b2 + x;
  const auto v1 = best_of(
      cufuse::tuning::epilogue_variants(xn, w1t, hh, e1),
      [&](const std::string& v) { cufuse::gemm(xn, w1t, hh, e1, with_variant({}, v)); }, tm);
  const auto v2 = best_of(
      cufuse::tuning::epilogue_variants(hh, w2t, y, e2),
      [&](const std::string& v) { cufuse::gemm(hh, w2t, y, e2, with_variant({}, v)); }, tm);
  const auto p1o = with_variant({}, plain1.first), p2o = with_variant({}, plain2.first);
  const auto o1 = with_variant({}, v1.first), o2 = with_variant({}, v2.first);
  // Every contender timed in turn, round after round (the sweeps above only chose variants).
  const std::vector<double> ms = tm.interleaved_ms({
      [&] {
        cufuse_tools::cublas_gemm(h, p1, cufuse::current_stream());
        cufuse_tools::cublas_gemm(h, p2, cufuse::current_stream());
      },
      [&] {
        cufuse::gemm(xn, w1t, hh, 1.0f, 0.0f, cufuse::current_stream(), p1o);
        cufuse::gemm(hh, w2t, y, 1.0f, 0.0f, cufuse::current_stream(), p2o);
      },
      [&] {
        cufuse::gemm(xn, w1t, hh, e1, o1);
        cufuse::gemm(hh, w2t, y, e2, o2);
      },
      [&] { xn = cufuse::layer_norm(x, g, beta, 1e-5f); },
      [&] {
        xn = cufuse::layer_norm(x, g, beta, 1e-5f);
        cufuse::gemm(xn, w1t, hh, e1, o1);
        cufuse::gemm(hh, w2t, y, e2, o2);
      },
  });
  report(workload, "bf16", "cuBLAS GEMMs alone", ms[0]);
  report(workload, "bf16", "cufuse GEMMs alone", ms[1], plain1.first + " + " + plain2.first);
  report(workload, "bf16", "cufuse layer_norm alone", ms[3]);
  report(workload, "bf16", "cufuse 2 fused GEMMs", ms[2], v1.first + " + " + v2.first);
  report(workload, "bf16", "cufuse block (LN + 2 GEMMs)", ms[4]);
  if (std::getenv("MLP_PDL_AB") != nullptr) {
    // The block and its GEMMs with programmatic dependent launches and without, in turn.
    auto& on = cufuse::detail::dependent_launch_switch();
    const auto block = [&] {
      xn = cufuse::layer_norm(x, g, beta, 1e-5f);
      cufuse::gemm(xn, w1t, hh, e1, o1);
      cufuse::gemm(hh, w2t, y, e2, o2);
    };
    const std::vector<double> ab = tm.interleaved_ms({
        [&] { block(); },
        [&] {
          on = false;
          block();
          on = true;
        },
        [&] {
          cufuse::gemm(xn, w1t, hh, e1, o1);
          cufuse::gemm(hh, w2t, y, e2, o2);
        },
        [&] {
          on = false;
          cufuse::gemm(xn, w1t, hh, e1, o1);
          cufuse::gemm(hh, w2t, y, e2, o2);
          on = true;
        },
    });
    report(workload, "bf16", "block, dependent launches", ab[0]);
    report(workload, "bf16", "block, ordinary launches", ab[1]);
    report(workload, "bf16", "2 fused GEMMs, dependent launches", ab[2]);
    report(workload, "bf16", "2 fused GEMMs, ordinary launches", ab[3]);
  }
}

} // namespace

int main(int argc, char** argv) {
  const char* out = nullptr;
  bool big = true, quick = false, scale_shift = false, blocks_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (std::strcmp(argv[i], "--small") == 0) {
      big = false;
    } else if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true; // the two bf16 single-GEMM workloads only (profiling)
    } else if (std::strcmp(argv[i], "--blocks") == 0) {
      blocks_only = true; // the MLP blocks only (A/B runs)
    } else if (std::strcmp(argv[i], "--scale-shift") == 0) {
      scale_shift = true; // one workload: two rank-1 operands (fp32 scale, bf16 shift)
    }
  }
  const cudaDeviceProp prop = bench::print_device();
  const cufuse_tools::cublas_with_workspace cublas;
  const cublasHandle_t h = cublas.get();

  bench::timer tm;
  std::mt19937 rng(1);
  if (scale_shift) {
    // Two rank-1 operands whose registers together exceed what a tile reads ahead (48 of 32 on
    // the 128-column tiles): the fp32 scale is read once per tile, the shift per group
    // (bench/JOURNAL.md e15).
    cufuse::tensor<float, 1> scale({4096});
    bench::uniform_fill(scale, 1.0f, rng);
    gemm_epilogue<bf16>(
        "gemm+scale+shift+relu 4096x4096x1024", "bf16", 4096, 4096, 1024, cufuse::gemm_math::fp32,
        h, tm,
        [&scale](const auto& b, const auto&) { return cufuse::relu(cufuse::acc * scale + b); },
        rng);
  } else if (blocks_only) {
    mlp(8192, 1024, 4096, h, tm, rng);
    if (big) {
      mlp(16384, 4096, 16384, h, tm, rng);
    }
  } else {
    gemm_epilogue<bf16>(
        "gemm+bias+gelu 4096x4096x1024", "bf16", 4096, 4096, 1024, cufuse::gemm_math::fp32, h, tm,
        [](const auto& b, const auto&) { return cufuse::gelu_tanh(cufuse::acc + b); }, rng);
    if (!quick) {
      gemm_epilogue<float>(
          "gemm+bias+gelu 4096x4096x1024", "tf32", 4096, 4096, 1024, cufuse::gemm_math::tf32, h, tm,
          [](const auto& b, const auto&) { return cufuse::gelu_tanh(cufuse::acc + b); }, rng);
    }
    gemm_epilogue<bf16>(
        "gemm+bias+relu+res 4096x4096x1024", "bf16", 4096, 4096, 1024, cufuse::gemm_math::fp32, h,
        tm, [](const auto& b, const auto& r) { return cufuse::relu(cufuse::acc + b) + r; }, rng);
    if (!quick) {
      mlp(8192, 1024, 4096, h, tm, rng);
    }
    if (big && !quick) {
      mlp(16384, 4096, 16384, h, tm, rng);
    }
  }
  if (out != nullptr) {
    FILE* f = std::fopen(out, "w");
    std::fprintf(f, "{\"device\": \"%s\", \"rows\": [\n", prop.name);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      std::fprintf(f,
                   "  {\"workload\": \"%s\", \"dtype\": \"%s\", \"what\": \"%s\", \"variant\": "
                   "\"%s\", \"ms\": %.6f}%s\n",
                   rows[i].workload.c_str(), rows[i].dtype.c_str(), rows[i].what.c_str(),
                   rows[i].variant.c_str(), rows[i].ms, i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}
