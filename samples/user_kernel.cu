// Expressions are trivially copyable values: pass one to your own __global__ kernel and read
// element i there with e[i]. Also: cufuse::map with a __device__ lambda.
#include <cufuse/cufuse.cuh>

#include <cmath>
#include <cstdio>
#include <vector>

/// A user kernel that needs more than elementwise work: each block sums its slice of an
/// expression (evaluated on the fly, never stored) into one partial sum.
template <class Expr>
__global__ void block_sums(Expr e, cufuse::index_t n, float* partial) {
  __shared__ float s[256];
  const cufuse::index_t i = cufuse::index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? float(e[i]) : 0.0f;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      s[threadIdx.x] += s[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = s[0];
  }
}

int main() {
  if (!cufuse::device_available()) {
    std::printf(
        "no CUDA device found: this sample runs a user __global__ kernel and needs a GPU\n");
    return 0;
  }
  const cufuse::index_t n = 1 << 20;
  std::vector<float> hx(n), hy(n);
  for (cufuse::index_t i = 0; i < n; ++i) {
    hx[i] = float(i % 97) / 97.0f;
    hy[i] = float(i % 13) - 6.0f;
  }
  cufuse::device_vector<float> x(n), y(n);
  x.upload(hx);
  y.upload(hy);

  // 1. an expression object evaluated inside our own kernel
  auto e = x * x + cufuse::abs(y) * 0.5f;
  const unsigned blocks = unsigned((n + 255) / 256);
  cufuse::device_vector<float> partial(blocks);
  block_sums<<<blocks, 256>>>(e, n, partial.data());
  CUFUSE_CUDA_CHECK(cudaGetLastError());
  double total = 0, ref = 0;
  for (float p : partial.download()) {
    total += p;
  }
  for (cufuse::index_t i = 0; i < n; ++i) {
    ref += double(hx[i]) * hx[i] + std::fabs(double(hy[i])) * 0.5;
  }
  std::printf("sum of x*x + |y|/2 in a user kernel: %.3f (CPU: %.3f) %s\n", total, ref,
              std::fabs(total - ref) <= 1e-5 * ref ? "correct" : "WRONG");

  // 2. map with a __device__ lambda, fused with the rest of the expression
  cufuse::device_vector<float> r(n);
  const float k = 3.0f;
  r = cufuse::map([k] __device__(float a, float b) -> float { return a > 0.5f ? a * k : b; }, x,
                  y) +
      1.0f;
  const auto hr = r.download();
  std::size_t bad = 0;
  for (cufuse::index_t i = 0; i < n; ++i) {
    bad += hr[i] != (hx[i] > 0.5f ? hx[i] * k : hy[i]) + 1.0f;
  }
  std::printf("map with a __device__ lambda: %s\n", bad == 0 ? "correct" : "WRONG");
  return (bad == 0 && std::fabs(total - ref) <= 1e-5 * ref) ? 0 : 1;
}
