// cufuse layer_norm, a training forward pass: Y = layer_norm(X, w, b) together with the per-row
// mean and rstd (1 / sqrt(var + eps)) that the backward pass needs, as ONE kernel through
// tie / pack. The mean and the variance are ordinary reductions; the row stays on chip between
// them. Checked against a double-precision CPU loop. Without a GPU it runs on host tensors.
#include <cufuse/cufuse.cuh>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

template <class Space>
int run(cufuse::index_t rows, cufuse::index_t cols) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<float> x(static_cast<std::size_t>(rows * cols)), w(static_cast<std::size_t>(cols)),
      b(static_cast<std::size_t>(cols));
  for (auto* v : {&x, &w, &b}) {
    for (auto& e : *v) {
      e = u(rng);
    }
  }
  const float eps = 1e-5f;
  cufuse::tensor<float, 2, Space> X({rows, cols}), Y({rows, cols});
  cufuse::tensor<float, 2, Space> mean({rows, 1}), rstd({rows, 1}); // keepdim shapes
  cufuse::tensor<float, 1, Space> W({cols}), B({cols});
  X.upload(x);
  W.upload(w);
  B.upload(b);

  // The forward pass, three outputs, one kernel (on the GPU):
  const auto mu = cufuse::mean(X, -1, cufuse::keepdim);
  const auto centred = X - mu;
  const auto r = cufuse::rsqrt(cufuse::mean(centred * centred, -1, cufuse::keepdim) + eps);
  cufuse::tie(Y, mean, rstd) = cufuse::pack(centred * r * W + B, mu, r);

  // Inference needs only Y: the convenience function is the same expression.
  cufuse::tensor<float, 2, Space> Y2({rows, cols});
  Y2 = cufuse::layer_norm(X, W, B, eps);

  const std::vector<float> y = Y.download(), y2 = Y2.download(), m = mean.download(),
                           s = rstd.download();
  auto close = [](double got, double want) {
    return std::fabs(got - want) <= 1e-4 * (1.0 + std::fabs(want));
  };
  std::size_t bad = 0;
  for (cufuse::index_t i = 0; i < rows; ++i) {
    double mu_ref = 0, var = 0;
    for (cufuse::index_t j = 0; j < cols; ++j) {
      mu_ref += x[std::size_t(i * cols + j)];
    }
    mu_ref /= double(cols);
    for (cufuse::index_t j = 0; j < cols; ++j) {
      const double d = x[std::size_t(i * cols + j)] - mu_ref;
      var += d * d;
    }
    var /= double(cols); // no correction, as PyTorch's layer_norm
    const double rstd_ref = 1.0 / std::sqrt(var + eps);
    bad += !close(m[std::size_t(i)], mu_ref) + !close(s[std::size_t(i)], rstd_ref);
    for (cufuse::index_t j = 0; j < cols; ++j) {
      const std::size_t k = std::size_t(i * cols + j);
      const double want = (double(x[k]) - mu_ref) * rstd_ref * double(w[std::size_t(j)]) +
                          double(b[std::size_t(j)]);
      bad += !close(y[k], want) + !close(y2[k], want);
    }
  }
  std::printf("layer_norm forward [%lld, %lld] with mean and rstd: %s (%zu mismatches vs CPU)\n",
              static_cast<long long>(rows), static_cast<long long>(cols),
              bad == 0 ? "correct" : "WRONG", bad);
  return bad == 0 ? 0 : 1;
}

} // namespace

int main() {
  if (!cufuse::device_available()) {
    std::printf("no CUDA device found: running layer_norm on host tensors (CPU)\n");
    return run<cufuse::host_space>(64, 768);
  }
  return run<cufuse::device_space>(8192, 1024);
}
