/// \file cufuse-tune --epilogue: the named epilogues' kernels for f16 inputs (tune_epilogue.hpp).
#include "tune_epilogue.hpp"

namespace cufuse_tools {

cufuse::tuning::epilogue_choice tune_named_epilogue_f16(const std::string& name,
                                                        const epilogue_problem& p,
                                                        const cufuse::gemm_options& options,
                                                        int repeats, cudaStream_t stream) {
  if (p.out == cufuse::gemm_dtype::f32) {
    return detail::tune_named<__half, float>(name, p, options, repeats, stream);
  }
  return detail::tune_named<__half, __half>(name, p, options, repeats, stream);
}

} // namespace cufuse_tools
