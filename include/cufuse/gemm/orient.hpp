/// \file THE rule by which a tensor-core variant may run a problem transposed (C^T = B^T A^T),
/// the problem as a variant runs it, and the type-erased launch entry of a configuration's
/// kernels. Host code: the launch code (gemm/launch.cuh) and libcufuse share it.
#pragma once

#include "args.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

namespace cufuse::gemm_detail {

/// THE rule: TF32 NN runs as C^T = B^T A^T on every tensor-core family (TF32 variants are
/// tensor-core variants). In that form B, contiguous along N, takes A's role: on mma.sync its
/// fragments come from 8-byte shared reads (two registers each) instead of one 32-bit read per
/// register, and TF32 wgmma and the TMA mma.sync tiles read their B operand only K-major.
constexpr bool runs_transposed(bool tf32, bool ta, bool tb) { return tf32 && !ta && !tb; }

/// A problem as a variant runs it: as given, or (runs_transposed) with the operands, their
/// leading dimensions and batch strides and m / n exchanged and both operands transposed; C,
/// its leading dimension and the epilogue stay (the kernel writes C as stored).
struct oriented {
  gemm_args args;
  bool ta, tb;
  bool swapped;
};
inline oriented orient(const gemm_args& p, bool tf32, bool ta, bool tb) {
  if (!runs_transposed(tf32, ta, tb)) {
    return {p, ta, tb, false};
  }
  gemm_args t = p;
  std::swap(t.a, t.b);
  std::swap(t.lda, t.ldb);
  std::swap(t.stride_a, t.stride_b);
  std::swap(t.m, t.n);
  return {t, true, true, true};
}

/// Launches a configuration's kernel for transposes (ta, tb) with an epilogue object (`epi`,
/// null for the standard one): `grid` has one block per output tile (grid.z = batch x
/// splits); persistent kernels launch `sms` x blocks-per-SM blocks instead. Returns the error
/// of building the launch (e.g. a TMA descriptor); the caller checks the launch itself.
using launch_fn = cudaError_t (*)(const gemm_args&, const void* epi, bool ta, bool tb, dim3 grid,
                                  int sms, cudaStream_t);
/// Per device: opts the kernels into their shared memory and reports the lowest SASS
/// architecture they were compiled for on this device (0 when they have no code for it).
using prepare_fn = cudaError_t (*)(int* binary_arch);
/// Writes how many thread-block clusters of a cluster split-K variant's kernel the current
/// device holds at once (after its prepare_fn).
using clusters_fn = cudaError_t (*)(int* clusters);

} // namespace cufuse::gemm_detail
