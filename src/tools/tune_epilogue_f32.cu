/// \file cufuse-tune --epilogue: the named epilogues' kernels for f32 inputs (tune_epilogue.hpp).
#include "tune_epilogue.hpp"

namespace cufuse_tools {

cufuse::tuning::epilogue_choice tune_named_epilogue_f32(const std::string& name,
                                                        const epilogue_problem& p,
                                                        const cufuse::gemm_options& options,
                                                        int repeats, cudaStream_t stream) {
  return detail::tune_named<float, float>(name, p, options, repeats, stream); // C is fp32
}

} // namespace cufuse_tools
