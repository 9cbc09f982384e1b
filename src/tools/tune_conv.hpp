/// \file The convolutions `cufuse-tune --conv` tunes: the spec it parses and the tuning call,
/// instantiated per input type in tune_conv.cu (the conv2d kernels of the standard epilogue).
#pragma once

#include <cufuse/gemm.cuh>

#include <string>

namespace cufuse_tools {

/// N,H,W,C,K,R,S,stride,pad[,dilation] (NHWC input, KRSC filter; stride, padding and dilation
/// the same along h and w).
struct conv_spec {
  long long n, h, w, c, k, r, s, stride, pad, dilation;
};

/// Parses "N,H,W,C,K,R,S,stride,pad[,dilation]"; false if it is not one.
bool parse_conv_spec(const std::string& text, conv_spec& out);

/// The result of tuning one convolution.
struct conv_tuned {
  std::string variant;
  double seconds = 0.0;
  long long p = 0, q = 0;
};

/// cufuse::tuning::tune_conv2d on tensors of the spec's shapes (`dtype`: f32, tf32, f16, bf16;
/// `out_f32`: fp32 output instead of the input type), which records the choice when a database
/// file is set. Throws cufuse::error when this build lacks the type (CUFUSE_COMPILE_ONLY builds
/// only bf16) and cufuse::shape_error for a spec with no output.
conv_tuned tune_conv(const conv_spec& spec, const std::string& dtype, bool out_f32, int repeats,
                     cudaStream_t stream);

} // namespace cufuse_tools
