/// \file Instantiates the mma_tf32_variants list of include/cufuse/gemm/variants.cuh for the
/// standard epilogue (one translation unit per family, so they compile in parallel).
#include "registry.hpp"

#include "variant_launch.cuh"

namespace cufuse::gemm_detail {

std::vector<variant> tf32_set() { return instantiate<linear_combination>(mma_tf32_variants{}); }

} // namespace cufuse::gemm_detail
