// A ResNet basic block in bf16, inference, with cufuse: two convolutions and nothing else.
//
//   y = relu(bn2(conv2(relu(bn1(conv1(x))))) + x)
//
// Batch norm is folded into per-channel scale and shift (scale = gamma / sqrt(var + eps), shift =
// beta - mean * scale) and applied, with the ReLU and the residual, in each convolution's store:
//
//   h = conv2d(x, w1, 3x3, padding 1)  with epilogue relu(acc * s1 + t1)
//   y = conv2d(h, w2, 3x3, padding 1)  with epilogue relu(acc * s2 + t2 + x)
//
// Checked against a CPU loop (double precision, with the bf16 rounding of h the GPU makes).
// Needs a GPU.
#include <cufuse/conv.cuh>
#include <cufuse/memory/device.hpp>

#include <cuda_bf16.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

using bf16 = __nv_bfloat16;
using cufuse::index_t;

float round_bf16(double x) { return __bfloat162float(__float2bfloat16_rn(float(x))); }

template <int R>
std::vector<float> random_fill(cufuse::tensor<bf16, R>& t, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<bf16> v(static_cast<std::size_t>(t.size()));
  std::vector<float> values(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = __float2bfloat16_rn(u(rng));
    values[i] = __bfloat162float(v[i]);
  }
  t.upload(v);
  return values;
}

std::vector<float> random_fill(cufuse::tensor<float, 1>& t, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(t.size()));
  for (float& x : v) {
    x = u(rng);
  }
  t.upload(v);
  return v;
}

/// The block, as the application would call it (batch norm folded into s1, t1, s2, t2).
void basic_block(const cufuse::tensor<bf16, 4>& x, const cufuse::tensor<bf16, 4>& w1,
                 const cufuse::tensor<float, 1>& s1, const cufuse::tensor<float, 1>& t1,
                 const cufuse::tensor<bf16, 4>& w2, const cufuse::tensor<float, 1>& s2,
                 const cufuse::tensor<float, 1>& t2, cufuse::tensor<bf16, 4>& h,
                 cufuse::tensor<bf16, 4>& y) {
  const cufuse::conv2d_params same{.padding = {1, 1}};
  using cufuse::acc;
  cufuse::conv2d(x, w1, h, same, cufuse::relu(acc * s1 + t1));
  cufuse::conv2d(h, w2, y, same, cufuse::relu(acc * s2 + t2 + x));
}

/// out[n, i, j, o] = sum over the 3x3 window (zero padded) and c of in * w, in double.
double conv_at(const std::vector<float>& in, const std::vector<float>& w, index_t hh, index_t ww,
               index_t c, index_t n, index_t i, index_t j, index_t o) {
  double s = 0;
  for (index_t fr = 0; fr < 3; ++fr) {
    for (index_t fs = 0; fs < 3; ++fs) {
      const index_t a = i - 1 + fr, b = j - 1 + fs;
      if (a < 0 || a >= hh || b < 0 || b >= ww) {
        continue;
      }
      for (index_t ch = 0; ch < c; ++ch) {
        s += double(in[std::size_t(((n * hh + a) * ww + b) * c + ch)]) *
             double(w[std::size_t(((o * 3 + fr) * 3 + fs) * c + ch)]);
      }
    }
  }
  return s;
}

} // namespace

int main() {
  if (!cufuse::device_available()) {
    std::printf("no CUDA device found: the ResNet block sample needs a GPU\n");
    return 0;
  }
  const index_t n = 2, hh = 14, ww = 14, c = 32;
  std::mt19937 rng(7);
  cufuse::tensor<bf16, 4> x({n, hh, ww, c}), w1({c, 3, 3, c}), w2({c, 3, 3, c});
  cufuse::tensor<float, 1> s1({c}), t1({c}), s2({c}), t2({c});
  const auto hx = random_fill(x, -1.0f, 1.0f, rng);
  const auto hw1 = random_fill(w1, -0.1f, 0.1f, rng);
  const auto hw2 = random_fill(w2, -0.1f, 0.1f, rng);
  const auto hs1 = random_fill(s1, 0.5f, 1.5f, rng);
  const auto ht1 = random_fill(t1, -0.2f, 0.2f, rng);
  const auto hs2 = random_fill(s2, 0.5f, 1.5f, rng);
  const auto ht2 = random_fill(t2, -0.2f, 0.2f, rng);
  cufuse::tensor<bf16, 4> h({n, hh, ww, c}), y({n, hh, ww, c});

  basic_block(x, w1, s1, t1, w2, s2, t2, h, y);
  const std::vector<bf16> got = y.download();

  std::vector<float> rh(hx.size());
  for (index_t b = 0; b < n; ++b) {
    for (index_t i = 0; i < hh; ++i) {
      for (index_t j = 0; j < ww; ++j) {
        for (index_t o = 0; o < c; ++o) {
          const double v =
              conv_at(hx, hw1, hh, ww, c, b, i, j, o) * hs1[std::size_t(o)] + ht1[std::size_t(o)];
          rh[std::size_t(((b * hh + i) * ww + j) * c + o)] = round_bf16(v > 0 ? v : 0.0);
        }
      }
    }
  }
  std::size_t bad = 0;
  double worst = 0;
  for (index_t b = 0; b < n; ++b) {
    for (index_t i = 0; i < hh; ++i) {
      for (index_t j = 0; j < ww; ++j) {
        for (index_t o = 0; o < c; ++o) {
          const std::size_t e = std::size_t(((b * hh + i) * ww + j) * c + o);
          const double v = conv_at(rh, hw2, hh, ww, c, b, i, j, o) * hs2[std::size_t(o)] +
                           ht2[std::size_t(o)] + hx[e];
          const double want = v > 0 ? v : 0.0;
          const double err = std::fabs(__bfloat162float(got[e]) - want);
          // bf16 output (2^-8 relative) and the rare rounding of h on the other side of a tie.
          const double tol = 0x1p-7 * std::fabs(want) + 2e-2;
          worst = std::fmax(worst, err / tol);
          bad += !(err <= tol);
        }
      }
    }
  }
  std::printf("ResNet basic block, bf16, N %lld, %lldx%lld, C %lld: %s (%zu mismatches vs CPU; "
              "worst error %.2f of the tolerance)\n",
              static_cast<long long>(n), static_cast<long long>(hh), static_cast<long long>(ww),
              static_cast<long long>(c), bad == 0 ? "correct" : "WRONG", bad, worst);
  return bad == 0 ? 0 : 1;
}
