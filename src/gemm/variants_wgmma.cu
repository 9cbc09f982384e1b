/// \file sm_90a (Hopper wgmma + TMA) variants. Not written yet: the set is empty, so the tuner
/// never offers one (README "Status" and the closing note say so).
#include "registry.hpp"

namespace cufuse::gemm_detail {

std::vector<variant> wgmma_set() { return {}; }

} // namespace cufuse::gemm_detail
