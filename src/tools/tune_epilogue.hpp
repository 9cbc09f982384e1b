/// \file The epilogues `cufuse-tune --epilogue` tunes, by name. Each name stands for the
/// expression a program writes (`bias_gelu`: `cufuse::gemm(A, W, Y, cufuse::gelu_tanh(cufuse::acc
/// + bias))` with a bias of A's element type); the database key is that of the program's own call
/// (the epilogue's name follows from its operations and dtypes, epilogue/expression.cuh). The
/// kernels are instantiated per input type in tune_epilogue_<type>.cu.
#pragma once

#include <cufuse/gemm.cuh>

#include <string>
#include <utility>
#include <vector>

namespace cufuse_tools {

/// {name, the expression it stands for}.
inline const std::vector<std::pair<std::string, std::string>>& named_epilogues() {
  static const std::vector<std::pair<std::string, std::string>> e = {
      {"bias", "acc + bias"},
      {"bias_relu", "relu(acc + bias)"},
      {"bias_gelu", "gelu_tanh(acc + bias)"},
  };
  return e;
}

/// One problem, on device memory: A stored ta ? k x m : m x k, B stored tb ? n x k : k x n (row
/// major), Y m x n of `out` (A's type or f32), bias [n] of A's type.
struct epilogue_problem {
  cufuse::gemm_dtype ab, out;
  void *a, *b, *y, *bias;
  long long m, n, k;
  bool ta, tb;
};

/// cufuse::tuning::tune_epilogue of the named epilogue (records the choice when a database file
/// is set). Throws cufuse::error for an unknown name.
cufuse::tuning::epilogue_choice tune_named_epilogue_f32(const std::string& name,
                                                        const epilogue_problem& p,
                                                        const cufuse::gemm_options& options,
                                                        int repeats, cudaStream_t stream);
cufuse::tuning::epilogue_choice tune_named_epilogue_f16(const std::string& name,
                                                        const epilogue_problem& p,
                                                        const cufuse::gemm_options& options,
                                                        int repeats, cudaStream_t stream);
cufuse::tuning::epilogue_choice tune_named_epilogue_bf16(const std::string& name,
                                                         const epilogue_problem& p,
                                                         const cufuse::gemm_options& options,
                                                         int repeats, cudaStream_t stream);

namespace detail {
/// The body of tune_named_epilogue_<type>: views over the problem's memory, the layout, and
/// the named expression.
template <class T, class O>
cufuse::tuning::epilogue_choice tune_named(const std::string& name, const epilogue_problem& p,
                                           const cufuse::gemm_options& options, int repeats,
                                           cudaStream_t stream) {
  const auto a = cufuse::view(static_cast<T*>(p.a), {p.ta ? p.k : p.m, p.ta ? p.m : p.k});
  const auto b = cufuse::view(static_cast<T*>(p.b), {p.tb ? p.n : p.k, p.tb ? p.k : p.n});
  const auto y = cufuse::view(static_cast<O*>(p.y), {p.m, p.n});
  const auto bias = cufuse::view(static_cast<T*>(p.bias), {p.n});
  auto with = [&](const auto& oa, const auto& ob) {
    using cufuse::acc;
    if (name == "bias") {
      return cufuse::tuning::tune_epilogue(oa, ob, y, acc + bias, options, repeats, false, stream);
    }
    if (name == "bias_relu") {
      return cufuse::tuning::tune_epilogue(oa, ob, y, cufuse::relu(acc + bias), options, repeats,
                                           false, stream);
    }
    if (name == "bias_gelu") {
      return cufuse::tuning::tune_epilogue(oa, ob, y, cufuse::gelu_tanh(acc + bias), options,
                                           repeats, false, stream);
    }
    throw cufuse::error("cufuse-tune: unknown epilogue '" + name + "'");
  };
  if (p.ta) {
    return p.tb ? with(cufuse::transpose(a), cufuse::transpose(b)) : with(cufuse::transpose(a), b);
  }
  return p.tb ? with(a, cufuse::transpose(b)) : with(a, b);
}
} // namespace detail

} // namespace cufuse_tools
