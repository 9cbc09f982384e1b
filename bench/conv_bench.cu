// conv2d and a ResNet basic block with cufuse, bf16 NHWC, on ResNet's layer shapes (PyTorch's
// cuDNN, eager and torch.compile, on the same shapes: bench/torch_conv.py; joined by
// bench/conv_report.py).
//
//   conv      Y = conv2d(X, W) in bf16: the heuristic's choice (tuner off), each variant
//             conv2d_variants lists, the tuned choice (tuning::tune_conv2d, then frozen), and
//             the tuning cost: calls until online mode commits, against the exhaustive count
//   conv+bias+relu  Y = relu(conv2d(X, W) + b), the epilogue fused (tuned)
//   fp32      the same layers exact (SIMT) and with TF32 tensor cores (tuned)
//   block     y = relu(bn2(conv2(relu(bn1(conv1(x))))) + x), batch norm folded, both epilogues
//             fused: two kernels
//
// Medians of CUDA-event timings; --out writes JSON rows {workload, what, variant, ms, tflops};
// --only SUBSTR runs the bf16 layers whose name contains SUBSTR (e.g. "28x28 C128"), nothing else.
#include "fill.cuh"
#include "timing.cuh"

#include <cufuse/conv.cuh>
#include <cufuse/cufuse.cuh>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using bf16 = __nv_bfloat16;
using cufuse::index_t;

struct row {
  std::string workload, what, variant;
  double ms, tflops;
};
std::vector<row> rows;

void report(const std::string& workload, const std::string& what, double ms, double flop,
            const std::string& variant = "") {
  const double tflops = flop / (ms * 1e-3) / 1e12;
  rows.push_back({workload, what, variant, ms, tflops});
  std::printf("%-40s %-22s %9.4f ms %7.1f TFLOP/s  %s\n", workload.c_str(), what.c_str(), ms,
              tflops, variant.c_str());
  std::fflush(stdout);
}

/// The best of 3 medians of 30 calls, as bench/torch_conv.py measures its peers.
double best_ms(bench::timer& tm, const std::function<void()>& f) {
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    best = std::min(best, tm.median_ms(f));
  }
  return best;
}

struct conv_shape {
  index_t n, h, w, c, k, r, s, stride, pad;
};

std::string name_of(const conv_shape& s) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "N%lld %lldx%lld C%lld K%lld %lldx%lld s%lld", (long long)s.n,
                (long long)s.h, (long long)s.w, (long long)s.c, (long long)s.k, (long long)s.r,
                (long long)s.s, (long long)s.stride);
  return buf;
}

/// Tunes conv2d(x, w, y, prm[, epi]) into a fresh database and times the call the tuner then
/// makes (frozen mode).
template <class X, class W, class Y, class... E>
double tuned_ms(X& x, W& w, Y& y, const cufuse::conv2d_params& prm, const cufuse::gemm_options& opt,
                bench::timer& tm, std::string* variant, const E&... epi) {
  const std::string db = "/tmp/cufuse_conv_bench.db";
  std::remove(db.c_str());
  cufuse::tuning::set_file(db);
  cufuse::tuning::set_mode(cufuse::tune_mode::frozen);
  const auto c = cufuse::tuning::tune_conv2d(x, w, y, prm, epi..., opt, 5);
  *variant = c.variant;
  const double ms = best_ms(tm, [&] { cufuse::conv2d(x, w, y, prm, epi..., opt); });
  cufuse::tuning::set_file("");
  return ms;
}

void bench_conv(const conv_shape& sh, bench::timer& tm, std::mt19937& rng) {
  const cufuse::conv2d_params prm{.stride = {sh.stride, sh.stride}, .padding = {sh.pad, sh.pad}};
  const auto [p, q] = cufuse::conv2d_output_size(sh.h, sh.w, sh.r, sh.s, prm);
  cufuse::tensor<bf16, 4> x({sh.n, sh.h, sh.w, sh.c}), w({sh.k, sh.r, sh.s, sh.c});
  cufuse::tensor<bf16, 4> y({sh.n, p, q, sh.k});
  cufuse::tensor<bf16, 1> bias({sh.k});
  bench::uniform_fill(x, 1.0f, rng);
  bench::uniform_fill(w, 0.1f, rng);
  bench::uniform_fill(bias, 0.5f, rng);
  const double flop = 2.0 * double(sh.n * p * q) * double(sh.k) * double(sh.r * sh.s * sh.c);
  const std::string wl = "conv " + name_of(sh);
  cufuse::tuning::set_mode(cufuse::tune_mode::off);
  report(wl, "cufuse heuristic", best_ms(tm, [&] { cufuse::conv2d(x, w, y, prm); }), flop);
  double best = 1e30;
  std::string best_name;
  const std::vector<std::string> names = cufuse::conv2d_variants(x, w, y, prm);
  for (const std::string& v : names) {
    cufuse::gemm_options opt;
    opt.variant = v;
    const double ms = tm.median_ms([&] { cufuse::conv2d(x, w, y, prm, opt); }, 15);
    std::printf("    %-36s %9.4f ms\n", v.c_str(), ms);
    if (ms < best) {
      best = ms;
      best_name = v;
    }
  }
  report(wl, "cufuse best variant", best, flop, best_name);
  std::string tv;
  report(wl, "cufuse tuned", tuned_ms(x, w, y, prm, {}, tm, &tv), flop, tv);
  // The epilogue fused: conv + bias + ReLU.
  using cufuse::acc;
  report(wl, "cufuse conv+bias+relu", tuned_ms(x, w, y, prm, {}, tm, &tv, cufuse::relu(acc + bias)),
         flop, tv);
  // Online tuning from nothing, a synchronization after every call (the costliest pattern for
  // timing): calls until the bandit commits, and their total time against the tuned choice's.
  // (A 1x1 convolution runs as a GEMM: the GEMM's tuner, measured in the GEMM benchmarks.)
  if (names.size() > 1 && !(sh.r == 1 && sh.s == 1 && sh.stride == 1 && sh.pad == 0)) {
    cufuse::tuning::set_file("");
    cufuse::tuning::set_mode(cufuse::tune_mode::online);
    int calls = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (; calls < 5000; ++calls) {
      cufuse::conv2d(x, w, y, prm);
      BENCH_CHECK(cudaStreamSynchronize(cufuse::current_stream()));
      if (cufuse::tuning::chosen_conv2d(x, w, y, prm)) {
        ++calls;
        break;
      }
    }
    const double wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const auto chosen = cufuse::tuning::chosen_conv2d(x, w, y, prm);
    std::printf("    online: committed to %s after %d calls, %.2f ms in all (%.1fx the tuned "
                "choice's time for as many calls); exhaustive: %zu variants x 51 calls\n",
                chosen ? chosen->c_str() : "(nothing)", calls, wall_ms, wall_ms / (calls * best),
                names.size());
    rows.push_back({wl, "online tuning calls", chosen ? *chosen : "", double(calls), wall_ms});
    cufuse::tuning::set_mode(cufuse::tune_mode::off);
  }
}

/// The fp32 layer, exact (SIMT) and with TF32 tensor cores, each tuned.
void bench_conv_f32(const conv_shape& sh, bench::timer& tm, std::mt19937& rng) {
  const cufuse::conv2d_params prm{.stride = {sh.stride, sh.stride}, .padding = {sh.pad, sh.pad}};
  const auto [p, q] = cufuse::conv2d_output_size(sh.h, sh.w, sh.r, sh.s, prm);
  cufuse::tensor<float, 4> x({sh.n, sh.h, sh.w, sh.c}), w({sh.k, sh.r, sh.s, sh.c});
  cufuse::tensor<float, 4> y({sh.n, p, q, sh.k});
  bench::uniform_fill(x, 1.0f, rng);
  bench::uniform_fill(w, 0.1f, rng);
  const double flop = 2.0 * double(sh.n * p * q) * double(sh.k) * double(sh.r * sh.s * sh.c);
  const std::string wl = "conv " + name_of(sh) + " fp32";
  std::string v;
  report(wl, "cufuse fp32 exact", tuned_ms(x, w, y, prm, {}, tm, &v), flop, v);
  cufuse::gemm_options tf32;
  tf32.math = cufuse::gemm_math::tf32;
  report(wl, "cufuse tf32", tuned_ms(x, w, y, prm, tf32, tm, &v), flop, v);
}

void bench_block(index_t n, index_t hw, index_t c, bench::timer& tm, std::mt19937& rng) {
  cufuse::tensor<bf16, 4> x({n, hw, hw, c}), w1({c, 3, 3, c}), w2({c, 3, 3, c});
  cufuse::tensor<bf16, 4> h({n, hw, hw, c}), y({n, hw, hw, c});
  cufuse::tensor<float, 1> s1({c}), t1({c}), s2({c}), t2({c});
  bench::uniform_fill(x, 1.0f, rng);
  bench::uniform_fill(w1, 0.05f, rng);
  bench::uniform_fill(w2, 0.05f, rng);
  bench::uniform_fill(s1, 1.0f, rng);
  bench::uniform_fill(t1, 0.2f, rng);
  bench::uniform_fill(s2, 1.0f, rng);
  bench::uniform_fill(t2, 0.2f, rng);
  const cufuse::conv2d_params same{.padding = {1, 1}};
  using cufuse::acc;
  const double flop = 2 * 2.0 * double(n * hw * hw) * double(c) * double(9 * c);
  char wl[96];
  std::snprintf(wl, sizeof wl, "resnet block N%lld %lldx%lld C%lld", (long long)n, (long long)hw,
                (long long)hw, (long long)c);
  auto block = [&] {
    cufuse::conv2d(x, w1, h, same, cufuse::relu(acc * s1 + t1));
    cufuse::conv2d(h, w2, y, same, cufuse::relu(acc * s2 + t2 + x));
  };
  cufuse::tuning::set_mode(cufuse::tune_mode::off);
  report(wl, "cufuse heuristic", best_ms(tm, block), flop);
  // Each convolution tuned with its epilogue (cufuse-tune's job), then the frozen choice.
  const std::string db = "/tmp/cufuse_conv_block.db";
  std::remove(db.c_str());
  cufuse::tuning::set_file(db);
  cufuse::tuning::set_mode(cufuse::tune_mode::frozen);
  const auto c1 = cufuse::tuning::tune_conv2d(x, w1, h, same, cufuse::relu(acc * s1 + t1));
  const auto c2 = cufuse::tuning::tune_conv2d(h, w2, y, same, cufuse::relu(acc * s2 + t2 + x));
  report(wl, "cufuse fused, tuned", best_ms(tm, block), flop, c1.variant + " + " + c2.variant);
  cufuse::tuning::set_file("");
  cufuse::tuning::set_mode(cufuse::tune_mode::off);
}

} // namespace

int main(int argc, char** argv) {
  const char* out = nullptr;
  const char* only = nullptr; // --only SUBSTR: the bf16 layers whose name has it, nothing else
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    }
  }
  const cudaDeviceProp prop = bench::print_device();
  bench::timer tm;
  std::mt19937 rng(11);
  // ResNet's 3x3 convolutions at batch 32 (stride 1 and the stride-2 one that starts a stage),
  // 1x1 ones (they run as a GEMM) and the 7x7 stem (C = 3: the SIMT kernel).
  const std::vector<conv_shape> shapes = {
      {32, 56, 56, 64, 64, 3, 3, 1, 1},   {32, 28, 28, 128, 128, 3, 3, 1, 1},
      {32, 14, 14, 256, 256, 3, 3, 1, 1}, {64, 56, 56, 64, 256, 1, 1, 1, 0},
      {32, 7, 7, 512, 512, 3, 3, 1, 1},   {32, 56, 56, 128, 128, 3, 3, 2, 1},
      {32, 56, 56, 256, 64, 1, 1, 1, 0},  {32, 224, 224, 3, 64, 7, 7, 2, 3},
  };
  for (const conv_shape& s : shapes) {
    if (only == nullptr || name_of(s).find(only) != std::string::npos) {
      bench_conv(s, tm, rng);
    }
  }
  if (only == nullptr) {
    for (const conv_shape& s : {shapes[0], shapes[1], shapes[2], shapes[3], shapes[7]}) {
      bench_conv_f32(s, tm, rng);
    }
    bench_block(32, 56, 64, tm, rng);
    bench_block(32, 14, 256, tm, rng);
  }
  if (out != nullptr) {
    FILE* f = std::fopen(out, "w");
    if (f == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", out);
      return 1;
    }
    std::fprintf(f, "{\"device\": \"%s\", \"rows\": [\n", prop.name);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const row& r = rows[i];
      std::fprintf(f,
                   "  {\"workload\": \"%s\", \"what\": \"%s\", \"variant\": \"%s\", \"ms\": %.6f, "
                   "\"tflops\": %.3f}%s\n",
                   r.workload.c_str(), r.what.c_str(), r.variant.c_str(), r.ms, r.tflops,
                   i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}
