/// \file Instantiates the simt_variants list of include/cufuse/gemm/variants.cuh for the standard
/// epilogue (one translation unit per family, so they compile in parallel).
#include "registry.hpp"

#include "variant_launch.cuh"

#include <cufuse/eval/launch.cuh>

#include <algorithm>
#include <cstdint>

namespace cufuse::gemm_detail {

std::vector<variant> simt_set() { return instantiate<linear_combination>(simt_variants{}); }

} // namespace cufuse::gemm_detail

namespace cufuse::gemm_detail {

cudaError_t launch_splitk_reduce(const float* workspace, const gemm_args& args, int batch, int sms,
                                 cudaStream_t stream) {
  const std::int64_t groups = std::int64_t(args.m) * ((args.n + 3) / 4) * batch;
  const std::int64_t blocks = std::min<std::int64_t>((groups + 255) / 256, std::int64_t(sms) * 16);
  constexpr auto kernel = &splitk_reduce_kernel<linear_combination>;
  // Launched while the GEMM's last blocks finish where it may; the kernel waits for their
  // partials.
  return detail::launch_maybe_dependent<kernel>(dim3(static_cast<unsigned>(blocks)), dim3(256),
                                                stream, workspace, args, batch,
                                                linear_combination{});
}

} // namespace cufuse::gemm_detail
