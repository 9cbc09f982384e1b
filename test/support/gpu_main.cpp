// The GPU suites exit 77 (CTest: skipped) when there is no usable device (main() is in
// catch_impl.cpp).
#include <cuda_runtime_api.h>

#include <cstdio>

int cufuse_test_precheck() {
  // cufuse::device_available(), spelled out: its header needs nvcc, this file does not.
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipping the GPU tests\n");
    return 77;
  }
  return 0;
}
