/// \file sm_90a variants (TMA + wgmma, Hopper), BF16 half (see variants_wgmma.cu).
#include "registry.hpp"

#include "variant_launch.cuh"

namespace cufuse::gemm_detail {

std::vector<variant> wgmma_bf16_set() {
  return instantiate<linear_combination>(wgmma16_variants<__nv_bfloat16>{});
}

} // namespace cufuse::gemm_detail
