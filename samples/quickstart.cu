// cufuse quickstart: A = B + C * D + sin(E) * F + 10 as ONE kernel, over 2^26 floats.
// Verifies against a CPU loop in double precision and compares with one kernel per operation.
// Without a GPU it says so and runs the same expression on host tensors.
#include <cufuse/cufuse.cuh>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

std::vector<float> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = u(rng);
  }
  return v;
}

/// Checks every element against a double-precision loop; returns the number of mismatches.
std::size_t verify(const std::vector<float>& a, const std::vector<std::vector<float>>& in) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double ref = double(in[0][i]) + double(in[1][i]) * in[2][i] +
                       std::sin(double(in[3][i])) * in[4][i] + 10.0;
    bad += !(std::fabs(a[i] - ref) <= 1e-5 * (1.0 + std::fabs(ref)));
  }
  return bad;
}

template <class Space>
std::vector<float> run(cufuse::index_t n, const std::vector<std::vector<float>>& in) {
  cufuse::tensor<float, 1, Space> A(n), B(n), C(n), D(n), E(n), F(n);
  B.upload(in[0]);
  C.upload(in[1]);
  D.upload(in[2]);
  E.upload(in[3]);
  F.upload(in[4]);
  A = B + C * D + cufuse::sin(E) * F + 10.0f; // one kernel (or one CPU loop for host tensors)
  return A.download();
}

/// Number of kernels the callable launches, read off a CUDA Graph capture of it.
template <class F>
std::size_t kernels_launched(cudaStream_t s, F&& f) {
  cudaGraph_t g;
  CUFUSE_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  {
    cufuse::stream_guard guard(s);
    f();
  }
  CUFUSE_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  std::size_t n = 0;
  CUFUSE_CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &n));
  CUFUSE_CUDA_CHECK(cudaGraphDestroy(g));
  return n;
}

template <class F>
float median_ms(F&& f, int reps = 20) {
  cudaEvent_t a, b;
  CUFUSE_CUDA_CHECK(cudaEventCreate(&a));
  CUFUSE_CUDA_CHECK(cudaEventCreate(&b));
  f();
  std::vector<float> ms(reps);
  for (auto& t : ms) {
    CUFUSE_CUDA_CHECK(cudaEventRecord(a));
    f();
    CUFUSE_CUDA_CHECK(cudaEventRecord(b));
    CUFUSE_CUDA_CHECK(cudaEventSynchronize(b));
    CUFUSE_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
  }
  CUFUSE_CUDA_CHECK(cudaEventDestroy(a));
  CUFUSE_CUDA_CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

} // namespace

int main() {
  if (!cufuse::device_available()) {
    const cufuse::index_t n = 1 << 20;
    std::printf("no CUDA device found: running the quickstart expression on host tensors (CPU), "
                "n = %lld\n",
                static_cast<long long>(n));
    std::vector<std::vector<float>> in;
    for (unsigned s = 0; s < 5; ++s) {
      in.push_back(random_vector(std::size_t(n), s + 1));
    }
    const std::size_t bad = verify(run<cufuse::host_space>(n, in), in);
    std::printf("host result: %s (%zu mismatches)\n", bad == 0 ? "correct" : "WRONG", bad);
    return bad == 0 ? 0 : 1;
  }

  const cufuse::index_t n = cufuse::index_t(1) << 26;
  std::vector<std::vector<float>> in;
  for (unsigned s = 0; s < 5; ++s) {
    in.push_back(random_vector(std::size_t(n), s + 1));
  }
  const std::size_t bad = verify(run<cufuse::device_space>(n, in), in);
  std::printf("A = B + C * D + sin(E) * F + 10 over %lld floats: %s (%zu mismatches vs CPU)\n",
              static_cast<long long>(n), bad == 0 ? "correct" : "WRONG", bad);

  cufuse::tensor<float, 1> A(n), B(n), C(n), D(n), E(n), F(n), t1(n), t2(n);
  for (auto* t : {&B, &C, &D, &E, &F}) {
    t->fill(0.5f);
  }
  auto fused = [&] { A = B + C * D + cufuse::sin(E) * F + 10.0f; };
  auto per_op = [&] { // what eager frameworks do: one kernel per operation
    t1 = C * D;
    t1 = B + t1;
    t2 = cufuse::sin(E);
    t2 = t2 * F;
    t1 = t1 + t2;
    A = t1 + 10.0f;
  };
  cudaStream_t s;
  CUFUSE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const std::size_t k_fused = kernels_launched(s, fused), k_chain = kernels_launched(s, per_op);
  CUFUSE_CUDA_CHECK(cudaStreamDestroy(s));
  const float ms_fused = median_ms(fused), ms_chain = median_ms(per_op);
  const double gb = 6.0 * double(n) * sizeof(float) / 1e9; // 5 inputs read, 1 output written
  std::printf("fused:               %zu kernel,  %.3f ms, %.0f GB/s\n", k_fused, ms_fused,
              gb / (ms_fused * 1e-3));
  std::printf("one kernel per op:   %zu kernels, %.3f ms (%.2fx slower)\n", k_chain, ms_chain,
              ms_chain / ms_fused);
  return bad == 0 ? 0 : 1;
}
