/// \file The type-erased description of one GEMM call, shared by the public API (which builds
/// it from typed views), the tuner and the kernels (which receive `gemm_args`). Plain C++.
#pragma once

#include <cstdint>
#include <string>

namespace cufuse {

/// How float x float products are computed. `fp32`: IEEE fp32 fused multiply-adds on CUDA cores
/// (the default; what cuBLAS does unless TF32 is allowed). `tf32`: tensor cores, inputs cut to
/// TF32 (10-bit mantissa, the low 13 bits dropped, in every variant), fp32 accumulation: faster,
/// less precise. Ignored for half/bf16.
enum class gemm_math : std::uint8_t { fp32, tf32 };

/// How a variant is chosen for a problem (see README "GEMM tuning").
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
  /// At most this many SMs for the persistent variants (the sm_90a wgmma ones; 0: all), like
  /// cuBLAS's SM count target: leaves the other SMs to kernels running concurrently on other
  /// streams. The other variants launch one block per tile and ignore it. The tuner's timings
  /// and choices are those of the whole GPU.
  int sm_count = 0;
};

namespace gemm_detail {

enum class dtype : std::uint8_t { f32 = 0, f16 = 1, bf16 = 2 };

constexpr const char* dtype_name(dtype t) {
  return t == dtype::f32 ? "f32" : (t == dtype::f16 ? "f16" : "bf16");
}
constexpr int dtype_size(dtype t) { return t == dtype::f32 ? 4 : 2; }

/// One operand as stored: row-major `rows x cols` with leading dimension `ld` (elements between
/// rows), `trans` when the GEMM uses its transpose, `batch_stride` elements between batches.
struct operand {
  const void* ptr = nullptr;
  std::int64_t rows = 0, cols = 0, ld = 0, batch_stride = 0;
  bool trans = false;
};

/// C = alpha * op(A) * op(B) + beta * C for `batch` independent problems; op(A) is m x k, op(B)
/// k x n, C m x n (row-major, leading dimension c.ld).
struct problem {
  dtype ab = dtype::f32;  // element type of A and B
  dtype out = dtype::f32; // element type of C
  gemm_math math = gemm_math::fp32;
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  operand a, b;
  void* c = nullptr;
  std::int64_t ldc = 0, stride_c = 0;
  float alpha = 1.0f, beta = 0.0f;
  int sm_count = 0; // gemm_options::sm_count
};

/// Kernel parameters (trivially copyable, passed by value to every GEMM kernel). Batch b and
/// split s of blockIdx.z = b * splits + s; split s covers K range [s*k_chunk, (s+1)*k_chunk).
struct gemm_args {
  const void* a;
  const void* b;
  void* c;
  std::int64_t lda, ldb, ldc;
  std::int64_t stride_a, stride_b, stride_c; // per batch
  std::int64_t split_stride_c;               // per split (0 unless writing a split-K workspace)
  int m, n, k;
  int batch; // problems (the persistent kernels walk batch x tiles themselves)
  int splits, k_chunk;
  float alpha, beta;
  int out_type; // dtype of C as int (the workspace of split-K is f32)
  int epi_tma;  // wgmma kernels: store C through shared memory and TMA (set by the launcher)
  // Split-K (splits > 1): the fp32 workspace [batch][splits][m][n] of C as stored, and one
  // arrival counter per output tile and batch (zero at launch); c and the rest describe C.
  float* ws;
  unsigned* ws_count;
};

} // namespace gemm_detail
} // namespace cufuse
