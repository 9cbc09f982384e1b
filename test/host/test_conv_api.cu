// cufuse::conv2d on the host side (no GPU): output sizes as PyTorch computes them, and the
// shape errors, which are thrown before anything touches the device (views of a device address
// that is never read).
#include <cufuse/conv.cuh>

#include <catch2/catch.hpp>

#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {
using index_t = cufuse::index_t;

template <class T>
cufuse::tensor_view<T, 4, cufuse::device_space> fake(index_t n, index_t h, index_t w, index_t c,
                                                     std::uintptr_t at) {
  using V = cufuse::tensor_view<T, 4, cufuse::device_space>;
  const cufuse::extents<4> e{n, h, w, c};
  return V(reinterpret_cast<T*>(at), e, cufuse::row_major_strides(e), typename V::trusted{});
}

/// PyTorch's formula in plain integers.
index_t out_size(index_t in, index_t f, index_t st, index_t p0, index_t p1, index_t d) {
  const index_t span = in + p0 + p1 - d * (f - 1) - 1;
  return span < 0 ? 0 : span / st + 1;
}
} // namespace

TEST_CASE("conv2d_output_size follows PyTorch's formula", "[conv_api]") {
  for (index_t h : {1, 2, 7, 56, 224}) {
    for (index_t r : {1, 3, 5, 7}) {
      for (index_t st : {1, 2, 3}) {
        for (index_t pad : {0, 1, 3}) {
          for (index_t d : {1, 2}) {
            const cufuse::conv2d_params prm{
                .stride = {st, 1}, .padding = {pad, 0}, .dilation = {d, 1}};
            const auto [p, q] = cufuse::conv2d_output_size(h, 9, r, 1, prm);
            const index_t want = out_size(h, r, st, pad, pad, d);
            INFO("h " << h << " r " << r << " stride " << st << " pad " << pad << " dil " << d);
            if (want > 0) {
              CHECK(p == want);
            } else {
              CHECK(p <= 0);
            }
            CHECK(q == 9);
          }
        }
      }
    }
  }
  // Asymmetric padding: top 0, bottom 2.
  const auto [p, q] = cufuse::conv2d_output_size(
      8, 7, 3, 2, cufuse::conv2d_params{.padding = {0, 1}, .padding_end = {2, 0}});
  CHECK(p == 8);
  CHECK(q == 7);
  // ResNet's stem: 224 -> 112.
  CHECK(cufuse::conv2d_output_size(224, 224, 7, 7, {.stride = {2, 2}, .padding = {3, 3}})[0] ==
        112);
}

TEST_CASE("conv2d: shape errors name every shape and parameter, before any GPU work",
          "[conv_api]") {
  const std::uintptr_t base = 0x7f0000000000;
  const auto x = fake<float>(1, 5, 5, 3, base);
  const auto w8 = fake<float>(4, 3, 3, 8, base + (1 << 20));
  const auto w3 = fake<float>(4, 3, 3, 3, base + (2 << 20));
  const auto y = fake<float>(1, 5, 5, 4, base + (3 << 20));
  try {
    cufuse::conv2d(x, w8, y, {.padding = {1, 1}});
    FAIL("no shape_error");
  } catch (const cufuse::shape_error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("X [1, 5, 5, 3] (NHWC)") != std::string::npos);
    CHECK(msg.find("W [4, 3, 3, 8] (KRSC)") != std::string::npos);
    CHECK(msg.find("Y [1, 5, 5, 4] (NPQK)") != std::string::npos);
    CHECK(msg.find("stride {1, 1}") != std::string::npos);
    CHECK(msg.find("padding {top 1, left 1, bottom 1, right 1}") != std::string::npos);
    CHECK(msg.find("dilation {1, 1}") != std::string::npos);
    CHECK(msg.find("X has 3 channels, W 8") != std::string::npos);
  }
  // The wrong output shape: Y must be [1, 3, 3, 4] without padding.
  try {
    cufuse::conv2d(x, w3, y, {});
    FAIL("no shape_error");
  } catch (const cufuse::shape_error& e) {
    CHECK(std::string(e.what()).find("Y must be [1, 3, 3, 4]") != std::string::npos);
  }
  // A filter larger than the padded input.
  const auto big = fake<float>(4, 7, 7, 3, base + (4 << 20));
  try {
    cufuse::conv2d(x, big, y, {});
    FAIL("no shape_error");
  } catch (const cufuse::shape_error& e) {
    CHECK(std::string(e.what()).find("the output would be -1 x -1") != std::string::npos);
  }
  CHECK_THROWS_AS(cufuse::conv2d(x, w3, y, {.stride = {0, 1}, .padding = {1, 1}}),
                  cufuse::shape_error);
  CHECK_THROWS_AS(cufuse::conv2d(x, w3, y, {.padding = {-1, 1}}), cufuse::shape_error);
  // Y overlapping X.
  const auto y_on_x = fake<float>(1, 5, 5, 4, base + 16);
  CHECK_THROWS_AS(cufuse::conv2d(x, w3, y_on_x, {.padding = {1, 1}}), cufuse::error);
}

namespace {
/// The convolution in double, straight from the definition: x [n, h, w, c], w [k, r, s, c].
double direct(const std::vector<double>& x, const std::vector<double>& w, index_t h, index_t wd,
              index_t c, index_t r, index_t s, const cufuse::conv2d_params& prm, index_t b,
              index_t i, index_t j, index_t o) {
  double acc = 0.0;
  for (index_t fr = 0; fr < r; ++fr) {
    for (index_t fs = 0; fs < s; ++fs) {
      const index_t hh = i * prm.stride[0] - prm.padding[0] + fr * prm.dilation[0];
      const index_t ww = j * prm.stride[1] - prm.padding[1] + fs * prm.dilation[1];
      if (hh < 0 || hh >= h || ww < 0 || ww >= wd) {
        continue;
      }
      for (index_t ch = 0; ch < c; ++ch) {
        acc += x[std::size_t(((b * h + hh) * wd + ww) * c + ch)] *
               w[std::size_t(((o * r + fr) * s + fs) * c + ch)];
      }
    }
  }
  return acc;
}
/// The shapes the host emulations run: partial tiles, K over two tiles, 7x7 with C = 3, stride
/// 2, dilation, 1x1 strided, asymmetric padding, a 3x2 filter, over 128 pixels.
struct conv_shape {
  index_t n, h, w, c, k, r, s;
  cufuse::conv2d_params prm;
};
std::vector<conv_shape> shapes() {
  using P = cufuse::conv2d_params;
  return {
      {2, 7, 9, 5, 6, 3, 3, P{.padding = {1, 1}}},
      {1, 12, 13, 8, 70, 3, 3, P{.stride = {2, 2}, .padding = {1, 1}}},
      {2, 11, 10, 3, 4, 7, 7, P{.stride = {2, 2}, .padding = {3, 3}}},
      {1, 10, 11, 4, 5, 3, 3, P{.padding = {2, 2}, .dilation = {2, 2}}},
      {2, 9, 9, 3, 2, 1, 1, P{.stride = {2, 2}}},
      {1, 8, 7, 6, 3, 3, 2, P{.padding = {0, 1}, .padding_end = {2, 0}}},
      {2, 6, 5, 7, 4, 2, 3, P{.stride = {1, 2}, .padding = {1, 0}}},
      {1, 9, 16, 6, 3, 3, 2, P{.padding = {0, 1}, .padding_end = {2, 0}}},
  };
}
} // namespace

TEST_CASE("conv2d: the implicit GEMM's index map equals the convolution's definition",
          "[conv_api]") {
  // The kernel sums, for output pixel m and channel oc, x[x_offset] * w[w_offset] over every
  // reduction index kg (origin_of, tap_of; -1: padding). Emulated here on host data with the
  // arguments conv2d builds (args_of), against the definition.
  std::mt19937 rng(Catch::rngSeed() + 1);
  std::uniform_int_distribution<int> u(-3, 3);
  std::uintptr_t at = 0x7f0000000000;
  for (const conv_shape& t : shapes()) {
    const auto [p, q] = cufuse::conv2d_output_size(t.h, t.w, t.r, t.s, t.prm);
    REQUIRE(p > 0);
    REQUIRE(q > 0);
    const auto xv = fake<float>(t.n, t.h, t.w, t.c, at);
    const auto wv = fake<float>(t.k, t.r, t.s, t.c, at += (1 << 24));
    const auto yv = fake<float>(t.n, p, q, t.k, at += (1 << 24));
    at += 1 << 24;
    const auto pr = cufuse::conv_detail::check(xv, wv, yv, t.prm);
    const cufuse::conv_detail::conv_args a = cufuse::conv_detail::args_of(pr, t.prm);
    std::vector<double> x(std::size_t(t.n * t.h * t.w * t.c)),
        w(std::size_t(t.k * t.r * t.s * t.c));
    for (double& v : x) {
      v = u(rng);
    }
    for (double& v : w) {
      v = u(rng);
    }
    std::size_t bad = 0;
    for (index_t m = 0; m < t.n * p * q; ++m) {
      const auto org = cufuse::conv_detail::origin_of(a, m);
      for (index_t oc = 0; oc < t.k; ++oc) {
        double acc = 0.0;
        for (index_t kg = 0; kg < t.r * t.s * t.c; ++kg) {
          const auto tap = cufuse::conv_detail::tap_of(a, kg);
          const index_t xo = cufuse::conv_detail::x_offset(a, org, tap);
          if (xo >= 0) {
            acc += x[std::size_t(xo)] * w[std::size_t(cufuse::conv_detail::w_offset(a, oc, tap))];
          }
        }
        const index_t b = m / (p * q), i = (m % (p * q)) / q, j = m % q;
        bad += acc != direct(x, w, t.h, t.w, t.c, t.r, t.s, t.prm, b, i, j, oc);
      }
    }
    INFO("N" << t.n << " H" << t.h << " W" << t.w << " C" << t.c << " K" << t.k << " " << t.r << "x"
             << t.s);
    CHECK(bad == 0);
  }
}

TEST_CASE("conv2d: the SIMT kernel's blocks, run thread by thread on the host, give the sums",
          "[conv_api]") {
  // The kernel is conv_thread's phases between its two barriers per reduction step; here every
  // block runs them for its 256 threads in turn (gather all, compute all), on host memory,
  // against the definition. Small integers: every sum is exact in fp32.
  std::mt19937 rng(Catch::rngSeed() + 2);
  std::uniform_int_distribution<int> u(-3, 3);
  for (const conv_shape& t : shapes()) {
    const auto [p, q] = cufuse::conv2d_output_size(t.h, t.w, t.r, t.s, t.prm);
    std::vector<float> x(std::size_t(t.n * t.h * t.w * t.c)), w(std::size_t(t.k * t.r * t.s * t.c));
    std::vector<double> xd(x.size()), wd(w.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      xd[i] = x[i] = float(u(rng));
    }
    for (std::size_t i = 0; i < w.size(); ++i) {
      wd[i] = w[i] = float(u(rng));
    }
    std::vector<float> y(std::size_t(t.n * p * q * t.k), std::numeric_limits<float>::quiet_NaN());
    using V = cufuse::tensor_view<float, 4, cufuse::device_space>;
    auto view = [](float* d, cufuse::extents<4> e) {
      return V(d, e, cufuse::row_major_strides(e), V::trusted{});
    };
    const auto pr = cufuse::conv_detail::check(view(x.data(), {t.n, t.h, t.w, t.c}),
                                               view(w.data(), {t.k, t.r, t.s, t.c}),
                                               view(y.data(), {t.n, p, q, t.k}), t.prm);
    const cufuse::conv_detail::conv_args a = cufuse::conv_detail::args_of(pr, t.prm);
    using thread_t = cufuse::conv_detail::conv_thread<float>;
    const index_t rows = t.n * p * q;
    cufuse::conv_detail::conv_tile tile;
    for (index_t bx = 0; bx < (rows + 63) / 64; ++bx) {
      for (index_t by = 0; by < (t.k + 63) / 64; ++by) {
        std::vector<thread_t> threads;
        for (int tid = 0; tid < 256; ++tid) {
          threads.emplace_back(a, bx, by, tid);
        }
        for (index_t k0 = 0; k0 < t.r * t.s * t.c; k0 += 16) {
          for (const thread_t& th : threads) {
            th.gather(a, k0, tile);
          }
          for (thread_t& th : threads) {
            th.compute(tile);
          }
        }
        for (const thread_t& th : threads) {
          th.outputs(
              a, [&](index_t m, index_t oc, float sum) { y[std::size_t(m * pr.ldy + oc)] = sum; });
        }
      }
    }
    std::size_t bad = 0;
    for (index_t m = 0; m < rows; ++m) {
      for (index_t oc = 0; oc < t.k; ++oc) {
        const index_t b = m / (p * q), i = (m % (p * q)) / q, j = m % q;
        bad += double(y[std::size_t(m * t.k + oc)]) !=
               direct(xd, wd, t.h, t.w, t.c, t.r, t.s, t.prm, b, i, j, oc);
      }
    }
    INFO("N" << t.n << " H" << t.h << " W" << t.w << " C" << t.c << " K" << t.k << " " << t.r << "x"
             << t.s << ": " << bad << " wrong of " << rows * t.k);
    CHECK(bad == 0);
  }
}

TEST_CASE("conv2d: epilogue operands flatten to the [n p q, k] matrix the kernels write",
          "[conv_api]") {
  // Y [2, 3, 4, 5]: the kernels write 24 rows of 5. Each operand's flattened leaf must address
  // the same element for every (row, channel) as the operand does at (n, p, q, k).
  const cufuse::extents<4> y{2, 3, 4, 5};
  const std::uintptr_t base = 0x7f0000000000;
  using V1 = cufuse::tensor_view<float, 1, cufuse::device_space>;
  using V4 = cufuse::tensor_view<float, 4, cufuse::device_space>;
  float* p0 = reinterpret_cast<float*>(base);
  const V1 bias(p0, cufuse::extents<1>{5}, cufuse::strides<1>{1}, V1::trusted{});
  const cufuse::extents<4> full{2, 3, 4, 5}, one{1, 1, 1, 5}, per_n{2, 1, 1, 5};
  const V4 res(p0, full, cufuse::row_major_strides(full), V4::trusted{});
  // Y's pixels inside rows of 8 (a slice of a wider tensor).
  const V4 wide(p0, full, cufuse::strides<4>{3 * 4 * 8, 4 * 8, 8, 1}, V4::trusted{});
  const V4 ones(p0, one, cufuse::row_major_strides(one), V4::trusted{});
  const V4 images(p0, per_n, cufuse::row_major_strides(per_n), V4::trusted{});
  auto leaf_of = [&](const auto& v) {
    return cufuse::conv_detail::flatten_leaf(cufuse::detail::to_node(v), y);
  };
  auto offset = [](const auto& l, cufuse::index_t row, cufuse::index_t col) {
    return (l.shp[0] == 1 ? 0 : row * l.str[0]) + (l.shp[1] == 1 ? 0 : col * l.str[1]);
  };
  // For every output element: the flattened leaf's offset equals the operand's.
  auto check_same = [&](const auto& v, const auto& l) {
    std::size_t bad = 0;
    for (cufuse::index_t n = 0; n < 2; ++n) {
      for (cufuse::index_t pp = 0; pp < 3; ++pp) {
        for (cufuse::index_t qq = 0; qq < 4; ++qq) {
          for (cufuse::index_t k = 0; k < 5; ++k) {
            const cufuse::index_t row = (n * 3 + pp) * 4 + qq;
            cufuse::index_t want = 0;
            const cufuse::index_t idx[4] = {n, pp, qq, k};
            constexpr int R = std::remove_cvref_t<decltype(v)>::rank;
            for (int d = 0; d < R; ++d) {
              const cufuse::index_t i = idx[4 - R + d];
              want += v.shape()[d] == 1 ? 0 : i * v.strides()[d];
            }
            bad += offset(l, row, k) != want;
          }
        }
      }
    }
    return bad;
  };
  CHECK(check_same(bias, leaf_of(bias)) == 0);
  CHECK(check_same(res, leaf_of(res)) == 0);
  CHECK(check_same(wide, leaf_of(wide)) == 0);
  CHECK(check_same(ones, leaf_of(ones)) == 0);
  CHECK(leaf_of(bias).shp[0] == 1);
  CHECK(leaf_of(res).shp[0] == 24);
  CHECK(leaf_of(wide).str[0] == 8);
  try {
    (void)leaf_of(images);
    FAIL("no shape_error");
  } catch (const cufuse::shape_error& e) {
    CHECK(std::string(e.what()).find("[2, 1, 1, 5]") != std::string::npos);
  }
  // A whole expression keeps its operations and flattens every leaf.
  const auto flat = cufuse::conv_detail::flatten_epilogue(
      cufuse::detail::to_node(cufuse::relu(cufuse::acc * bias + res) + 1.0f), y);
  int leaves = 0;
  auto count = [&](const auto& l) {
    ++leaves;
    CHECK(l.shp[1] == 5);
  };
  cufuse::detail::for_each_leaf(flat, count);
  CHECK(leaves == 2);
}

TEST_CASE("conv2d: the tuner's database family names the geometry, epilogue and variant set",
          "[conv_api]") {
  using cufuse::conv_detail::conv_family;
  cufuse::conv_detail::conv_key k;
  k.in = std::uint8_t(cufuse::gemm_dtype::bf16);
  k.out = std::uint8_t(cufuse::gemm_dtype::f32);
  k.chunked = 1;
  k.n = 2;
  k.h = 15;
  k.w = 13;
  k.c = 16;
  k.k = 40;
  k.r = 3;
  k.s = 5;
  k.sh = 2;
  k.sw = 1;
  k.pt = 1;
  k.pl = 2;
  k.pb = 0;
  k.pr = 3;
  k.dh = 1;
  k.dw = 2;
  const cufuse::conv_detail::conv_set plain{"",
                                            {"conv_mma_bf16_128x128x32_s5", "conv_simt_64x64x16"}};
  const cufuse::conv_detail::conv_set fused{"x0123", plain.names};
  const cufuse::conv_detail::conv_set other{"", {"conv_simt_64x64x16"}};
  const std::string f = conv_family(k, plain);
  CHECK(f.rfind("conv.bf16>f32.c1.f3x5.s2x1.p1,2,0,3.d1x2.v=", 0) == 0);
  CHECK(f.size() == std::string("conv.bf16>f32.c1.f3x5.s2x1.p1,2,0,3.d1x2.v=").size() + 8);
  CHECK(conv_family(k, fused) ==
        "conv.bf16>f32.c1.f3x5.s2x1.p1,2,0,3.d1x2.e=x0123" + f.substr(f.find(".v=")));
  CHECK(conv_family(k, other) != f); // another variant set: another family
  k.in = std::uint8_t(cufuse::gemm_dtype::f32);
  k.tf32 = 1;
  CHECK(conv_family(k, plain).rfind("conv.tf32>f32.", 0) == 0);
  k.tf32 = 0;
  CHECK(conv_family(k, plain).rfind("conv.f32>f32.", 0) == 0);
}

TEST_CASE("conv2d: the heuristic's picks on ResNet's layers (132 SMs)", "[conv_api]") {
  using cufuse::conv_detail::heuristic_choice;
  using bf16 = __nv_bfloat16;
  // bf16 variants in for_each_mma_config's order: the wgmma tiles 0 128x128x64 s3, 1 128x64x64
  // s4; mma.sync 2 128x128x32 s5, 3 128x64x32 s5, 4 128x64x64 s4, 5 64x64x64 s4, 6 64x64x32 s4,
  // 7 64x64x64 s4 k4, 8 the element gather; 9 wgmma 64x64x64 s4; the wgmma halo tiles 10
  // 128x128 s3 halo64, 11 128x64 s4 halo128, 12 64x64 s4 halo64; the GEMM's wgmma tiles with
  // im2col TMA loads 13 128x128 ping-pong, 14 128x256, 15 64x128 two blocks per SM; 16 SIMT.
  std::vector<std::string> names;
  cufuse::conv_detail::for_each_mma_config<bf16>([&](auto cfg) {
    names.push_back(cufuse::conv_detail::mma_name<typename decltype(cfg)::type>());
  });
  REQUIRE(names.size() == 16u);
  CHECK(names[0] == "conv_wgmma_bf16_128x128x64_s3");
  CHECK(names[1] == "conv_wgmma_bf16_128x64x64_s4");
  CHECK(names[3] == "conv_mma_bf16_128x64x32_s5");
  CHECK(names[5] == "conv_mma_bf16_64x64x64_s4");
  CHECK(names[7] == "conv_mma_bf16_64x64x64_s4_k4");
  CHECK(names[8] == "conv_mma_bf16_64x64x32_s3_elem");
  CHECK(names[9] == "conv_wgmma_bf16_64x64x64_s4");
  CHECK(names[10] == "conv_wgmma_bf16_128x128x64_s3_halo64");
  CHECK(names[11] == "conv_wgmma_bf16_128x64x64_s4_halo128");
  CHECK(names[12] == "conv_wgmma_bf16_64x64x64_s4_halo64");
  CHECK(names[13] == "conv_im2col_bf16_128x128x64_wg2pp_s6");
  CHECK(names[14] == "conv_im2col_bf16_128x256x64_wg2_s4");
  CHECK(names[15] == "conv_im2col_bf16_64x128x64_wg1_s4_b2");
  auto layer = [](index_t n, index_t pq, index_t k) {
    cufuse::conv_detail::conv_args a{};
    a.n = n;
    a.p = pq;
    a.q = pq;
    a.k = k;
    return a;
  };
  const std::uint32_t mma = 0xfcu | 1u << 16; // the mma.sync gathers and SIMT can run
  // The measured fastest mma.sync tile (bench/JOURNAL.md c3) on all but 7x7 C512 (there
  // 128x64x64, 5% ahead).
  CHECK(heuristic_choice<bf16>(layer(32, 56, 64), 132, mma) == 3);
  CHECK(heuristic_choice<bf16>(layer(32, 28, 128), 132, mma) == 3);
  CHECK(heuristic_choice<bf16>(layer(32, 14, 256), 132, mma) == 5);
  CHECK(heuristic_choice<bf16>(layer(32, 7, 512), 132, mma) == 5);
  // Batch 1: 8 tiles of 64 x 64 for 132 SMs: split-K.
  CHECK(heuristic_choice<bf16>(layer(1, 7, 512), 132, mma) == 7);
  // sm_90a: the wgmma tiles where they fill 70% of the slots (c5), else as before; the 64-row
  // one is never the heuristic's.
  const std::uint32_t wg = mma | 3u | 1u << 9;
  CHECK(heuristic_choice<bf16>(layer(32, 56, 64), 132, wg) == 1); // K = 64: not 128 wide
  CHECK(heuristic_choice<bf16>(layer(32, 28, 128), 132, wg) == 0);
  CHECK(heuristic_choice<bf16>(layer(32, 14, 256), 132, wg) == 1);
  CHECK(heuristic_choice<bf16>(layer(32, 7, 512), 132, wg) == 5);
  CHECK(heuristic_choice<bf16>(layer(1, 7, 512), 132, wg) == 7);
  // A halo tile replaces the gathering tile of its size where it can run (3x3 "same").
  const std::uint32_t halo = wg | 7u << 10;
  CHECK(heuristic_choice<bf16>(layer(32, 56, 64), 132, halo) == 11);
  CHECK(heuristic_choice<bf16>(layer(32, 28, 128), 132, halo) == 10);
  CHECK(heuristic_choice<bf16>(layer(32, 14, 256), 132, halo) == 11);
  CHECK(heuristic_choice<bf16>(layer(32, 7, 512), 132, halo) == 5);          // no halo twin
  CHECK(heuristic_choice<bf16>(layer(32, 56, 64), 132, wg | 1u << 10) == 1); // not of 1's size
  CHECK(heuristic_choice<bf16>(layer(1, 7, 512), 132, halo) == 7);
  // C = 3: only the element gather and SIMT can run; nothing but SIMT: SIMT.
  CHECK(heuristic_choice<bf16>(layer(32, 112, 64), 132, 1u << 8 | 1u << 16) == 8);
  CHECK(heuristic_choice<bf16>(layer(32, 112, 64), 132, 1u << 16) == 16);
  // The im2col tiles where they run and K >= 128: the 128 x 128 ping-pong tile with at least
  // one tile per SM (28x28: 196 tiles), else the 64 x 128 tile (14x14 C256: 98 tiles of
  // 128 x 128; 7x7 C512: 52); K = 64: the halo tile as before.
  const std::uint32_t im2col = halo | 7u << 13;
  CHECK(heuristic_choice<bf16>(layer(32, 28, 128), 132, im2col) == 13);
  CHECK(heuristic_choice<bf16>(layer(32, 14, 256), 132, im2col) == 15);
  CHECK(heuristic_choice<bf16>(layer(32, 7, 512), 132, im2col) == 15);
  CHECK(heuristic_choice<bf16>(layer(32, 56, 64), 132, im2col) == 11);
  CHECK(heuristic_choice<bf16>(layer(32, 28, 128), 132, halo | 1u << 15) == 15); // only 64x128
}

TEST_CASE("conv2d: which convolutions the halo tiles take", "[conv_api]") {
  using cufuse::conv_detail::halo_fits;
  using bf16 = __nv_bfloat16;
  using cufuse::conv_detail::halo_config;
  using cufuse::conv_detail::wgmma_conv_config;
  using wide = halo_config<wgmma_conv_config<bf16, 128, 64, 4>, 128>;
  using narrow = halo_config<wgmma_conv_config<bf16, 64, 64, 4>, 64>;
  // A dense NHWC 3x3 "same" convolution of N x H x W x C.
  auto same = [](index_t n, index_t h, index_t w, index_t c, index_t r, index_t s) {
    cufuse::conv_detail::conv_args a{};
    a.n = n;
    a.h = a.p = h;
    a.wd = a.q = w;
    a.c = c;
    a.k = 64;
    a.r = r;
    a.s = s;
    a.ph = (r - 1) / 2;
    a.pw = (s - 1) / 2;
    a.sh = a.sw = a.dh = a.dw = 1;
    a.xs[3] = 1;
    a.xs[2] = c;
    a.xs[1] = w * c;
    a.xs[0] = h * w * c;
    return a;
  };
  CHECK(halo_fits<wide>(same(32, 56, 56, 64, 3, 3)));
  CHECK(halo_fits<wide>(same(1, 5, 63, 64, 3, 3)));      // (R - 1) W + S - 1 = 128: the limit
  CHECK(!halo_fits<wide>(same(1, 5, 64, 64, 3, 3)));     // 130
  CHECK(!halo_fits<narrow>(same(32, 56, 56, 64, 3, 3))); // 114 > 64
  CHECK(halo_fits<narrow>(same(32, 14, 14, 256, 3, 3)));
  CHECK(!halo_fits<narrow>(same(32, 14, 14, 32, 3, 3))); // C not a multiple of its BK = 64
  CHECK(halo_fits<wide>(same(2, 9, 9, 64, 1, 3)));       // 3 taps: stages - 1
  CHECK(!halo_fits<wide>(same(2, 9, 9, 64, 1, 2)));      // 2 taps: too few for 4 stages
  auto a = same(2, 9, 9, 64, 3, 3);
  a.sh = 2;
  a.p = 5;
  CHECK(!halo_fits<wide>(a)); // stride 2
  a = same(2, 9, 9, 64, 3, 3);
  a.dh = a.dw = 2;
  CHECK(!halo_fits<wide>(a)); // dilation 2 (output 7 x 7 with padding 1)
  a = same(2, 9, 9, 64, 3, 3);
  a.ph = a.pw = 0;
  a.p = a.q = 7;
  CHECK(!halo_fits<wide>(a)); // a smaller output
  a = same(2, 9, 9, 64, 3, 3);
  a.xs[2] = 96; // pixels 96 elements apart, rows and images dense in pixels: fits
  a.xs[1] = 9 * 96;
  a.xs[0] = 81 * 96;
  CHECK(halo_fits<wide>(a));
  a.xs[1] = 10 * 96; // padded rows: pixel m + W is not the next row's
  a.xs[0] = 90 * 96;
  CHECK(!halo_fits<wide>(a));
}
