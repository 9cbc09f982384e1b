/// \file cufuse-tune --epilogue: the named epilogues' kernels for bf16 inputs (tune_epilogue.hpp).
#include "tune_epilogue.hpp"

namespace cufuse_tools {

cufuse::tuning::epilogue_choice tune_named_epilogue_bf16(const std::string& name,
                                                         const epilogue_problem& p,
                                                         const cufuse::gemm_options& options,
                                                         int repeats, cudaStream_t stream) {
  if (p.out == cufuse::gemm_dtype::f32) {
    return detail::tune_named<__nv_bfloat16, float>(name, p, options, repeats, stream);
  }
  return detail::tune_named<__nv_bfloat16, __nv_bfloat16>(name, p, options, repeats, stream);
}

} // namespace cufuse_tools
