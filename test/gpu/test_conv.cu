// cufuse::conv2d against a direct double-precision loop: odd sizes, strides 1-2, padding 0-2 and
// asymmetric, dilation 2, 1x1 (the GEMM path and, strided or padded, the implicit-GEMM kernel),
// 3x3, 5x5, 7x7 stride 2 (ResNet's stem, C = 3), channel counts that are not multiples of 8;
// fp32, fp16 and bf16 inputs, outputs of the input type or fp32; fused epilogues (folded batch
// norm, ReLU, a residual); strided views; shape errors. Outputs are poisoned before each run.
#include "../support/gemm_check.hpp"

#include <cufuse/conv.cuh>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace gemm_test;

namespace {

using index_t = cufuse::index_t;

/// Whether the device runs the wgmma tiles (sm_90: this file is built for sm_90a).
bool sm90() {
  static const bool yes = [] {
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
      throw std::runtime_error("test_conv: reading the device's compute capability failed");
    }
    return major == 9;
  }();
  return yes;
}

// Implicit-GEMM variants that run a convolution whose channels come in 16-byte chunks: the
// gathering tensor-core tiles (conv.cuh's for_each_mma_config; on sm_90 three wgmma ones too) and
// the SIMT kernel; the halo tiles (halo_variants) run some of them too.
std::size_t half_variants() { return sm90() ? 10 : 7; } // fp16 / bf16
constexpr std::size_t tf32_variants = 4;                // fp32 under gemm_math::tf32

struct conv_case {
  index_t n, h, w, c, k, r, s;
  cufuse::conv2d_params prm;
};

/// The halo tiles that run case t (conv/mma.cuh's halo_config), by their documented rules:
/// stride and dilation 1, an output as large as the input, C a multiple of the tile's reduction
/// step, at least stages - 1 and at most 32 taps, (R - 1) W + S - 1 within the tile's halo. X is
/// dense here. On sm_90, fp16 / bf16: the wgmma 128x128x64 s3 halo64, 128x64x64 s4 halo128 and
/// 64x64x64 s4 halo64; none otherwise.
std::size_t halo_variants(const conv_case& t, bool tf32) {
  const auto [p, q] = cufuse::conv2d_output_size(t.h, t.w, t.r, t.s, t.prm);
  if (t.prm.stride[0] != 1 || t.prm.stride[1] != 1 || t.prm.dilation[0] != 1 ||
      t.prm.dilation[1] != 1 || p != t.h || q != t.w || t.r * t.s > 32) {
    return 0;
  }
  struct tile {
    index_t bk, stages, extra;
  };
  const std::vector<tile> tiles = !tf32 && sm90()
                                      ? std::vector<tile>{{64, 3, 64}, {64, 4, 128}, {64, 4, 64}}
                                      : std::vector<tile>{};
  std::size_t n = 0;
  for (const tile& h : tiles) {
    n += t.c % h.bk == 0 && t.r * t.s >= h.stages - 1 && (t.r - 1) * t.w + t.s - 1 <= h.extra;
  }
  return n;
}

/// The im2col TMA tiles that run case t (conv/variants.cuh's tma_conv_config, im2col_fits): on
/// sm_90, fp16 / bf16 with C a multiple of 64 (the cases' strides, padding and dilation are
/// within their limits): the GEMM's wgmma 128x128 ping-pong, 128x256 and 64x128 tiles.
std::size_t im2col_variants(const conv_case& t, bool tf32) {
  return !tf32 && sm90() && t.c % 64 == 0 ? 3 : 0;
}

std::string name_of(const conv_case& t) {
  return "N" + std::to_string(t.n) + " H" + std::to_string(t.h) + " W" + std::to_string(t.w) +
         " C" + std::to_string(t.c) + " K" + std::to_string(t.k) + " " + std::to_string(t.r) + "x" +
         std::to_string(t.s) + " stride " + std::to_string(t.prm.stride[0]) + "," +
         std::to_string(t.prm.stride[1]) + " pad " + std::to_string(t.prm.padding[0]) + "," +
         std::to_string(t.prm.padding[1]) + " end " + std::to_string(t.prm.padding_end[0]) + "," +
         std::to_string(t.prm.padding_end[1]) + " dil " + std::to_string(t.prm.dilation[0]) + "," +
         std::to_string(t.prm.dilation[1]);
}

/// The convolution in double: x [n, h, w, c], wt [k, r, s, c] -> [n, p, q, k], and at each
/// output the sum of its products' magnitudes (for the accumulation's error bound).
struct conv_result {
  std::vector<double> y, mag;
};
conv_result conv_ref(const std::vector<float>& x, const std::vector<float>& wt, const conv_case& t,
                     index_t p, index_t q) {
  const std::size_t size = static_cast<std::size_t>(t.n * p * q * t.k);
  conv_result out{std::vector<double>(size, 0.0), std::vector<double>(size, 0.0)};
  for (index_t b = 0; b < t.n; ++b) {
    for (index_t i = 0; i < p; ++i) {
      for (index_t j = 0; j < q; ++j) {
        for (index_t o = 0; o < t.k; ++o) {
          double acc = 0.0, mag = 0.0;
          for (index_t fr = 0; fr < t.r; ++fr) {
            for (index_t fs = 0; fs < t.s; ++fs) {
              const index_t hh = i * t.prm.stride[0] - t.prm.padding[0] + fr * t.prm.dilation[0];
              const index_t ww = j * t.prm.stride[1] - t.prm.padding[1] + fs * t.prm.dilation[1];
              if (hh < 0 || hh >= t.h || ww < 0 || ww >= t.w) {
                continue;
              }
              for (index_t ch = 0; ch < t.c; ++ch) {
                const double prod = double(x[std::size_t(((b * t.h + hh) * t.w + ww) * t.c + ch)]) *
                                    double(wt[std::size_t(((o * t.r + fr) * t.s + fs) * t.c + ch)]);
                acc += prod;
                mag += std::abs(prod);
              }
            }
          }
          const std::size_t e = std::size_t(((b * p + i) * q + j) * t.k + o);
          out.y[e] = acc;
          out.mag[e] = mag;
        }
      }
    }
  }
  return out;
}

template <class T, int R>
std::vector<float> fill(cufuse::tensor<T, R>& t, data_kind kind, std::mt19937& rng) {
  std::vector<float> h(static_cast<std::size_t>(t.size()));
  fill_host<T>(h, kind, rng);
  std::vector<T> v(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    v[i] = from_float<T>(h[i]);
    h[i] = to_f(v[i]);
  }
  t.upload(v);
  return h;
}

template <class T, int R>
std::vector<float> host_of(const cufuse::tensor<T, R>& t) {
  const auto d = t.download();
  std::vector<float> out(d.size());
  for (std::size_t i = 0; i < d.size(); ++i) {
    out[i] = to_f(d[i]);
  }
  return out;
}

/// Fills `xw` [n, h, w, width] and returns, densely, the values of case t's X as its channels
/// first .. first + C - 1.
template <class T>
std::vector<float> fill_channel_slice(cufuse::tensor<T, 4>& xw, const conv_case& t, index_t width,
                                      index_t first, std::mt19937& rng) {
  const auto hxw = fill(xw, data_kind::reals, rng);
  std::vector<float> hx(static_cast<std::size_t>(t.n * t.h * t.w * t.c));
  const std::size_t c = std::size_t(t.c), wd = std::size_t(width), f = std::size_t(first);
  for (std::size_t i = 0; i < hx.size(); ++i) {
    hx[i] = hxw[(i / c) * wd + f + i % c];
  }
  return hx;
}

/// got ~ want within fp32 accumulation of `terms` products (2 terms 2^-24 of their magnitudes),
/// TF32 inputs (2^-9 of them: each operand loses its low 13 bits toward zero) and one rounding
/// to TY; exact for integer data of small magnitude.
template <class TY>
void check_close(const std::vector<float>& got, const std::vector<double>& want,
                 const std::vector<double>& mag, index_t terms, bool tf32,
                 const std::string& what) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double acc_tol = mag[i] * (2.0 * double(terms) * 0x1p-24 + (tf32 ? 0x1p-9 : 0.0));
    const double tol = acc_tol + out_eps<TY>() * (std::abs(want[i]) + acc_tol) + 1e-30;
    if (!(std::abs(got[i] - want[i]) <= tol)) {
      if (bad++ == 0) {
        first = i;
      }
    }
  }
  INFO(what << ": " << bad << " wrong of " << got.size() << "; first at " << first << ": got "
            << (got.empty() ? 0.0f : got[first]) << ", want "
            << (want.empty() ? 0.0 : want[first]));
  CHECK(bad == 0);
}

/// Runs variant `v` on x, w into y (poisoned first) and checks y against `want` (16-bit or fp32
/// inputs, no TF32).
template <class X, class W, class TY>
void check_variant(const X& x, const W& w, cufuse::tensor<TY, 4>& y, const conv_case& t,
                   const std::string& v, const conv_result& want, const std::string& what) {
  cufuse::gemm_options opt;
  opt.variant = v;
  y.fill(std::numeric_limits<float>::quiet_NaN());
  cufuse::conv2d(x, w, y, t.prm, opt);
  check_close<TY>(host_of(y), want.y, want.mag, t.r * t.s * t.c, false,
                  what + ", variant '" + v + "'");
}

std::vector<conv_case> cases() {
  using P = cufuse::conv2d_params;
  return {
      {2, 7, 9, 5, 6, 3, 3, P{.padding = {1, 1}}},                        // 3x3 "same", C 5
      {1, 9, 8, 8, 70, 3, 3, P{.stride = {2, 2}, .padding = {1, 1}}},     // stride 2, K > 64
      {2, 11, 10, 3, 16, 7, 7, P{.stride = {2, 2}, .padding = {3, 3}}},   // ResNet stem, C 3
      {1, 12, 12, 16, 8, 5, 5, P{.padding = {2, 2}}},                     // 5x5
      {1, 10, 11, 4, 5, 3, 3, P{.padding = {2, 2}, .dilation = {2, 2}}},  // dilation 2
      {3, 5, 6, 24, 40, 1, 1, P{}},                                       // 1x1: a GEMM
      {2, 9, 9, 12, 20, 1, 1, P{.stride = {2, 2}}},                       // 1x1 stride 2
      {1, 8, 7, 6, 9, 3, 2, P{.padding = {0, 1}, .padding_end = {2, 0}}}, // asymmetric pad
      {1, 4, 4, 2, 3, 4, 4, P{}},                                         // filter = input
      {2, 6, 5, 7, 130, 2, 3, P{.stride = {1, 2}, .padding = {1, 0}}},    // K over 2 tiles
      // Channel counts in 16-byte chunks: the tensor-core variants run these too.
      {2, 12, 10, 64, 136, 3, 3, P{.padding = {1, 1}}},                       // 240 pixels, K 136
      {1, 15, 13, 8, 72, 3, 3, P{.stride = {2, 2}, .padding = {1, 1}}},       // C 8: 4 taps a tile
      {2, 17, 19, 24, 16, 5, 5, P{.padding = {2, 2}, .dilation = {2, 2}}},    // dilation 2
      {1, 23, 21, 8, 24, 7, 7, P{.stride = {2, 2}, .padding = {3, 3}}},       // stem, C padded to 8
      {3, 9, 8, 32, 64, 1, 1, P{.stride = {2, 2}}},                           // 1x1 stride 2
      {2, 10, 9, 16, 40, 1, 1, P{}},                                          // 1x1 forced off GEMM
      {1, 11, 12, 40, 24, 3, 2, P{.padding = {2, 0}, .padding_end = {0, 1}}}, // asymmetric
      // Stride 1, output = input: the halo tiles run these too.
      {2, 9, 63, 64, 24, 3, 3, P{.padding = {1, 1}}},                       // the widest halo128
      {3, 7, 7, 128, 40, 3, 3, P{.padding = {1, 1}}},                       // tiles over 3 images
      {1, 6, 5, 64, 72, 3, 2, P{.padding = {2, 0}, .padding_end = {0, 1}}}, // asymmetric
      {1, 10, 12, 64, 16, 5, 5, P{.padding = {2, 2}}},                      // 25 taps
      {1, 6, 8, 128, 16, 1, 3, P{.padding = {0, 1}}},   // 3 taps = stages - 1, 4 chunks
      {1, 5, 9, 64, 8, 1, 2, P{.padding_end = {0, 1}}}, // 2 taps: the 3-stage halo tiles only
      // C a multiple of 64 with stride 2, dilation 2, a strided 1x1: the im2col tiles' map walks
      // the window origins with the conv's strides and reads each tap at an offset.
      {2, 13, 11, 64, 72, 3, 3, P{.stride = {2, 2}, .padding = {1, 1}}},
      {1, 12, 10, 64, 40, 3, 3, P{.padding = {2, 2}, .dilation = {2, 2}}},
      {2, 9, 9, 128, 136, 1, 1, P{.stride = {2, 2}}},
      {1, 9, 7, 64, 24, 3, 3, P{.stride = {2, 1}, .padding = {0, 2}, .padding_end = {1, 0}}},
  };
}

/// Runs every case with every implicit-GEMM variant that can run it (conv2d_variants) and with
/// the default choice. fp32 inputs: exact SIMT, or TF32 tensor cores under `math` = tf32.
template <class T, class TY>
void run_cases(data_kind kind, cufuse::gemm_math math = cufuse::gemm_math::fp32) {
  std::mt19937 rng(Catch::rngSeed() + 3);
  const bool tf32 = std::is_same_v<T, float> && math == cufuse::gemm_math::tf32;
  constexpr index_t chunk = 16 / index_t(sizeof(T));
  for (const conv_case& t : cases()) {
    const auto [p, q] = cufuse::conv2d_output_size(t.h, t.w, t.r, t.s, t.prm);
    REQUIRE(p > 0);
    REQUIRE(q > 0);
    cufuse::tensor<T, 4> x({t.n, t.h, t.w, t.c}), w({t.k, t.r, t.s, t.c});
    cufuse::tensor<TY, 4> y({t.n, p, q, t.k});
    const auto hx = fill(x, kind, rng);
    const auto hw = fill(w, kind, rng);
    const auto want = conv_ref(hx, hw, t, p, q);
    cufuse::gemm_options opt;
    opt.math = math;
    std::vector<std::string> names = cufuse::conv2d_variants(x, w, y, t.prm, opt);
    REQUIRE(!names.empty());
    CHECK(names.back() == "conv_simt_64x64x16");
    // The tensor-core tiles run every case whose channels come in 16-byte chunks.
    const bool tensor_cores = (!std::is_same_v<T, float> || tf32) && t.c % chunk == 0;
    // Otherwise fp16 / bf16 run on the element-gather tile (and SIMT), fp32 on SIMT only.
    CHECK(names.size() == (tensor_cores
                               ? (std::is_same_v<T, float> ? tf32_variants : half_variants()) +
                                     halo_variants(t, tf32) + im2col_variants(t, tf32)
                               : (sizeof(T) == 2 ? 2u : 1u)));
    if (!tensor_cores && sizeof(T) == 2) {
      CHECK(names.front() == std::string("conv_mma_") +
                                 (std::is_same_v<T, __half> ? "f16" : "bf16") +
                                 "_64x64x32_s3_elem");
    }
    names.insert(names.begin(), std::string()); // the default choice
    for (const std::string& v : names) {
      opt.variant = v;
      y.fill(std::numeric_limits<float>::quiet_NaN());
      cufuse::conv2d(x, w, y, t.prm, opt);
      const bool on_tf32 = tf32 && v != "conv_simt_64x64x16"; // the default may take TF32
      check_close<TY>(host_of(y), want.y, want.mag, t.r * t.s * t.c, on_tf32,
                      name_of(t) + " variant '" + v + "'");
    }
  }
}

} // namespace

TEST_CASE("conv2d: fp32, every case against a double loop (exact and TF32)", "[conv]") {
  run_cases<float, float>(data_kind::reals);
  run_cases<float, float>(data_kind::reals, cufuse::gemm_math::tf32);
}

TEST_CASE("conv2d: bf16 -> bf16 and bf16 -> fp32", "[conv]") {
  run_cases<__nv_bfloat16, __nv_bfloat16>(data_kind::small_integers);
  run_cases<__nv_bfloat16, float>(data_kind::reals);
}

TEST_CASE("conv2d: fp16 -> fp16", "[conv]") { run_cases<__half, __half>(data_kind::reals); }

TEST_CASE("conv2d: fused epilogue (folded batch norm, ReLU, residual), every variant", "[conv]") {
  std::mt19937 rng(Catch::rngSeed() + 5);
  using bf16 = __nv_bfloat16;
  using P = cufuse::conv2d_params;
  // 3x3 "same" (the implicit-GEMM kernels) and 1x1 (the GEMM path by default), as in a ResNet
  // block; the larger one over several tiles with a partial channel tile.
  for (const conv_case& t : {conv_case{2, 9, 7, 8, 24, 3, 3, P{.padding = {1, 1}}},
                             conv_case{2, 12, 11, 64, 136, 3, 3, P{.padding = {1, 1}}},
                             conv_case{2, 9, 7, 24, 8, 1, 1, P{}}}) {
    const auto [p, q] = cufuse::conv2d_output_size(t.h, t.w, t.r, t.s, t.prm);
    cufuse::tensor<bf16, 4> x({t.n, t.h, t.w, t.c}), w({t.k, t.r, t.s, t.c});
    cufuse::tensor<bf16, 4> res({t.n, p, q, t.k}), y({t.n, p, q, t.k});
    cufuse::tensor<float, 1> scale({t.k}), shift({t.k});
    const auto hx = fill(x, data_kind::small_integers, rng);
    const auto hw = fill(w, data_kind::small_integers, rng);
    const auto hres = fill(res, data_kind::reals, rng);
    const auto hscale = fill(scale, data_kind::reals, rng);
    const auto hshift = fill(shift, data_kind::reals, rng);
    const auto acc = conv_ref(hx, hw, t, p, q);
    std::vector<double> want(acc.y.size()), mag(acc.y.size());
    for (std::size_t e = 0; e < acc.y.size(); ++e) {
      const std::size_t o = e % std::size_t(t.k);
      want[e] = std::max(0.0, acc.y[e] * hscale[o] + hshift[o]) + hres[e];
      mag[e] = acc.mag[e] * std::abs(hscale[o]);
    }
    std::vector<std::string> names = cufuse::conv2d_variants(x, w, y, t.prm);
    CHECK(names.size() == half_variants() + halo_variants(t, false) + im2col_variants(t, false));
    names.insert(names.begin(), std::string());
    for (const std::string& v : names) {
      cufuse::gemm_options opt;
      opt.variant = v;
      y.fill(std::numeric_limits<float>::quiet_NaN());
      cufuse::conv2d(x, w, y, t.prm, cufuse::relu(cufuse::acc * scale + shift) + res, opt);
      check_close<bf16>(host_of(y), want, mag, t.r * t.s * t.c, false,
                        name_of(t) + " relu(acc * scale + shift) + res, variant '" + v + "'");
    }
  }
}

// `acc + bias` with a rank-1 bias: the wgmma kernels (im2col and the 1x1 GEMM path) start the
// accumulators at the bias (expression_epilogue::folds_bias); the other kernels add it in the
// epilogue. An fp32 bias (two words per pair) on bf16 inputs, and a strided view of one.
TEST_CASE("conv2d: a bias added to acc (folded into the accumulators), every variant", "[conv]") {
  std::mt19937 rng(Catch::rngSeed() + 9);
  using bf16 = __nv_bfloat16;
  using P = cufuse::conv2d_params;
  for (const conv_case& t : {conv_case{2, 12, 11, 64, 136, 3, 3, P{.padding = {1, 1}}},
                             conv_case{2, 9, 7, 24, 8, 1, 1, P{}}}) {
    const auto [p, q] = cufuse::conv2d_output_size(t.h, t.w, t.r, t.s, t.prm);
    cufuse::tensor<bf16, 4> x({t.n, t.h, t.w, t.c}), w({t.k, t.r, t.s, t.c});
    cufuse::tensor<bf16, 4> res({t.n, p, q, t.k}), y({t.n, p, q, t.k});
    cufuse::tensor<float, 1> bias({t.k}), every_other({2 * t.k});
    const auto hx = fill(x, data_kind::small_integers, rng);
    const auto hw = fill(w, data_kind::small_integers, rng);
    const auto hres = fill(res, data_kind::reals, rng);
    const auto hbias = fill(bias, data_kind::reals, rng);
    const auto hother = fill(every_other, data_kind::reals, rng);
    const auto acc = conv_ref(hx, hw, t, p, q);
    std::vector<std::string> names = cufuse::conv2d_variants(x, w, y, t.prm);
    names.insert(names.begin(), std::string());
    const auto check = [&](const auto& b, const auto& bias_of, const std::string& what) {
      std::vector<double> want(acc.y.size());
      for (std::size_t e = 0; e < acc.y.size(); ++e) {
        want[e] = std::max(0.0, acc.y[e] + bias_of(e % std::size_t(t.k))) + hres[e];
      }
      for (const std::string& v : names) {
        cufuse::gemm_options opt;
        opt.variant = v;
        y.fill(std::numeric_limits<float>::quiet_NaN());
        cufuse::conv2d(x, w, y, t.prm, cufuse::relu(cufuse::acc + b) + res, opt);
        check_close<bf16>(host_of(y), want, acc.mag, t.r * t.s * t.c, false,
                          name_of(t) + " relu(acc + " + what + ") + res, variant '" + v + "'");
      }
    };
    check(
        bias, [&](std::size_t o) { return double(hbias[o]); }, "bias");
    check(
        cufuse::slice(every_other, cufuse::range(0, 2 * t.k, 2)),
        [&](std::size_t o) { return double(hother[2 * o]); }, "bias view with step 2");
  }
}

TEST_CASE("conv2d: strided views of X and Y; a view of W", "[conv]") {
  std::mt19937 rng(Catch::rngSeed() + 7);
  {
    const conv_case t{2, 6, 7, 5, 9, 3, 3, cufuse::conv2d_params{.padding = {1, 1}}};
    const auto [p, q] = cufuse::conv2d_output_size(t.h, t.w, t.r, t.s, t.prm);
    // X: every other channel of a wider tensor; Y: rows of k inside rows of 12.
    cufuse::tensor<float, 4> xw({t.n, t.h, t.w, 2 * t.c}), w({t.k, t.r, t.s, t.c});
    cufuse::tensor<float, 4> yw({t.n, p, q, 12});
    const auto hxw = fill(xw, data_kind::reals, rng);
    const auto hw = fill(w, data_kind::reals, rng);
    std::vector<float> hx(static_cast<std::size_t>(t.n * t.h * t.w * t.c));
    for (std::size_t i = 0; i < hx.size(); ++i) {
      hx[i] = hxw[2 * i];
    }
    auto xv =
        cufuse::slice(xw, cufuse::all, cufuse::all, cufuse::all, cufuse::range(0, 2 * t.c, 2));
    auto yv = cufuse::slice(yw, cufuse::all, cufuse::all, cufuse::all, cufuse::range(0, t.k));
    yw.fill(std::numeric_limits<float>::quiet_NaN());
    cufuse::conv2d(xv, w.view(), yv, t.prm);
    const auto want = conv_ref(hx, hw, t, p, q);
    const auto got_all = host_of(yw);
    std::vector<float> got(want.y.size());
    for (std::size_t e = 0; e < want.y.size(); ++e) {
      got[e] = got_all[(e / std::size_t(t.k)) * 12 + e % std::size_t(t.k)];
    }
    check_close<float>(got, want.y, want.mag, t.r * t.s * t.c, false, "strided views");
  }
  {
    // bf16, X every other channel of a wider tensor (channel stride 2): the element gather.
    using bf16 = __nv_bfloat16;
    const conv_case t{2, 7, 6, 6, 20, 3, 3, cufuse::conv2d_params{.padding = {1, 1}}};
    const auto [p, q] = cufuse::conv2d_output_size(t.h, t.w, t.r, t.s, t.prm);
    cufuse::tensor<bf16, 4> xw({t.n, t.h, t.w, 2 * t.c}), w({t.k, t.r, t.s, t.c});
    cufuse::tensor<bf16, 4> y({t.n, p, q, t.k});
    const auto hxw = fill(xw, data_kind::reals, rng);
    const auto hw = fill(w, data_kind::reals, rng);
    std::vector<float> hx(static_cast<std::size_t>(t.n * t.h * t.w * t.c));
    for (std::size_t i = 0; i < hx.size(); ++i) {
      hx[i] = hxw[2 * i];
    }
    auto xv =
        cufuse::slice(xw, cufuse::all, cufuse::all, cufuse::all, cufuse::range(0, 2 * t.c, 2));
    const auto want = conv_ref(hx, hw, t, p, q);
    const std::vector<std::string> names = cufuse::conv2d_variants(xv, w, y, t.prm);
    CHECK(names.size() == 2u);
    for (const std::string& v : names) {
      check_variant(xv, w, y, t, v, want, "bf16 channel stride 2");
    }
  }
  {
    // bf16: X = channels 16..31 of rows of 40 (16-byte aligned, the tensor cores take it), Y
    // rows of k = 24 inside rows of 32; every variant.
    using bf16 = __nv_bfloat16;
    const conv_case t{2, 9, 10, 16, 24, 3, 3, cufuse::conv2d_params{.padding = {1, 1}}};
    const auto [p, q] = cufuse::conv2d_output_size(t.h, t.w, t.r, t.s, t.prm);
    cufuse::tensor<bf16, 4> xw({t.n, t.h, t.w, 40}), w({t.k, t.r, t.s, t.c});
    cufuse::tensor<bf16, 4> yw({t.n, p, q, 32});
    const auto hx = fill_channel_slice(xw, t, 40, 16, rng);
    const auto hw = fill(w, data_kind::reals, rng);
    auto xv = cufuse::slice(xw, cufuse::all, cufuse::all, cufuse::all, cufuse::range(16, 32));
    auto yv = cufuse::slice(yw, cufuse::all, cufuse::all, cufuse::all, cufuse::range(0, t.k));
    const auto want = conv_ref(hx, hw, t, p, q);
    std::vector<std::string> names = cufuse::conv2d_variants(xv, w, yv, t.prm);
    CHECK(names.size() == half_variants());
    for (const std::string& v : names) {
      cufuse::gemm_options opt;
      opt.variant = v;
      yw.fill(std::numeric_limits<float>::quiet_NaN());
      cufuse::conv2d(xv, w, yv, t.prm, opt);
      const auto got_all = host_of(yw);
      std::vector<float> got(want.y.size());
      for (std::size_t e = 0; e < want.y.size(); ++e) {
        got[e] = got_all[(e / std::size_t(t.k)) * 32 + e % std::size_t(t.k)];
      }
      check_close<bf16>(got, want.y, want.mag, t.r * t.s * t.c, false,
                        "bf16 channel slice, variant '" + v + "'");
      // The columns past k stay untouched.
      std::size_t touched = 0;
      for (std::size_t e = 0; e < got_all.size(); ++e) {
        touched += e % 32 >= std::size_t(t.k) && !std::isnan(got_all[e]) ? 1 : 0;
      }
      CHECK(touched == 0);
    }
  }
}

TEST_CASE("conv2d: the halo tiles read X's pixels through their stride; forced where they "
          "cannot run, they throw",
          "[conv]") {
  std::mt19937 rng(Catch::rngSeed() + 13);
  using bf16 = __nv_bfloat16;
  using P = cufuse::conv2d_params;
  // X = channels 32..95 of pixels 128 channels apart (rows and images dense in pixels).
  const conv_case t{2, 8, 9, 64, 24, 3, 3, P{.padding = {1, 1}}};
  cufuse::tensor<bf16, 4> xw({t.n, t.h, t.w, 128}), w({t.k, t.r, t.s, t.c});
  cufuse::tensor<bf16, 4> y({t.n, t.h, t.w, t.k});
  const auto hx = fill_channel_slice(xw, t, 128, 32, rng);
  const auto hw = fill(w, data_kind::reals, rng);
  auto xv = cufuse::slice(xw, cufuse::all, cufuse::all, cufuse::all, cufuse::range(32, 96));
  const auto want = conv_ref(hx, hw, t, t.h, t.w);
  const std::vector<std::string> names = cufuse::conv2d_variants(xv, w, y, t.prm);
  CHECK(names.size() == half_variants() + halo_variants(t, false) + im2col_variants(t, false));
  std::size_t halo = 0, im2col = 0;
  for (const std::string& v : names) {
    // The im2col tiles read X through a TMA map with its strides: the same slice.
    im2col += v.find("_im2col_") != std::string::npos;
    if (v.find("_halo") == std::string::npos && v.find("_im2col_") == std::string::npos) {
      continue;
    }
    halo += v.find("_halo") != std::string::npos;
    check_variant(xv, w, y, t, v, want, "bf16 channel slice, pixels 128 apart");
  }
  CHECK(im2col == im2col_variants(t, false));
  CHECK(halo == halo_variants(t, false));
  CHECK(halo == (sm90() ? 3u : 0u));
  // Stride 2: no halo tile; forcing one names the rule.
  const P s2{.stride = {2, 2}, .padding = {1, 1}};
  cufuse::tensor<bf16, 4> x({t.n, t.h, t.w, t.c}), y2({t.n, 4, 5, t.k});
  fill(x, data_kind::reals, rng);
  cufuse::gemm_options opt;
  opt.variant = "conv_wgmma_bf16_128x64x64_s4_halo128";
  try {
    cufuse::conv2d(x, w, y2, s2, opt);
    FAIL("a halo tile ran a stride-2 convolution");
  } catch (const cufuse::error& e) {
    CHECK(std::string(e.what()).find("the halo tiles need stride 1") != std::string::npos);
  }
}

TEST_CASE("conv2d: shape errors name the shapes and parameters", "[conv]") {
  cufuse::tensor<float, 4> x({1, 5, 5, 3}), w({4, 3, 3, 8}), y({1, 5, 5, 4});
  try {
    cufuse::conv2d(x, w, y, {.padding = {1, 1}});
    FAIL("no shape_error");
  } catch (const cufuse::shape_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("[1, 5, 5, 3]") != std::string::npos);
    CHECK(msg.find("[4, 3, 3, 8]") != std::string::npos);
    CHECK(msg.find("padding {top 1, left 1, bottom 1, right 1}") != std::string::npos);
    CHECK(msg.find("X has 3 channels, W 8") != std::string::npos);
  }
  cufuse::tensor<float, 4> w3({4, 3, 3, 3}), y_wrong({1, 4, 5, 4});
  CHECK_THROWS_AS(cufuse::conv2d(x, w3, y_wrong, {.padding = {1, 1}}), cufuse::shape_error);
  cufuse::tensor<float, 4> big({4, 7, 7, 3});
  CHECK_THROWS_AS(cufuse::conv2d(x, big, y, {}), cufuse::shape_error); // the output is <= 0
  CHECK_THROWS_AS(cufuse::conv2d(x, w3, y, {.stride = {0, 1}, .padding = {1, 1}}),
                  cufuse::shape_error);
  // An epilogue operand that neither broadcasts over N, P, Q nor covers them (per image); the
  // epilogue type of the fused case above (a new one would instantiate its kernels here).
  using bf16 = __nv_bfloat16;
  cufuse::tensor<bf16, 4> xb({2, 5, 5, 3}), wb({4, 3, 3, 3}), yb({2, 5, 5, 4}), per_n({2, 1, 1, 4});
  cufuse::tensor<float, 1> scale({4}), shift({4});
  CHECK_THROWS_AS(cufuse::conv2d(xb, wb, yb, cufuse::conv2d_params{.padding = {1, 1}},
                                 cufuse::relu(cufuse::acc * scale + shift) + per_n),
                  cufuse::shape_error);
}

TEST_CASE("conv2d: the tuner: tune_conv2d records, frozen and online modes choose",
          "[conv][tune]") {
  std::mt19937 rng(Catch::rngSeed() + 11);
  using bf16 = __nv_bfloat16;
  using P = cufuse::conv2d_params;
  const conv_case t{2, 12, 10, 64, 136, 3, 3, P{.padding = {1, 1}}};
  const auto [p, q] = cufuse::conv2d_output_size(t.h, t.w, t.r, t.s, t.prm);
  cufuse::tensor<bf16, 4> x({t.n, t.h, t.w, t.c}), w({t.k, t.r, t.s, t.c}), y({t.n, p, q, t.k});
  cufuse::tensor<float, 1> scale({t.k}), shift({t.k});
  const auto hx = fill(x, data_kind::reals, rng);
  const auto hw = fill(w, data_kind::reals, rng);
  const auto hscale = fill(scale, data_kind::reals, rng);
  const auto hshift = fill(shift, data_kind::reals, rng);
  const auto want = conv_ref(hx, hw, t, p, q);
  const index_t terms = t.r * t.s * t.c;
  auto check_run = [&](const std::string& what) {
    y.fill(std::numeric_limits<float>::quiet_NaN());
    cufuse::conv2d(x, w, y, t.prm);
    check_close<bf16>(host_of(y), want.y, want.mag, terms, false, what);
  };
  const std::string path = "conv_tune_test.db";
  std::remove(path.c_str());
  const cufuse::tune_mode mode0 = cufuse::tuning::mode();
  const std::string file0 = cufuse::tuning::file();
  cufuse::tuning::set_file(path);
  cufuse::tuning::set_mode(cufuse::tune_mode::frozen);

  const std::vector<std::string> names = cufuse::conv2d_variants(x, w, y, t.prm);
  REQUIRE(names.size() == half_variants() + halo_variants(t, false) + im2col_variants(t, false));
  CHECK(!cufuse::tuning::chosen_conv2d(x, w, y, t.prm).has_value());
  const auto c = cufuse::tuning::tune_conv2d(x, w, y, t.prm, {}, 2);
  CHECK(std::find(names.begin(), names.end(), c.variant) != names.end());
  CHECK(c.seconds > 0.0);
  CHECK(cufuse::tuning::chosen_conv2d(x, w, y, t.prm) == c.variant);
  CHECK_THROWS_AS(cufuse::tuning::record_conv2d(x, w, y, t.prm, "no_such_variant", 1e-3),
                  cufuse::error);
  // The fused epilogue has its own key.
  const auto epi = cufuse::relu(cufuse::acc * scale + shift);
  const auto ce = cufuse::tuning::tune_conv2d(x, w, y, t.prm, epi, {}, 2);
  CHECK(std::find(names.begin(), names.end(), ce.variant) != names.end());
  CHECK(cufuse::tuning::chosen_conv2d(x, w, y, t.prm, epi) == ce.variant);
  REQUIRE(cufuse::tuning::save());
  {
    std::ifstream in(path);
    const std::string db((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(db.find("conv.bf16>bf16.c1.f3x3.s1x1.p1,1,1,1.d1x1.v=") != std::string::npos);
    CHECK(db.find("conv.bf16>bf16.c1.f3x3.s1x1.p1,1,1,1.d1x1.e=x") != std::string::npos);
    CHECK(db.find(c.variant) != std::string::npos);
  }
  // A recorded choice is what a fresh frozen tuner runs: each variant in turn.
  for (const std::string& v : names) {
    cufuse::tuning::record_conv2d(x, w, y, t.prm, v, 1e-3);
    cufuse::tuning::reset();
    check_run("frozen, recorded " + v);
    CHECK(cufuse::tuning::chosen_conv2d(x, w, y, t.prm) == v);
  }
  // Online, without a database entry: the bandit times the variants during real calls (a
  // synchronization every 10) and commits to one of them; results stay right meanwhile.
  const std::string path2 = "conv_tune_online_test.db";
  std::remove(path2.c_str());
  cufuse::tuning::set_file(path2);
  cufuse::tuning::set_mode(cufuse::tune_mode::online);
  std::optional<std::string> chosen;
  int calls = 0;
  for (; calls < 3000 && !chosen; ++calls) {
    cufuse::conv2d(x, w, y, t.prm);
    if (calls % 10 == 9) {
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      chosen = cufuse::tuning::chosen_conv2d(x, w, y, t.prm);
    }
  }
  INFO("online calls: " << calls);
  REQUIRE(chosen.has_value());
  CHECK(std::find(names.begin(), names.end(), *chosen) != names.end());
  check_run("online, committed " + *chosen);
  cufuse::tuning::set_mode(mode0);
  cufuse::tuning::set_file(file0);
  cufuse::tuning::reset();
  std::remove(path.c_str());
  std::remove(path2.c_str());
}
