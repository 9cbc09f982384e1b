// What only a GPU can show about N-d shapes: one kernel per assignment (graph capture) for
// broadcasts, transposes, permutes and strided slices; two for an overlapping destination;
// the 64-bit path through a broadcast past 2^31 elements; broadcast expressions in user kernels.
#include "../support/graph_count.cuh"
#include "../support/harness.cuh"

#include <array>
#include <limits>

#define CHECK_CUDA(call) REQUIRE((call) == cudaSuccess)

namespace {

using cufuse::index_t;

std::vector<float> rnd(std::size_t n) {
  std::mt19937_64 rng(cft::next_seed());
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = u(rng);
  }
  return v;
}

using cft::count_kernels;

template <class Expr>
__global__ void read_2d(Expr e, float* out, index_t rows, index_t cols) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < rows * cols) {
    out[2 * i] = e(i / cols, i % cols); // a multi-index
    out[2 * i + 1] = e[i];              // a linear index over the broadcast shape
  }
}

} // namespace

TEST_CASE("broadcasts, layout changes and strided slices are one kernel each", "[gpu][graph]") {
  using cufuse::all;
  using cufuse::range;
  const index_t m = 300, n = 520;
  cufuse::tensor<float, 2> X({m, n}), Y({m, n}), T({n, m});
  cufuse::tensor<float, 1> bias({n});
  cufuse::tensor<float, 2> col({m, 1});
  X.upload(rnd(std::size_t(m * n)));
  bias.upload(rnd(std::size_t(n)));
  col.upload(rnd(std::size_t(m)));
  cufuse::tensor<__nv_bfloat16, 3> P({4, 96, 80}), Z({4, 80, 96}), W({4, 80, 96});
  P.fill(1.0f);
  Z.fill(2.0f);
  cufuse::tensor<float, 2> S({m, n / 2});
  CHECK_CUDA(cudaDeviceSynchronize());
  auto one = [&](auto&& body) {
    for (int rep = 0; rep < 2; ++rep) { // the first call and a steady-state call
      const auto [nodes, kernels] = count_kernels(body);
      CHECK(nodes == 1);
      CHECK(kernels == 1);
    }
  };
  one([&] { Y = cufuse::relu(X + bias) * col; });
  one([&] { T = cufuse::transpose(X); });
  one([&] { W = cufuse::permute(P, {0, 2, 1}) + Z; });
  one([&] { S = cufuse::slice(X, all, range(0, n, 2)) * 2; });
  auto s = cufuse::slice(X, range(0, m, 3), range(1, n));
  one([&] { s = s + 1; }); // same-index aliasing on a strided view: no temporary
  one([&] { X = X * 0.5f + bias; });
  const auto w = W.download();
  for (auto v : w) {
    REQUIRE(__bfloat162float(v) == 3.0f);
  }
  // an overlapping destination: the right-hand side goes through a temporary (two kernels)
  const auto [nodes, kernels] =
      count_kernels([&] { cufuse::slice(X, range(1, m)) = cufuse::slice(X, range(0, m - 1)); });
  CHECK(kernels == 2);
  CHECK(nodes >= 2);
}

TEST_CASE("the N-d kernel's two vectors per thread: every element written once, many blocks",
          "[gpu][shapes_nd]") {
  // Work items (vectors of a row) that are not a multiple of a block's two steps, over many
  // blocks; bf16 (8 lanes) and fp32 (4 lanes) with a row, a column and a full operand.
  for (index_t m : {index_t(1), index_t(129), index_t(1031)}) {
    for (index_t n : {index_t(8), index_t(2400), index_t(4104)}) {
      cufuse::tensor<float, 2> X({m, n}), Y({m, n}), col({m, 1});
      cufuse::tensor<float, 1> bias({n});
      cufuse::tensor<__nv_bfloat16, 2> Xh({m, n}), Yh({m, n}), colh({m, 1});
      cufuse::tensor<__nv_bfloat16, 1> biash({n});
      const auto xs = rnd(std::size_t(m * n)), bs = rnd(std::size_t(n)), cs = rnd(std::size_t(m));
      X.upload(xs);
      bias.upload(bs);
      col.upload(cs);
      std::vector<__nv_bfloat16> xh(xs.size()), bh(bs.size()), ch(cs.size());
      for (std::size_t i = 0; i < xs.size(); ++i) {
        xh[i] = __float2bfloat16(xs[i]);
      }
      for (std::size_t i = 0; i < bs.size(); ++i) {
        bh[i] = __float2bfloat16(bs[i]);
      }
      for (std::size_t i = 0; i < cs.size(); ++i) {
        ch[i] = __float2bfloat16(cs[i]);
      }
      Xh.upload(xh);
      biash.upload(bh);
      colh.upload(ch);
      Y.fill(std::numeric_limits<float>::quiet_NaN());
      Yh.fill(std::numeric_limits<float>::quiet_NaN());
      Y = X * col + bias;
      Yh = Xh * colh + biash;
      const auto y = Y.download();
      const auto yh = Yh.download();
      index_t bad = 0, bad_h = 0;
      for (index_t i = 0; i < m; ++i) {
        for (index_t j = 0; j < n; ++j) {
          const std::size_t k = std::size_t(i * n + j);
          const double ref = double(xs[k]) * cs[std::size_t(i)] + bs[std::size_t(j)];
          bad += !(std::fabs(y[k] - ref) <= 1e-6 * (1 + std::fabs(ref)));
          const double ref_h =
              double(__bfloat162float(xh[k])) * double(__bfloat162float(ch[std::size_t(i)])) +
              double(__bfloat162float(bh[std::size_t(j)]));
          bad_h += !(std::fabs(double(__bfloat162float(yh[k])) - ref_h) <=
                     (1.0 / 128) * (1 + std::fabs(ref_h)));
        }
      }
      INFO("[" << m << ", " << n << "]");
      CHECK(bad == 0);
      CHECK(bad_h == 0);
    }
  }
}

TEST_CASE("a user kernel reads a broadcast expression by multi-index and linear index",
          "[gpu][user]") {
  const index_t m = 33, n = 65;
  cufuse::tensor<float, 2> X({m, n});
  cufuse::tensor<float, 1> b({n});
  cufuse::tensor<float, 2> c({m, 1});
  const auto xs = rnd(std::size_t(m * n)), bs = rnd(std::size_t(n)), cs = rnd(std::size_t(m));
  X.upload(xs);
  b.upload(bs);
  c.upload(cs);
  auto e = cufuse::exp(X) * c + b; // [m, n] * [m, 1] + [n]
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, std::size_t(2 * m * n) * sizeof(float)));
  CHECK_CUDA(cudaMemset(out, 0xff, std::size_t(2 * m * n) * sizeof(float)));
  read_2d<<<unsigned((m * n + 127) / 128), 128>>>(e, out, m, n);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> got(std::size_t(2 * m * n));
  CHECK_CUDA(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(out));
  index_t bad = 0;
  for (index_t i = 0; i < m; ++i) {
    for (index_t j = 0; j < n; ++j) {
      const double ref = std::exp(double(xs[i * n + j])) * cs[i] + bs[j];
      const std::size_t k = std::size_t(i * n + j);
      bad += !(std::fabs(got[2 * k] - ref) <= 1e-5 * (1 + std::fabs(ref)));
      bad += !(std::fabs(got[2 * k + 1] - ref) <= 1e-5 * (1 + std::fabs(ref)));
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("more than 2^31 elements through a broadcast: the 64-bit N-d path", "[gpu][large]") {
  const index_t rows = index_t(1) << 16, cols = (index_t(1) << 15) + 3; // 2^31 + 3 * 2^16
  std::vector<std::uint8_t> a(rows), b(cols);
  for (index_t i = 0; i < rows; ++i) {
    a[i] = std::uint8_t(i * 7 + (i >> 9));
  }
  for (index_t j = 0; j < cols; ++j) {
    b[j] = std::uint8_t(j * 13 + (j >> 7));
  }
  cufuse::tensor<std::uint8_t, 2> A({rows, index_t(1)}), C({rows, cols});
  cufuse::tensor<std::uint8_t, 1> B({cols});
  A.upload(a);
  B.upload(b);
  CHECK_CUDA(cudaMemset(C.data(), 0xAB, std::size_t(rows * cols)));
  C = A + B * 3;
  auto c = C.download();
  index_t bad = 0;
  for (index_t i = 0; i < rows; ++i) {
    for (index_t j = 0; j < cols; ++j) {
      bad += c[std::size_t(i * cols + j)] != std::uint8_t(a[i] + b[j] * 3);
    }
  }
  CHECK(bad == 0);
  // and through the layout-changing kernel: a transposed bool read, > 2^31 elements written
  cufuse::tensor<bool, 2> M({cols, rows});
  M = cufuse::transpose(C) > 100;
  const auto mm = M.download();
  bad = 0;
  for (index_t j = 0; j < cols; j += 997) {
    for (index_t i = 0; i < rows; ++i) {
      bad += mm[std::size_t(j * rows + i)] != (c[std::size_t(i * cols + j)] > 100);
    }
  }
  CHECK(bad == 0);
}
