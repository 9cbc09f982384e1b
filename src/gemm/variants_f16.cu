/// \file Instantiates the mma_f16_variants list of include/cufuse/gemm/variants.cuh for the
/// standard epilogue (one translation unit per family, so they compile in parallel).
#include "registry.hpp"

#include "variant_launch.cuh"

namespace cufuse::gemm_detail {

std::vector<variant> f16_set() { return instantiate<linear_combination>(mma_f16_variants{}); }

} // namespace cufuse::gemm_detail
