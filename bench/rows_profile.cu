// One call of each row-kernel workload of bench/reduce_bench.cu ([32768, 4096] softmax,
// layer_norm and rms_norm in fp32 and bf16) and of sum(X, 1) / sum(X, 0) on [8192, 8192], for
// Nsight Compute to profile every launch (bench/profile_reduce.sh). The inputs are written by a
// map kernel first, so the profiled launches find their pages mapped.
#include <cufuse/cufuse.cuh>

#include <cstdio>

namespace {

template <class T>
void rows(const char* dtype) {
  const cufuse::index_t m = 32768, n = 4096;
  cufuse::tensor<T, 2> X({m, n}), Y({m, n});
  cufuse::tensor<T, 1> w({n}), b({n});
  X.fill(T(0.5f));
  Y.fill(T(0.0f));
  w.fill(T(1.0f));
  b.fill(T(0.0f));
  X = cufuse::sin(X * 3.0f); // not constant rows
  Y = cufuse::softmax(X, -1);
  Y = cufuse::layer_norm(X, w, b, 1e-5f);
  Y = cufuse::rms_norm(X, w, 1e-6f);
  std::printf("%s rows done\n", dtype);
}

} // namespace

int main() {
  rows<float>("fp32");
  rows<__nv_bfloat16>("bf16");
  cufuse::tensor<float, 2> X({8192, 8192});
  cufuse::tensor<float, 1> r({8192}), c({8192});
  X.fill(1.0f);
  r = cufuse::sum(X, 1);
  c = cufuse::sum(X, 0);
  cudaError_t e = cudaDeviceSynchronize();
  std::printf("sums done: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
