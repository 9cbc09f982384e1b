/// \file The host-side description of GEMM calls: options, the tuning modes and the type-erased
/// problem that the public API builds from typed operands and the tuner keys on. Plain C++; the
/// kernels see only `gemm_args` (args.hpp).
#pragma once

#include "args.hpp"

#include <cstdint>
#include <string>

namespace cufuse {

/// How float x float products are computed. `fp32`: IEEE fp32 fused multiply-adds on CUDA cores
/// (the default; what cuBLAS does unless TF32 is allowed). `tf32`: tensor cores, inputs cut to
/// TF32 (10-bit mantissa, the low 13 bits dropped, in every variant), fp32 accumulation: faster,
/// less precise. Ignored for half/bf16.
enum class gemm_math : std::uint8_t { fp32, tf32 };

/// How a variant is chosen for a problem (docs/gemm.md, "Choosing a variant").
/// off: a static heuristic. online: a UCB bandit times variants during real calls, then commits.
/// frozen: the tuning database only; an unseen shape takes the nearest tuned shape of its family,
/// then the heuristic.
enum class tune_mode : std::uint8_t { off, online, frozen };

/// Per-call options of `cufuse::gemm`.
struct gemm_options {
  gemm_math math = gemm_math::fp32;
  /// Run exactly this variant (by its stable name), bypassing the tuner. Throws cufuse::error if
  /// the name is unknown or the variant cannot run this problem. Empty: the tuner decides.
  std::string variant;
  /// At most this many SMs for the persistent variants (the sm_90a wgmma ones but the cluster
  /// split-K tile; 0: all), like cuBLAS's SM count target: leaves the other SMs to kernels
  /// running concurrently on other streams. The other variants launch one block (the cluster
  /// split-K tile: one cluster) per tile and ignore it. The tuner's timings and choices are those
  /// of the whole GPU.
  int sm_count = 0;
};

/// Element type of GEMM operands: f32 (float), f16 (__half), bf16 (__nv_bfloat16).
using gemm_dtype = gemm_detail::dtype;
/// "f32", "f16" or "bf16".
constexpr const char* gemm_dtype_name(gemm_dtype t) { return gemm_detail::dtype_name(t); }
/// Bytes per element.
constexpr int gemm_dtype_size(gemm_dtype t) { return gemm_detail::dtype_size(t); }

/// One operand as stored: row-major `rows x cols` with leading dimension `ld` (elements between
/// rows), `trans` when the GEMM uses its transpose, `batch_stride` elements between batches.
struct gemm_operand {
  const void* ptr = nullptr;
  std::int64_t rows = 0, cols = 0, ld = 0, batch_stride = 0;
  bool trans = false;
};

/// The type-erased description of one call, C = alpha * op(A) * op(B) + beta * C for `batch`
/// independent problems; op(A) is m x k, op(B) k x n, C m x n (row-major, leading dimension
/// ldc). `cufuse::tuning::problem(A, B, C, ...)` builds one from typed operands, checking them as
/// cufuse::gemm does; the tuning API (cufuse::tuning) takes it.
struct gemm_problem {
  gemm_dtype ab = gemm_dtype::f32;  // element type of A and B
  gemm_dtype out = gemm_dtype::f32; // element type of C
  gemm_math math = gemm_math::fp32;
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  gemm_operand a, b;
  void* c = nullptr;
  std::int64_t ldc = 0, stride_c = 0;
  float alpha = 1.0f, beta = 0.0f;
  int sm_count = 0; // gemm_options::sm_count
};

namespace gemm_detail {
using operand = gemm_operand;
using problem = gemm_problem;
} // namespace gemm_detail
} // namespace cufuse
