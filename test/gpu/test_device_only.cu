// What only a GPU can show: one kernel per assignment, user kernels, __device__ lambdas, the
// 64-bit index path, ordering with the user's launches, streams and threads.
#include "../support/graph_count.cuh"
#include "../support/harness.cuh"

#include <thread>

#define CHECK_CUDA(call) REQUIRE((call) == cudaSuccess)

namespace {
template <class Expr>
__global__ void user_kernel(Expr e, float* out, cufuse::index_t n) {
  const cufuse::index_t i = cufuse::index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = e[i] * 0.5f; // evaluate the fused expression inside our own kernel
  }
}

__global__ void write_iota(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    x[i] = float(i);
  }
}
__global__ void add_one(const float* a, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = a[i] + 1.0f;
  }
}

std::vector<float> rnd(std::size_t n) {
  std::mt19937_64 rng(cft::next_seed());
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = u(rng);
  }
  return v;
}
} // namespace

TEST_CASE("an assignment is exactly one kernel (CUDA Graph capture)", "[gpu][graph]") {
  const cufuse::index_t n = (1 << 20) + 3;
  cufuse::tensor<float, 1> A(n), B(n), C(n), D(n), E(n), F(n);
  for (auto* t : {&B, &C, &D, &E, &F}) {
    t->upload(rnd(std::size_t(n)));
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  using cft::count_kernels;
  // the first call of a new expression type (its launch configuration is computed here too)
  auto [nodes, kernels] = count_kernels([&] { A = B + C * D + cufuse::sin(E) * F + 10.0f; });
  CHECK(nodes == 1);
  CHECK(kernels == 1);
  // a steady-state call
  std::tie(nodes, kernels) = count_kernels([&] { A = B + C * D + cufuse::sin(E) * F + 10.0f; });
  CHECK(nodes == 1);
  CHECK(kernels == 1);
  const auto a = A.download(), b = B.download(), c = C.download(), d = D.download(),
             e = E.download(), f = F.download();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double ref = double(b[i]) + double(c[i]) * d[i] + std::sin(double(e[i])) * f[i] + 10;
    bad += !(std::fabs(a[i] - ref) <= 1e-5 * (1 + std::fabs(ref)));
  }
  CHECK(bad == 0);
  // misaligned views: still one kernel
  auto odd = cufuse::view(A.data() + 1, {n - 1});
  std::tie(nodes, kernels) =
      count_kernels([&] { odd = cufuse::view(B.data() + 1, {n - 1}) * 2.0f; });
  CHECK(kernels == 1);
}

TEST_CASE("a user kernel evaluates an expression object", "[gpu][user]") {
  const cufuse::index_t n = 100003;
  cufuse::tensor<float, 1> x(n), y(n);
  const auto xs = rnd(n), ys = rnd(n);
  x.upload(xs);
  y.upload(ys);
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, n * sizeof(float)));
  CHECK_CUDA(cudaMemset(out, 0xff, n * sizeof(float))); // NaN
  auto e = cufuse::exp(x) - y * 3.0f;
  user_kernel<<<unsigned((n + 255) / 256), 256>>>(e, out, n);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> got(n);
  CHECK_CUDA(cudaMemcpy(got.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(out));
  std::size_t bad = 0;
  for (cufuse::index_t i = 0; i < n; ++i) {
    const double ref = (std::exp(double(xs[i])) - 3.0 * ys[i]) * 0.5;
    bad += !(std::fabs(got[i] - ref) <= 1e-5 * (1 + std::fabs(ref)));
  }
  CHECK(bad == 0);
}

TEST_CASE("map with __device__ lambdas", "[gpu][map]") {
  const cufuse::index_t n = (1 << 16) + 5;
  cufuse::tensor<float, 1> x(n), r(n);
  const auto xs = rnd(n);
  x.upload(xs);
  r = cufuse::map([] __device__(float v) -> float { return v * v + 1.0f; }, x);
  auto got = r.download();
  for (cufuse::index_t i = 0; i < n; ++i) {
    // the device may contract v * v + 1 into one fma: compare to the exact value within an ulp
    REQUIRE(std::fabs(got[i] - (double(xs[i]) * xs[i] + 1.0)) <= 2.4e-7 * (1 + xs[i] * xs[i]));
  }
  const float scale = 3.0f;
  r = cufuse::map<float>([scale] __device__(float v, double s) { return v * scale + float(s); }, x,
                         0.5);
  got = r.download();
  for (cufuse::index_t i = 0; i < n; ++i) {
    REQUIRE(std::fabs(got[i] - (double(xs[i]) * scale + 0.5)) <=
            2.4e-7 * (1 + std::fabs(xs[i] * scale)));
  }
}

TEST_CASE("more than 2^31 elements: the 64-bit index path", "[gpu][large]") {
  const cufuse::index_t n = (cufuse::index_t(1) << 31) + 4099;
  std::vector<std::uint8_t> a(n), b(n);
  for (cufuse::index_t i = 0; i < n; ++i) {
    a[i] = std::uint8_t(i * 7 + (i >> 20));
    b[i] = std::uint8_t((i >> 8) ^ (i >> 27));
  }
  cufuse::tensor<std::uint8_t, 1> A(n), B(n), C(n);
  A.upload(a);
  B.upload(b);
  // aligned: vectorized path with 64-bit indices
  CHECK_CUDA(cudaMemset(C.data(), 0xAB, n));
  C = A + B * 3;
  auto c = C.download();
  cufuse::index_t bad = 0;
  for (cufuse::index_t i = 0; i < n; ++i) {
    bad += c[i] != std::uint8_t(a[i] + b[i] * 3);
  }
  CHECK(bad == 0);
  // offset views: scalar path with 64-bit indices
  CHECK_CUDA(cudaMemset(C.data(), 0xAB, n));
  auto cv = cufuse::view(C.data() + 1, {n - 1});
  cv = cufuse::view(A.data() + 1, {n - 1}) ^
       cufuse::view(static_cast<const std::uint8_t*>(B.data()) + 1, {n - 1});
  c = C.download();
  bad = c[0] != 0xAB;
  for (cufuse::index_t i = 1; i < n; ++i) {
    bad += c[i] != std::uint8_t(a[i] ^ b[i]);
  }
  CHECK(bad == 0);
  // bool output over the same indices
  cufuse::tensor<bool, 1> M(n);
  M = A > B;
  const auto m = M.download();
  bad = 0;
  for (cufuse::index_t i = 0; i < n; ++i) {
    bad += m[i] != (a[i] > b[i]);
  }
  CHECK(bad == 0);
}

TEST_CASE("orders with the user's own launches on the default stream", "[gpu][stream]") {
  const int n = 1 << 22;
  cufuse::tensor<float, 1> X(n), A(n), Y(n);
  for (int rep = 0; rep < 3; ++rep) {
    write_iota<<<(n + 255) / 256, 256>>>(X.data(), n);
    A = X * 2.0f + float(rep);
    add_one<<<(n + 255) / 256, 256>>>(A.data(), Y.data(), n);
    const auto y = Y.download();
    cufuse::index_t bad = 0;
    for (int i = 0; i < n; ++i) {
      bad += y[i] != float(i) * 2.0f + float(rep) + 1.0f;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("threads with their own streams assign concurrently", "[gpu][stream]") {
  const cufuse::index_t n = (1 << 20) + 7;
  auto work = [n](int id, cufuse::index_t* bad) {
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
      *bad = -1;
      return;
    }
    {
      cufuse::stream_guard g(s);
      cufuse::tensor<float, 1> a(n), r(n);
      std::vector<float> v(n);
      for (cufuse::index_t i = 0; i < n; ++i) {
        v[i] = float(i % 1000) + id;
      }
      a.upload(v);
      for (int k = 0; k < 20; ++k) {
        r = a * float(id) + float(k);
      }
      const auto got = r.download(); // on the thread's stream
      for (cufuse::index_t i = 0; i < n; ++i) {
        *bad += got[i] != v[i] * float(id) + 19.0f;
      }
    }
    cudaStreamDestroy(s);
  };
  std::vector<cufuse::index_t> bad(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back(work, t + 1, &bad[t]);
  }
  for (auto& t : threads) {
    t.join();
  }
  for (auto b : bad) {
    CHECK(b == 0);
  }
}

TEST_CASE("out-of-memory names the bytes requested", "[gpu][errors][oom]") {
  try {
    cufuse::tensor<double, 2> huge({cufuse::index_t(1) << 22, cufuse::index_t(1) << 22});
    FAIL("no exception");
  } catch (const cufuse::cuda_error& e) {
    CHECK(e.code() == cudaErrorMemoryAllocation);
    CHECK(std::string(e.what()).find("140737488355328 bytes") != std::string::npos);
  }
  // the context stays usable
  cufuse::tensor<float, 1> ok(10);
  ok.fill(1.0f);
  CHECK(ok.download() == std::vector<float>(10, 1.0f));
}

TEST_CASE("a device view of ordinary host memory is refused at creation", "[gpu][errors]") {
  std::vector<float> host(64, 1.0f);
  CHECK_THROWS_WITH(cufuse::view(host.data(), {64}), Catch::Contains("ordinary host memory"));
  // pinned and managed memory are readable by the GPU: accepted, and they evaluate correctly
  float* pinned = nullptr;
  float* managed = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinned, 64 * sizeof(float)));
  CHECK_CUDA(cudaMallocManaged(&managed, 64 * sizeof(float)));
  for (int i = 0; i < 64; ++i) {
    pinned[i] = float(i);
  }
  auto out = cufuse::view(managed, {64});
  out = cufuse::view(pinned, {64}) * 2.0f;
  CHECK_CUDA(cudaDeviceSynchronize());
  for (int i = 0; i < 64; ++i) {
    CHECK(managed[i] == 2.0f * i);
  }
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFree(managed));
}
