/// \file cufuse-tune --conv: conv2d's variants timed on one convolution, the fastest recorded
/// (cufuse::tuning::tune_conv2d). The kernels of each input type built here are those a
/// program's `cufuse::conv2d(X, W, Y, params)` instantiates, so the keys match.
#include "tune_conv.hpp"

#include <cufuse/conv.cuh>
#include <cufuse/cufuse.cuh>

#include <cmath>
#include <cstdio>
#include <vector>

namespace cufuse_tools {

bool parse_conv_spec(const std::string& text, conv_spec& out) {
  conv_spec s{0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  char tail = 0;
  const int got =
      std::sscanf(text.c_str(), "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld%c", &s.n, &s.h,
                  &s.w, &s.c, &s.k, &s.r, &s.s, &s.stride, &s.pad, &s.dilation, &tail);
  if ((got != 9 && got != 10) || s.n < 1 || s.h < 1 || s.w < 1 || s.c < 1 || s.k < 1 || s.r < 1 ||
      s.s < 1 || s.stride < 1 || s.pad < 0 || s.dilation < 1) {
    return false;
  }
  out = s;
  return true;
}

namespace {

template <class T, class O>
conv_tuned tune_typed(const conv_spec& s, const cufuse::gemm_options& go, int repeats,
                      cudaStream_t stream) {
  const cufuse::conv2d_params prm{.stride = {s.stride, s.stride},
                                  .padding = {s.pad, s.pad},
                                  .dilation = {s.dilation, s.dilation}};
  const auto [p, q] = cufuse::conv2d_output_size(s.h, s.w, s.r, s.s, prm);
  if (p <= 0 || q <= 0) {
    throw cufuse::shape_error("cufuse-tune --conv: the convolution has no output (" +
                              std::to_string(p) + " x " + std::to_string(q) + ")");
  }
  cufuse::tensor<T, 4> x({s.n, s.h, s.w, s.c}), w({s.k, s.r, s.s, s.c});
  cufuse::tensor<O, 4> y({s.n, p, q, s.k});
  // Values in [-1, 1] and [-0.1, 0.1]: timing does not depend on them, but zeros would draw
  // less power than real data.
  auto fill = [](cufuse::tensor<T, 4>& t, float scale) {
    std::vector<T> v(static_cast<std::size_t>(t.size()));
    for (std::size_t i = 0; i < v.size(); ++i) {
      v[i] = T(scale * std::sin(0.37f * float(i % 100003)));
    }
    t.upload(v);
  };
  fill(x, 1.0f);
  fill(w, 0.1f);
  const auto c = cufuse::tuning::tune_conv2d(x, w, y, prm, go, repeats, stream);
  return {c.variant, c.seconds, p, q};
}

[[maybe_unused]] conv_tuned missing(const char* t) {
  throw cufuse::error(std::string("this cufuse-tune was built without the ") + t +
                      " conv2d kernels (a CUFUSE_COMPILE_ONLY build)");
}

} // namespace

conv_tuned tune_conv(const conv_spec& spec, const std::string& dtype, bool out_f32, int repeats,
                     cudaStream_t stream) {
  cufuse::gemm_options go;
  if (dtype == "f32" || dtype == "tf32") {
    go.math = dtype == "tf32" ? cufuse::gemm_math::tf32 : cufuse::gemm_math::fp32;
#ifdef CUFUSE_TUNE_CONV_f32
    return tune_typed<float, float>(spec, go, repeats, stream);
#else
    return missing("f32");
#endif
  }
  if (dtype == "f16") {
#ifdef CUFUSE_TUNE_CONV_f16
    return out_f32 ? tune_typed<__half, float>(spec, go, repeats, stream)
                   : tune_typed<__half, __half>(spec, go, repeats, stream);
#else
    return missing("f16");
#endif
  }
  if (dtype == "bf16") {
#ifdef CUFUSE_TUNE_CONV_bf16
    return out_f32 ? tune_typed<__nv_bfloat16, float>(spec, go, repeats, stream)
                   : tune_typed<__nv_bfloat16, __nv_bfloat16>(spec, go, repeats, stream);
#else
    return missing("bf16");
#endif
  }
  throw cufuse::error("cufuse-tune --conv: unknown dtype " + dtype);
}

} // namespace cufuse_tools
