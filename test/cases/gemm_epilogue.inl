// GEMM epilogues written as expressions (cufuse::acc): every configuration an epilogue
// instantiates (wgmma with TMA and direct stores, mma.sync, its split-K, SIMT) in every layout,
// on odd and even shapes, against double-precision loops; row and column vectors, residuals,
// activations, output casts, an auxiliary output (tie / pack), reading the output itself, NaN
// in an unread output, batches, shape errors, and one kernel per call.
//
// CUFUSE_EPI_PART selects the cases of a translation unit (each epilogue type instantiates
// its kernels where it is used, so the cases are spread over three files that compile in
// parallel, test/gpu/test_gemm_epilogue_*.cu): 1 bf16, 2 fp16 and fp32, 3 activations and
// batches.
#pragma once

#include "../support/gemm_check.hpp"
#include "../support/graph_count.cuh"

#include <cufuse/gemm.cuh>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

using namespace gemm_test;

namespace {

using index_t = cufuse::index_t;

double gelu_tanh_ref(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
double gelu_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double silu_ref(double x) { return x / (1.0 + std::exp(-x)); }
double relu_ref(double x) { return x > 0 ? x : 0.0; }

/// Host values of a device tensor, as float.
template <class T, int R>
std::vector<float> host_of(const cufuse::tensor<T, R>& t) {
  const auto d = t.download();
  std::vector<float> out(d.size());
  for (std::size_t i = 0; i < d.size(); ++i) {
    out[i] = to_f(d[i]);
  }
  return out;
}

/// A device tensor of random small integers (exact in every input type and TF32), or reals
/// rounded to T; returns the host values.
template <class T, int R>
std::vector<float> fill_random(cufuse::tensor<T, R>& t, data_kind kind, std::mt19937& rng) {
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
void poison_nan(cufuse::tensor<T, R>& t) {
  t.fill(std::numeric_limits<float>::quiet_NaN());
}

/// op(A) op(B) in double: A stored [m, k] (or [k, m] when ta), B [k, n] (or [n, k]).
std::vector<double> product(const std::vector<float>& a, const std::vector<float>& b, index_t m,
                            index_t n, index_t k, bool ta, bool tb) {
  std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
  for (index_t i = 0; i < m; ++i) {
    for (index_t p = 0; p < k; ++p) {
      const double x = ta ? a[p * m + i] : a[i * k + p];
      for (index_t j = 0; j < n; ++j) {
        c[i * n + j] += x * (tb ? b[j * k + p] : b[p * n + j]);
      }
    }
  }
  return c;
}

/// |got - want| within the output's rounding (plus fp32 evaluation of the epilogue).
template <class TY>
void check_close(const std::vector<float>& got, const std::vector<double>& want,
                 const std::string& what) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double tol = 1.01 * out_eps<TY>() * std::abs(want[i]) + 2e-5 * (1.0 + std::abs(want[i]));
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

/// The operands of one problem: A (stored transposed when ta), B (when tb), as device tensors
/// with their host values.
template <class T>
struct operands {
  cufuse::tensor<T, 2> a, b;
  std::vector<float> ha, hb;
  operands(index_t m, index_t n, index_t k, bool ta, bool tb, data_kind kind, std::mt19937& rng)
      : a(ta ? cufuse::extents<2>{k, m} : cufuse::extents<2>{m, k}),
        b(tb ? cufuse::extents<2>{n, k} : cufuse::extents<2>{k, n}) {
    ha = fill_random(a, kind, rng);
    hb = fill_random(b, kind, rng);
  }
  /// Calls f(op(A), op(B)) with the right views.
  template <class F>
  void with(bool ta, bool tb, F&& f) {
    auto va = a.view();
    auto vb = b.view();
    if (ta && tb) {
      f(cufuse::transpose(va), cufuse::transpose(vb));
    } else if (ta) {
      f(cufuse::transpose(va), vb);
    } else if (tb) {
      f(va, cufuse::transpose(vb));
    } else {
      f(va, vb);
    }
  }
};

const dims shapes[] = {{129, 65, 127}, {128, 256, 64}, {7, 200, 64}, {65, 72, 1100}};

/// Y = gelu_tanh(acc + bias) * scale + R (bias [n] and residual R [m, n] of the input type,
/// scale [m, 1] fp32) with every configuration the epilogue instantiates, every
/// layout, every shape; Y poisoned with NaN first (the epilogue does not read it).
template <class T, class TY, std::size_t N = std::size(shapes)>
void every_configuration(cufuse::gemm_math math, const std::string& filter,
                         const dims (&sizes)[N] = shapes, int layouts = 4) {
  std::mt19937 rng(Catch::rngSeed() + 101);
  cufuse::gemm_options opt;
  opt.math = math;
  int tried = 0, wgmma = 0;
  for (const dims& d : sizes) {
    for (int tr = 0; tr < layouts; ++tr) {
      const bool ta = tr & 2, tb = tr & 1;
      operands<T> ops(d.m, d.n, d.k, ta, tb, data_kind::small_integers, rng);
      cufuse::tensor<T, 1> bias({d.n});
      cufuse::tensor<float, 2> scale({d.m, 1});
      cufuse::tensor<T, 2> res({d.m, d.n});
      cufuse::tensor<TY, 2> y({d.m, d.n});
      const auto hbias = fill_random(bias, data_kind::reals, rng);
      const auto hscale = fill_random(scale, data_kind::reals, rng);
      const auto hres = fill_random(res, data_kind::reals, rng);
      const auto acc = product(ops.ha, ops.hb, d.m, d.n, d.k, ta, tb);
      std::vector<double> want(acc.size());
      for (index_t i = 0; i < d.m; ++i) {
        for (index_t j = 0; j < d.n; ++j) {
          const std::size_t e = std::size_t(i * d.n + j);
          want[e] = gelu_tanh_ref(acc[e] + hbias[j]) * hscale[i] + hres[e];
        }
      }
      std::vector<std::string> names;
      ops.with(ta, tb, [&](auto a, auto b) {
        names = cufuse::tuning::epilogue_variants(
            a, b, y, cufuse::gelu_tanh(cufuse::acc + bias) * scale + res, opt);
      });
      for (const std::string& v : names) {
        if (v.find(filter) == std::string::npos) {
          continue;
        }
        INFO("variant " << v << " m " << d.m << " n " << d.n << " k " << d.k << " op "
                        << (ta ? 'T' : 'N') << (tb ? 'T' : 'N'));
        poison_nan(y);
        cufuse::gemm_options o = opt;
        o.variant = v;
        ops.with(ta, tb, [&](auto a, auto b) {
          cufuse::gemm(a, b, y, cufuse::gelu_tanh(cufuse::acc + bias) * scale + res, o);
        });
        check_close<TY>(host_of(y), want, v);
        ++tried;
        wgmma += v.find("wgmma") != std::string::npos;
      }
    }
  }
  CHECK(tried > 0);
  // On Hopper the epilogue's wgmma configurations ran too (this file is built for sm_90a).
  int dev = 0, major = 0;
  REQUIRE(cudaGetDevice(&dev) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess);
  if (major == 9 && (std::is_same_v<T, __nv_bfloat16> || math == cufuse::gemm_math::tf32)) {
    CHECK(wgmma > 0);
  }
  std::printf("every_configuration: %d runs, %d of them wgmma\n", tried, wgmma);
}

#if CUFUSE_EPI_PART == 1

TEST_CASE("gemm epilogue: bf16 -> bf16, every configuration and layout", "[gemm][epilogue]") {
  every_configuration<__nv_bfloat16, __nv_bfloat16>(cufuse::gemm_math::fp32, "");
}

TEST_CASE("gemm epilogue: bf16 inputs, fp32 output (a cast at the store)", "[gemm][epilogue]") {
  every_configuration<__nv_bfloat16, float>(cufuse::gemm_math::fp32, "");
}

/// Y = gelu_tanh(acc + bias) * scale + R as in every_configuration, for a bias given as the view
/// `bias` (host values `hbias`, n of them, or one that broadcasts), every variant, layout NN.
template <class BV>
void bias_view_case(const std::string& what, BV bias, const std::vector<float>& hbias, index_t m,
                    index_t n, index_t k, std::mt19937& rng) {
  operands<__nv_bfloat16> ops(m, n, k, false, false, data_kind::small_integers, rng);
  cufuse::tensor<float, 2> scale({m, 1});
  cufuse::tensor<__nv_bfloat16, 2> res({m, n}), y({m, n});
  const auto hscale = fill_random(scale, data_kind::reals, rng);
  const auto hres = fill_random(res, data_kind::reals, rng);
  const auto acc = product(ops.ha, ops.hb, m, n, k, false, false);
  std::vector<double> want(acc.size());
  for (index_t i = 0; i < m; ++i) {
    for (index_t j = 0; j < n; ++j) {
      const std::size_t e = std::size_t(i * n + j);
      want[e] = gelu_tanh_ref(acc[e] + hbias[hbias.size() == 1 ? 0 : std::size_t(j)]) * hscale[i] +
                hres[e];
    }
  }
  const auto epi = cufuse::gelu_tanh(cufuse::acc + bias) * scale + res;
  const auto names = cufuse::tuning::epilogue_variants(ops.a, ops.b, y, epi);
  REQUIRE(!names.empty());
  for (const std::string& v : names) {
    INFO(what << ", variant " << v);
    poison_nan(y);
    cufuse::gemm_options o;
    o.variant = v;
    cufuse::gemm(ops.a, ops.b, y, epi, o);
    check_close<__nv_bfloat16>(host_of(y), want, what + " " + v);
  }
}

// The wgmma stores read a bias ([n]: the same at every row) once per tile, while the tile's
// last MMAs run, one word per pair of columns where it is contiguous and aligned, else element by
// element (bench/JOURNAL.md e15). 300 x 520 has interior tiles (which read it so) and edge
// tiles (which read it pair by pair) in every configuration.
TEST_CASE("gemm epilogue: a bias that is contiguous, unaligned, strided or one element",
          "[gemm][epilogue]") {
  std::mt19937 rng(Catch::rngSeed() + 29);
  const index_t m = 300, n = 520, k = 72;
  cufuse::tensor<__nv_bfloat16, 1> whole({n}), longer({2 * n + 1}), one({1});
  const auto hwhole = fill_random(whole, data_kind::reals, rng);
  const auto hlonger = fill_random(longer, data_kind::reals, rng);
  const auto hone = fill_random(one, data_kind::reals, rng);
  bias_view_case("contiguous", whole.view(), hwhole, m, n, k, rng);
  // From the second element: a 2-byte offset, so no pair of columns is a 4-byte word.
  const std::vector<float> hoff(hlonger.begin() + 1, hlonger.begin() + 1 + n);
  bias_view_case("unaligned", cufuse::slice(longer, cufuse::range(1, n + 1)), hoff, m, n, k, rng);
  std::vector<float> hstep(std::size_t(n), 0.0f);
  for (index_t j = 0; j < n; ++j) {
    hstep[std::size_t(j)] = hlonger[std::size_t(2 * j)];
  }
  bias_view_case("every other element", cufuse::slice(longer, cufuse::range(0, 2 * n, 2)), hstep, m,
                 n, k, rng);
  bias_view_case("one element, broadcast", one.view(), hone, m, n, k, rng);
}

// Several tiles per persistent block, with a short K, so that the epilogue is most of a tile's
// time and each barrier of the persistent kernels (ring slots, the ping-pong turns, the TMA
// stores' buffers) goes through several phases: 512 tiles of 128 x 128 on 132 SMs are 3 to 4
// per block. (A ping-pong variant whose tiles shared one epilogue buffer through a single
// empty barrier passed the small shapes and overwrote tiles here: bench/JOURNAL.md e13.)
TEST_CASE("gemm epilogue: bf16, several tiles per block, short K", "[gemm][epilogue]") {
  const dims many[] = {{4096, 2048, 40}, {2049, 4000, 72}};
  every_configuration<__nv_bfloat16, __nv_bfloat16>(cufuse::gemm_math::fp32, "", many, 2);
}

TEST_CASE("gemm epilogue: an auxiliary output (tie / pack) from the same accumulators",
          "[gemm][epilogue]") {
  std::mt19937 rng(Catch::rngSeed() + 7);
  for (const dims& d : {dims{129, 65, 127}, dims{256, 512, 128}, dims{65, 72, 1100}}) {
    operands<__nv_bfloat16> ops(d.m, d.n, d.k, false, true, data_kind::small_integers, rng);
    cufuse::tensor<__nv_bfloat16, 1> bias({d.n});
    cufuse::tensor<__nv_bfloat16, 2> y({d.m, d.n}), pre({d.m, d.n});
    const auto hbias = fill_random(bias, data_kind::reals, rng);
    const auto acc = product(ops.ha, ops.hb, d.m, d.n, d.k, false, true);
    std::vector<double> wy(acc.size()), wp(acc.size());
    for (std::size_t e = 0; e < acc.size(); ++e) {
      wp[e] = acc[e] + hbias[e % std::size_t(d.n)];
      wy[e] = gelu_tanh_ref(wp[e]);
    }
    const auto epi = cufuse::pack(cufuse::gelu_tanh(cufuse::acc + bias), cufuse::acc + bias);
    std::vector<std::string> names;
    ops.with(false, true, [&](auto a, auto b) {
      names = cufuse::tuning::epilogue_variants(a, b, cufuse::tie(y, pre), epi);
    });
    REQUIRE(!names.empty());
    for (const std::string& v : names) {
      INFO("variant " << v << " m " << d.m << " n " << d.n << " k " << d.k);
      poison_nan(y);
      poison_nan(pre);
      cufuse::gemm_options o;
      o.variant = v;
      ops.with(false, true,
               [&](auto a, auto b) { cufuse::gemm(a, b, cufuse::tie(y, pre), epi, o); });
      check_close<__nv_bfloat16>(host_of(y), wy, v + " (Y)");
      // The auxiliary output rounds the fp32 value once, like Y.
      check_close<__nv_bfloat16>(host_of(pre), wp, v + " (P)");
    }
  }
}

TEST_CASE("gemm epilogue: reading the output at the element written (Y = 0.5 acc + 2 Y)",
          "[gemm][epilogue]") {
  std::mt19937 rng(Catch::rngSeed() + 11);
  const dims d{129, 136, 96};
  operands<__nv_bfloat16> ops(d.m, d.n, d.k, false, false, data_kind::small_integers, rng);
  cufuse::tensor<float, 2> y({d.m, d.n});
  const auto acc = product(ops.ha, ops.hb, d.m, d.n, d.k, false, false);
  std::vector<std::string> names;
  ops.with(false, false, [&](auto a, auto b) {
    names = cufuse::tuning::epilogue_variants(a, b, y, 0.5f * cufuse::acc + 2.0f * y);
  });
  REQUIRE(!names.empty());
  for (const std::string& v : names) {
    INFO("variant " << v);
    const auto y0 = fill_random(y, data_kind::reals, rng);
    std::vector<double> want(acc.size());
    for (std::size_t e = 0; e < acc.size(); ++e) {
      want[e] = 0.5 * acc[e] + 2.0 * y0[e];
    }
    cufuse::gemm_options o;
    o.variant = v;
    ops.with(false, false,
             [&](auto a, auto b) { cufuse::gemm(a, b, y, 0.5f * cufuse::acc + 2.0f * y, o); });
    check_close<float>(host_of(y), want, v);
  }
}

TEST_CASE("gemm epilogue: shape errors name the shapes; aliasing is refused", "[gemm][epilogue]") {
  // The epilogue types of the other cases (each new type would instantiate its kernels here).
  cufuse::tensor<__nv_bfloat16, 2> a({64, 32}), b({32, 48}), y({64, 48}), res({64, 48});
  cufuse::tensor<float, 2> scale({64, 1});
  cufuse::tensor<__nv_bfloat16, 1> bias({47});
  try {
    cufuse::gemm(a, b, y, cufuse::gelu_tanh(cufuse::acc + bias) * scale + res);
    FAIL("no shape_error");
  } catch (const cufuse::shape_error& e) {
    const std::string msg = e.what();
    // Thrown where the expression is built (bias * scale is [64, 47], the residual [64, 48]).
    CHECK(msg.find("47]") != std::string::npos);
    CHECK(msg.find("[64, 48]") != std::string::npos);
  }
  cufuse::tensor<__nv_bfloat16, 2> p({64, 40});
  cufuse::tensor<__nv_bfloat16, 1> bias48({48});
  CHECK_THROWS_AS(
      cufuse::gemm(a, b, cufuse::tie(y, p),
                   cufuse::pack(cufuse::gelu_tanh(cufuse::acc + bias48), cufuse::acc + bias48)),
      cufuse::shape_error);
  cufuse::tensor<__nv_bfloat16, 2> wrong({64, 49});
  CHECK_THROWS_AS(cufuse::gemm(a, b, wrong, cufuse::gelu_tanh(cufuse::acc + bias48) * scale + res),
                  cufuse::shape_error);
  // A residual that overlaps the output at other elements (shifted by a row) would race with
  // the stores.
  cufuse::tensor<__nv_bfloat16, 2> z({65, 48});
  auto shifted = cufuse::slice(z, cufuse::range(1, 65), cufuse::all);
  cufuse::tensor_view<const __nv_bfloat16, 2> zr(z.data(), {64, 48});
  CHECK_THROWS_AS(cufuse::gemm(a, b, shifted, cufuse::gelu_tanh(cufuse::acc + bias48) * scale + zr),
                  cufuse::error);
}

TEST_CASE("gemm epilogue: one kernel per call (graph capture), and steady-state reuse",
          "[gemm][epilogue]") {
  std::mt19937 rng(Catch::rngSeed() + 13);
  const dims d{512, 512, 256};
  operands<__nv_bfloat16> ops(d.m, d.n, d.k, false, false, data_kind::small_integers, rng);
  cufuse::tensor<__nv_bfloat16, 1> bias({d.n});
  cufuse::tensor<float, 2> scale({d.m, 1});
  cufuse::tensor<__nv_bfloat16, 2> res({d.m, d.n}), y({d.m, d.n});
  const auto hbias = fill_random(bias, data_kind::reals, rng);
  const auto hscale = fill_random(scale, data_kind::reals, rng);
  const auto hres = fill_random(res, data_kind::reals, rng);
  const auto acc = product(ops.ha, ops.hb, d.m, d.n, d.k, false, false);
  std::vector<double> want(acc.size());
  for (index_t i = 0; i < d.m; ++i) {
    for (index_t j = 0; j < d.n; ++j) {
      const std::size_t e = std::size_t(i * d.n + j);
      want[e] = gelu_tanh_ref(acc[e] + hbias[j]) * hscale[i] + hres[e];
    }
  }
  auto call = [&] {
    cufuse::gemm(ops.a, ops.b, y, cufuse::gelu_tanh(cufuse::acc + bias) * scale + res);
  };
  call(); // the first call chooses and prepares outside the capture
  poison_nan(y);
  const auto [nodes, kernels] = cft::count_kernels(call);
  CHECK(kernels == 1);
  check_close<__nv_bfloat16>(host_of(y), want, "captured");
}

TEST_CASE("gemm epilogue: tune_epilogue records the fastest variant; the frozen tuner runs it",
          "[gemm][epilogue]") {
  std::mt19937 rng(Catch::rngSeed() + 17);
  const dims d{256, 192, 128};
  operands<__nv_bfloat16> ops(d.m, d.n, d.k, false, false, data_kind::small_integers, rng);
  cufuse::tensor<__nv_bfloat16, 1> bias({d.n});
  cufuse::tensor<float, 2> scale({d.m, 1});
  cufuse::tensor<__nv_bfloat16, 2> res({d.m, d.n}), y({d.m, d.n});
  const auto hbias = fill_random(bias, data_kind::reals, rng);
  const auto hscale = fill_random(scale, data_kind::reals, rng);
  const auto hres = fill_random(res, data_kind::reals, rng);
  const auto acc = product(ops.ha, ops.hb, d.m, d.n, d.k, false, false);
  std::vector<double> want(acc.size());
  for (index_t i = 0; i < d.m; ++i) {
    for (index_t j = 0; j < d.n; ++j) {
      const std::size_t e = std::size_t(i * d.n + j);
      want[e] = gelu_tanh_ref(acc[e] + hbias[j]) * hscale[i] + hres[e];
    }
  }
  // The epilogue type of the cases above (a new one would instantiate its kernels here).
  const auto epi = cufuse::gelu_tanh(cufuse::acc + bias) * scale + res;
  const std::string path = "gemm_epilogue_tune_test.db";
  std::remove(path.c_str());
  const cufuse::tune_mode mode0 = cufuse::tuning::mode();
  const std::string file0 = cufuse::tuning::file();
  cufuse::tuning::set_file(path);
  cufuse::tuning::reset();
  const auto names = cufuse::tuning::epilogue_variants(ops.a, ops.b, y, epi);
  const auto c = cufuse::tuning::tune_epilogue(ops.a, ops.b, y, epi);
  CHECK(std::find(names.begin(), names.end(), c.variant) != names.end());
  CHECK(c.seconds > 0.0);
  CHECK_THROWS_AS(cufuse::tuning::record_epilogue(ops.a, ops.b, y, epi, "no_such_variant", 1e-3),
                  cufuse::error);
  REQUIRE(cufuse::tuning::save());
  std::ifstream in(path);
  const std::string db((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(db.find(".e=x") != std::string::npos); // the epilogue's key
  CHECK(db.find(c.variant) != std::string::npos);
  // A fresh frozen tuner takes the recorded choice, and the result is right.
  cufuse::tuning::reset();
  cufuse::tuning::set_mode(cufuse::tune_mode::frozen);
  poison_nan(y);
  cufuse::gemm(ops.a, ops.b, y, epi);
  check_close<__nv_bfloat16>(host_of(y), want, "frozen " + c.variant);
  CHECK(cufuse::tuning::chosen_epilogue(ops.a, ops.b, y, epi) == c.variant);
  cufuse::tuning::set_mode(mode0);
  cufuse::tuning::set_file(file0);
  cufuse::tuning::reset();
  std::remove(path.c_str());
}

#elif CUFUSE_EPI_PART == 2

TEST_CASE("gemm epilogue: fp16 -> fp16, every configuration and layout", "[gemm][epilogue]") {
  every_configuration<__half, __half>(cufuse::gemm_math::fp32, "");
}

TEST_CASE("gemm epilogue: fp32 with TF32 tensor cores, every configuration and layout",
          "[gemm][epilogue]") {
  every_configuration<float, float>(cufuse::gemm_math::tf32, "");
}

TEST_CASE("gemm epilogue: fp32 math (SIMT), every configuration and layout", "[gemm][epilogue]") {
  every_configuration<float, float>(cufuse::gemm_math::fp32, "");
}

#else

TEST_CASE("gemm epilogue: relu, gelu, silu and a column scale with shift", "[gemm][epilogue]") {
  std::mt19937 rng(Catch::rngSeed() + 17);
  for (const dims& d : {dims{129, 65, 127}, dims{256, 256, 64}, dims{65, 72, 1100}}) {
    operands<__nv_bfloat16> ops(d.m, d.n, d.k, true, false, data_kind::small_integers, rng);
    cufuse::tensor<__nv_bfloat16, 1> shift({d.n});
    cufuse::tensor<float, 1> scale({d.n});
    cufuse::tensor<__nv_bfloat16, 2> y({d.m, d.n});
    const auto hshift = fill_random(shift, data_kind::reals, rng);
    const auto hscale = fill_random(scale, data_kind::reals, rng);
    const auto acc = product(ops.ha, ops.hb, d.m, d.n, d.k, true, false);
    std::vector<double> want(acc.size());
    for (std::size_t e = 0; e < acc.size(); ++e) {
      const std::size_t j = e % std::size_t(d.n);
      const double x = acc[e] * 0.125;
      want[e] = relu_ref(acc[e] * hscale[j] + hshift[j]) + gelu_ref(x) + silu_ref(x);
    }
    const auto epi = cufuse::relu(cufuse::acc * scale + shift) +
                     cufuse::gelu(cufuse::acc * 0.125f) + cufuse::silu(cufuse::acc * 0.125f);
    std::vector<std::string> names;
    ops.with(true, false,
             [&](auto a, auto b) { names = cufuse::tuning::epilogue_variants(a, b, y, epi); });
    REQUIRE(!names.empty());
    for (const std::string& v : names) {
      INFO("variant " << v << " m " << d.m << " n " << d.n << " k " << d.k);
      poison_nan(y);
      cufuse::gemm_options o;
      o.variant = v;
      ops.with(true, false, [&](auto a, auto b) { cufuse::gemm(a, b, y, epi, o); });
      check_close<__nv_bfloat16>(host_of(y), want, v);
    }
  }
}

TEST_CASE("gemm epilogue: operands whose rows are not 16-byte aligned (in-place tiles and "
          "aligned copies)",
          "[gemm][epilogue]") {
  std::mt19937 rng(Catch::rngSeed() + 23);
  const index_t m = 129, n = 65, k = 127;
  // A^T stored [k, m + 1] and B [k, n + 2], each viewed from its second column: odd leading
  // dimensions and 2-byte offsets, for the same epilogue as the case above.
  cufuse::tensor<__nv_bfloat16, 2> abig({k, m + 1}), bbig({k, n + 2});
  const auto hab = fill_random(abig, data_kind::small_integers, rng);
  const auto hbb = fill_random(bbig, data_kind::small_integers, rng);
  std::vector<float> ha(std::size_t(k * m)), hb(std::size_t(k * n));
  for (index_t p = 0; p < k; ++p) {
    for (index_t i = 0; i < m; ++i) {
      ha[std::size_t(p * m + i)] = hab[std::size_t(p * (m + 1) + 1 + i)];
    }
    for (index_t j = 0; j < n; ++j) {
      hb[std::size_t(p * n + j)] = hbb[std::size_t(p * (n + 2) + 1 + j)];
    }
  }
  auto av = cufuse::slice(abig, cufuse::all, cufuse::range(1, m + 1));
  auto bv = cufuse::slice(bbig, cufuse::all, cufuse::range(1, n + 1));
  cufuse::tensor<__nv_bfloat16, 1> shift({n});
  cufuse::tensor<float, 1> scale({n});
  cufuse::tensor<__nv_bfloat16, 2> y({m, n});
  const auto hshift = fill_random(shift, data_kind::reals, rng);
  const auto hscale = fill_random(scale, data_kind::reals, rng);
  const auto acc = product(ha, hb, m, n, k, true, false);
  std::vector<double> want(acc.size());
  for (std::size_t e = 0; e < acc.size(); ++e) {
    const std::size_t j = e % std::size_t(n);
    const double x = acc[e] * 0.125;
    want[e] = relu_ref(acc[e] * hscale[j] + hshift[j]) + gelu_ref(x) + silu_ref(x);
  }
  const auto epi = cufuse::relu(cufuse::acc * scale + shift) + cufuse::gelu(cufuse::acc * 0.125f) +
                   cufuse::silu(cufuse::acc * 0.125f);
  const auto names = cufuse::tuning::epilogue_variants(cufuse::transpose(av), bv, y, epi);
  int packed = 0;
  for (const std::string& v : names) {
    INFO("variant " << v);
    poison_nan(y);
    cufuse::gemm_options o;
    o.variant = v;
    cufuse::gemm(cufuse::transpose(av), bv, y, epi, o);
    check_close<__nv_bfloat16>(host_of(y), want, v);
    packed += v.ends_with("_pack");
  }
  CHECK(packed > 0);
  // The library's own choice on the same operands.
  poison_nan(y);
  cufuse::gemm(cufuse::transpose(av), bv, y, epi);
  check_close<__nv_bfloat16>(host_of(y), want, "the default choice");
}

/// Checks every variant of Y = relu(acc + bias) + R on A [m, k], B [k, n] for the residual view
/// `r` (host values `hr`, row-major [m, n]) and the output view `y`.
template <class RV, class YV>
void residual_case(const std::string& what, const cufuse::tensor<__nv_bfloat16, 2>& a,
                   const cufuse::tensor<__nv_bfloat16, 2>& b,
                   const cufuse::tensor<__nv_bfloat16, 1>& bias, const std::vector<double>& acc,
                   const std::vector<float>& hbias, RV r, const std::vector<float>& hr, YV y,
                   cufuse::tensor<__nv_bfloat16, 2>& ybase, index_t m, index_t n) {
  std::vector<double> want(acc.size());
  for (index_t i = 0; i < m; ++i) {
    for (index_t j = 0; j < n; ++j) {
      const std::size_t e = std::size_t(i * n + j);
      want[e] = relu_ref(acc[e] + hbias[std::size_t(j)]) + hr[e];
    }
  }
  const auto epi = cufuse::relu(cufuse::acc + bias) + r;
  const auto names = cufuse::tuning::epilogue_variants(a, b, y, epi);
  REQUIRE(!names.empty());
  for (const std::string& v : names) {
    INFO(what << ", variant " << v << ", m " << m << " n " << n);
    poison_nan(ybase);
    cufuse::gemm_options o;
    o.variant = v;
    cufuse::gemm(a, b, y, epi, o);
    // The output's elements, wherever y lies in ybase.
    const auto all = host_of(ybase);
    const index_t ld = ybase.shape()[1];
    std::vector<float> got(std::size_t(m * n));
    for (index_t i = 0; i < m; ++i) {
      for (index_t j = 0; j < n; ++j) {
        got[std::size_t(i * n + j)] = all[std::size_t(i * ld + j)];
      }
    }
    check_close<__nv_bfloat16>(got, want, what + " " + v);
  }
}

TEST_CASE("gemm epilogue: a residual laid out as C (staged in shared memory) and in other "
          "layouts (read from global memory)",
          "[gemm][epilogue]") {
  std::mt19937 rng(Catch::rngSeed() + 29);
  using bf = __nv_bfloat16;
  for (const dims& d : {dims{129, 136, 96}, dims{256, 256, 64}}) {
    const index_t m = d.m, n = d.n, k = d.k;
    cufuse::tensor<bf, 2> a({m, k}), b({k, n});
    cufuse::tensor<bf, 1> bias({n});
    const auto ha = fill_random(a, data_kind::small_integers, rng);
    const auto hb = fill_random(b, data_kind::small_integers, rng);
    const auto hbias = fill_random(bias, data_kind::reals, rng);
    const auto acc = product(ha, hb, m, n, k, false, false);
    // Residuals: [m, n] itself; [m, n + 8] and [m + 1, n] (a view at its second element: a
    // 2-byte base offset) and [n, m] transposed, each holding the same values at R's elements.
    cufuse::tensor<bf, 2> r({m, n}), wide({m, n + 8}), off({m + 1, n}), rt({n, m});
    const auto hr = fill_random(r, data_kind::reals, rng);
    {
      std::vector<bf> w(std::size_t(m * (n + 8))), o(std::size_t((m + 1) * n)),
          t(std::size_t(n * m));
      for (index_t i = 0; i < m; ++i) {
        for (index_t j = 0; j < n; ++j) {
          const bf v = __float2bfloat16(hr[std::size_t(i * n + j)]);
          w[std::size_t(i * (n + 8) + j)] = v;
          o[std::size_t(1 + i * n + j)] = v;
          t[std::size_t(j * m + i)] = v;
        }
      }
      wide.upload(w);
      off.upload(o);
      rt.upload(t);
    }
    cufuse::tensor<bf, 2> y({m, n}), ywide({m, n + 8});
    const auto wide_r = cufuse::slice(wide, cufuse::all, cufuse::range(0, n));
    const auto off_r = cufuse::view(off.data() + 1, {m, n});
    const auto ywide_v = cufuse::slice(ywide, cufuse::all, cufuse::range(0, n));
    residual_case("R [m, n] (staged)", a, b, bias, acc, hbias, r.view(), hr, y.view(), y, m, n);
    residual_case("R with C's leading dimension n + 8 (staged)", a, b, bias, acc, hbias, wide_r, hr,
                  ywide_v, ywide, m, n);
    residual_case("R with another leading dimension", a, b, bias, acc, hbias, wide_r, hr, y.view(),
                  y, m, n);
    residual_case("R at a 2-byte offset", a, b, bias, acc, hbias, off_r, hr, y.view(), y, m, n);
    residual_case("R transposed", a, b, bias, acc, hbias, cufuse::transpose(rt), hr, y.view(), y, m,
                  n);
  }
}

TEST_CASE("gemm epilogue: batches with a per-batch residual (staged) and a shared one",
          "[gemm][epilogue]") {
  std::mt19937 rng(Catch::rngSeed() + 31);
  const index_t batch = 3, m = 97, n = 80, k = 72;
  cufuse::tensor<__nv_bfloat16, 3> a({batch, m, k}), b({batch, k, n}), r3({batch, m, n});
  cufuse::tensor<__nv_bfloat16, 3> y({batch, m, n});
  cufuse::tensor<__nv_bfloat16, 2> r2({m, n});
  const auto ha = fill_random(a, data_kind::small_integers, rng);
  const auto hb = fill_random(b, data_kind::small_integers, rng);
  const auto hr3 = fill_random(r3, data_kind::reals, rng);
  const auto hr2 = fill_random(r2, data_kind::reals, rng);
  std::vector<double> want3(std::size_t(batch * m * n)), want2(want3.size());
  for (index_t q = 0; q < batch; ++q) {
    const std::vector<float> qa(ha.begin() + q * m * k, ha.begin() + (q + 1) * m * k);
    const std::vector<float> qb(hb.begin() + q * k * n, hb.begin() + (q + 1) * k * n);
    const auto acc = product(qa, qb, m, n, k, false, false);
    for (index_t e = 0; e < m * n; ++e) {
      const std::size_t at = std::size_t(q * m * n + e);
      want3[at] = acc[std::size_t(e)] + hr3[at];
      want2[at] = acc[std::size_t(e)] + hr2[std::size_t(e)];
    }
  }
  const auto run = [&](const auto& epi, const std::vector<double>& want, const std::string& what) {
    const auto names = cufuse::tuning::epilogue_variants(a, b, y, epi, {}, true);
    REQUIRE(!names.empty());
    for (const std::string& v : names) {
      INFO(what << ", variant " << v);
      poison_nan(y);
      cufuse::gemm_options o;
      o.variant = v;
      cufuse::gemm_batched(a, b, y, epi, o);
      check_close<__nv_bfloat16>(host_of(y), want, what + " " + v);
    }
  };
  run(cufuse::acc + r3, want3, "per-batch residual");
  run(cufuse::acc + r2, want2, "residual shared by the batches");
}

TEST_CASE("gemm epilogue: batches, with a per-batch bias and a shared one", "[gemm][epilogue]") {
  std::mt19937 rng(Catch::rngSeed() + 19);
  const index_t batch = 3, m = 97, n = 80, k = 72;
  cufuse::tensor<__nv_bfloat16, 3> a({batch, m, k}), b({batch, k, n});
  cufuse::tensor<__nv_bfloat16, 3> bias3({batch, 1, n});
  cufuse::tensor<float, 1> shared({n});
  cufuse::tensor<float, 3> y({batch, m, n});
  const auto ha = fill_random(a, data_kind::small_integers, rng);
  const auto hb = fill_random(b, data_kind::small_integers, rng);
  const auto hbias = fill_random(bias3, data_kind::reals, rng);
  const auto hshared = fill_random(shared, data_kind::reals, rng);
  std::vector<double> want(static_cast<std::size_t>(batch * m * n));
  for (index_t q = 0; q < batch; ++q) {
    const std::vector<float> qa(ha.begin() + q * m * k, ha.begin() + (q + 1) * m * k);
    const std::vector<float> qb(hb.begin() + q * k * n, hb.begin() + (q + 1) * k * n);
    const auto acc = product(qa, qb, m, n, k, false, false);
    for (index_t e = 0; e < m * n; ++e) {
      want[std::size_t(q * m * n + e)] =
          acc[std::size_t(e)] + hbias[q * n + e % n] + hshared[e % n];
    }
  }
  const auto epi = cufuse::acc + bias3 + shared;
  std::vector<std::string> names = cufuse::tuning::epilogue_variants(a, b, y, epi, {}, true);
  REQUIRE(!names.empty());
  for (const std::string& v : names) {
    INFO("variant " << v);
    poison_nan(y);
    cufuse::gemm_options o;
    o.variant = v;
    cufuse::gemm_batched(a, b, y, epi, o);
    check_close<float>(host_of(y), want, v);
  }
}

TEST_CASE("gemm epilogue: chained with the kernels that write its operands and read its output "
          "(programmatic dependent launches)",
          "[gemm][epilogue]") {
  // On sm_90 a wgmma GEMM is launched while the kernel before it finishes and waits for it
  // before its first global access (core/pdl.cuh); every result below depends on that wait.
  // The loop runs without a host synchronization; outputs are poisoned first.
  std::mt19937 rng(Catch::rngSeed() + 29);
  constexpr int iters = 6;
  const index_t blocks = 32, m = 256, n = 256, k = 4096, k1 = 32, n1 = 256;
  using bf = __nv_bfloat16;
  // A: the last [m, k] block of a [blocks, m, k] tensor that one assignment writes (a broadcast
  // of x plus the iteration), so that A's rows are among the last that assignment stores.
  cufuse::tensor<bf, 3> x({1, m, k}), big({blocks, m, k});
  cufuse::tensor<bf, 2> w({k, n}), a1({m, k1}), w1({k1, n1}), w2({n1, n}), h({m, n1});
  cufuse::tensor<bf, 1> bias({n});
  const auto hx = fill_random(x, data_kind::small_integers, rng);
  const auto hw = fill_random(w, data_kind::small_integers, rng);
  const auto ha1 = fill_random(a1, data_kind::small_integers, rng);
  const auto hw1 = fill_random(w1, data_kind::small_integers, rng);
  const auto hw2 = fill_random(w2, data_kind::small_integers, rng);
  const auto hbias = fill_random(bias, data_kind::small_integers, rng);
  cufuse::tensor<float, 2> y({m, n});
  std::vector<cufuse::tensor<float, 2>> ys, zs, y2s;
  for (int i = 0; i < iters; ++i) {
    ys.emplace_back(cufuse::extents<2>{m, n});
    zs.emplace_back(cufuse::extents<2>{m, n});
    y2s.emplace_back(cufuse::extents<2>{m, n});
    poison_nan(ys.back());
    poison_nan(zs.back());
    poison_nan(y2s.back());
  }
  poison_nan(y);
  poison_nan(h);
  auto a = cufuse::slice(big, blocks - 1, cufuse::all, cufuse::all);
  for (int i = 0; i < iters; ++i) {
    big = cufuse::broadcast_to(x, big.shape()) + float(i); // writes A
    cufuse::gemm(a, w, ys[i], cufuse::acc + bias);         // reads A (RAW)
    zs[i] = y + 0.0f;                                      // reads y (the previous GEMM's)
    cufuse::gemm(a, w, y, cufuse::acc + bias);             // overwrites y (WAR)
    cufuse::gemm(a1, w1, h, cufuse::acc + float(i));       // h: exact in bf16 (|h| <= 134)
    cufuse::gemm(h, w2, y2s[i], cufuse::acc);              // reads h (a GEMM after a GEMM)
  }
  const auto p = product(hx, hw, m, n, k, false, false);
  const auto p1 = product(ha1, hw1, m, n1, k1, false, false);
  std::vector<double> colsum(n, 0.0), colsum2(n, 0.0);
  for (index_t r = 0; r < k; ++r) {
    for (index_t c = 0; c < n; ++c) {
      colsum[c] += hw[r * n + c];
    }
  }
  std::vector<float> hh(p1.size());
  for (std::size_t e = 0; e < p1.size(); ++e) {
    hh[e] = float(p1[e]);
  }
  const auto p2 = product(hh, hw2, m, n, n1, false, false);
  for (index_t r = 0; r < n1; ++r) {
    for (index_t c = 0; c < n; ++c) {
      colsum2[c] += hw2[r * n + c];
    }
  }
  for (int i = 0; i < iters; ++i) {
    INFO("iteration " << i);
    std::vector<double> want(p.size()), want_prev(p.size()), want2(p2.size());
    for (index_t r = 0; r < m; ++r) {
      for (index_t c = 0; c < n; ++c) {
        const std::size_t e = std::size_t(r * n + c);
        want[e] = p[e] + i * colsum[c] + hbias[c];
        want_prev[e] = i == 0 ? std::nan("") : p[e] + (i - 1) * colsum[c] + hbias[c];
        want2[e] = p2[e] + i * colsum2[c];
      }
    }
    check_close<float>(host_of(ys[i]), want, "GEMM after the assignment that writes A");
    if (i > 0) {
      check_close<float>(host_of(zs[i]), want_prev, "the kernel before the GEMM that overwrites y");
    }
    check_close<float>(host_of(y2s[i]), want2, "GEMM after the GEMM that writes its A");
  }
  std::vector<double> last(p.size());
  for (index_t r = 0; r < m; ++r) {
    for (index_t c = 0; c < n; ++c) {
      last[std::size_t(r * n + c)] = p[std::size_t(r * n + c)] + (iters - 1) * colsum[c] + hbias[c];
    }
  }
  check_close<float>(host_of(y), last, "y after the last GEMM");
}

#endif

} // namespace
