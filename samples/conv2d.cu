// cufuse::conv2d: a 3x3 convolution with stride 2 over an NHWC image batch, with its bias and
// ReLU applied in the convolution's store (one kernel), checked against a CPU loop.
#include <cufuse/conv.cuh>
#include <cufuse/memory/device.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

int main() {
  if (!cufuse::device_available()) {
    std::printf("no CUDA device found: the conv2d sample needs a GPU\n");
    return 0;
  }
  using cufuse::index_t;
  const index_t n = 2, h = 15, w = 17, c = 12, k = 20;
  const cufuse::conv2d_params prm{.stride = {2, 2}, .padding = {1, 1}};
  const auto [p, q] = cufuse::conv2d_output_size(h, w, 3, 3, prm); // 8 x 9

  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> hx(std::size_t(n * h * w * c)), hw(std::size_t(k * 3 * 3 * c));
  std::vector<float> hb(static_cast<std::size_t>(k));
  for (std::vector<float>* v : {&hx, &hw, &hb}) {
    for (float& e : *v) {
      e = u(rng);
    }
  }
  cufuse::tensor<float, 4> x({n, h, w, c}), wt({k, 3, 3, c}), y({n, p, q, k});
  cufuse::tensor<float, 1> bias({k});
  x.upload(hx);
  wt.upload(hw);
  bias.upload(hb);

  cufuse::conv2d(x, wt, y, prm, cufuse::relu(cufuse::acc + bias));
  const std::vector<float> got = y.download();

  std::size_t bad = 0;
  for (index_t b = 0; b < n; ++b) {
    for (index_t i = 0; i < p; ++i) {
      for (index_t j = 0; j < q; ++j) {
        for (index_t o = 0; o < k; ++o) {
          double s = hb[std::size_t(o)];
          for (index_t fr = 0; fr < 3; ++fr) {
            for (index_t fs = 0; fs < 3; ++fs) {
              const index_t hh = i * 2 - 1 + fr, ww = j * 2 - 1 + fs;
              if (hh < 0 || hh >= h || ww < 0 || ww >= w) {
                continue;
              }
              for (index_t ch = 0; ch < c; ++ch) {
                s += double(hx[std::size_t(((b * h + hh) * w + ww) * c + ch)]) *
                     hw[std::size_t(((o * 3 + fr) * 3 + fs) * c + ch)];
              }
            }
          }
          const double want = s > 0 ? s : 0.0;
          const double err = std::fabs(got[std::size_t(((b * p + i) * q + j) * k + o)] - want);
          bad += !(err <= 1e-4 * (1.0 + std::fabs(want)));
        }
      }
    }
  }
  std::printf("conv2d 3x3 stride 2, N %lld %lldx%lld C %lld -> %lldx%lld K %lld, bias + ReLU "
              "fused: %s (%zu mismatches vs CPU)\n",
              static_cast<long long>(n), static_cast<long long>(h), static_cast<long long>(w),
              static_cast<long long>(c), static_cast<long long>(p), static_cast<long long>(q),
              static_cast<long long>(k), bad == 0 ? "correct" : "WRONG", bad);
  return bad == 0 ? 0 : 1;
}
