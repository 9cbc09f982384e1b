// Catch2's implementation and main() for the GPU suites, compiled once by the host compiler:
// exits 77 (CTest: skipped) when there is no usable device.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>

int main(int argc, char** argv) {
  // cufuse::device_available(), spelled out: its header needs nvcc, this file does not.
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipping the GPU tests\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
