/// \file Internal to libcufuse: the variant sets compiled in src/gemm/variants_*.cu.
#pragma once

#include "variant.hpp"

#include <vector>

namespace cufuse::gemm_detail {

std::vector<variant> simt_set();
std::vector<variant> f16_set();
std::vector<variant> bf16_set();
std::vector<variant> any_align_set();
std::vector<variant> tf32_set();
/// sm_90a variants (wgmma + TMA, and TF32 mma.sync + TMA); empty when the library was built
/// without sm_90a.
std::vector<variant> wgmma_set();

/// Sums the split-K workspace ([batch][splits][m][n] fp32) into C with the standard epilogue.
cudaError_t launch_splitk_reduce(const float* workspace, const gemm_args& args, int batch, int sms,
                                 cudaStream_t stream);

} // namespace cufuse::gemm_detail
