/// \file The type-erased interface between a translation unit that instantiates GEMM kernels
/// for an expression epilogue (gemm/epilogue/expression.cuh) and libcufuse, which validates,
/// tunes and launches them. Host code.
#pragma once

#include "orient.hpp"
#include "problem.hpp"

#include <optional>
#include <string>
#include <vector>

namespace cufuse::gemm_detail {

/// One tile configuration instantiated for an epilogue type: the name of the standard variant
/// with the same configuration (whose constraints and rates it shares) and its kernels.
struct fused_kernel {
  std::string name;
  launch_fn launch = nullptr;
  prepare_fn prepare = nullptr;
};

/// The kernels of one epilogue type: one static object per type, in the translation unit that
/// instantiates them. `epilogue`: the epilogue's name in tuning-database keys.
struct fused_set {
  std::string epilogue;
  std::vector<fused_kernel> kernels;
};

/// Runs `p` (alpha 1, beta 0; C is the epilogue's first output) with the set's kernels and the
/// epilogue object `epi`: the variant is chosen as for cufuse::gemm, among the set's
/// configurations, under a key that includes the epilogue (implemented in libcufuse).
void run_fused(const problem& p, const fused_set& set, const void* epi, cudaStream_t stream,
               const gemm_options& options);

/// The variants of `set` that can run `p` on the current device (tests, tools).
std::vector<std::string> fused_variants(const problem& p, const fused_set& set);

/// The variant the tuner has settled on for `p` with the set's epilogue, if it has.
std::optional<std::string> chosen_fused(const problem& p, const fused_set& set);

/// Stores a measured choice for `p` with the set's epilogue in the tuning database (as
/// cufuse::tuning::record does for the standard epilogue). Throws if `variant` is not one of the
/// set's variants that can run `p` here, or there is no database file.
void record_fused(const problem& p, const fused_set& set, const std::string& variant,
                  double seconds);

} // namespace cufuse::gemm_detail
