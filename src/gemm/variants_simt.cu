/// \file Instantiates the simt_variants list of include/cufuse/gemm/variants.cuh for the standard
/// epilogue (one translation unit per family, so they compile in parallel).
#include "registry.hpp"

#include "variant_launch.cuh"

namespace cufuse::gemm_detail {

std::vector<variant> simt_set() { return instantiate<linear_combination>(simt_variants{}); }

} // namespace cufuse::gemm_detail

namespace cufuse::gemm_detail {

cudaError_t launch_splitk_reduce(const float* workspace, const gemm_args& args, int batch, int sms,
                                 cudaStream_t stream) {
  const std::int64_t total = std::int64_t(args.m) * args.n * batch;
  const std::int64_t blocks = std::min<std::int64_t>((total + 255) / 256, std::int64_t(sms) * 16);
  splitk_reduce_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(workspace, args, batch,
                                                                          linear_combination{});
  return cudaGetLastError();
}

} // namespace cufuse::gemm_detail
