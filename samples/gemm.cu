// GEMM sample: C = A B with bf16 inputs and an fp32 result, then C2 = 0.5 A B^T + C2 through a
// transposed view; then the same A B in fp32 on TF32 tensor cores (inputs cut to TF32: the low
// 13 mantissa bits dropped, in every TF32 variant). Sampled entries are checked against
// double-precision CPU loops. Then the TF32 GEMM on a chosen variant (gemm_options::variant):
// the mma.sync kernel a pre-Hopper GPU would run, checked against the same bound. Last, the TF32
// GEMM again on at most 8 SMs (gemm_options::sm_count, leaving the rest of the GPU to other
// streams): the same result, bit for bit.
// Set CUFUSE_TUNE_MODE=online to let the bandit pick the variant during the calls.
#include <cufuse/cufuse.cuh>
#include <cufuse/gemm.cuh>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
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

  // fp32 operands on TF32 tensor cores: each product carries up to 2 x 2^-10 relative error
  // from the dropped input bits, on top of fp32 accumulation.
  std::vector<float> fa(m * k), fb(k * n);
  for (auto& x : fa) {
    x = u(rng);
  }
  for (auto& x : fb) {
    x = u(rng);
  }
  cufuse::tensor<float, 2> A32({m, k}), B32({k, n}), C32({m, n});
  A32.upload(fa);
  B32.upload(fb);
  cufuse::gemm_options tf32;
  tf32.math = cufuse::gemm_math::tf32;
  cufuse::gemm(A32, B32, C32, 1.0f, 0.0f, cufuse::current_stream(), tf32);
  const std::vector<float> c32 = C32.download();
  // Worst sampled error of a TF32 result, as a fraction of the TF32 bound.
  auto tf32_error = [&](const std::vector<float>& r) {
    double worst = 0;
    for (int s = 0; s < 512; ++s) {
      const long long i = ri(rng), j = rj(rng);
      double ref = 0, mag = 0;
      for (long long l = 0; l < k; ++l) {
        ref += double(fa[i * k + l]) * fb[l * n + j];
        mag += std::fabs(double(fa[i * k + l]) * fb[l * n + j]);
      }
      worst = std::max(worst, std::fabs(r[i * n + j] - ref) /
                                  (mag * (2.0 * k * 0x1p-24 + 0x1p-9) + 1e-30));
    }
    return worst;
  };
  const double worst32 = tf32_error(c32);
  const bool ok32 = worst32 <= 1.0;
  std::printf("fp32 GEMM on TF32 tensor cores: %s (worst error %.2f of the TF32 bound)\n",
              ok32 ? "correct" : "WRONG", worst32);
  if (auto v = cufuse::gemm_chosen_variant(A32, B32, C32, tf32)) {
    std::printf("variant for the TF32 A B: %s\n", v->c_str());
  }

  // A chosen variant instead of the tuner's pick: the mma.sync (sm_80+) TF32 kernel, which runs
  // this NN product as C^T = B^T A^T. An unknown name, or one that cannot run this problem or
  // GPU, throws cufuse::error naming why.
  cufuse::gemm_options pinned = tf32;
  pinned.variant = "sm80_tf32_mma_128x256x32_w2x4_s3";
  bool ok_pinned = true;
  try {
    cufuse::tensor<float, 2> Cp({m, n});
    cufuse::gemm(A32, B32, Cp, 1.0f, 0.0f, cufuse::current_stream(), pinned);
    const double worst_pinned = tf32_error(Cp.download());
    ok_pinned = worst_pinned <= 1.0;
    std::printf("the same on %s: %s (worst error %.2f of the TF32 bound)\n", pinned.variant.c_str(),
                ok_pinned ? "correct" : "WRONG", worst_pinned);
  } catch (const cufuse::error& e) {
    std::printf("%s not run here: %s\n", pinned.variant.c_str(), e.what());
  }

  // The persistent (Hopper wgmma) variants spread over at most sm_count SMs; the others ignore
  // it. Each output tile is computed the same way either way.
  cufuse::gemm_options narrow = tf32;
  narrow.sm_count = 8;
  cufuse::tensor<float, 2> C8({m, n});
  cufuse::gemm(A32, B32, C8, 1.0f, 0.0f, cufuse::current_stream(), narrow);
  const bool same = C8.download() == c32;
  std::printf("the same TF32 GEMM on at most 8 SMs: %s\n", same ? "identical" : "DIFFERENT");

  // The tuning API (what cufuse-tune uses): the call as a type-erased problem, the variants that
  // can run it, one timed, and the result of running it through the API checked again.
  const cufuse::gemm_problem prob = cufuse::tuning::problem(A32, B32, C8, 1.0f, 0.0f, tf32);
  const std::vector<std::string> names = cufuse::tuning::variants(prob, tf32);
  const double seconds =
      cufuse::tuning::time(prob, names.front(), cufuse::current_stream(), 3, tf32);
  cufuse::gemm_options first = tf32;
  first.variant = names.front();
  C8.fill(-1.0f); // poisoned, so that a run that wrote nothing fails
  cufuse::tuning::run(prob, cufuse::current_stream(), first);
  const bool ok_api = tf32_error(C8.download()) <= 1.0;
  std::printf("tuning API: key %s, %zu variants; %s: %.1f us, %s\n",
              cufuse::tuning::key(prob).c_str(), names.size(), names.front().c_str(), seconds * 1e6,
              ok_api ? "correct" : "WRONG");
  return ok && ok32 && ok_pinned && same && ok_api ? 0 : 1;
}
