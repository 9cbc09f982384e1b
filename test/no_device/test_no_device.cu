// Run with no visible GPU (CTest sets CUDA_VISIBLE_DEVICES=-1; CI has none at all): device
// tensors give a clear cuda_error and host tensors still work.
#include <catch2/catch.hpp>

#include <cufuse/cufuse.cuh>

TEST_CASE("no device: a clear cuda_error, never a crash", "[no_device]") {
  REQUIRE_FALSE(cufuse::device_available());
  CHECK(cufuse::device_count() == 0);
  try {
    cufuse::tensor<float, 1> t(1024);
    FAIL("no exception");
  } catch (const cufuse::cuda_error& e) {
    CHECK(cufuse::cuda_error::is_no_device(e.code()));
    const std::string m = e.what();
    CHECK(m.find("no usable CUDA device") != std::string::npos);
    CHECK(m.find("4096 bytes") != std::string::npos);
  }
  // the host path is unaffected
  cufuse::host_tensor<float, 1> a(8), b(8);
  a.fill(2.0f);
  b = a * a + 1;
  CHECK(b.download() == std::vector<float>(8, 5.0f));
}
