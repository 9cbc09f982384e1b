/// \file Internal to libcufuse: the run-time descriptor of a pre-instantiated GEMM variant, and
/// the one rule by which a variant may run a problem transposed (C^T = B^T A^T).
#pragma once

#include <cufuse/gemm/args.hpp>

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>

namespace cufuse::gemm_detail {

enum class family : std::uint8_t { simt, mma, wgmma };

/// A pre-instantiated GEMM kernel configuration and its constraints.
struct variant {
  std::string name;
  family fam = family::simt;
  dtype ab = dtype::f32; // element type of A and B
  bool tf32 = false;     // float inputs, TF32 tensor-core math
  int min_arch = 70;     // compute capability x 10 its kernels need (90 = sm_90a)
  int align = 1;         // elements: A/B pointers, leading dimensions and batch strides
  int splits = 1;        // split-K factor (1: none)
  int layouts = 0xF;     // bit (2 * trans_a + trans_b): the transposes it accepts
  bool pingpong = false; // wgmma: consumer warpgroups take whole tiles in turn
  bool tma = false;      // operands loaded by TMA (sm_90a): batch strides must not overlap
  int bm = 0, bn = 0, bk = 0, threads = 0, smem = 0;
  /// Launches the kernel for the given transposes: `grid` has one block per output tile
  /// (grid.z = batch x splits); persistent kernels launch `sms` x blocks-per-SM blocks instead.
  /// Returns the error of building the launch (e.g. a TMA descriptor); the caller checks the
  /// launch itself.
  cudaError_t (*launch)(const gemm_args&, bool ta, bool tb, dim3 grid, int sms,
                        cudaStream_t) = nullptr;
  /// Per device: opts the kernels into their shared memory and reports the lowest SASS
  /// architecture they were compiled for on this device (0 when they have no code for it).
  cudaError_t (*prepare)(int* binary_arch) = nullptr;
};

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

/// Output tiles of a bm x bn variant on an m x n problem in the orientation the variant runs it.
inline std::int64_t oriented_tiles(const variant& v, std::int64_t m, std::int64_t n, bool ta,
                                   bool tb) {
  if (runs_transposed(v.tf32, ta, tb)) {
    std::swap(m, n);
  }
  return ((m + v.bm - 1) / v.bm) * ((n + v.bn - 1) / v.bn);
}

} // namespace cufuse::gemm_detail
