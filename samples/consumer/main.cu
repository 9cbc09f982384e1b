// The smallest program built against cufuse through CMake.
#include <cufuse/cufuse.cuh>

#include <cstdio>

int main() {
  cufuse::host_tensor<float, 1> h(4);
  h.fill(1.5f);
  cufuse::host_tensor<float, 1> r(4);
  r = cufuse::exp(h * 0.0f) + h; // 2.5 everywhere, on the CPU
  bool ok = r(3) == 2.5f;
  if (cufuse::device_available()) {
    cufuse::device_vector<float> d(1 << 20), e(1 << 20);
    d.fill(2.0f);
    e = d * d + 1; // one kernel
    ok = ok && e.download()[12345] == 5.0f;
    std::printf("consumer: host and device paths %s\n", ok ? "correct" : "WRONG");
  } else {
    std::printf("consumer: no CUDA device; host path %s\n", ok ? "correct" : "WRONG");
  }
  return ok ? 0 : 1;
}
