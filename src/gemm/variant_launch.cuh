/// \file Internal to libcufuse: how a compile-time configuration of
/// include/cufuse/gemm/variants.cuh becomes a run-time `variant` (its name, constraints, and the
/// launch of include/cufuse/gemm/launch.cuh). Included by the src/gemm/variants_*.cu files,
/// which instantiate the lists.
#pragma once

#include "variant.hpp"

#include <cufuse/gemm/launch.cuh>

#include <cuda_runtime.h>

#include <string>
#include <vector>

namespace cufuse::gemm_detail {

template <class Cfg, class Epi>
variant make_variant() {
  variant v;
  v.name = variant_name<Cfg>();
  using T = typename Cfg::element;
  v.ab = dtype_of<T>();
  v.splits = Cfg::splits;
  v.bm = Cfg::BM;
  v.bn = Cfg::BN;
  v.bk = Cfg::BK;
  v.threads = Cfg::threads;
  v.smem = Cfg::smem_bytes;
  if constexpr (is_simt<Cfg>::value) {
    v.fam = family::simt;
    v.min_arch = Cfg::stages > 0 ? 80 : 70; // cp.async
    v.align = Cfg::Vec;
    v.fixup = finishes_in_kernel<Cfg>();
  } else if constexpr (is_wgmma<Cfg>::value) {
    v.fam = family::wgmma;
    v.fixup = Cfg::splits > 1 && !Cfg::cluster_k; // splitk_finish in the persistent kernel
    v.min_arch = 90;
    v.align = Cfg::chunk;
    v.pingpong = Cfg::pingpong;
    v.cluster_split = Cfg::cluster_k;
    if constexpr (Cfg::cluster_k) {
      v.clusters = &resident_clusters<Cfg, Epi>;
    }
    v.tf32 = Cfg::tf32;
    v.tma = true;
    if constexpr (Cfg::tf32) {
      // NN, NT, TT: TF32 wgmma reads B K-major only (kernel_of); TN would need both operands
      // transposed in shared memory.
      v.layouts = (1 << 0) | (1 << 1) | (1 << 3);
    }
  } else {
    v.fam = family::mma;
    v.fixup = finishes_in_kernel<Cfg>();
    v.tf32 = Cfg::tf32;
    v.min_arch = Cfg::tma ? 90 : 80;
    v.align = Cfg::elem ? 1 : Cfg::chunk;
    v.tma = Cfg::tma;
    if constexpr (Cfg::tma) {
      v.layouts = (1 << 0) | (1 << 1) | (1 << 3); // NN, NT, TT: B K-major (kernel_of)
    }
  }
  v.launch = &launch_variant<Cfg, Epi>;
  v.prepare = &prepare_variant<Cfg, Epi>;
  return v;
}

/// The run-time descriptors of every configuration in `List`, for epilogue `Epi`.
template <class Epi, class... C>
std::vector<variant> instantiate(variant_list<C...>) {
  return {make_variant<C, Epi>()...};
}

} // namespace cufuse::gemm_detail
