/// \file sm_90a variants (TMA + wgmma, Hopper), TF32 part (see variants_wgmma.cu).
#include "registry.hpp"

#include "variant_launch.cuh"

namespace cufuse::gemm_detail {

std::vector<variant> wgmma_tf32_set() {
  return instantiate<linear_combination>(wgmma_tf32_variants{});
}

} // namespace cufuse::gemm_detail
