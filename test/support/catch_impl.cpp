// Catch2's implementation and main(), compiled once by the host compiler for every test
// executable. main() first asks the suite's precheck (host_main.cpp: always run; gpu_main.cpp:
// exit 77, which CTest reports as skipped, when there is no usable device).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

/// 0: run the tests; anything else: exit with it.
int cufuse_test_precheck();

int main(int argc, char** argv) {
  if (const int rc = cufuse_test_precheck(); rc != 0) {
    return rc;
  }
  return Catch::Session().run(argc, argv);
}
