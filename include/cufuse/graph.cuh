/// \file CUDA Graph capture of cufuse work: every assignment and reduction is stream-ordered
/// (cudaMallocAsync temporaries, no synchronization inside), so a pipeline can be captured once
/// and replayed.
///
///   auto g = cufuse::capture(stream, [&] { Y = cufuse::softmax(X, -1); r = cufuse::sum(Y, 0); });
///   g.launch(stream);   // replays both kernels; X's new contents are read at each replay
#pragma once

#include "core/error.hpp"
#include "memory/stream.hpp"

#include <cuda_runtime_api.h>

#include <utility>

namespace cufuse {

/// An executable CUDA Graph (move-only; destroyed with the object).
class graph {
public:
  graph() = default;
  explicit graph(cudaGraphExec_t exec) noexcept : exec_(exec) {}
  graph(graph&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}
  graph& operator=(graph&& o) noexcept {
    if (this != &o) {
      reset();
      exec_ = std::exchange(o.exec_, nullptr);
    }
    return *this;
  }
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;
  ~graph() { reset(); }

  /// Replays the captured work on `stream` (asynchronous, like the calls it captured).
  void launch(cudaStream_t stream = current_stream()) const {
    if (exec_ == nullptr) {
      throw error("cufuse::graph::launch: an empty graph (default-constructed or moved from)");
    }
    CUFUSE_CUDA_CHECK_MSG(cudaGraphLaunch(exec_, stream), "replaying a captured cufuse graph");
  }
  cudaGraphExec_t native() const noexcept { return exec_; }

private:
  void reset() noexcept {
    if (exec_ != nullptr) {
      (void)cudaGraphExecDestroy(exec_);
      exec_ = nullptr;
    }
  }
  cudaGraphExec_t exec_ = nullptr;
};

/// Captures what `f` issues on `stream` (made the current stream while `f` runs) into an
/// executable graph. `stream` must not be the legacy default stream (0): create one with
/// cudaStreamCreate. Operations that synchronize (`download`, `item`) cannot be captured.
template <class F>
graph capture(cudaStream_t stream, F&& f) {
  if (stream == nullptr) {
    throw error("cufuse::capture: the default stream (0) cannot be captured; pass a stream made "
                "with cudaStreamCreate");
  }
  CUFUSE_CUDA_CHECK_MSG(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
                        "cufuse::capture");
  cudaGraph_t g = nullptr;
  try {
    stream_guard guard(stream);
    f();
  } catch (...) {
    (void)cudaStreamEndCapture(stream, &g);
    if (g != nullptr) {
      (void)cudaGraphDestroy(g);
    }
    (void)cudaGetLastError();
    throw;
  }
  CUFUSE_CUDA_CHECK_MSG(cudaStreamEndCapture(stream, &g), "cufuse::capture (ending the capture)");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, g, 0);
  (void)cudaGraphDestroy(g);
  CUFUSE_CUDA_CHECK_MSG(err, "cufuse::capture (instantiating the graph)");
  return graph(exec);
}

} // namespace cufuse
