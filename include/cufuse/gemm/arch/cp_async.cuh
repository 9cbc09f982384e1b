/// \file PTX wrappers: shared-memory addresses and cp.async (sm_80+) copies.
#pragma once

#include "device.cuh"

namespace cufuse::gemm_detail {

// ---- cp.async ------------------------------------------------------------------------------

CUFUSE_DEVICE_FN unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// 16-byte cp.async; copies `bytes` (0..16) and zero-fills the rest.
CUFUSE_DEVICE_FN void cp_async16(void* dst, const void* src, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(bytes));
#endif
}
/// 16-byte cp.async of a whole chunk, to a shared-memory byte address.
CUFUSE_DEVICE_FN void cp_async16_at(unsigned dst, const void* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
#endif
}
CUFUSE_DEVICE_FN void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
CUFUSE_DEVICE_FN void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/// 4-byte cp.async (L1-allocating, the only kind for 4 bytes) to a shared byte address;
/// copies `bytes` (0 or 4) and zero-fills the rest.
CUFUSE_DEVICE_FN void cp_async4_at(unsigned dst, const void* src, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
#endif
}
/// 16-byte cp.async of `bytes` (0..16, the rest zero-filled) to a shared byte address.
CUFUSE_DEVICE_FN void cp_async16_at(unsigned dst, const void* src, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
#endif
}

} // namespace cufuse::gemm_detail
