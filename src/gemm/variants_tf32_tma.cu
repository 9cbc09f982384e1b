/// \file sm_90a variants: TF32 on mma.sync with TMA loads (mma_tma_tf32_variants). Compiled
/// for -gencode arch=compute_90a,code=sm_90a only, with the wgmma files (src/CMakeLists.txt).
#include "registry.hpp"

#include "variant_launch.cuh"

namespace cufuse::gemm_detail {

std::vector<variant> mma_tma_tf32_set() {
  return instantiate<linear_combination>(mma_tma_tf32_variants{});
}

} // namespace cufuse::gemm_detail
