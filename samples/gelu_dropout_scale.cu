// GELU -> dropout mask -> scale, fused into one kernel, in bf16 (computing in float, rounding
// once at the store), checked against a CPU loop and timed against one kernel per operation.
#include <cufuse/cufuse.cuh>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

int main() {
  const bool gpu = cufuse::device_available();
  if (!gpu) {
    std::printf("no CUDA device found: running GELU-dropout-scale on host tensors (CPU)\n");
  }
  const cufuse::index_t n = gpu ? cufuse::index_t(1) << 26 : cufuse::index_t(1) << 18;
  const float p = 0.1f, scale = 1.0f / (1.0f - p);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<__nv_bfloat16> hx(n), hu(n);
  for (cufuse::index_t i = 0; i < n; ++i) {
    hx[i] = __float2bfloat16(normal(rng));
    hu[i] = __float2bfloat16(uniform(rng));
  }

  auto check = [&](const std::vector<__nv_bfloat16>& out) {
    std::size_t bad = 0;
    for (cufuse::index_t i = 0; i < n; ++i) {
      const double x = __bfloat162float(hx[i]), u = __bfloat162float(hu[i]);
      const double ref = 0.5 * x * std::erfc(-x / std::sqrt(2.0)) * (u > p) * double(scale);
      bad += !(std::fabs(__bfloat162float(out[i]) - ref) <= (1.0 / 128) * (1e-2 + std::fabs(ref)));
    }
    return bad;
  };

  if (!gpu) {
    cufuse::host_tensor<__nv_bfloat16, 1> x(n), u(n), out(n);
    x.upload(hx);
    u.upload(hu);
    out = cufuse::gelu(x) * (u > p) * scale;
    const std::size_t bad = check(out.download());
    std::printf("host result: %s (%zu mismatches)\n", bad == 0 ? "correct" : "WRONG", bad);
    return bad == 0 ? 0 : 1;
  }

  cufuse::device_vector<__nv_bfloat16> x(n), u(n), out(n), g(n), m(n);
  x.upload(hx);
  u.upload(hu);
  auto fused = [&] { out = cufuse::gelu(x) * (u > p) * scale; };
  auto per_op = [&] {
    g = cufuse::gelu(x);
    m = u > p;
    g = g * m;
    out = g * scale;
  };
  fused();
  const std::size_t bad = check(out.download());
  std::printf("out = gelu(x) * (u > %.1f) * %.4f over %lld bf16: %s (%zu mismatches vs CPU)\n", p,
              scale, static_cast<long long>(n), bad == 0 ? "correct" : "WRONG", bad);

  cudaEvent_t a, b;
  CUFUSE_CUDA_CHECK(cudaEventCreate(&a));
  CUFUSE_CUDA_CHECK(cudaEventCreate(&b));
  auto time = [&](auto&& f) {
    f();
    std::vector<float> ms(20);
    for (auto& t : ms) {
      CUFUSE_CUDA_CHECK(cudaEventRecord(a));
      f();
      CUFUSE_CUDA_CHECK(cudaEventRecord(b));
      CUFUSE_CUDA_CHECK(cudaEventSynchronize(b));
      CUFUSE_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    }
    std::sort(ms.begin(), ms.end());
    return ms[10];
  };
  const float tf = time(fused), tc = time(per_op);
  std::printf("fused: %.3f ms (%.0f GB/s); one kernel per op: %.3f ms (%.2fx slower)\n", tf,
              3.0 * n * 2 / (tf * 1e-3) / 1e9, tc, tc / tf);
  return bad == 0 ? 0 : 1;
}
