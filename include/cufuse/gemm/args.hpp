/// \file What a GEMM kernel receives: `gemm_args` (trivially copyable, passed by value) and the
/// element-type codes. Plain C++; device code includes this and nothing of the host API.
#pragma once

#include <cstdint>

namespace cufuse::gemm_detail {

/// Element type codes of GEMM operands (cufuse::gemm_dtype is the same enumeration).
enum class dtype : std::uint8_t { f32 = 0, f16 = 1, bf16 = 2 };

constexpr const char* dtype_name(dtype t) {
  return t == dtype::f32 ? "f32" : (t == dtype::f16 ? "f16" : "bf16");
}
constexpr int dtype_size(dtype t) { return t == dtype::f32 ? 4 : 2; }

/// A convolution that a wgmma kernel runs as the GEMM [n p q, r s c] x [r s c, k]
/// (conv/variants.cuh, tma_conv_config): A is X (NHWC) read through a TMA im2col map, each K tile
/// one filter tap (r, s) and 64 channels from c0 (C a multiple of 64). `c` = 0: not a convolution.
/// The kernel reads c, sc, pq, q and the strides, padding and dilation; the host (the im2col map)
/// the rest.
struct conv_geometry {
  int c = 0;         // input channels
  int sc = 0;        // S * C: the reduction elements of one filter row
  int pq = 0, q = 0; // output pixels of an image, of a row
  int sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int n = 0, h = 0, wd = 0, p = 0, r = 0, s = 0; // X's images, rows, columns; P; the filter
  std::int64_t xs_n = 0, xs_h = 0, xs_w = 0;     // X's strides in elements (channels: 1)
  bool operator==(const conv_geometry&) const = default;
};

/// Split-K tiles of up to this many splits are summed by the last split of each tile to arrive
/// (splitk_finish, counters in ws_count); tiles of more splits leave their partials to a
/// reduction kernel (src/gemm/launch.cu), so their kernels have no finishing code.
inline constexpr int splitk_fixup_max = 4;

/// Kernel parameters. Batch b and split s of blockIdx.z = b * splits + s; split s covers K range
/// [s*k_chunk, (s+1)*k_chunk).
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
  int out_type;    // dtype of C as int (the workspace of split-K is f32)
  int epi_tma;     // wgmma kernels: store C through shared memory and TMA (set by the launcher)
  int epi_operand; // with epi_tma: the epilogue's staged operand is loaded by TMA (map_x)
  int layout;      // 2 * trans_a + trans_b as the kernel runs it (read by the wgmma kernels of
                   // expression epilogues, one kernel for every layout: kernel/wgmma.cuh)
  // Split-K (splits > 1): the fp32 workspace [batch][splits][m][n] of C as stored, and one
  // arrival counter per output tile and batch (zero at launch); c and the rest describe C.
  float* ws;
  unsigned* ws_count;
  conv_geometry conv; // wgmma kernels: a convolution (conv.c != 0), A loaded by im2col TMA
};

} // namespace cufuse::gemm_detail
