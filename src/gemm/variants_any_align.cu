/// \file Instantiates the any-alignment mma.sync lists of include/cufuse/gemm/variants.cuh
/// (fp16, bf16: mma16_any_align_variants; TF32: mma_tf32_any_align_variants) for the standard
/// epilogue.
#include "registry.hpp"

#include "variant_launch.cuh"

namespace cufuse::gemm_detail {

std::vector<variant> any_align_set() {
  auto v = instantiate<linear_combination>(mma16_any_align_variants<__half>{});
  auto b = instantiate<linear_combination>(mma16_any_align_variants<__nv_bfloat16>{});
  auto t = instantiate<linear_combination>(mma_tf32_any_align_variants{});
  v.insert(v.end(), b.begin(), b.end());
  v.insert(v.end(), t.begin(), t.end());
  return v;
}

} // namespace cufuse::gemm_detail
