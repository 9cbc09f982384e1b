// conv2d and a ResNet basic block with cufuse, bf16 NHWC, on ResNet's layer shapes (PyTorch's
// cuDNN, eager and torch.compile, on the same shapes: bench/torch_conv.py; joined by
// bench/conv_report.py).
//
//   conv      Y = conv2d(X, W): the default choice, and each variant conv2d_variants lists
//             (the best is what a tuner would keep)
//   block     y = relu(bn2(conv2(relu(bn1(conv1(x))))) + x), batch norm folded, both epilogues
//             fused: two kernels
//
// Medians of CUDA-event timings; --out writes JSON rows {workload, what, variant, ms, tflops}.
#include "timing.cuh"

#include <cufuse/conv.cuh>
#include <cufuse/cufuse.cuh>

#include <cstdio>
#include <cstring>
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

template <class T, int R>
void random_fill(cufuse::tensor<T, R>& t, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<T> v(static_cast<std::size_t>(t.size()));
  for (auto& e : v) {
    e = T(u(rng));
  }
  t.upload(v);
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

void bench_conv(const conv_shape& sh, bench::timer& tm, std::mt19937& rng) {
  const cufuse::conv2d_params prm{.stride = {sh.stride, sh.stride}, .padding = {sh.pad, sh.pad}};
  const auto [p, q] = cufuse::conv2d_output_size(sh.h, sh.w, sh.r, sh.s, prm);
  cufuse::tensor<bf16, 4> x({sh.n, sh.h, sh.w, sh.c}), w({sh.k, sh.r, sh.s, sh.c});
  cufuse::tensor<bf16, 4> y({sh.n, p, q, sh.k});
  random_fill(x, 1.0f, rng);
  random_fill(w, 0.1f, rng);
  const double flop = 2.0 * double(sh.n * p * q) * double(sh.k) * double(sh.r * sh.s * sh.c);
  const std::string wl = "conv " + name_of(sh);
  report(wl, "cufuse default", tm.median_ms([&] { cufuse::conv2d(x, w, y, prm); }), flop);
  double best = 1e30;
  std::string best_name;
  for (const std::string& v : cufuse::conv2d_variants(x, w, y, prm)) {
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
}

void bench_block(index_t n, index_t hw, index_t c, bench::timer& tm, std::mt19937& rng) {
  cufuse::tensor<bf16, 4> x({n, hw, hw, c}), w1({c, 3, 3, c}), w2({c, 3, 3, c});
  cufuse::tensor<bf16, 4> h({n, hw, hw, c}), y({n, hw, hw, c});
  cufuse::tensor<float, 1> s1({c}), t1({c}), s2({c}), t2({c});
  random_fill(x, 1.0f, rng);
  random_fill(w1, 0.05f, rng);
  random_fill(w2, 0.05f, rng);
  random_fill(s1, 1.0f, rng);
  random_fill(t1, 0.2f, rng);
  random_fill(s2, 1.0f, rng);
  random_fill(t2, 0.2f, rng);
  const cufuse::conv2d_params same{.padding = {1, 1}};
  using cufuse::acc;
  const double flop = 2 * 2.0 * double(n * hw * hw) * double(c) * double(9 * c);
  char wl[96];
  std::snprintf(wl, sizeof wl, "resnet block N%lld %lldx%lld C%lld", (long long)n, (long long)hw,
                (long long)hw, (long long)c);
  report(wl, "cufuse fused (2 kernels)", tm.median_ms([&] {
    cufuse::conv2d(x, w1, h, same, cufuse::relu(acc * s1 + t1));
    cufuse::conv2d(h, w2, y, same, cufuse::relu(acc * s2 + t2 + x));
  }),
         flop);
  // The same block with each conv's best variant (the tuner's job once conv keys are tuned).
  double best = 1e30;
  std::string best_name;
  for (const std::string& v : cufuse::conv2d_variants(x, w1, h, same)) {
    cufuse::gemm_options opt;
    opt.variant = v;
    const double ms = tm.median_ms(
        [&] {
          cufuse::conv2d(x, w1, h, same, cufuse::relu(acc * s1 + t1), opt);
          cufuse::conv2d(h, w2, y, same, cufuse::relu(acc * s2 + t2 + x), opt);
        },
        15);
    if (ms < best) {
      best = ms;
      best_name = v;
    }
  }
  report(wl, "cufuse fused, best", best, flop, best_name);
}

} // namespace

int main(int argc, char** argv) {
  const char* out = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
    }
  }
  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s\n", prop.name);
  bench::timer tm;
  std::mt19937 rng(11);
  // ResNet-50's 3x3 convolutions at batch 32 (stride 1 and the stride-2 one that starts a
  // stage), a 1x1 (runs as a GEMM) and the 7x7 stem (C = 3: the SIMT kernel).
  const std::vector<conv_shape> shapes = {
      {32, 56, 56, 64, 64, 3, 3, 1, 1},   {32, 28, 28, 128, 128, 3, 3, 1, 1},
      {32, 14, 14, 256, 256, 3, 3, 1, 1}, {32, 7, 7, 512, 512, 3, 3, 1, 1},
      {32, 56, 56, 128, 128, 3, 3, 2, 1}, {32, 56, 56, 256, 64, 1, 1, 1, 0},
      {32, 224, 224, 3, 64, 7, 7, 2, 3},
  };
  for (const conv_shape& s : shapes) {
    bench_conv(s, tm, rng);
  }
  bench_block(32, 56, 64, tm, rng);
  bench_block(32, 14, 256, tm, rng);
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
