/// \file Internal to libcufuse: the run-time descriptor of a pre-instantiated GEMM variant (the
/// rule by which it may run a problem transposed is in include/cufuse/gemm/orient.hpp).
#pragma once

#include <cufuse/gemm/args.hpp>
#include <cufuse/gemm/orient.hpp>

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
  dtype ab = dtype::f32;      // element type of A and B
  bool tf32 = false;          // float inputs, TF32 tensor-core math
  int min_arch = 70;          // compute capability x 10 its kernels need (90 = sm_90a)
  int align = 1;              // elements: A/B pointers, leading dimensions and batch strides
  int splits = 1;             // split-K factor (1: none)
  bool fixup = false;         // split-K finished in the kernel by each tile's last split
                              // (counters); else, split, by the reduction kernel
  bool cluster_split = false; // the splits of a tile run as one thread-block cluster and are
                              // summed in it (wgmma): no workspace
  int layouts = 0xF;          // bit (2 * trans_a + trans_b): the transposes it accepts
  bool pingpong = false;      // wgmma: consumer warpgroups take whole tiles in turn
  bool tma = false;           // operands loaded by TMA (sm_90a): batch strides must not overlap
  int packs = -1;             // >= 0: variant `packs` (a registry index) run on copies of the A/B
                              // operands it cannot read in place, repacked to 16-byte aligned rows
                              // (src/gemm/pack.cu); such a variant accepts any alignment
  int bm = 0, bn = 0, bk = 0, threads = 0, smem = 0;
  launch_fn launch = nullptr; // the standard epilogue's kernels (orient.hpp)
  prepare_fn prepare = nullptr;
  clusters_fn clusters = nullptr; // cluster_split: the clusters a device holds at once
};

/// Output tiles of a bm x bn variant on an m x n problem in the orientation the variant runs it.
inline std::int64_t oriented_tiles(const variant& v, std::int64_t m, std::int64_t n, bool ta,
                                   bool tb) {
  if (runs_transposed(v.tf32, ta, tb)) {
    std::swap(m, n);
  }
  return ((m + v.bm - 1) / v.bm) * ((n + v.bn - 1) / v.bn);
}

} // namespace cufuse::gemm_detail
