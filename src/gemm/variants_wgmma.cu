/// \file sm_90a variants (TMA + wgmma, Hopper), FP16 part; BF16 and TF32 are in
/// variants_wgmma_bf16.cu and variants_wgmma_tf32.cu, TF32 mma.sync with TMA loads in
/// variants_tf32_tma.cu (the files build in parallel). Compiled for
/// -gencode arch=compute_90a,code=sm_90a only (src/CMakeLists.txt); on other devices the
/// kernels have no image, prepare() reports that, and the tuner never offers them.
#include "registry.hpp"

#include "variant_launch.cuh"

namespace cufuse::gemm_detail {

std::vector<variant> wgmma_bf16_set();
std::vector<variant> wgmma_tf32_set();
std::vector<variant> mma_tma_tf32_set();

std::vector<variant> wgmma_set() {
  auto v = instantiate<linear_combination>(wgmma16_variants<__half>{});
  for (auto part : {wgmma_bf16_set(), wgmma_tf32_set(), mma_tma_tf32_set()}) {
    v.insert(v.end(), part.begin(), part.end());
  }
  return v;
}

} // namespace cufuse::gemm_detail
