// A transformer MLP block in bf16 with cufuse, in three kernels:
//
//   y = x + W2 · gelu_tanh(W1 · layer_norm(x) + b1) + b2
//
//   xn = layer_norm(x, g, beta)                          one row kernel (reductions fused)
//   h  = gemm(xn, W1^T) with epilogue gelu_tanh(acc + b1)  bias + GELU in the GEMM's store
//   y  = gemm(h, W2^T)  with epilogue acc + b2 + x          bias + residual in the GEMM's store
//
// W1 [h, d] and W2 [d, h] are stored as PyTorch's nn.Linear weights. Checked against a CPU loop
// (double precision, with the bf16 roundings of xn and h the GPU makes). Needs a GPU; build for
// sm_90a to run the Hopper (wgmma) kernels of the fused GEMMs.
#include <cufuse/cufuse.cuh>
#include <cufuse/gemm.cuh>

#include <cuda_bf16.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

using bf16 = __nv_bfloat16;
using cufuse::index_t;

float round_bf16(double x) { return __bfloat162float(__float2bfloat16_rn(float(x))); }

std::vector<bf16> random_bf16(std::size_t n, float scale, std::mt19937& rng,
                              std::vector<float>& values) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<bf16> out(n);
  values.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = __float2bfloat16_rn(u(rng));
    values[i] = __bfloat162float(out[i]);
  }
  return out;
}

/// The block, as the application would call it.
void mlp_block(const cufuse::tensor<bf16, 2>& x, const cufuse::tensor<bf16, 1>& g,
               const cufuse::tensor<bf16, 1>& beta, const cufuse::tensor<bf16, 2>& w1,
               const cufuse::tensor<bf16, 1>& b1, const cufuse::tensor<bf16, 2>& w2,
               const cufuse::tensor<bf16, 1>& b2, cufuse::tensor<bf16, 2>& xn,
               cufuse::tensor<bf16, 2>& h, cufuse::tensor<bf16, 2>& y) {
  xn = cufuse::layer_norm(x, g, beta, 1e-5f);
  cufuse::gemm(xn, cufuse::transpose(w1.view()), h, cufuse::gelu_tanh(cufuse::acc + b1));
  cufuse::gemm(h, cufuse::transpose(w2.view()), y, cufuse::acc + b2 + x);
}

} // namespace

int main() {
  if (!cufuse::device_available()) {
    std::printf("no CUDA device found: the MLP block sample needs a GPU\n");
    return 0;
  }
  const index_t tokens = 384, d = 256, hid = 1024;
  std::mt19937 rng(5);
  std::vector<float> hx, hg, hbeta, hw1, hb1, hw2, hb2;
  cufuse::tensor<bf16, 2> x({tokens, d}), w1({hid, d}), w2({d, hid});
  cufuse::tensor<bf16, 1> g({d}), beta({d}), b1({hid}), b2({d});
  x.upload(random_bf16(std::size_t(tokens * d), 2.0f, rng, hx));
  g.upload(random_bf16(std::size_t(d), 1.0f, rng, hg));
  beta.upload(random_bf16(std::size_t(d), 0.5f, rng, hbeta));
  w1.upload(random_bf16(std::size_t(hid * d), 0.1f, rng, hw1));
  b1.upload(random_bf16(std::size_t(hid), 0.5f, rng, hb1));
  w2.upload(random_bf16(std::size_t(d * hid), 0.05f, rng, hw2));
  b2.upload(random_bf16(std::size_t(d), 0.5f, rng, hb2));
  cufuse::tensor<bf16, 2> xn({tokens, d}), h({tokens, hid}), y({tokens, d});

  mlp_block(x, g, beta, w1, b1, w2, b2, xn, h, y);
  const std::vector<bf16> got = y.download();

  // The reference: the same roundings (xn and h are bf16 tensors), arithmetic in double.
  std::size_t bad = 0;
  double worst = 0;
  std::vector<float> rn(static_cast<std::size_t>(d)), rh(static_cast<std::size_t>(hid));
  for (index_t t = 0; t < tokens; ++t) {
    const float* xr = &hx[std::size_t(t * d)];
    double mu = 0, var = 0;
    for (index_t j = 0; j < d; ++j) {
      mu += xr[j];
    }
    mu /= double(d);
    for (index_t j = 0; j < d; ++j) {
      var += (xr[j] - mu) * (xr[j] - mu);
    }
    const double rstd = 1.0 / std::sqrt(var / double(d) + 1e-5);
    for (index_t j = 0; j < d; ++j) {
      rn[std::size_t(j)] =
          round_bf16((xr[j] - mu) * rstd * hg[std::size_t(j)] + hbeta[std::size_t(j)]);
    }
    for (index_t o = 0; o < hid; ++o) {
      double s = hb1[std::size_t(o)];
      for (index_t j = 0; j < d; ++j) {
        s += double(rn[std::size_t(j)]) * hw1[std::size_t(o * d + j)];
      }
      rh[std::size_t(o)] =
          round_bf16(0.5 * s * (1.0 + std::tanh(0.7978845608028654 * (s + 0.044715 * s * s * s))));
    }
    for (index_t o = 0; o < d; ++o) {
      double s = hb2[std::size_t(o)] + xr[o];
      for (index_t j = 0; j < hid; ++j) {
        s += double(rh[std::size_t(j)]) * hw2[std::size_t(o * hid + j)];
      }
      const double err = std::fabs(__bfloat162float(got[std::size_t(t * d + o)]) - s);
      // bf16 output (2^-8 relative) and the rare bf16 rounding of xn / h that lands on the
      // other side of a tie in fp32: a small absolute allowance.
      const double tol = 0x1p-7 * std::fabs(s) + 2e-2;
      worst = std::fmax(worst, err / tol);
      bad += !(err <= tol);
    }
  }
  std::printf("transformer MLP block, bf16, %lld tokens, d %lld, hidden %lld: %s (%zu mismatches "
              "vs CPU; worst error %.2f of the tolerance)\n",
              static_cast<long long>(tokens), static_cast<long long>(d),
              static_cast<long long>(hid), bad == 0 ? "correct" : "WRONG", bad, worst);
  return bad == 0 ? 0 : 1;
}
