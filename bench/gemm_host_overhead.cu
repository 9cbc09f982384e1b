// Host cost of a steady-state cufuse::gemm call (variant already chosen) next to an empty
// kernel launch: 2000 back-to-back calls of a 64x64x64 problem, host time per call; and of a
// bf16 128x128x128 problem on a TMA variant (it encodes two tensor maps per call).
#include <cufuse/cufuse.cuh>
#include <cufuse/gemm.cuh>

#include <chrono>
#include <cstdio>
#include <exception>

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
  cufuse::tensor<__nv_bfloat16, 2> ha({128, 128}), hb({128, 128}), hc({128, 128});
  ha.fill(1.0f);
  hb.fill(1.0f);
  cufuse::gemm_options t;
  t.variant = "sm90a_bf16_wgmma_128x128x64_wg2_s6_tma";
  try {
    const double tma = per_call([&] { cufuse::gemm(ha, hb, hc, 1.0f, 0.0f, nullptr, t); });
    std::printf("host us/call: bf16 on %s %.2f (%.2fx an empty launch)\n", t.variant.c_str(), tma,
                tma / empty);
  } catch (const std::exception& e) {
    std::printf("TMA variant not measured: %s\n", e.what());
  }
  return 0;
}
