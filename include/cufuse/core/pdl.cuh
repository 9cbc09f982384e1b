/// \file Programmatic dependent launch (sm_90): a kernel lets the kernel launched after it with
/// the launch attribute start early (`pdl_release`), and that kernel waits for the first one's
/// results (`pdl_wait`) before it touches global memory. Launched this way: the assignment
/// kernels (flat, N-d, layout-changing, multi-output: eval/launch.cuh `launch_eval`), the row
/// kernel, the wgmma GEMM kernels, the split reductions' finish kernels and the GEMM's split-K
/// reduction. The assignment, reduction and wgmma kernels release their dependents at their
/// start, the row kernel at its end (its blocks leave room on the SMs that waiting blocks of the
/// next kernel would take: bench/JOURNAL.md g37). The host asks for the launch where
/// `dependent_launches()` allows.
///
/// The rule that keeps it exact: a kernel launched with the attribute calls pdl_wait in every
/// block, before any global access (a block that returns early waits first), so its reads see
/// all of the previous kernel's writes, and it completes only after that kernel has; a chain of
/// such launches is therefore ordered as ordinary launches are. Only its setup (shared-memory
/// barriers, registers) runs while the previous kernel finishes.
#pragma once

#include "config.hpp"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace cufuse::detail {

/// pdl_release and pdl_wait do nothing on GPUs before sm_90, and when the launch did not ask
/// for a dependent launch.
CUFUSE_DEVICE inline void pdl_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
CUFUSE_DEVICE inline void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// The process's switch of dependent launches, on unless `CUFUSE_PDL=0` (read once): for tools
/// that do not follow them, and for benchmarks that compare both in one process.
inline std::atomic<bool>& dependent_launch_switch() {
  static std::atomic<bool> on{[] {
    const char* env = std::getenv("CUFUSE_PDL");
    return env == nullptr || std::string(env) != "0";
  }()};
  return on;
}

/// The launch attribute of a programmatic dependent launch.
inline cudaLaunchAttribute dependent_launch_attribute() {
  cudaLaunchAttribute a{};
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = 1;
  return a;
}

/// Whether cufuse launches kernels as programmatic dependent launches: the switch is on and the
/// driver captures them in CUDA Graphs (CUDA 12.3 and later), so that such a launch inside
/// cufuse::capture works.
inline bool dependent_launches() {
  static const bool driver_ok = [] {
    int v = 0;
    return cudaDriverGetVersion(&v) == cudaSuccess && v >= 12030;
  }();
  return driver_ok && dependent_launch_switch().load(std::memory_order_relaxed);
}

} // namespace cufuse::detail
