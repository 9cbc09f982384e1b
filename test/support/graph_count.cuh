// Counts what a piece of host code issues, by capturing it into a CUDA Graph on a fresh stream
// (made current for the body), then replays the graph once so results can be checked.
#pragma once

#include <cufuse/cufuse.cuh>

#include <catch2/catch.hpp>

#include <utility>
#include <vector>

namespace cft {

/// {graph nodes, kernel nodes} that `body` issues on the current stream.
template <class F>
std::pair<std::size_t, std::size_t> count_kernels(F&& body) {
  auto ok = [](cudaError_t e) { REQUIRE(e == cudaSuccess); };
  cudaStream_t s;
  ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  {
    cufuse::stream_guard guard(s);
    body();
  }
  ok(cudaStreamEndCapture(s, &g));
  std::size_t nodes = 0;
  ok(cudaGraphGetNodes(g, nullptr, &nodes));
  std::vector<cudaGraphNode_t> all(nodes);
  ok(cudaGraphGetNodes(g, all.data(), &nodes));
  std::size_t kernels = 0;
  for (auto node : all) {
    cudaGraphNodeType type;
    ok(cudaGraphNodeGetType(node, &type));
    kernels += type == cudaGraphNodeTypeKernel;
  }
  cudaGraphExec_t exec;
  ok(cudaGraphInstantiate(&exec, g, 0));
  ok(cudaGraphLaunch(exec, s));
  ok(cudaStreamSynchronize(s));
  ok(cudaGraphExecDestroy(exec));
  ok(cudaGraphDestroy(g));
  ok(cudaStreamDestroy(s));
  return {nodes, kernels};
}

} // namespace cft
