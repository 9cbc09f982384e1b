/// \file The sm_90a variant set when the library is built without sm_90 (empty).
#include "registry.hpp"

namespace cufuse::gemm_detail {

std::vector<variant> wgmma_set() { return {}; }

} // namespace cufuse::gemm_detail
