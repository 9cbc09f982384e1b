// GEMM sample: C = A B with bf16 inputs and an fp32 result, then C2 = 0.5 A B^T + C2 through a
// transposed view; a sample of entries checked against a double-precision CPU loop.
// Set CUFUSE_TUNE_MODE=online to let the bandit pick the variant during the calls.
#include <cufuse/cufuse.cuh>
#include <cufuse/gemm.cuh>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

int main() {
  if (!cufuse::device_available()) {
    std::printf("no CUDA device found: cufuse::gemm needs a GPU (nothing to run on the host)\n");
    return 0;
  }
  const long long m = 2048, n = 1536, k = 1024;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<__nv_bfloat16> ha(m * k), hb(k * n), hbt(n * k);
  for (auto& x : ha) {
    x = __float2bfloat16(u(rng));
  }
  for (auto& x : hb) {
    x = __float2bfloat16(u(rng));
  }
  for (auto& x : hbt) {
    x = __float2bfloat16(u(rng));
  }

  cufuse::tensor<__nv_bfloat16, 2> A({m, k}), B({k, n}), Bt({n, k});
  cufuse::tensor<float, 2> C({m, n});
  A.upload(ha);
  B.upload(hb);
  Bt.upload(hbt);
  C.fill(1.0f);

  cufuse::gemm(A, B, C);                                 // C = A B (C's old values unused)
  cufuse::gemm(A, cufuse::transpose(Bt), C, 0.5f, 1.0f); // C += 0.5 A Bt^T
  const std::vector<float> c = C.download();

  double worst = 0;
  std::uniform_int_distribution<long long> ri(0, m - 1), rj(0, n - 1);
  for (int s = 0; s < 512; ++s) {
    const long long i = ri(rng), j = rj(rng);
    double ref = 0, mag = 0;
    for (long long l = 0; l < k; ++l) {
      const double a = __bfloat162float(ha[i * k + l]);
      const double p =
          a * __bfloat162float(hb[l * n + j]) + 0.5 * a * __bfloat162float(hbt[j * k + l]);
      ref += p;
      mag += std::fabs(a) * (std::fabs(__bfloat162float(hb[l * n + j])) +
                             std::fabs(__bfloat162float(hbt[j * k + l])));
    }
    worst = std::max(worst, std::fabs(c[i * n + j] - ref) / (mag * 2.0 * k * 0x1p-24 + 1e-30));
  }
  const bool ok = worst <= 1.0;
  std::printf("bf16 GEMM %lldx%lldx%lld, then C += 0.5 A B^T: %s (worst error %.2f of the fp32 "
              "accumulation bound, 512 sampled entries)\n",
              m, n, k, ok ? "correct" : "WRONG", worst);
  if (auto v = cufuse::gemm_chosen_variant(A, B, C)) {
    std::printf("variant for A B: %s\n", v->c_str());
  }
  return ok ? 0 : 1;
}
