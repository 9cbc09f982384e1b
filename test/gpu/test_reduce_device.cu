// What only a GPU can show about reductions: softmax / layer_norm / rms_norm and the row forms
// are ONE kernel (graph capture); var of 2^28 values around 1e4; the 64-bit path past 2^31
// elements (through a broadcast); rows longer than shared memory holds; a captured pipeline
// replayed 100 times with new inputs; reductions in a user's kernel.
#include "../support/graph_count.cuh"
#include "../support/harness.cuh"

#include <cmath>

#define CHECK_CUDA(call) REQUIRE((call) == cudaSuccess)

namespace {

using cufuse::index_t;

std::vector<float> rnd(std::size_t n, float lo = -2, float hi = 2) {
  std::mt19937_64 rng(cft::next_seed());
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = u(rng);
  }
  return v;
}

/// The mean of v and the sum of squared deviations from it, two passes in double.
struct moments_ref {
  double mean, m2;
};
moments_ref moments_of(const std::vector<float>& v) {
  double mean = 0;
  for (float x : v) {
    mean += x;
  }
  mean /= double(v.size());
  double m2 = 0;
  for (float x : v) {
    m2 += (double(x) - mean) * (double(x) - mean);
  }
  return {mean, m2};
}

template <class Expr>
__global__ void read_rows(Expr e, float* out, index_t rows, index_t cols) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < rows * cols) {
    out[i] = e(i / cols, i % cols);
  }
}

} // namespace

TEST_CASE("softmax, log_softmax, layer_norm, rms_norm, row forms: one kernel each",
          "[reduce_gpu]") {
  const index_t m = 300, n = 1000;
  cufuse::tensor<float, 2> X({m, n}), Y({m, n});
  cufuse::tensor<float, 1> w({n}), b({n}), r({m});
  cufuse::tensor<__nv_bfloat16, 2> H({m, n}), G({m, n});
  X.upload(rnd(std::size_t(m * n)));
  w.upload(rnd(std::size_t(n)));
  b.upload(rnd(std::size_t(n)));
  H = X;
  CHECK_CUDA(cudaDeviceSynchronize());
  auto one = [&](const char* what, auto&& body) {
    for (int rep = 0; rep < 2; ++rep) {
      const auto [nodes, kernels] = cft::count_kernels(body);
      INFO(what);
      CHECK(nodes == 1);
      CHECK(kernels == 1);
    }
  };
  one("softmax", [&] { Y = cufuse::softmax(X, -1); });
  one("softmax bf16", [&] { G = cufuse::softmax(H, -1); });
  one("log_softmax", [&] { Y = cufuse::log_softmax(X, -1); });
  one("layer_norm", [&] { Y = cufuse::layer_norm(X, w, b, 1e-5f); });
  one("layer_norm bf16", [&] { G = cufuse::layer_norm(H, w, b, 1e-5f); });
  one("rms_norm", [&] { Y = cufuse::rms_norm(X, w, 1e-6f); });
  one("X - amax(X, -1, keepdim)", [&] { Y = X - cufuse::amax(X, -1, cufuse::keepdim); });
  one("exp(X) / sum(exp(X), -1, keepdim)",
      [&] { Y = cufuse::exp(X) / cufuse::sum(cufuse::exp(X), -1, cufuse::keepdim); });
  one("sum(X * 2, 1)", [&] { r = cufuse::sum(X * 2, 1); });
  one("amax(X, -1)", [&] { r = cufuse::amax(X, -1); });
  // A full reduction splits over blocks: the partial kernel and the merge (plus the workspace).
  const auto [nodes, kernels] = cft::count_kernels([&] {
    cufuse::tensor<float, 0> d;
    d = cufuse::sum(X * X);
  });
  CHECK(kernels == 2);
  (void)nodes;
}

TEST_CASE("the row kernel computes identical reductions once per row", "[reduce_gpu]") {
  const index_t m = 64, n = 1000;
  cufuse::tensor<float, 2> X({m, n}), Z({m, n}), Y({m, n});
  cufuse::tensor<float, 1> w({n}), b({n});
  X.upload(rnd(std::size_t(m * n)));
  Z.upload(rnd(std::size_t(m * n)));
  w.upload(rnd(std::size_t(n)));
  b.upload(rnd(std::size_t(n)));
  auto passes = [&](const char* what, auto&& body, int want) {
    cufuse::detail::rows_last_passes.store(-1);
    body();
    CHECK_CUDA(cudaDeviceSynchronize());
    INFO(what);
    CHECK(cufuse::detail::rows_last_passes.load() == want);
  };
  passes(
      "softmax: amax, then the sum", [&] { Y = cufuse::softmax(X, -1); }, 2);
  passes(
      "layer_norm: mean(x) three times, then the variance",
      [&] { Y = cufuse::layer_norm(X, w, b, 1e-5f); }, 2);
  passes(
      "rms_norm", [&] { Y = cufuse::rms_norm(X, w, 1e-6f); }, 1);
  passes(
      "the same sum written twice",
      [&] { Y = X * cufuse::sum(X, -1, cufuse::keepdim) + cufuse::sum(X, -1, cufuse::keepdim); },
      1);
  // Not identical: other operands, other scalars, another reducer.
  passes(
      "sums of X and of Z",
      [&] { Y = X * cufuse::sum(X, -1, cufuse::keepdim) + cufuse::sum(Z, -1, cufuse::keepdim); },
      2);
  passes(
      "sums of X * 2 and of X * 3",
      [&] {
        Y = X * cufuse::sum(X * 2, -1, cufuse::keepdim) + cufuse::sum(X * 3, -1, cufuse::keepdim);
      },
      2);
  passes(
      "sum and mean of X",
      [&] { Y = X + cufuse::sum(X, -1, cufuse::keepdim) - cufuse::mean(X, -1, cufuse::keepdim); },
      2);
  // And the values: the shared reduction feeds every place it appears.
  Y = X * cufuse::sum(X, -1, cufuse::keepdim) + cufuse::sum(X, -1, cufuse::keepdim);
  const auto x = X.download(), y = Y.download();
  int bad = 0;
  for (index_t i = 0; i < m; ++i) {
    double s = 0;
    for (index_t j = 0; j < n; ++j) {
      s += x[std::size_t(i * n + j)];
    }
    for (index_t j = 0; j < n; ++j) {
      const double want = x[std::size_t(i * n + j)] * s + s;
      bad += !(std::fabs(y[std::size_t(i * n + j)] - want) <= 1e-4 * (1 + std::fabs(want)));
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("reductions of the last axis without keepdim run as the row kernel, against loops",
          "[reduce_gpu]") {
  // At least 4 rows per SM of 1025 to 12288 columns: the row kernel of the keepdim form.
  const index_t m = 700, n = 1500;
  std::vector<float> x = rnd(std::size_t(m * 2 * n));
  x[std::size_t(5 * 2 * n + 2 * 17)] = std::numeric_limits<float>::quiet_NaN(); // row 5, col 17
  cufuse::tensor<float, 2> X2({m, 2 * n});
  X2.upload(x);
  cufuse::tensor<__nv_bfloat16, 2> H2({m, 2 * n});
  H2 = X2;
  const auto h = H2.download();
  cufuse::tensor<float, 2> R3({m, 3});
  cufuse::tensor<std::int64_t, 1> a({m});
  // Column j of row i of the operand: contiguous (step 1) or every other column (step 2).
  auto at = [&](bool bf, int step, index_t i, index_t j) {
    const std::size_t k = std::size_t(i * 2 * n + j * step);
    return bf ? double(float(h[k])) : double(x[k]);
  };
  for (const bool bf : {false, true}) {
    for (const int step : {1, 2}) {
      auto run = [&](const char* what, auto&& assign, auto&& ref, double tol) {
        R3.fill(std::numeric_limits<float>::quiet_NaN()); // poison
        cufuse::detail::rows_last_passes.store(-1);
        auto r = cufuse::slice(R3, cufuse::all, 1); // a strided destination
        assign(r);
        CHECK_CUDA(cudaDeviceSynchronize());
        INFO(what << (bf ? " bf16" : " fp32") << ", operand step " << step);
        CHECK(cufuse::detail::rows_last_passes.load() == 1);
        const auto got = R3.download();
        int bad = 0;
        for (index_t i = 0; i < m; ++i) {
          const double want = ref(i), g = got[std::size_t(i * 3 + 1)];
          const bool ok =
              std::isnan(want) ? std::isnan(g) : std::fabs(g - want) <= tol * (1 + std::fabs(want));
          bad += !ok;
          bad += !std::isnan(got[std::size_t(i * 3)]) || !std::isnan(got[std::size_t(i * 3 + 2)]);
        }
        CHECK(bad == 0);
      };
      auto sum_of = [&](index_t i, auto f) {
        double t = 0;
        for (index_t j = 0; j < n; ++j) {
          t += f(at(bf, step, i, j));
        }
        return t;
      };
      auto with = [&](auto&& body) {
        if (bf) {
          body(cufuse::slice(H2, cufuse::all, cufuse::range(0, step * n, step)));
        } else {
          body(cufuse::slice(X2, cufuse::all, cufuse::range(0, step * n, step)));
        }
      };
      const double tol = bf ? 1.0 / 128 : 1e-5;
      with([&](auto X) {
        run(
            "sum", [&](auto r) { r = cufuse::sum(X, 1); },
            [&](index_t i) { return sum_of(i, [](double v) { return v; }); }, tol);
        run(
            "mean of X * X + 1", [&](auto r) { r = cufuse::mean(X * X + 1.0f, -1); },
            [&](index_t i) { return sum_of(i, [](double v) { return v * v + 1; }) / double(n); },
            tol);
        run(
            "amax (NaN in row 5)", [&](auto r) { r = cufuse::amax(X, -1); },
            [&](index_t i) {
              double b = -INFINITY;
              for (index_t j = 0; j < n; ++j) {
                const double v = at(bf, step, i, j);
                b = std::isnan(v) || std::isnan(b) ? NAN : std::max(b, v);
              }
              return b;
            },
            0.0);
        run(
            "var", [&](auto r) { r = cufuse::var(X, -1); },
            [&](index_t i) {
              const double mu = sum_of(i, [](double v) { return v; }) / double(n);
              return sum_of(i, [mu](double v) { return (v - mu) * (v - mu); }) / double(n - 1);
            },
            bf ? 1e-3 : 1e-5);
        // argmax: int64, the first index among ties, NaN wins
        std::vector<std::int64_t> poisoned(std::size_t(m), -7);
        a.upload(poisoned);
        cufuse::detail::rows_last_passes.store(-1);
        a = cufuse::argmax(X, -1);
        const auto got = a.download();
        INFO("argmax" << (bf ? " bf16" : " fp32") << ", operand step " << step);
        CHECK(cufuse::detail::rows_last_passes.load() == 1);
        int bad = 0;
        for (index_t i = 0; i < m; ++i) {
          index_t best = 0;
          for (index_t j = 1; j < n; ++j) {
            const double v = at(bf, step, i, j), b = at(bf, step, i, best);
            if (!std::isnan(b) && (std::isnan(v) || v > b)) {
              best = j;
            }
          }
          bad += got[std::size_t(i)] != std::int64_t(best);
        }
        CHECK(bad == 0);
      });
    }
  }
}

TEST_CASE("var of 2^28 values around 1e4 is accurate to 1e-6 relative", "[reduce_gpu][large]") {
  const index_t n = index_t(1) << 28;
  std::vector<float> v(static_cast<std::size_t>(n));
  std::mt19937_64 rng(cft::next_seed());
  std::normal_distribution<double> g(1e4, 1.0);
  for (auto& x : v) {
    x = float(g(rng));
  }
  const auto [mean, m2] = moments_of(v);
  const double ref = m2 / double(n - 1);
  cufuse::tensor<float, 1> X{cufuse::extents<1>(n)};
  X.upload(v);
  const double got = cufuse::item(cufuse::var(X));
  INFO("var got " << got << " expected " << ref);
  CHECK(std::fabs(got - ref) <= 1e-6 * ref);
  const double gstd = cufuse::item(cufuse::std(X));
  CHECK(std::fabs(gstd - std::sqrt(ref)) <= 1e-6 * std::sqrt(ref));
  const double gmean = cufuse::item(cufuse::mean(X));
  CHECK(std::fabs(gmean - mean) <= 1e-6 * mean);
}

TEST_CASE("var and std of values far from zero, with outliers, against double loops",
          "[reduce_gpu]") {
  // The flat kernel folds each step of values in float around the step's mean: outliers (a
  // step's values far apart) and a large common offset must not cost accuracy; an odd count
  // leaves a tail for the element-wise path.
  const index_t n = (index_t(1) << 22) + 3;
  std::vector<float> v(static_cast<std::size_t>(n));
  std::mt19937_64 rng(cft::next_seed());
  std::normal_distribution<double> g(1e6, 1.0);
  std::uniform_real_distribution<double> far(1e3, 1e5);
  std::uniform_int_distribution<int> pick(0, 96);
  for (auto& x : v) {
    x = float(g(rng));
    if (pick(rng) == 0) {
      x += float(pick(rng) % 2 == 0 ? far(rng) : -far(rng));
    }
  }
  const double m2 = moments_of(v).m2;
  cufuse::tensor<float, 1> X{cufuse::extents<1>(n)};
  X.upload(v);
  for (double corr : {1.0, 0.0}) {
    const double ref = m2 / (double(n) - corr);
    const double got = cufuse::item(cufuse::var(X, cufuse::correction{corr}));
    INFO("correction " << corr << ": var got " << got << " expected " << ref);
    CHECK(std::fabs(got - ref) <= 1e-6 * ref);
    const double gs = cufuse::item(cufuse::std(X, cufuse::correction{corr}));
    CHECK(std::fabs(gs - std::sqrt(ref)) <= 1e-6 * std::sqrt(ref));
  }
}

TEST_CASE("reductions past 2^31 elements use 64-bit indices", "[reduce_gpu][large]") {
  // [65536, 1] + [1, 32769] broadcasts to 2^31 + 2^16 elements without storing them
  const index_t rows = 65536, cols = 32769;
  cufuse::tensor<std::int32_t, 2> A({rows, index_t(1)}), B({index_t(1), cols});
  std::vector<std::int32_t> a(static_cast<std::size_t>(rows)), bb(static_cast<std::size_t>(cols));
  std::mt19937_64 rng(cft::next_seed());
  std::uniform_int_distribution<int> u(-1000, 1000);
  std::int64_t sa = 0, sb = 0;
  for (auto& x : a) {
    sa += (x = u(rng));
  }
  for (auto& x : bb) {
    sb += (x = u(rng));
  }
  A.upload(a);
  B.upload(bb);
  const std::int64_t total = cufuse::item(cufuse::sum(A + B));
  CHECK(total == cols * sa + rows * sb);
  cufuse::tensor<std::int64_t, 1> per_row({rows});
  per_row = cufuse::sum(A + B, 1);
  const auto got = per_row.download();
  index_t bad = 0;
  for (index_t i = 0; i < rows; ++i) {
    bad += got[std::size_t(i)] != cols * std::int64_t(a[std::size_t(i)]) + sb;
  }
  CHECK(bad == 0);
  cufuse::tensor<std::int64_t, 1> per_col({cols});
  per_col = cufuse::sum(A + B, 0);
  const auto gc = per_col.download();
  bad = 0;
  for (index_t j = 0; j < cols; ++j) {
    bad += gc[std::size_t(j)] != sa + rows * std::int64_t(bb[std::size_t(j)]);
  }
  CHECK(bad == 0);
}

TEST_CASE("rows longer than shared memory holds: softmax of 2^20 columns", "[reduce_gpu]") {
  const index_t m = 3, n = index_t(1) << 20;
  const auto v = rnd(std::size_t(m * n), -20, 20);
  cufuse::tensor<float, 2> X({m, n}), Y({m, n});
  X.upload(v);
  Y.fill(std::numeric_limits<float>::quiet_NaN());
  const auto [nodes, kernels] = cft::count_kernels([&] { Y = cufuse::softmax(X, -1); });
  CHECK(kernels == 1);
  (void)nodes;
  const auto got = Y.download();
  index_t bad = 0;
  for (index_t r = 0; r < m; ++r) {
    double mx = -INFINITY, s = 0;
    for (index_t j = 0; j < n; ++j) {
      mx = std::max(mx, double(v[std::size_t(r * n + j)]));
    }
    for (index_t j = 0; j < n; ++j) {
      s += std::exp(double(v[std::size_t(r * n + j)]) - mx);
    }
    for (index_t j = 0; j < n; ++j) {
      const double ref = std::exp(double(v[std::size_t(r * n + j)]) - mx) / s;
      bad += !(std::fabs(got[std::size_t(r * n + j)] - ref) <= 1e-5 * ref + 1e-12);
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("a captured pipeline replays 100 times with new inputs", "[reduce_gpu][graph]") {
  const index_t m = 64, n = 333;
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  {
    cufuse::stream_guard guard(s);
    cufuse::tensor<float, 2> X({m, n}), Y({m, n});
    cufuse::tensor<float, 1> r({n});
    cufuse::tensor<float, 0> total;
    auto g = cufuse::capture(s, [&] {
      Y = cufuse::softmax(X, -1);
      r = cufuse::sum(Y * X, 0);
      total = cufuse::sum(X);
    });
    index_t bad = 0;
    for (int rep = 0; rep < 100; ++rep) {
      const auto v = rnd(std::size_t(m * n), -4, 4);
      X.upload(v);
      g.launch(s);
      const auto y = Y.download();
      const auto rr = r.download();
      const double tot = total.download()[0];
      std::vector<double> col(std::size_t(n), 0.0);
      double t = 0;
      for (index_t i = 0; i < m; ++i) {
        double mx = -INFINITY, sum = 0;
        for (index_t j = 0; j < n; ++j) {
          mx = std::max(mx, double(v[std::size_t(i * n + j)]));
        }
        for (index_t j = 0; j < n; ++j) {
          sum += std::exp(double(v[std::size_t(i * n + j)]) - mx);
        }
        for (index_t j = 0; j < n; ++j) {
          const double x = v[std::size_t(i * n + j)];
          const double ref = std::exp(x - mx) / sum;
          bad += !(std::fabs(y[std::size_t(i * n + j)] - ref) <= 1e-5 * ref + 1e-7);
          col[std::size_t(j)] += ref * x;
          t += x;
        }
      }
      for (index_t j = 0; j < n; ++j) {
        bad += !(std::fabs(rr[std::size_t(j)] - col[std::size_t(j)]) <= 1e-4);
      }
      bad += !(std::fabs(tot - t) <= 1e-6 * 4 * double(m * n));
    }
    CHECK(bad == 0);
  }
  CHECK_CUDA(cudaStreamDestroy(s));
}

TEST_CASE("a reduction in a user's kernel evaluates per element", "[reduce_gpu]") {
  const index_t m = 7, n = 50;
  const auto v = rnd(std::size_t(m * n));
  cufuse::tensor<float, 2> X({m, n});
  X.upload(v);
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, sizeof(float) * std::size_t(m * n)));
  const auto e = X - cufuse::mean(X, -1, cufuse::keepdim);
  read_rows<<<unsigned((m * n + 127) / 128), 128>>>(e, out, m, n);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> got(std::size_t(m * n));
  CHECK_CUDA(cudaMemcpy(got.data(), out, sizeof(float) * got.size(), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(out));
  index_t bad = 0;
  for (index_t i = 0; i < m; ++i) {
    double mean = 0;
    for (index_t j = 0; j < n; ++j) {
      mean += v[std::size_t(i * n + j)];
    }
    mean /= double(n);
    for (index_t j = 0; j < n; ++j) {
      bad += !(std::fabs(got[std::size_t(i * n + j)] - (v[std::size_t(i * n + j)] - mean)) <= 1e-5);
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("column reductions: V results per thread, many splits, broadcasts, misaligned views",
          "[reduce_gpu]") {
  // [40000, 8]: one block column, hundreds of splits (a block merges each result's states).
  const index_t m = 40000, n = 8;
  auto v = rnd(std::size_t(m * n));
  v[std::size_t(100 * n + 3)] = 10.0f; // a tie across splits: the first index wins
  v[std::size_t(30000 * n + 3)] = 10.0f;
  const auto bv = rnd(std::size_t(n));
  cufuse::tensor<float, 2> X({m, n});
  cufuse::tensor<float, 1> bias({n}), r({n}), q({4});
  cufuse::tensor<std::int64_t, 1> a({n});
  X.upload(v);
  bias.upload(bv);
  auto col = [&](index_t j, index_t j0 = 0) {
    std::vector<double> c(static_cast<std::size_t>(m));
    for (index_t i = 0; i < m; ++i) {
      c[std::size_t(i)] = v[std::size_t(i * n + j + j0)];
    }
    return c;
  };
  auto near = [](double got, double ref, double scale) {
    return std::fabs(got - ref) <= 1e-5 * scale + 1e-6;
  };
  index_t bad = 0;
  r.fill(std::numeric_limits<float>::quiet_NaN());
  r = cufuse::sum(X + bias, 0);
  auto got = r.download();
  for (index_t j = 0; j < n; ++j) {
    double s = 0, mag = 0;
    for (double x : col(j)) {
      s += x + bv[std::size_t(j)];
      mag += std::fabs(x + bv[std::size_t(j)]);
    }
    bad += !near(got[std::size_t(j)], s, mag);
  }
  r.fill(std::numeric_limits<float>::quiet_NaN());
  r = cufuse::var(X, 0);
  got = r.download();
  for (index_t j = 0; j < n; ++j) {
    const auto c = col(j);
    double mean = 0, m2 = 0;
    for (double x : c) {
      mean += x;
    }
    mean /= double(m);
    for (double x : c) {
      m2 += (x - mean) * (x - mean);
    }
    bad += !near(got[std::size_t(j)], m2 / double(m - 1), m2 / double(m - 1));
  }
  a.fill(std::int64_t(-7));
  a = cufuse::argmax(X, 0);
  const auto ga = a.download();
  for (index_t j = 0; j < n; ++j) {
    const auto c = col(j);
    std::size_t best = 0;
    for (std::size_t i = 1; i < c.size(); ++i) {
      best = c[i] > c[best] ? i : best;
    }
    bad += ga[std::size_t(j)] != std::int64_t(best);
  }
  CHECK(ga[3] == 100);
  // A view starting one element in: not 16-byte aligned, so one result per thread.
  q.fill(std::numeric_limits<float>::quiet_NaN());
  q = cufuse::amax(cufuse::slice(X, cufuse::all, cufuse::range(1, 5)), 0);
  const auto gq = q.download();
  for (index_t j = 0; j < 4; ++j) {
    double mx = -INFINITY;
    for (double x : col(j, 1)) {
      mx = std::max(mx, x);
    }
    bad += gq[std::size_t(j)] != float(mx);
  }
  CHECK(bad == 0);

  // bf16 [6, 3000, 64], the middle axis: 8 results per thread, tens of splits per result.
  const index_t d0 = 6, d1 = 3000, d2 = 64;
  const auto tv = rnd(std::size_t(d0 * d1 * d2));
  std::vector<__nv_bfloat16> tb(tv.size());
  for (std::size_t i = 0; i < tv.size(); ++i) {
    tb[i] = __float2bfloat16(tv[i]);
  }
  cufuse::tensor<__nv_bfloat16, 3> T({d0, d1, d2});
  cufuse::tensor<float, 2> s({d0, d2});
  T.upload(tb);
  s.fill(std::numeric_limits<float>::quiet_NaN());
  s = cufuse::sum(cufuse::cast<float>(T) * 2.0f, 1);
  const auto gs = s.download();
  bad = 0;
  for (index_t i = 0; i < d0; ++i) {
    for (index_t k = 0; k < d2; ++k) {
      double ref = 0, mag = 0;
      for (index_t j = 0; j < d1; ++j) {
        const double x = 2.0 * double(__bfloat162float(tb[std::size_t((i * d1 + j) * d2 + k)]));
        ref += x;
        mag += std::fabs(x);
      }
      bad += !near(gs[std::size_t(i * d2 + k)], ref, mag);
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("column reductions with thousands of results and more than 32 splits each",
          "[reduce_gpu]") {
  // bf16 [9000, 2048] over axis 0: 8 block columns of 256 results, so on a large GPU about a
  // hundred splits per result, merged by a thread per result in groups held in registers (32
  // float sums, 8 var or argmax states at a time), in the pairwise order of the stack.
  const index_t m = 9000, n = 2048;
  const auto v = rnd(std::size_t(m * n), -1, 3);
  std::vector<__nv_bfloat16> h(v.size());
  std::vector<double> x(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    h[i] = __float2bfloat16(v[i]);
    x[i] = double(__bfloat162float(h[i]));
  }
  x[std::size_t(7 * n + 5)] = 7.0; // ties in column 5, far apart: the first index wins
  x[std::size_t(8500 * n + 5)] = 7.0;
  h[std::size_t(7 * n + 5)] = h[std::size_t(8500 * n + 5)] = __float2bfloat16(7.0f);
  cufuse::tensor<__nv_bfloat16, 2> X({m, n});
  X.upload(h);
  cufuse::tensor<float, 1> s({n}), w({n});
  cufuse::tensor<std::int64_t, 1> a({n});
  s.fill(std::numeric_limits<float>::quiet_NaN());
  w.fill(std::numeric_limits<float>::quiet_NaN());
  a.fill(std::int64_t(-7));
  s = cufuse::sum(X, 0);
  w = cufuse::var(X, 0);
  a = cufuse::argmax(X, 0);
  const auto gs = s.download(), gw = w.download();
  const auto ga = a.download();
  index_t bad = 0;
  for (index_t j = 0; j < n; ++j) {
    double sum = 0, mag = 0;
    std::size_t best = 0;
    for (index_t i = 0; i < m; ++i) {
      const double e = x[std::size_t(i * n + j)];
      sum += e;
      mag += std::fabs(e);
      best = e > x[best * std::size_t(n) + std::size_t(j)] ? std::size_t(i) : best;
    }
    const double mean = sum / double(m);
    double m2 = 0;
    for (index_t i = 0; i < m; ++i) {
      const double d = x[std::size_t(i * n + j)] - mean;
      m2 += d * d;
    }
    const double var = m2 / double(m - 1);
    bad += !(std::fabs(gs[std::size_t(j)] - sum) <= 1e-5 * mag + 1e-6);
    bad += !(std::fabs(gw[std::size_t(j)] - var) <= 1e-5 * var);
    bad += ga[std::size_t(j)] != std::int64_t(best);
  }
  CHECK(ga[5] == 7);
  CHECK(bad == 0);
}

TEST_CASE("long rows: a cluster of blocks shares each row", "[reduce_gpu]") {
  int major = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  // fp32 rows of 40000 columns: 160 KB staged per row, so 4 blocks of a cluster share it.
  const index_t m = 7, n = 40000;
  auto v = rnd(std::size_t(m * n), -8, 8);
  v[std::size_t(0 * n + 5)] = 9.0f; // row 0: a tie across blocks, the first index wins
  v[std::size_t(0 * n + 35000)] = 9.0f;
  v[std::size_t(1 * n + 39999)] = 9.5f; // row 1: the maximum in the last column
  const auto wv = rnd(std::size_t(n), 0.5f, 1.5f), bv = rnd(std::size_t(n));
  cufuse::tensor<float, 2> X({m, n}), Y({m, n}), mu({m, 1}), rstd({m, 1});
  cufuse::tensor<float, 1> w({n}), b({n});
  X.upload(v);
  w.upload(wv);
  b.upload(bv);
  auto at = [&](index_t i, index_t j) { return double(v[std::size_t(i * n + j)]); };
  auto poison = [&] { Y.fill(std::numeric_limits<float>::quiet_NaN()); };
  // Per row, in double: mean, biased variance, mean square, max, sum(exp(x - max)), argmax.
  struct row_stats {
    double mean = 0, var = 0, ms = 0, mx = -INFINITY, sexp = 0;
    index_t best = 0;
  };
  auto stats = [&](index_t i) {
    row_stats st;
    for (index_t j = 0; j < n; ++j) {
      st.mean += at(i, j);
      st.ms += at(i, j) * at(i, j);
      st.best = at(i, j) > at(i, st.best) ? j : st.best;
    }
    st.mx = at(i, st.best);
    st.mean /= double(n);
    st.ms /= double(n);
    for (index_t j = 0; j < n; ++j) {
      st.var += (at(i, j) - st.mean) * (at(i, j) - st.mean);
      st.sexp += std::exp(at(i, j) - st.mx);
    }
    st.var /= double(n);
    return st;
  };
  index_t bad = 0;
  // Y against ref(i, j, stats of row i) within tol relative (plus tol absolute).
  auto expect = [&](const char* what, auto&& ref, double tol) {
    const auto got = Y.download();
    index_t wrong = 0;
    for (index_t i = 0; i < m; ++i) {
      const auto st = stats(i);
      for (index_t j = 0; j < n; ++j) {
        const double r = ref(i, j, st);
        wrong += !(std::fabs(got[std::size_t(i * n + j)] - r) <= tol * (1 + std::fabs(r)));
      }
    }
    INFO(what << ": " << wrong << " wrong");
    CHECK(wrong == 0);
    if (major >= 9) {
      CHECK(cufuse::detail::rows_last_cluster.load() == 4);
    }
    bad += wrong;
  };
  const auto wj = [&](index_t j) { return double(wv[std::size_t(j)]); };
  const auto bj = [&](index_t j) { return double(bv[std::size_t(j)]); };
  poison();
  Y = cufuse::softmax(X, -1);
  expect(
      "softmax",
      [&](index_t i, index_t j, const row_stats& st) {
        return std::exp(at(i, j) - st.mx) / st.sexp;
      },
      1e-5);
  poison();
  Y = cufuse::layer_norm(X, w, b, 1e-5f);
  expect(
      "layer_norm",
      [&](index_t i, index_t j, const row_stats& st) {
        return (at(i, j) - st.mean) / std::sqrt(st.var + 1e-5) * wj(j) + bj(j);
      },
      1e-5);
  poison();
  Y = cufuse::rms_norm(X, w, 1e-6f);
  expect(
      "rms_norm",
      [&](index_t i, index_t j, const row_stats& st) {
        return at(i, j) / std::sqrt(st.ms + 1e-6) * wj(j);
      },
      1e-5);
  poison();
  Y = X * 0.0f + cufuse::cast<float>(cufuse::argmax(X, -1, cufuse::keepdim));
  expect(
      "argmax in a row form",
      [&](index_t, index_t, const row_stats& st) { return double(st.best); }, 0);
  // The training forward: the output and the per-row mean and rstd, one kernel.
  poison();
  mu.fill(std::numeric_limits<float>::quiet_NaN());
  rstd.fill(std::numeric_limits<float>::quiet_NaN());
  const auto mean = cufuse::mean(X, -1, cufuse::keepdim);
  const auto centred = X - mean;
  const auto rs = cufuse::rsqrt(cufuse::mean(cufuse::square(centred), -1, cufuse::keepdim) + 1e-5f);
  cufuse::tie(Y, mu, rstd) = cufuse::pack(centred * rs, mean, rs);
  expect(
      "tie(Y, mean, rstd)",
      [&](index_t i, index_t j, const row_stats& st) {
        return (at(i, j) - st.mean) / std::sqrt(st.var + 1e-5);
      },
      1e-5);
  const auto gm = mu.download(), gr = rstd.download();
  for (index_t i = 0; i < m; ++i) {
    const auto st = stats(i);
    const double want = 1 / std::sqrt(st.var + 1e-5);
    bad += !(std::fabs(gm[std::size_t(i)] - st.mean) <= 1e-5);
    bad += !(std::fabs(gr[std::size_t(i)] - want) <= 1e-5 * want);
  }
  CHECK(bad == 0);

  // bf16 rows of an odd length: the last block of each cluster takes the tail chunk.
  const index_t hm = 4, hn = 70001;
  const auto hv = rnd(std::size_t(hm * hn), -4, 4);
  std::vector<__nv_bfloat16> hb(hv.size());
  for (std::size_t i = 0; i < hv.size(); ++i) {
    hb[i] = __float2bfloat16(hv[i]);
  }
  cufuse::tensor<__nv_bfloat16, 2> H({hm, hn}), G({hm, hn});
  H.upload(hb);
  G.fill(__float2bfloat16(0.0f));
  G = cufuse::softmax(H, -1);
  if (major >= 9) {
    CHECK(cufuse::detail::rows_last_cluster.load() == 4);
  }
  const auto gg = G.download();
  index_t wrong = 0;
  for (index_t i = 0; i < hm; ++i) {
    double mx = -INFINITY, s = 0;
    for (index_t j = 0; j < hn; ++j) {
      mx = std::max(mx, double(__bfloat162float(hb[std::size_t(i * hn + j)])));
    }
    for (index_t j = 0; j < hn; ++j) {
      s += std::exp(double(__bfloat162float(hb[std::size_t(i * hn + j)])) - mx);
    }
    for (index_t j = 0; j < hn; ++j) {
      const double ref = std::exp(double(__bfloat162float(hb[std::size_t(i * hn + j)])) - mx) / s;
      const double got = __bfloat162float(gg[std::size_t(i * hn + j)]);
      wrong += !(std::fabs(got - ref) <= 1e-2 * ref + 1e-9);
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("bf16 layer_norm with every operand form of the row kernel, against loops",
          "[reduce_gpu]") {
  // The row kernel holds bf16 operands packed two to a register: a staged row (X), a
  // contiguous row (w), a value repeated along the row (b: a rank-0 tensor), a strided row
  // (every other element), a misaligned row (offset 1), and tail chunks of 1 to 7 columns.
  for (index_t n : {index_t(1000), index_t(4099), index_t(8)}) {
    const index_t m = 37;
    const auto xs = rnd(std::size_t(m * n + 1), -4, 4), ws = rnd(std::size_t(2 * n), 0.5f, 1.5f);
    const auto bs = rnd(1);
    cufuse::tensor<__nv_bfloat16, 1> Xflat(m * n + 1), W2(2 * n);
    cufuse::tensor<__nv_bfloat16, 0> b0;
    cufuse::tensor<float, 1> xf(m * n + 1), wf(2 * n);
    cufuse::tensor<float, 0> bf;
    xf.upload(xs);
    wf.upload(ws);
    bf.upload(bs);
    Xflat = xf;
    W2 = wf;
    b0 = bf;
    const auto xh = Xflat.download(), wh = W2.download();
    const double bv = double(float(b0.download()[0]));
    cufuse::tensor<__nv_bfloat16, 2> Y({m, n});
    for (const index_t off : {index_t(0), index_t(1)}) {
      for (const index_t wstep : {index_t(1), index_t(2)}) {
        auto X = cufuse::reshape(cufuse::slice(Xflat, cufuse::range(off, off + m * n)), {m, n});
        auto w = cufuse::slice(W2, cufuse::range(0, wstep * n, wstep));
        Y.fill(std::numeric_limits<float>::quiet_NaN());
        Y = cufuse::layer_norm(X, w, b0, 1e-5f);
        const auto got = Y.download();
        int bad = 0;
        for (index_t i = 0; i < m; ++i) {
          double mean = 0, m2 = 0;
          for (index_t j = 0; j < n; ++j) {
            mean += double(float(xh[std::size_t(off + i * n + j)]));
          }
          mean /= double(n);
          for (index_t j = 0; j < n; ++j) {
            const double d = double(float(xh[std::size_t(off + i * n + j)])) - mean;
            m2 += d * d;
          }
          const double rstd = 1 / std::sqrt(m2 / double(n) + 1e-5);
          for (index_t j = 0; j < n; ++j) {
            const double want = (double(float(xh[std::size_t(off + i * n + j)])) - mean) * rstd *
                                    double(float(wh[std::size_t(j * wstep)])) +
                                bv;
            const double g = double(float(got[std::size_t(i * n + j)]));
            bad += !(std::fabs(g - want) <= (1.0 / 128) * (1 + std::fabs(want)));
          }
        }
        INFO("n " << n << ", X offset " << off << ", w step " << wstep);
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("short rows two to a block, a half-warp each, against loops", "[reduce_gpu]") {
  // Rows of at most 128 chunks (bf16: 1024 columns, fp32: 512) run two to a 32-thread block;
  // an odd row count leaves the last block's second half-warp without a row. Every reduction
  // state size (a 4-byte sum, argmax's value and index, var's 32-byte moments) folds over 16
  // lanes. Each case runs with the split on and off (detail::rows_split); row 5 holds a NaN.
  for (const index_t n : {index_t(1), index_t(7), index_t(100), index_t(500), index_t(1000)}) {
    for (const index_t m : {index_t(1), index_t(3), index_t(37), index_t(258)}) {
      auto x = rnd(std::size_t(m * n), -3, 3);
      if (m > 5) {
        x[std::size_t(5 * n + n / 2)] = std::numeric_limits<float>::quiet_NaN();
      }
      const auto ws = rnd(std::size_t(n), 0.5f, 1.5f), bs = rnd(std::size_t(n));
      cufuse::tensor<float, 2> Xf({m, n}), Yf({m, n}), Rf({m, n});
      cufuse::tensor<__nv_bfloat16, 2> Xh({m, n}), Yh({m, n});
      cufuse::tensor<float, 1> w({n}), b({n});
      Xf.upload(x);
      w.upload(ws);
      b.upload(bs);
      Xh = Xf;
      const auto xh = Xh.download();
      for (const bool bf : {false, true}) {
        auto at = [&](index_t i, index_t j) {
          const std::size_t k = std::size_t(i * n + j);
          return bf ? double(float(xh[k])) : double(x[k]);
        };
        for (const bool split : {true, false}) {
          cufuse::detail::rows_split.store(split);
          INFO((bf ? "bf16" : "fp32") << " [" << m << ", " << n << "], split " << split);
          // got: [m, n] row-major; ref(i, j). A row with a NaN is NaN throughout, but for
          // `X * 0 + argmax(X)` (NaN only where X is). Chunks of 8 columns (bf16 operands and
          // result) or 4 (any fp32): a row of at most 128 chunks is split.
          auto check_rows = [&](const char* what, const std::vector<float>& got, auto&& ref,
                                double tol, bool v8, bool nan_row = true) {
            INFO(what);
            const bool want_split = split && m > 1 && n <= (v8 ? 1024 : 512);
            CHECK(cufuse::detail::rows_last_split.load() == (want_split ? 2 : 1));
            int bad = 0;
            for (index_t i = 0; i < m; ++i) {
              bool nan = false;
              for (index_t j = 0; j < n; ++j) {
                nan = nan || std::isnan(at(i, j));
              }
              for (index_t j = 0; j < n; ++j) {
                const double want = nan && (nan_row || std::isnan(at(i, j))) ? NAN : ref(i, j);
                const double g = got[std::size_t(i * n + j)];
                bad += !(std::isnan(want) ? std::isnan(g)
                                          : std::fabs(g - want) <= tol * (1 + std::fabs(want)));
              }
            }
            CHECK(bad == 0);
          };
          auto row_stats = [&](index_t i) {
            double mu = 0, m2 = 0;
            for (index_t j = 0; j < n; ++j) {
              mu += at(i, j);
            }
            mu /= double(n);
            for (index_t j = 0; j < n; ++j) {
              m2 += (at(i, j) - mu) * (at(i, j) - mu);
            }
            return std::pair<double, double>{mu, m2};
          };
          const double tol = bf ? 1.0 / 128 : 2e-5;
          auto run = [&](auto& X, auto& Y) {
            auto down = [](const auto& t) {
              const auto d = t.download();
              return std::vector<float>(d.begin(), d.end());
            };
            Rf.fill(-7.0f);
            Rf = X * 0.0f + cufuse::sum(X, -1, cufuse::keepdim);
            check_rows(
                "sum", down(Rf), [&](index_t i, index_t) { return row_stats(i).first * double(n); },
                tol, false);
            Rf.fill(-7.0f);
            Rf = X * 0.0f + cufuse::var(X, -1, cufuse::keepdim);
            check_rows(
                "var", down(Rf),
                [&](index_t i, index_t) {
                  return n > 1 ? row_stats(i).second / double(n - 1) : NAN;
                },
                bf ? 1.0 / 128 : 1e-5, false);
            Rf.fill(-7.0f);
            Rf = X * 0.0f + cufuse::cast<float>(cufuse::argmax(X, -1, cufuse::keepdim));
            check_rows(
                "argmax", down(Rf),
                [&](index_t i, index_t) {
                  index_t best = 0; // the first maximum; NaN wins
                  for (index_t j = 1; j < n; ++j) {
                    const double v = at(i, j), b = at(i, best);
                    best = !std::isnan(b) && (std::isnan(v) || v > b) ? j : best;
                  }
                  return double(best);
                },
                0.0, false, false);
            Y.fill(-7.0f);
            Y = cufuse::softmax(X, -1);
            check_rows(
                "softmax", down(Y),
                [&](index_t i, index_t j) {
                  double mx = -INFINITY, s = 0;
                  for (index_t k = 0; k < n; ++k) {
                    mx = std::max(mx, at(i, k));
                  }
                  for (index_t k = 0; k < n; ++k) {
                    s += std::exp(at(i, k) - mx);
                  }
                  return std::exp(at(i, j) - mx) / s;
                },
                tol, bf);
            Y.fill(-7.0f);
            Y = cufuse::layer_norm(X, w, b, 1e-5f);
            check_rows(
                "layer_norm", down(Y),
                [&](index_t i, index_t j) {
                  const auto [mu, m2] = row_stats(i);
                  return (at(i, j) - mu) / std::sqrt(m2 / double(n) + 1e-5) * ws[std::size_t(j)] +
                         bs[std::size_t(j)];
                },
                bf ? 1.0 / 64 : 2e-5, false);
          };
          if (bf) {
            run(Xh, Yh);
          } else {
            run(Xf, Yf);
          }
        }
        cufuse::detail::rows_split.store(true);
      }
    }
  }
}

TEST_CASE("the row kernel's direct and general forms, against loops", "[reduce_gpu]") {
  // Where every operand is staged, or contiguous and aligned, and every output row is, the
  // passes read each whole chunk in one access per leaf (rows_last_direct 1); any other operand
  // (here a w of every other element) or output (rows of 100 or 4099 bf16, 4099 fp32) takes the
  // general form (0). Tail chunks (4099), short rows two to a 32-thread block (100, 1000), long
  // bf16 rows in a cluster (70000 columns, sm_90), and bf16 X with fp32 w, b and outputs
  // (chunks of 4 columns) including the per-row mean and rstd.
  int major = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  using bf16 = __nv_bfloat16;
  for (const index_t n : {index_t(100), index_t(1000), index_t(4099), index_t(70000)}) {
    const index_t m = n > 10000 ? 5 : 37;
    cufuse::tensor<float, 2> Xf({m, n}), Yf({m, n}), mu({m, 1}), rs({m, 1});
    cufuse::tensor<float, 1> W2f({2 * n}), Bf({n});
    cufuse::tensor<bf16, 2> X({m, n}), Y({m, n});
    cufuse::tensor<bf16, 1> W2({2 * n}), B({n});
    Xf.upload(rnd(std::size_t(m * n), -3, 5));
    W2f.upload(rnd(std::size_t(2 * n), 0.5f, 1.5f));
    Bf.upload(rnd(std::size_t(n)));
    X = Xf;
    W2 = W2f;
    B = Bf;
    const auto xh = X.download(), wh = W2.download(), bh = B.download();
    const auto wfh = W2f.download(), bfh = Bf.download();
    auto x = [&](index_t i, index_t j) { return double(float(xh[std::size_t(i * n + j)])); };
    std::vector<double> mean(std::size_t(m), 0.0), rstd(std::size_t(m), 0.0);
    for (index_t i = 0; i < m; ++i) {
      double s = 0, q = 0;
      for (index_t j = 0; j < n; ++j) {
        s += x(i, j);
      }
      s /= double(n);
      for (index_t j = 0; j < n; ++j) {
        q += (x(i, j) - s) * (x(i, j) - s);
      }
      mean[std::size_t(i)] = s;
      rstd[std::size_t(i)] = 1 / std::sqrt(q / double(n) + 1e-5);
    }
    // got(i, j) against (x - mean) * rstd * w(j) + b(j); out_bytes: of an output element (the
    // direct form also needs the output's rows 16-byte aligned)
    auto check = [&](const char* what, bool contiguous, int out_bytes, auto&& got, auto&& w,
                     auto&& b, double tol) {
      INFO(what << ", [" << m << ", " << n << "]");
      const bool direct = contiguous && n * out_bytes % 16 == 0;
      CHECK(cufuse::detail::rows_last_direct.load() == (direct ? 1 : 0));
      if (n == 70000 && major >= 9) {
        CHECK(cufuse::detail::rows_last_cluster.load() > 1);
      }
      if (n == 100) {
        CHECK(cufuse::detail::rows_last_split.load() == 2);
      }
      int bad = 0;
      for (index_t i = 0; i < m; ++i) {
        for (index_t j = 0; j < n; ++j) {
          const double want = (x(i, j) - mean[std::size_t(i)]) * rstd[std::size_t(i)] * w(j) + b(j);
          bad += !(std::fabs(got(i, j) - want) <= tol * (1 + std::fabs(want)));
        }
      }
      CHECK(bad == 0);
    };
    auto bfw = [&](index_t step) {
      return [&, step](index_t j) { return double(float(wh[std::size_t(j * step)])); };
    };
    auto bfb = [&](index_t j) { return double(float(bh[std::size_t(j)])); };
    for (const index_t step : {index_t(1), index_t(2)}) {
      Y.fill(std::numeric_limits<float>::quiet_NaN());
      Y = cufuse::layer_norm(X, cufuse::slice(W2, cufuse::range(0, step * n, step)), B, 1e-5f);
      const auto yh = Y.download();
      check(
          step == 1 ? "bf16, contiguous w" : "bf16, w of every other element", step == 1, 2,
          [&](index_t i, index_t j) { return double(float(yh[std::size_t(i * n + j)])); },
          bfw(step), bfb, 1.0 / 128);
    }
    // bf16 X, fp32 w, b and outputs: the output and the per-row mean and rstd, one kernel
    Yf.fill(std::numeric_limits<float>::quiet_NaN());
    mu.fill(std::numeric_limits<float>::quiet_NaN());
    rs.fill(std::numeric_limits<float>::quiet_NaN());
    const auto mn = cufuse::mean(X, -1, cufuse::keepdim);
    const auto centred = X - mn;
    const auto r =
        cufuse::rsqrt(cufuse::mean(cufuse::square(centred), -1, cufuse::keepdim) + 1e-5f);
    cufuse::tie(Yf, mu, rs) =
        cufuse::pack(centred * r * cufuse::slice(W2f, cufuse::range(0, n)) + Bf, mn, r);
    const auto yf = Yf.download(), gm = mu.download(), gr = rs.download();
    check(
        "fp32 w, b and outputs", true, 4,
        [&](index_t i, index_t j) { return double(yf[std::size_t(i * n + j)]); },
        [&](index_t j) { return double(wfh[std::size_t(j)]); },
        [&](index_t j) { return double(bfh[std::size_t(j)]); }, 1e-5);
    int bad = 0;
    for (index_t i = 0; i < m; ++i) {
      bad += !(std::fabs(gm[std::size_t(i)] - mean[std::size_t(i)]) <=
               1e-5 * (1 + std::fabs(mean[std::size_t(i)])));
      bad += !(std::fabs(gr[std::size_t(i)] - rstd[std::size_t(i)]) <= 1e-5 * rstd[std::size_t(i)]);
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("short rows held in registers, against loops", "[reduce_gpu]") {
  // Rows of exactly 4 chunks per thread of 32 to 128 threads (bf16: 1024, 2048, 4096 columns;
  // fp32: 512, 1024, 2048) whose reductions all read one row take the held form
  // (rows_last_held 4) when the rows fit in rows_held_max_waves waves of blocks: layer_norm,
  // rms_norm, and layer_norm with its per-row mean and rstd (tie / pack). Every case also runs
  // with the held form off (rows_held false) and with any number of rows held
  // (rows_held_max_waves 1000: blocks walk several rows). Row 5 holds a NaN. Not held: bf16 X
  // with fp32 per-row outputs (chunks of 4 columns), an expression whose reductions read two
  // different rows, and one that stages a second row outside its reductions.
  using bf16 = __nv_bfloat16;
  auto& max_waves = cufuse::detail::rows_held_max_waves;
  const int waves0 = max_waves.load();
  for (const bool bf : {true, false}) {
    for (const index_t n0 : {index_t(512), index_t(1024), index_t(2048)}) {
      const index_t n = bf ? 2 * n0 : n0;
      for (const index_t m : {index_t(1), index_t(3), index_t(37), index_t(3000)}) {
        auto x = rnd(std::size_t(m * n), -3, 5);
        if (m > 5) {
          x[std::size_t(5 * n + n / 3)] = std::numeric_limits<float>::quiet_NaN();
        }
        const auto ws = rnd(std::size_t(n), 0.5f, 1.5f), bs = rnd(std::size_t(n));
        cufuse::tensor<float, 2> Xf({m, n}), Yf({m, n}), mu({m, 1}), rs({m, 1});
        cufuse::tensor<float, 1> wf({n}), bf32({n});
        cufuse::tensor<bf16, 2> Xh({m, n}), Yh({m, n});
        cufuse::tensor<bf16, 1> wh({n}), bh({n});
        Xf.upload(x);
        wf.upload(ws);
        bf32.upload(bs);
        Xh = Xf;
        wh = wf;
        bh = bf32;
        const auto xr = Xh.download(), wr = wh.download(), br = bh.download();
        auto at = [&](index_t i, index_t j) {
          const std::size_t k = std::size_t(i * n + j);
          return bf ? double(float(xr[k])) : double(x[k]);
        };
        auto wj = [&](index_t j) {
          return bf ? double(float(wr[std::size_t(j)])) : double(ws[std::size_t(j)]);
        };
        auto bj = [&](index_t j) {
          return bf ? double(float(br[std::size_t(j)])) : double(bs[std::size_t(j)]);
        };
        std::vector<double> mean(std::size_t(m), 0.0), rstd(std::size_t(m), 0.0),
            rms(std::size_t(m), 0.0);
        for (index_t i = 0; i < m; ++i) {
          double s = 0, q = 0, sq = 0;
          for (index_t j = 0; j < n; ++j) {
            s += at(i, j);
            sq += at(i, j) * at(i, j);
          }
          s /= double(n);
          for (index_t j = 0; j < n; ++j) {
            q += (at(i, j) - s) * (at(i, j) - s);
          }
          mean[std::size_t(i)] = s;
          rstd[std::size_t(i)] = 1 / std::sqrt(q / double(n) + 1e-5);
          rms[std::size_t(i)] = 1 / std::sqrt(sq / double(n) + 1e-6);
        }
        const double tol = bf ? 1.0 / 128 : 2e-5;
        // Y (of the dtype under test) against ref(i, j); NaN rows must be NaN
        auto expect = [&](const char* what, int want_held, auto&& ref) {
          const std::vector<double> got = [&] {
            std::vector<double> g(std::size_t(m * n));
            if (bf) {
              const auto y = Yh.download();
              for (std::size_t k = 0; k < g.size(); ++k) {
                g[k] = double(float(y[k]));
              }
            } else {
              const auto y = Yf.download();
              for (std::size_t k = 0; k < g.size(); ++k) {
                g[k] = double(y[k]);
              }
            }
            return g;
          }();
          INFO(what << ", " << (bf ? "bf16" : "fp32") << " [" << m << ", " << n << "], max waves "
                    << max_waves.load() << ", held on " << cufuse::detail::rows_held.load());
          if (want_held >= 0) {
            CHECK(cufuse::detail::rows_last_held.load() == want_held);
          }
          index_t wrong = 0;
          for (index_t i = 0; i < m; ++i) {
            for (index_t j = 0; j < n; ++j) {
              const double r = ref(i, j);
              const double g = got[std::size_t(i * n + j)];
              wrong +=
                  std::isnan(r) ? !std::isnan(g) : !(std::fabs(g - r) <= tol * (1 + std::fabs(r)));
            }
          }
          CHECK(wrong == 0);
        };
        auto poison = [&] {
          Yf.fill(std::numeric_limits<float>::quiet_NaN());
          Yh.fill(std::numeric_limits<float>::quiet_NaN());
          mu.fill(std::numeric_limits<float>::quiet_NaN());
          rs.fill(std::numeric_limits<float>::quiet_NaN());
        };
        for (const int mode : {0, 1, 2}) { // default, held off, any number of rows held
          cufuse::detail::rows_held.store(mode != 1);
          max_waves.store(mode == 2 ? 1000 : waves0);
          // held: mode 2 always; by default at least for rows that fit in one wave anywhere
          const int want = mode == 1 ? 0 : mode == 2 || m <= 37 ? 4 : -1;
          poison();
          if (bf) {
            Yh = cufuse::layer_norm(Xh, wh, bh, 1e-5f);
          } else {
            Yf = cufuse::layer_norm(Xf, wf, bf32, 1e-5f);
          }
          expect("layer_norm", want, [&](index_t i, index_t j) {
            return (at(i, j) - mean[std::size_t(i)]) * rstd[std::size_t(i)] * wj(j) + bj(j);
          });
          poison();
          if (bf) {
            Yh = cufuse::rms_norm(Xh, wh, 1e-6f);
          } else {
            Yf = cufuse::rms_norm(Xf, wf, 1e-6f);
          }
          expect("rms_norm", want,
                 [&](index_t i, index_t j) { return at(i, j) * rms[std::size_t(i)] * wj(j); });
          // the output with the per-row mean and rstd, one kernel
          poison();
          const auto run_tie = [&](const auto& X, auto& Y, const auto& w, const auto& b) {
            const auto mn = cufuse::mean(X, -1, cufuse::keepdim);
            const auto centred = X - mn;
            const auto r =
                cufuse::rsqrt(cufuse::mean(cufuse::square(centred), -1, cufuse::keepdim) + 1e-5f);
            cufuse::tie(Y, mu, rs) = cufuse::pack(centred * r * w + b, mn, r);
          };
          if (bf) {
            run_tie(Xh, Yh, wh, bh);
          } else {
            run_tie(Xf, Yf, wf, bf32);
          }
          // bf16 X with fp32 per-row outputs: chunks of 4 columns (8 bytes of X), not held
          expect("layer_norm with the per-row mean and rstd", bf ? 0 : want,
                 [&](index_t i, index_t j) {
                   return (at(i, j) - mean[std::size_t(i)]) * rstd[std::size_t(i)] * wj(j) + bj(j);
                 });
          const auto gm = mu.download(), gr = rs.download();
          index_t bad = 0;
          for (index_t i = 0; i < m; ++i) {
            const double em = mean[std::size_t(i)], er = rstd[std::size_t(i)];
            bad += std::isnan(em)
                       ? !std::isnan(gm[std::size_t(i)])
                       : !(std::fabs(gm[std::size_t(i)] - em) <= 1e-5 * (1 + std::fabs(em)));
            bad += std::isnan(er) ? !std::isnan(gr[std::size_t(i)])
                                  : !(std::fabs(gr[std::size_t(i)] - er) <= 1e-5 * er);
          }
          INFO("per-row mean and rstd, mode " << mode);
          CHECK(bad == 0);
        }
        cufuse::detail::rows_held.store(true);
        max_waves.store(waves0);
        // a reduction of two different rows (X and Z), and a second staged row read only outside
        // the reductions (Z, read twice): not held
        if (!bf && m == 37) {
          cufuse::tensor<float, 2> Z({m, n});
          const auto zs = rnd(std::size_t(m * n));
          Z.upload(zs);
          auto z = [&](index_t i, index_t j) { return double(zs[std::size_t(i * n + j)]); };
          poison();
          Yf = Xf - cufuse::mean(Xf * Z, -1, cufuse::keepdim);
          expect("two rows reduced", 0, [&](index_t i, index_t j) {
            double d = 0;
            for (index_t k = 0; k < n; ++k) {
              d += at(i, k) * z(i, k);
            }
            return at(i, j) - d / double(n);
          });
          poison();
          Yf = Z * Z * cufuse::rsqrt(cufuse::mean(cufuse::square(Xf), -1, cufuse::keepdim) + 1e-6f);
          expect("another staged row outside the reductions", 0,
                 [&](index_t i, index_t j) { return z(i, j) * z(i, j) * rms[std::size_t(i)]; });
        }
      }
    }
  }
}
