// Main of the GPU suites: exits 77 (CTest: skipped) when there is no usable device.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cufuse/cufuse.cuh>

#include <cstdio>

int main(int argc, char** argv) {
  if (!cufuse::device_available()) {
    std::printf("no CUDA device: skipping the GPU tests\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
