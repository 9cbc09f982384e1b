// Host cost of a steady-state cufuse::gemm call (variant already chosen) next to an empty
// kernel launch: 2000 back-to-back calls of a 64x64x64 problem, host time per call.
#include <cufuse/cufuse.cuh>
#include <cufuse/gemm.cuh>

#include <chrono>
#include <cstdio>

__global__ void empty_kernel() {}

int main() {
  if (!cufuse::device_available()) {
    std::printf("no CUDA device found: nothing to measure\n");
    return 0;
  }
  constexpr int calls = 2000;
  cufuse::tensor<float, 2> a({64, 64}), b({64, 64}), c({64, 64});
  a.fill(1.0f);
  b.fill(1.0f);
  auto per_call = [&](auto&& f) {
    for (int i = 0; i < 100; ++i) {
      f();
    }
    CUFUSE_CUDA_CHECK(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) {
      f();
    }
    const auto t1 = std::chrono::steady_clock::now();
    CUFUSE_CUDA_CHECK(cudaDeviceSynchronize());
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
  };
  const double empty = per_call([] { empty_kernel<<<1, 32>>>(); });
  const double gemm = per_call([&] { cufuse::gemm(a, b, c); });
  cufuse::gemm_options o;
  o.variant = "sm70_f32_simt_32x64x16_t4x4_v4";
  const double forced = per_call([&] { cufuse::gemm(a, b, c, 1.0f, 0.0f, nullptr, o); });
  std::printf("host us/call: empty launch %.2f, cufuse::gemm %.2f (%.2fx), forced variant %.2f\n",
              empty, gemm, gemm / empty, forced);
  return 0;
}
