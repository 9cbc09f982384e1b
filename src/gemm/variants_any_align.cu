/// \file Instantiates the mma16_any_align_variants lists of include/cufuse/gemm/variants.cuh
/// (fp16 and bf16) for the standard epilogue.
#include "registry.hpp"

#include "variant_launch.cuh"

namespace cufuse::gemm_detail {

std::vector<variant> any_align_set() {
  auto v = instantiate<linear_combination>(mma16_any_align_variants<__half>{});
  auto b = instantiate<linear_combination>(mma16_any_align_variants<__nv_bfloat16>{});
  v.insert(v.end(), b.begin(), b.end());
  return v;
}

} // namespace cufuse::gemm_detail
