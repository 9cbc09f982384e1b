/// \file conv2d as an implicit GEMM: what its kernels receive and the index map from the GEMM's
/// rows (output pixels) and reduction index (filter taps) to X and W. Host and device code, so
/// that the host tests check the map.
#pragma once

#include "../core/config.hpp"

namespace cufuse::conv_detail {

/// What the implicit-GEMM kernel receives. X and W are read through element strides (any
/// layout, any alignment); Y is written as [n p q, k] rows `ldy` elements apart.
struct conv_args {
  const void* x;
  const void* w;
  void* y;
  index_t n, h, wd, c, k, r, s, p, q;
  index_t xs[4], ws[4]; // strides of X (n, h, w, c) and W (k, r, s, c), in elements
  index_t ldy;
  index_t sh, sw, ph, pw, dh, dw;
  int out_type; // gemm_detail::dtype of Y
  // Split-K (tensor-core variants of more than one split): the fp32 partial sums of every
  // split, [splits][n p q][k], and one arrival counter per output tile (zero at launch).
  float* part;
  unsigned* part_count;
  int splits;
};

/// The implicit GEMM's index map (host and device, so that the host tests check it): output
/// pixel m = (img p + i) q + j reads its window from X's image `xbase` at input rows / columns
/// from (h0, w0) (negative: the padding); reduction index kg is the filter tap (fr, fs, ch), ch
/// fastest, as W's KRSC rows are laid out.
struct pixel_origin {
  index_t xbase, h0, w0;
};
struct filter_tap {
  index_t fr, fs, ch;
};
CUFUSE_HOST_DEVICE inline pixel_origin origin_of(const conv_args& a, index_t m) {
  const index_t pq = a.p * a.q;
  const index_t img = m / pq, rem = m - img * pq;
  const index_t op = rem / a.q, oq = rem - op * a.q;
  return {img * a.xs[0], op * a.sh - a.ph, oq * a.sw - a.pw};
}
CUFUSE_HOST_DEVICE inline filter_tap tap_of(const conv_args& a, index_t kg) {
  const index_t ch = kg % a.c, rs = kg / a.c;
  return {rs / a.s, rs % a.s, ch};
}
/// X's element for pixel origin `o` and tap `t`, or -1 where it lies in the padding.
CUFUSE_HOST_DEVICE inline index_t x_offset(const conv_args& a, const pixel_origin& o,
                                           const filter_tap& t) {
  const index_t hh = o.h0 + t.fr * a.dh, ww = o.w0 + t.fs * a.dw;
  if (hh < 0 || hh >= a.h || ww < 0 || ww >= a.wd) {
    return -1;
  }
  return o.xbase + hh * a.xs[1] + ww * a.xs[2] + t.ch * a.xs[3];
}
/// W's element for output channel oc and tap `t`.
CUFUSE_HOST_DEVICE inline index_t w_offset(const conv_args& a, index_t oc, const filter_tap& t) {
  return oc * a.ws[0] + t.fr * a.ws[1] + t.fs * a.ws[2] + t.ch * a.ws[3];
}

} // namespace cufuse::conv_detail
