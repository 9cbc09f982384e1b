// GEMM on the GPU: every variant against double-precision loops (and cuBLAS at 4096), all
// transposes, alpha/beta (beta = 0 with NaN in C), K = 0, unaligned operands, batches, and the
// padding of C left untouched.
#include "../support/gemm_check.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>

using namespace gemm_test;

namespace {

/// The shapes every variant runs (m, n, k): odd and even, tall, wide, K = 0, and one long K for
/// the split-K variants.
const std::vector<dims> variant_shapes = {{1, 1, 1},      {7, 7, 7},      {64, 64, 64},
                                          {129, 65, 127}, {1000, 7, 129}, {7, 1000, 64},
                                          {64, 64, 0},    {65, 70, 1100}};

/// Cases with an aligned C take scalings 0 and 2 (the wgmma kernels' TMA epilogue, storing C
/// or loading and storing it), the others 1 and 3 (their direct stores).
const scaling scalings[] = {{1.0f, 0.0f}, {1.0f, 1.0f}, {2.5f, -1.5f}, {-1.0f, 0.0f}};

/// CUFUSE_GEMM_QUICK=1 (memcheck) runs three of the shapes, =2 (racecheck) one shape in two
/// layouts, both with an aligned C (NN beta = 0, TT beta != 0: the TMA epilogue's two forms):
/// the sanitizers slow every kernel down by orders of magnitude.
int quick_level() {
  const char* q = std::getenv("CUFUSE_GEMM_QUICK");
  return q ? std::atoi(q) : 0;
}

std::vector<dims> shapes_to_run() {
  switch (quick_level()) {
  case 0:
    return variant_shapes;
  case 1:
    return {{7, 7, 7}, {129, 64, 127}, {65, 72, 1100}};
  default:
    return {{65, 72, 1100}}; // n = 72: rows of whole 16-byte units, so TMA stores run too
  }
}

template <class T, class TC>
void every_variant(cufuse::gemm_options opt, const std::string& name_filter, data_kind kind) {
  std::mt19937 rng(Catch::rngSeed() + 17);
  int tried = 0;
  const auto shapes = shapes_to_run();
  for (std::size_t si = 0; si < shapes.size(); ++si) {
    const dims d = shapes[si];
    for (int tr = 0; tr < 4; tr += quick_level() >= 2 ? 3 : 1) {
      // Every other case has an aligned C, so the wgmma kernels run their TMA epilogue (beta = 0
      // and beta != 0) as well as their direct one.
      const bool quick2 = quick_level() >= 2;
      const layout l{(tr & 2) != 0, (tr & 1) != 0, 0, quick2 || (si + tr) % 2 == 0};
      const scaling sc = scalings[quick2 ? (tr == 0 ? 0 : 2) : (si + tr) % 4];
      for (const std::string& v : variants_for<T, TC>(d, l, opt)) {
        if (v.find(name_filter) == std::string::npos) {
          continue;
        }
        cufuse::gemm_options o = opt;
        o.variant = v;
        // On one SM, the persistent (wgmma) variants walk every tile with one or two blocks:
        // their TMA rings run on across edge tiles and K = 0 tiles. The others ignore it.
        o.sm_count = tr % 2;
        check_gemm<T, TC>(d, l, sc, kind, o, rng);
        ++tried;
      }
    }
  }
  CHECK(tried > 0);
}

} // namespace

TEST_CASE("gemm: every fp32 SIMT variant, exact on integer data", "[gemm][variants]") {
  every_variant<float, float>({}, "_f32_simt_", data_kind::integers);
}

TEST_CASE("gemm: every fp32 SIMT variant, random data within the fp32 bound", "[gemm][variants]") {
  every_variant<float, float>({}, "_f32_simt_", data_kind::reals);
}

TEST_CASE("gemm: every TF32 mma variant", "[gemm][variants]") {
  cufuse::gemm_options o;
  o.math = cufuse::gemm_math::tf32;
  every_variant<float, float>(o, "_tf32_", data_kind::integers); // mma.sync and sm_90a wgmma
  every_variant<float, float>(o, "_tf32_", data_kind::reals);
}

TEST_CASE("gemm: every TF32 variant truncates its inputs (the bound of the TF32 checks)",
          "[gemm][variants]") {
  cufuse::gemm_options o;
  o.math = cufuse::gemm_math::tf32;
  const float a = 1.0f + 0x1p-11f + 0x1p-12f; // between two TF32 values, nearer the upper
  // 4 x 4 x 4, every element of A = a, of B = 1: 16-byte rows, as the TMA variants need. wgmma
  // NT reads both operands through the descriptors, TT and NN (run as C^T = B^T A^T) one
  // operand through registers; mma.sync reads fragments by ldmatrix or scalar loads.
  cufuse::tensor<float, 2> ta({4, 4}), tb({4, 4}), tc({4, 4});
  ta.fill(a);
  tb.fill(1.0f);
  int tried = 0, tried_wgmma = 0;
  for (int tr : {0, 1, 3}) {
    const bool at = (tr & 2) != 0, bt = (tr & 1) != 0;
    auto run = [&](const auto& av, const auto& bv) {
      for (const auto& v : cufuse::gemm_variants(av, bv, tc, o)) {
        if (v.find("_tf32_") == std::string::npos) {
          continue;
        }
        INFO(v << " layout " << (at ? 'T' : 'N') << (bt ? 'T' : 'N'));
        o.variant = v;
        tc.fill(std::nanf(""));
        cufuse::gemm(av, bv, tc, 1.0f, 0.0f, cufuse::current_stream(), o);
        for (float x : tc.download()) {
          CHECK(x == 4.0f); // round to nearest would give 4 (1 + 2^-10)
        }
        ++tried;
        tried_wgmma += v.find("_wgmma_") != std::string::npos ? 1 : 0;
      }
    };
    if (at && bt) {
      run(cufuse::transpose(ta), cufuse::transpose(tb));
    } else if (bt) {
      run(ta, cufuse::transpose(tb));
    } else {
      run(ta, tb);
    }
  }
  // Wherever this build has sm_90a code for the device (FP16 wgmma variants), TF32 ones too.
  cufuse::tensor<__half, 2> h({64, 64});
  bool sm90a = false;
  for (const auto& v : cufuse::gemm_variants(h, h, h)) {
    sm90a = sm90a || v.find("sm90a_") != std::string::npos;
  }
  CHECK(tried > 0);
  if (sm90a) {
    CHECK(tried_wgmma > 0);
  }
}

TEST_CASE("gemm: every FP16 variant, fp16 and fp32 outputs", "[gemm][variants]") {
  every_variant<__half, __half>({}, "_f16_", data_kind::integers);
  every_variant<__half, float>({}, "_f16_", data_kind::reals);
}

TEST_CASE("gemm: every BF16 variant, bf16 and fp32 outputs", "[gemm][variants]") {
  every_variant<__nv_bfloat16, __nv_bfloat16>({}, "_bf16_", data_kind::reals);
  every_variant<__nv_bfloat16, float>({}, "_bf16_", data_kind::integers);
}

TEST_CASE("gemm: unaligned pointers and leading dimensions pick variants that accept them",
          "[gemm][variants]") {
  std::mt19937 rng(Catch::rngSeed() + 5);
  const dims d{67, 45, 93};
  for (int tr = 0; tr < 4; ++tr) {
    const layout l{(tr & 2) != 0, (tr & 1) != 0, 1}; // odd leading dimensions, pointer + 1
    const auto f32 = variants_for<float, float>(d, l, {});
    const auto h = variants_for<__half, __half>(d, l, {});
    REQUIRE(!f32.empty());
    REQUIRE(!h.empty());
    // The any-alignment tiles, and the aligned ones through aligned copies (`_pack`).
    auto any_alignment = [](const std::string& v) {
      return v.find("_v1") != std::string::npos || v.ends_with("_pack");
    };
    for (const auto& v : f32) {
      INFO(v);
      CHECK(any_alignment(v));
      cufuse::gemm_options o;
      o.variant = v;
      check_gemm<float, float>(d, l, {1.5f, 0.5f}, data_kind::integers, o, rng);
    }
    for (const auto& v : h) { // SIMT and the tensor-core tiles that load through registers
      INFO(v);
      CHECK(any_alignment(v));
    }
    // The tuner's own choice (heuristic or database) too.
    check_gemm<float, float>(d, l, {1.0f, 0.0f}, data_kind::reals, {}, rng);
    check_gemm<__half, __half>(d, l, {1.0f, 0.0f}, data_kind::reals, {}, rng);
    check_gemm<__nv_bfloat16, float>(d, l, {1.0f, 0.0f}, data_kind::reals, {}, rng);
    // A forced variant that needs alignment is refused with a reason, never run.
    cufuse::gemm_options bad;
    bad.variant = "sm70_f32_simt_128x128x16_t8x8_v4";
    auto run_bad = [&] {
      check_gemm<float, float>(d, l, {1.0f, 0.0f}, data_kind::reals, bad, rng);
    };
    CHECK_THROWS_WITH(run_bad(),
                      Catch::Contains("cannot run this problem") && Catch::Contains("aligned"));
  }
}

/// The eight layouts of the any-alignment cases: each transpose with A and B unaligned
/// (tr < 4), then with B 16-byte aligned and A not (the 16-byte load path for B, and a copy of
/// A alone for the packing variants); C aligned in every other one. Calls f(tr, layout).
template <class F>
void for_unaligned_layouts(int offset, int pad, F&& f) {
  for (int tr = 0; tr < 8; ++tr) {
    layout l{(tr & 2) != 0, (tr & 1) != 0, offset, tr % 2 == 0, pad};
    l.b_aligned = tr >= 4;
    f(tr, l);
  }
}

/// The any-alignment tensor-core tiles (`_mma_..._v1`) of type T on one problem: every one of
/// them, every layout, and the library's own choice, which must be one of them (the SIMT
/// any-alignment tiles are the last resort).
template <class T, class TC>
void any_align_mma(const dims& d, int offset, int pad, std::mt19937& rng,
                   const cufuse::gemm_options& base = {}) {
  int tried = 0;
  for_unaligned_layouts(offset, pad, [&](int tr, const layout& l) {
    for (const std::string& v : variants_for<T, TC>(d, l, base)) {
      if (v.find("_mma_") == std::string::npos || v.ends_with("_pack")) {
        continue;
      }
      INFO(v);
      CHECK(v.find("_v1") != std::string::npos);
      cufuse::gemm_options o = base;
      o.variant = v;
      check_gemm<T, TC>(d, l, scalings[(tr + offset) % 4], data_kind::reals, o, rng);
      ++tried;
    }
    check_gemm<T, TC>(d, l, {1.0f, 0.0f}, data_kind::reals, base, rng);
    // The default is a tensor-core tile (in place, or an aligned one on aligned copies), except
    // that for a TF32 output of a few tiles with a longer K (65 x 70 x 1101) the model may
    // prefer the exact split-K SIMT tiles (TF32 runs at half the fp16 rate).
    const bool split_k_shape = std::is_same_v<T, float> && d.k > std::max(d.m, d.n);
    if (d.m >= 64 && d.n >= 64 && d.k >= 64 && !split_k_shape) {
      const std::string chosen = chosen_for<T, TC>(d, l, base);
      INFO("the default choice: " << chosen);
      CHECK(chosen.find("mma_") != std::string::npos);
    }
  });
  CHECK(tried >= 24); // three tiles, eight layouts
}

TEST_CASE("gemm: fp16 / bf16 / TF32 tensor cores at any alignment (offsets of 2, 4, 8, 12 "
          "bytes, leading dimensions padded by 1, 2, 3)",
          "[gemm][variants]") {
  std::mt19937 rng(Catch::rngSeed() + 23);
  const std::vector<dims> shapes =
      quick_level() >= 1
          ? std::vector<dims>{{129, 65, 127}}
          : std::vector<dims>{{1, 1, 1},     {7, 7, 7},      {129, 65, 127},  {1000, 7, 129},
                              {7, 1000, 64}, {65, 70, 1101}, {257, 300, 255}, {200, 130, 33}};
  const int offsets[] = {1, 2, 4, 1}, pads[] = {1, 2, 3, 3};
  cufuse::gemm_options tf32;
  tf32.math = cufuse::gemm_math::tf32;
  for (std::size_t si = 0; si < shapes.size(); ++si) {
    const int c = int(si % 4);
    any_align_mma<__half, __half>(shapes[si], offsets[c], pads[c], rng);
    any_align_mma<__nv_bfloat16, float>(shapes[si], offsets[(c + 1) % 4], pads[(c + 1) % 4], rng);
    any_align_mma<__nv_bfloat16, __nv_bfloat16>(shapes[si], offsets[(c + 2) % 4], pads[(c + 2) % 4],
                                                rng);
    // fp32 operands offset by 4, 8 or 12 bytes: TF32 through 4- and 8-byte loads
    any_align_mma<float, float>(shapes[si], 1 + (c + 3) % 3, pads[(c + 3) % 4], rng, tf32);
  }
}

/// The packing variants (`_pack`: an aligned variant run on copies of the operands it cannot
/// read in place, rows padded to 16 bytes) of type T on one problem: every one of them, every
/// layout, A and B unaligned or A alone, `batch` batches (odd batch strides).
template <class T, class TC>
void packed_variants(const dims& d, int offset, int pad, int batch, std::mt19937& rng,
                     const cufuse::gemm_options& base = {}) {
  int tried = 0;
  for_unaligned_layouts(offset, pad, [&](int tr, const layout& l) {
    for (const std::string& v : variants_for<T, TC>(d, l, base)) {
      if (!v.ends_with("_pack")) {
        continue;
      }
      INFO(v);
      cufuse::gemm_options o = base;
      o.variant = v;
      o.sm_count = tr % 3 == 0 ? 1 : 0; // persistent tiles walking every tile on one SM
      check_gemm<T, TC>(d, l, scalings[(tr + offset) % 4], data_kind::reals, o, rng, batch);
      ++tried;
    }
  });
  CHECK(tried >= 8);
}

TEST_CASE("gemm: packing variants run the aligned tiles on aligned copies of unaligned A / B",
          "[gemm][variants]") {
  std::mt19937 rng(Catch::rngSeed() + 29);
  const std::vector<dims> shapes =
      quick_level() >= 1 ? std::vector<dims>{{129, 65, 127}}
                         : std::vector<dims>{{1, 1, 1},      {7, 7, 7},      {129, 65, 127},
                                             {65, 70, 1101}, {1000, 7, 129}, {257, 300, 5}};
  cufuse::gemm_options tf32;
  tf32.math = cufuse::gemm_math::tf32;
  for (std::size_t si = 0; si < shapes.size(); ++si) {
    const int batch = shapes[si].m == 129 ? 3 : 1; // batches of odd strides
    const int pad = 1 + int(si % 3);
    packed_variants<__half, __half>(shapes[si], 1, pad, batch, rng);
    packed_variants<__nv_bfloat16, float>(shapes[si], 2, pad, batch, rng);
    packed_variants<__nv_bfloat16, __nv_bfloat16>(shapes[si], 4, pad, batch, rng);
    packed_variants<float, float>(shapes[si], 1 + int(si % 3), pad, batch, rng, tf32);
    packed_variants<float, float>(shapes[si], 2, pad, batch, rng); // the exact SIMT tiles
  }
}

TEST_CASE("gemm: packing copies only what it must; batches sharing one operand",
          "[gemm][variants]") {
  std::mt19937 rng(Catch::rngSeed() + 31);
  // B aligned, A not: the copy is of A alone, and a forced packing variant on aligned operands
  // is refused with the reason.
  const dims d{200, 136, 99};
  layout l{false, false, 1, true, 2};
  l.b_aligned = true;
  cufuse::gemm_options o;
  o.variant = "sm80_bf16_mma_128x128x64_w2x2_s3_pack";
  check_gemm<__nv_bfloat16, __nv_bfloat16>(d, l, {1.0f, 0.5f}, data_kind::reals, o, rng);
  auto aligned_run = [&] {
    check_gemm<__nv_bfloat16, __nv_bfloat16>(d, {false, false, 0}, {1.0f, 0.0f}, data_kind::reals,
                                             o, rng);
  };
  CHECK_THROWS_WITH(aligned_run(), Catch::Contains("cannot run this problem") &&
                                       Catch::Contains("reads them in place"));
  // Every batch reads the same A (batch stride 0), unaligned: one copy serves them all.
  const cufuse::index_t batch = 3, m = 70, n = 48, k = 45;
  std::vector<float> ha(std::size_t(m * (k + 1) + 1)), hb(std::size_t(batch * k * n));
  fill_host<__half>(ha, data_kind::small_integers, rng);
  fill_host<__half>(hb, data_kind::small_integers, rng);
  std::vector<__half> ta(ha.size()), tb(hb.size());
  std::transform(ha.begin(), ha.end(), ta.begin(), [](float x) { return __float2half(x); });
  std::transform(hb.begin(), hb.end(), tb.begin(), [](float x) { return __float2half(x); });
  cufuse::tensor<__half, 1> da(cufuse::index_t(ta.size())), db(cufuse::index_t(tb.size()));
  cufuse::tensor<float, 1> dc(batch * m * n);
  da.upload(ta);
  db.upload(tb);
  auto a = cufuse::batched_matrix(static_cast<const __half*>(da.data()) + 1, batch, m, k, k + 1, 0);
  auto b = cufuse::batched_matrix(static_cast<const __half*>(db.data()), batch, k, n, n, k * n);
  auto c = cufuse::batched_matrix(dc.data(), batch, m, n, n, m * n);
  int tried = 0;
  for (const std::string& v : cufuse::gemm_variants(a, b, c)) {
    if (!v.ends_with("_pack")) {
      continue;
    }
    INFO(v);
    CUFUSE_CUDA_CHECK(cudaMemset(dc.data(), 0xff, std::size_t(batch * m * n) * sizeof(float)));
    cufuse::gemm_options forced;
    forced.variant = v;
    cufuse::gemm_batched(a, b, c, 1.0f, 0.0f, cufuse::current_stream(), forced);
    const std::vector<float> got = dc.download();
    int bad = 0;
    for (cufuse::index_t q = 0; q < batch; ++q) {
      for (cufuse::index_t i = 0; i < m; ++i) {
        for (cufuse::index_t j = 0; j < n; ++j) {
          double want = 0;
          for (cufuse::index_t p = 0; p < k; ++p) {
            want += double(ha[std::size_t(1 + i * (k + 1) + p)]) *
                    double(hb[std::size_t(q * k * n + p * n + j)]);
          }
          bad += got[std::size_t(q * m * n + i * n + j)] != float(want);
        }
      }
    }
    CHECK(bad == 0);
    ++tried;
  }
  CHECK(tried > 0);
}

TEST_CASE("gemm: the default choice on the tuner's own path, every dtype and transpose",
          "[gemm][api]") {
  std::mt19937 rng(Catch::rngSeed() + 9);
  for (const dims d : {dims{1, 1, 1}, dims{130, 257, 300}, dims{8, 4096, 512}, dims{300, 5, 0}}) {
    for (int tr = 0; tr < 4; ++tr) {
      const layout l{(tr & 2) != 0, (tr & 1) != 0, 0};
      check_gemm<float, float>(d, l, {1.0f, 0.0f}, data_kind::reals, {}, rng);
      cufuse::gemm_options t;
      t.math = cufuse::gemm_math::tf32;
      check_gemm<float, float>(d, l, {0.5f, 2.0f}, data_kind::reals, t, rng);
      check_gemm<__half, float>(d, l, {1.0f, 0.0f}, data_kind::reals, {}, rng);
      check_gemm<__nv_bfloat16, __nv_bfloat16>(d, l, {1.0f, -1.0f}, data_kind::reals, {}, rng);
    }
  }
}

TEST_CASE("gemm_batched: strided batches, every layout", "[gemm][api]") {
  std::mt19937 rng(Catch::rngSeed() + 3);
  for (int tr = 0; tr < 4; ++tr) {
    const layout l{(tr & 2) != 0, (tr & 1) != 0, 0};
    check_gemm<float, float>({33, 47, 65}, l, {1.0f, 0.5f}, data_kind::integers, {}, rng, 5);
    check_gemm<__nv_bfloat16, float>({128, 64, 96}, l, {1.0f, 0.0f}, data_kind::reals, {}, rng, 3);
    // The TMA variants walk the batch as a third tensor dimension.
    for (const auto& v : variants_for<__half, __half>({129, 200, 136}, l, {})) {
      if (v.find("_wgmma_") != std::string::npos) {
        INFO(v);
        cufuse::gemm_options o;
        o.variant = v;
        check_gemm<__half, __half>({129, 200, 136}, l, {1.0f, 0.5f}, data_kind::integers, o, rng,
                                   3);
        // An aligned C: the TMA epilogue, batch as its third coordinate (beta != 0: C loaded).
        check_gemm<__half, __half>({129, 200, 136}, {l.ta, l.tb, 0, true}, {1.0f, 0.0f},
                                   data_kind::integers, o, rng, 3);
        check_gemm<__half, float>({129, 200, 136}, {l.ta, l.tb, 0, true}, {-2.0f, 0.0f},
                                  data_kind::integers, o, rng, 3);
        check_gemm<__half, __half>({129, 200, 136}, {l.ta, l.tb, 0, true}, {1.0f, -0.5f},
                                   data_kind::integers, o, rng, 3);
        check_gemm<__half, float>({129, 200, 136}, {l.ta, l.tb, 0, true}, {0.5f, 2.0f},
                                  data_kind::integers, o, rng, 3);
        // On one SM each persistent block walks several tiles of several batches, the edge
        // tiles included, with its TMA ring running on across them.
        o.sm_count = 1;
        check_gemm<__half, __half>({129, 200, 136}, l, {1.0f, 0.5f}, data_kind::integers, o, rng,
                                   3);
      }
    }
    // TF32 wgmma (NT, TT with A through registers, NN run transposed) and TF32 mma.sync (split-K
    // included; NN runs as C^T = B^T A^T, its operands' batch strides exchanged with them).
    // M != N, so that an exchange of the wrong pair shows.
    cufuse::gemm_options tf32;
    tf32.math = cufuse::gemm_math::tf32;
    for (const auto& v : variants_for<float, float>({129, 200, 136}, l, tf32)) {
      const bool wgmma = v.find("_tf32_wgmma_") != std::string::npos;
      if (!wgmma && v.find("_tf32_mma_") == std::string::npos) {
        continue;
      }
      INFO(v);
      cufuse::gemm_options o = tf32;
      o.variant = v;
      check_gemm<float, float>({129, 200, 136}, l, {1.0f, 0.5f}, data_kind::reals, o, rng, 3);
      if (wgmma) { // the TMA epilogue (C aligned): storing C, then loading and storing it
        check_gemm<float, float>({129, 200, 136}, {l.ta, l.tb, 0, true}, {1.0f, 0.0f},
                                 data_kind::reals, o, rng, 3);
        check_gemm<float, float>({129, 200, 136}, {l.ta, l.tb, 0, true}, {1.0f, -0.5f},
                                 data_kind::reals, o, rng, 3);
      }
    }
    // Split-K over thread-block clusters: each tile of every batch summed by its cluster's
    // block 0 through distributed shared memory, TMA and direct epilogues. The cluster tile runs
    // wherever sm_90a does.
    int clustered = 0;
    bool sm90a = false;
    for (const auto& v : variants_for<__nv_bfloat16, float>({129, 200, 700}, l, {})) {
      sm90a = sm90a || v.find("sm90a_") != std::string::npos;
      if (v.find("_csplit") == std::string::npos) {
        continue;
      }
      INFO(v);
      cufuse::gemm_options o;
      o.variant = v;
      check_gemm<__nv_bfloat16, float>({129, 200, 700}, {l.ta, l.tb, 0, true}, {1.0f, -0.5f},
                                       data_kind::integers, o, rng, 3);
      check_gemm<__nv_bfloat16, __nv_bfloat16>({129, 200, 700}, l, {2.0f, 0.5f},
                                               data_kind::integers, o, rng, 3);
      // 120 tiles: more clusters than the device holds at once (66 on an H100), so clusters
      // start on SMs that others just left. Exact on integer data.
      if (tr == 0) {
        check_gemm<__nv_bfloat16, float>({300, 900, 520}, l, {1.0f, 0.0f}, data_kind::integers, o,
                                         rng, 3);
      }
      ++clustered;
    }
    CHECK(clustered == (sm90a ? 2 : 0)); // 64x128 and 64x64 in clusters of two
    cufuse::gemm_options split;
    split.variant = "sm80_f16_mma_64x64x32_w2x2_s4_split4";
    check_gemm<__half, __half>({70, 66, 700}, l, {2.0f, 1.0f}, data_kind::reals, split, rng, 4);
    // 16 splits: partials of every batch summed by the reduction kernel.
    split.variant = "sm80_bf16_mma_64x64x32_w2x2_s4_split16";
    check_gemm<__nv_bfloat16, float>({70, 66, 700}, l, {1.0f, -1.0f}, data_kind::integers, split,
                                     rng, 3);
    // FP32 SIMT split-K: every batch's tiles finish in the block that arrives last.
    for (const char* v :
         {"sm70_f32_simt_64x64x16_t4x4_v4_split4", "sm70_f32_simt_64x64x16_t4x4_v1_split8"}) {
      INFO(v);
      split.variant = v;
      check_gemm<float, float>({72, 68, 700}, l, {1.0f, 0.5f}, data_kind::integers, split, rng, 3);
    }
  }
}

TEST_CASE("gemm: tensors and views, M or N = 0, K = 0", "[gemm][api]") {
  const cufuse::index_t m = 37, n = 29, k = 0;
  cufuse::tensor<float, 2> a({m, k}), b({k, n}), c({m, n});
  c.fill(3.0f);
  cufuse::gemm(a, b, c, 1.0f, 2.0f); // K = 0: C = beta C
  for (float x : c.download()) {
    REQUIRE(x == 6.0f);
  }
  c.fill(std::nanf(""));
  cufuse::gemm(a, b, c, 1.0f, 0.0f); // beta = 0 never reads C
  for (float x : c.download()) {
    REQUIRE(x == 0.0f);
  }
  cufuse::tensor<float, 2> e({0, 5}), f({5, 4}), g({0, 4});
  cufuse::gemm(e, f, g); // nothing to do, no launch
  REQUIRE(cudaStreamSynchronize(cufuse::current_stream()) == cudaSuccess);
}

TEST_CASE("gemm: 4096^3, every variant, sampled double reference and full cuBLAS comparison",
          "[gemm][large]") {
  std::mt19937 rng(Catch::rngSeed() + 4096);
  const dims d{4096, 4096, 4096};
  const layout l{false, false, 0, true}; // aligned C: the wgmma kernels store through TMA
  auto all = [&](auto tag_a, auto tag_c, cufuse::gemm_options opt) {
    using T = decltype(tag_a);
    using TC = decltype(tag_c);
    for (const auto& v : variants_for<T, TC>(d, l, opt)) {
      cufuse::gemm_options o = opt;
      o.variant = v;
      check_gemm<T, TC>(d, l, {1.0f, 0.0f}, data_kind::small_integers, o, rng, 1, true);
    }
  };
  // The sm_90a TMA + wgmma variants: NN (in `all`) reads B N-major; TN reads A M-major too
  // (and its C is unaligned: the direct-store epilogue at full size).
  for (const auto& v : variants_for<__nv_bfloat16, __nv_bfloat16>(d, {true, false, 0}, {})) {
    if (v.find("_wgmma_") != std::string::npos) {
      cufuse::gemm_options o;
      o.variant = v;
      check_gemm<__nv_bfloat16, __nv_bfloat16>(d, {true, false, 0}, {1.0f, 0.0f},
                                               data_kind::small_integers, o, rng, 1, true);
    }
  }
  all(float{}, float{}, {});
  cufuse::gemm_options t;
  t.math = cufuse::gemm_math::tf32;
  all(float{}, float{}, t);
  // TF32 wgmma: NN is in `all`; NT reads both operands through descriptors, TT A through
  // registers.
  for (const layout tl : {layout{false, true, 0, true}, layout{true, true, 0, true}}) {
    for (const auto& v : variants_for<float, float>(d, tl, t)) {
      if (v.find("_tf32_wgmma_") != std::string::npos) {
        cufuse::gemm_options o = t;
        o.variant = v;
        check_gemm<float, float>(d, tl, {1.0f, 0.0f}, data_kind::small_integers, o, rng, 1, true);
      }
    }
  }
  all(__half{}, __half{}, {});
  all(__nv_bfloat16{}, float{}, {});
}
