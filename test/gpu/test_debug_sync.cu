// Built with CUFUSE_DEBUG_SYNC: every assignment synchronizes and checks, except under CUDA
// Graph capture, where synchronizing is illegal and the check is skipped.
#include <catch2/catch.hpp>

#include <cufuse/cufuse.cuh>

#include <cstdio>

#if !defined(CUFUSE_DEBUG_SYNC)
#error "this test is built with CUFUSE_DEBUG_SYNC"
#endif

TEST_CASE("CUFUSE_DEBUG_SYNC: assignments are checked and still correct", "[debug_sync]") {
  const cufuse::index_t n = (1 << 20) + 3;
  cufuse::tensor<float, 1> a(n), b(n);
  b.fill(3.0f);
  a = b * b - 1;
  CHECK(a.download() == std::vector<float>(std::size_t(n), 8.0f));
}

TEST_CASE("CUFUSE_DEBUG_SYNC: graph capture still works", "[debug_sync]") {
  const cufuse::index_t n = 4097;
  cufuse::tensor<float, 1> a(n), b(n);
  b.fill(2.0f);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  cudaGraph_t g;
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  {
    cufuse::stream_guard guard(s);
    a = cufuse::exp(b * 0) + b; // 3
  }
  REQUIRE(cudaStreamEndCapture(s, &g) == cudaSuccess);
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(a.download() == std::vector<float>(std::size_t(n), 3.0f));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}
