/// \file PTX wrappers: named barriers (a subset of the block's warps synchronizes) and register
/// reallocation between warpgroups (setmaxnreg, sm_90a).
#pragma once

#include "device.cuh"

namespace cufuse::gemm_detail {

/// The calling warps wait at barrier `id` until `Threads` threads have arrived.
template <int Threads>
CUFUSE_DEVICE_FN void named_bar_sync(int id) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(Threads) : "memory");
}
/// The calling warps arrive at barrier `id` (of `Threads` threads) without waiting.
template <int Threads>
CUFUSE_DEVICE_FN void named_bar_arrive(int id) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "n"(Threads) : "memory");
}

/// The warpgroup gives registers back: at most `Regs` per thread from here on (sm_90a).
template <int Regs>
CUFUSE_DEVICE_FN void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs));
}
/// The warpgroup takes registers: `Regs` per thread from here on (sm_90a).
template <int Regs>
CUFUSE_DEVICE_FN void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs));
}

} // namespace cufuse::gemm_detail
