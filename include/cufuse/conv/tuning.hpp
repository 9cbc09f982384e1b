/// \file The type-erased interface between a translation unit that instantiates conv2d's
/// implicit-GEMM kernels (cufuse/conv.cuh, for its epilogue types) and libcufuse, whose tuner
/// chooses among them: modes off / online / frozen as for GEMM, the same database file (conv
/// families next to GEMM ones). Host code.
#pragma once

#include "../core/config.hpp"
#include "../gemm/problem.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cufuse::conv_detail {

/// A convolution as the tuner keys it: dtypes, geometry and whether the tensor-core variants'
/// layout requirements hold (`chunked`). Plain values: a steady-state call hashes them.
struct conv_key {
  std::uint8_t in = 0, out = 0; // gemm_detail::dtype
  std::uint8_t tf32 = 0;        // fp32 inputs with TF32 math
  std::uint8_t chunked = 0;     // channels in 16-byte chunks (conv/mma.cuh's requirements)
  index_t n = 0, h = 0, w = 0, c = 0, k = 0, r = 0, s = 0;
  index_t sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0, dh = 1, dw = 1;
  index_t p = 0, q = 0;
  bool operator==(const conv_key&) const = default;
};

/// The implicit-GEMM variants of one (input type, epilogue type), in the translation unit that
/// instantiates them (one static object per pair). `epilogue`: the epilogue's name in database
/// keys (empty: the standard one). `names`: every variant, the SIMT one last.
struct conv_set {
  std::string epilogue;
  std::vector<std::string> names;
};

/// Launches variant `v` (an index into the set's names) for the call `call` points to.
using conv_launch_fn = void (*)(int v, const void* call, cudaStream_t stream);

/// Runs one conv2d call on the variant the tuner chooses among the set's variants that can run
/// it (`valid`: bit v for names[v]); `heuristic` is the static choice (mode off, and frozen
/// without a database entry of the family).
void run_conv(const conv_key& key, const conv_set& set, std::uint32_t valid, int heuristic,
              conv_launch_fn launch, const void* call, cudaStream_t stream);

/// The variant the tuner has settled on for `key` with the set's epilogue, if it has (in this
/// process, else the database's exact entry).
std::optional<std::string> chosen_conv(const conv_key& key, const conv_set& set);

/// Stores a measured choice for `key` in the tuning database. Throws if `variant` is not one
/// of the set's, or there is no database file.
void record_conv(const conv_key& key, const conv_set& set, const std::string& variant,
                 double seconds);

/// The database key's family of `key` with the set's epilogue and variant set, e.g.
/// "conv.bf16>bf16.c1.f3x3.s1x1.p1,1,1,1.d1x1.e=x...v=1a2b3c4d" (the shape fields of the
/// entry: m = n p q, n = k, k = r s c).
std::string conv_family(const conv_key& key, const conv_set& set);

} // namespace cufuse::conv_detail
