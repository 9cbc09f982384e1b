/// \file conv2d's SIMT implicit-GEMM kernel: exact fp32 FMAs, any shape, stride, padding,
/// dilation, layout and alignment (the fallback of the tensor-core variants, conv/mma.cuh).
#pragma once

#include "../core/types.cuh"
#include "../gemm/epilogue/linear_combination.cuh"
#include "implicit_gemm.cuh"

namespace cufuse::conv_detail {

/// The shared tile of one reduction step: 16 reduction elements x 64 pixels (A) and x 64
/// channels (B), rows padded to 68 floats (16-byte aligned rows for the float4 reads).
struct conv_tile {
  static constexpr int BM = 64, BN = 64, BK = 16;
  alignas(16) float a[BK][BM + 4];
  alignas(16) float b[BK][BN + 4];
};

/// One thread of the SIMT implicit-GEMM kernel, in the phases between its barriers (host and
/// device code, so that the host tests can run a block's threads phase by phase). Block
/// (bx, by) computes output pixels 64 bx .. and channels 64 by ..; thread `tid` gathers
/// reduction column tid % 16 of tile rows tid / 16 + 16 i, and computes the 4 x 4 outputs at
/// pixels 4 (tid / 16) .. and channels 4 (tid % 16) ...
template <class T>
struct conv_thread {
  static constexpr int BM = conv_tile::BM, BN = conv_tile::BN, BK = conv_tile::BK;
  int tid;
  index_t m0, n0;
  pixel_origin org[4]; // the input windows of this thread's gathered pixels
  bool row_ok[4];
  float acc[4][4];

  CUFUSE_INLINE conv_thread(const conv_args& a, index_t bx, index_t by, int t)
      : tid(t), m0(bx * BM), n0(by * BN) {
    const index_t rows = a.n * a.p * a.q;
    CUFUSE_UNROLL
    for (int i = 0; i < 4; ++i) {
      const index_t m = m0 + t / BK + 16 * i;
      row_ok[i] = m < rows;
      org[i] = origin_of(a, row_ok[i] ? m : 0);
      CUFUSE_UNROLL
      for (int j = 0; j < 4; ++j) {
        acc[i][j] = 0.0f;
      }
    }
  }

  /// This thread's share of the tile of reduction elements k0 .. k0 + 15 (zero outside X, its
  /// padding, the pixels and the channels).
  CUFUSE_INLINE void gather(const conv_args& a, index_t k0, conv_tile& tile) const {
    const T* x = static_cast<const T*>(a.x);
    const T* w = static_cast<const T*>(a.w);
    const int kk = tid % BK;
    const index_t kg = k0 + kk;
    const bool col_ok = kg < a.r * a.s * a.c;
    const filter_tap t = tap_of(a, col_ok ? kg : 0);
    CUFUSE_UNROLL
    for (int i = 0; i < 4; ++i) {
      const index_t off = col_ok && row_ok[i] ? x_offset(a, org[i], t) : -1;
      tile.a[kk][tid / BK + 16 * i] = off >= 0 ? detail::convert<float>(x[off]) : 0.0f;
    }
    CUFUSE_UNROLL
    for (int i = 0; i < 4; ++i) {
      const index_t oc = n0 + tid / BK + 16 * i;
      tile.b[kk][tid / BK + 16 * i] =
          col_ok && oc < a.k ? detail::convert<float>(w[w_offset(a, oc, t)]) : 0.0f;
    }
  }

  /// The tile's products into this thread's 4 x 4 accumulators.
  CUFUSE_INLINE void compute(const conv_tile& tile) {
    const int tx = tid % 16, ty = tid / 16;
    CUFUSE_UNROLL
    for (int j = 0; j < BK; ++j) {
      const float4 av = *reinterpret_cast<const float4*>(&tile.a[j][ty * 4]);
      const float4 bv = *reinterpret_cast<const float4*>(&tile.b[j][tx * 4]);
      const float ar[4] = {av.x, av.y, av.z, av.w}, br[4] = {bv.x, bv.y, bv.z, bv.w};
      CUFUSE_UNROLL
      for (int i = 0; i < 4; ++i) {
        CUFUSE_UNROLL
        for (int jj = 0; jj < 4; ++jj) {
          acc[i][jj] = fmaf(ar[i], br[jj], acc[i][jj]);
        }
      }
    }
  }

  /// Calls f(pixel, channel, sum) for each of this thread's outputs inside Y (the kernel with a
  /// device lambda, the host tests with a host one).
#pragma nv_exec_check_disable
  template <class F>
  CUFUSE_INLINE void outputs(const conv_args& a, F&& f) const {
    const int tx = tid % 16, ty = tid / 16;
    const index_t rows = a.n * a.p * a.q;
    CUFUSE_UNROLL
    for (int i = 0; i < 4; ++i) {
      const index_t m = m0 + ty * 4 + i;
      CUFUSE_UNROLL
      for (int jj = 0; jj < 4; ++jj) {
        const index_t oc = n0 + tx * 4 + jj;
        if (m < rows && oc < a.k) {
          f(m, oc, acc[i][jj]);
        }
      }
    }
  }
};

/// Y = epilogue(X * W): 64 output pixels x 64 output channels per block of 256 threads, each
/// thread 4 x 4 outputs in fp32; 16 reduction elements (r, s, c) per step, gathered into shared
/// memory with zero fill outside the padded input. The reduction index runs fastest over c, so
/// neighbouring threads read neighbouring channels (NHWC and KRSC keep c contiguous).
template <class T, class Epi>
__global__ void __launch_bounds__(256) conv2d_simt_kernel(const conv_args a, const Epi epi) {
  __shared__ conv_tile tile;
  conv_thread<T> th(a, blockIdx.x, blockIdx.y, static_cast<int>(threadIdx.x));
  const index_t red = a.r * a.s * a.c;
  for (index_t k0 = 0; k0 < red; k0 += conv_tile::BK) {
    th.gather(a, k0, tile);
    __syncthreads();
    th.compute(tile);
    __syncthreads();
  }
  gemm_detail::gemm_args g{};
  g.alpha = 1.0f;
  g.beta = 0.0f;
  g.out_type = a.out_type;
  th.outputs(a, [&](index_t m, index_t oc, float sum) {
    gemm_detail::store_out(a.y, m * a.ldy + oc, epi.template value<false>(g, sum, 0.0f, m, oc),
                           a.out_type);
  });
}

} // namespace cufuse::conv_detail
