/// \file Programmatic dependent launch (sm_90), device side: a kernel lets the kernel launched
/// after it with the launch attribute start early (`pdl_release`), and that kernel waits for the
/// first one's results (`pdl_wait`) before it reads them. The split reductions' finish kernels
/// and the GEMM's split-K reduction use it; eval/launch.cuh says when the host may ask for it.
#pragma once

#include "config.hpp"

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

} // namespace cufuse::detail
