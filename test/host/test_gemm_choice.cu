// How libcufuse chooses for operands at any alignment, on the host (CI): every variant that
// needs alignment has a packing twin; the packing plan copies exactly the operands the base
// variant cannot read in place, with rows padded to 16 bytes and batches laid end to end (one
// copy of a shared operand); what a twin refuses, and why; and the heuristic's choices on a
// stand-in Hopper device (132 SMs, every variant's code present): the in-place tiles for a
// tiny unaligned problem, a twin for large ones, and no wgmma tile for a large unaligned C.
// Internal headers (src/gemm): nothing here touches a device.
#include "gemm/engine.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <utility>

using namespace cufuse::gemm_detail;

namespace {

/// Stand-in device addresses, 256-byte aligned; never dereferenced.
const void* address(std::uintptr_t at) { return reinterpret_cast<const void*>(at); }
const void* const base_address = address(std::uintptr_t(1) << 24);

/// A row-major NN problem m x n x k with element type `t` (TF32 math for fp32 inputs; C of the
/// inputs' type): A's and B's leading dimensions and byte offsets as given, C's rows ldc.
problem make(dtype t, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda,
             std::int64_t ldb, std::int64_t ldc, int offset_bytes = 0) {
  problem p;
  p.ab = t;
  p.out = t;
  p.math = t == dtype::f32 ? cufuse::gemm_math::tf32 : cufuse::gemm_math::fp32;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = {address((std::uintptr_t(1) << 32) + offset_bytes), m, k, lda, 0, false};
  p.b = {address((std::uintptr_t(1) << 34) + offset_bytes), k, n, ldb, 0, false};
  p.c = const_cast<void*>(address(std::uintptr_t(1) << 36));
  p.ldc = ldc;
  return p;
}

/// A Hopper-like device on which every variant of this build has code.
device_state hopper() {
  device_state d;
  d.name = "stand-in sm_90";
  d.sms = 132;
  d.cc = 90;
  d.l2 = 50 << 20;
  d.smem_per_sm = 228 * 1024;
  d.arch.assign(registry().size(), 90);
  return d;
}

int first_aligned(dtype t, family f, int align) {
  for (int i = 0; i < static_cast<int>(registry().size()); ++i) {
    const variant& v = registry()[i];
    if (v.ab == t && v.fam == f && v.align == align && v.packs < 0 && v.splits == 1) {
      return i;
    }
  }
  return -1;
}

} // namespace

TEST_CASE("gemm choice: every aligned variant has one packing twin", "[gemm_choice]") {
  const auto& r = registry();
  int twins = 0;
  for (int i = 0; i < static_cast<int>(r.size()); ++i) {
    const variant& v = r[i];
    INFO(v.name);
    int found = 0;
    for (const variant& w : r) {
      if (w.packs == i) {
        ++found;
        CHECK(w.name == v.name + "_pack");
        CHECK(w.align == 1);
        CHECK((w.fam == v.fam && w.ab == v.ab && w.tf32 == v.tf32 && w.bm == v.bm && w.bn == v.bn &&
               w.splits == v.splits));
      }
    }
    CHECK(found == (v.align > 1 && v.packs < 0 ? 1 : 0));
    if (v.align > 1) { // the copies' rows are whole 16-byte units: enough for every base
      CHECK(v.align * dtype_size(v.ab) == 16);
    }
    twins += v.packs >= 0;
    if (v.packs >= 0) {
      CHECK(r[v.packs].packs < 0); // a twin's base is an aligned variant, never a twin
    }
  }
  CHECK(twins > 10);
  CHECK(find_variant(r[r.size() - 1].name) == static_cast<int>(r.size()) - 1);
}

TEST_CASE("gemm choice: the packing plan copies what the base variant cannot read in place",
          "[gemm_choice]") {
  const int mma = first_aligned(dtype::bf16, family::mma, 8);
  REQUIRE(mma >= 0);
  const variant& base = registry()[mma];
  // 4095^3: both operands' rows are 8190 bytes.
  {
    const problem p = make(dtype::bf16, 4095, 4095, 4095, 4095, 4095, 4095);
    const pack_plan plan = plan_packing(base, p);
    CHECK(plan.a);
    CHECK(plan.b);
    CHECK(plan.a_bytes == 4095LL * 4096 * 2);
    CHECK(plan.b_bytes == 4095LL * 4096 * 2);
    const void* at_a = address(std::uintptr_t(1) << 40);
    const void* at_b = address((std::uintptr_t(1) << 40) + (std::uintptr_t(1) << 28));
    const problem q = packed_problem(p, plan, at_a, at_b);
    CHECK(q.a.ptr == at_a);
    CHECK(q.b.ptr == at_b);
    CHECK(q.a.ld == 4096);
    CHECK(q.b.ld == 4096);
    CHECK((q.a.rows == p.a.rows && q.a.cols == p.a.cols && q.m == p.m && q.k == p.k));
  }
  // A aligned, B's rows of 50257 elements: B alone.
  {
    const problem p = make(dtype::bf16, 8192, 50257, 768, 768, 50257, 50257);
    const pack_plan plan = plan_packing(base, p);
    CHECK_FALSE(plan.a);
    CHECK(plan.a_bytes == 0);
    CHECK(plan.b);
    CHECK(plan.b_bytes == 768LL * 50264 * 2);
    const problem q = packed_problem(p, plan, nullptr, base_address);
    CHECK(q.a.ptr == p.a.ptr);
    CHECK(q.a.ld == 768);
    CHECK(q.b.ld == 50264);
  }
  // Aligned leading dimensions but a base 2 bytes off: both copied.
  {
    const problem p = make(dtype::bf16, 64, 64, 64, 64, 64, 64, 2);
    const pack_plan plan = plan_packing(base, p);
    CHECK((plan.a && plan.b));
    CHECK(packed_problem(p, plan, base_address, base_address).a.ld == 64);
  }
  // Batches: A's odd batch stride gives batches laid end to end; B shared by every batch
  // (stride 0) is copied once and stays shared.
  {
    problem p = make(dtype::f16, 33, 20, 7, 7, 21, 20);
    p.batch = 3;
    p.a.batch_stride = 33 * 7 + 1;
    p.b.batch_stride = 0;
    p.stride_c = 33 * 20;
    const pack_plan plan = plan_packing(base, p); // base takes bf16: the plan is dtype-blind
    CHECK((plan.a && plan.b));
    CHECK(plan.a_bytes == 3LL * 33 * 8 * 2);
    CHECK(plan.b_bytes == 7LL * 24 * 2);
    const problem q = packed_problem(p, plan, base_address, base_address);
    CHECK(q.a.batch_stride == 33 * 8);
    CHECK(q.b.batch_stride == 0);
  }
  // fp32 rows of 5 elements for a TF32 variant (16 bytes: 4 elements): rows of 8.
  {
    const int tf32 = first_aligned(dtype::f32, family::mma, 4);
    REQUIRE(tf32 >= 0);
    const problem p = make(dtype::f32, 9, 5, 5, 5, 5, 5);
    const problem q =
        packed_problem(p, plan_packing(registry()[tf32], p), base_address, base_address);
    CHECK(q.a.ld == 8);
    CHECK(q.b.ld == 8);
  }
}

TEST_CASE("gemm choice: what a packing twin refuses, with the reason", "[gemm_choice]") {
  const device_state d = hopper();
  const int mma = first_aligned(dtype::bf16, family::mma, 8);
  REQUIRE(mma >= 0);
  int twin = -1;
  for (int i = 0; i < static_cast<int>(registry().size()); ++i) {
    twin = registry()[i].packs == mma ? i : twin;
  }
  REQUIRE(twin >= 0);
  std::string why;
  const problem odd = make(dtype::bf16, 4095, 4095, 4095, 4095, 4095, 4095);
  CHECK_FALSE(can_run(mma, odd, d, &why));
  CHECK(can_run(twin, odd, d));
  const problem even = make(dtype::bf16, 4096, 4096, 4096, 4096, 4096, 4096);
  CHECK(can_run(mma, even, d));
  CHECK_FALSE(can_run(twin, even, d, &why));
  CHECK(why.find("reads them in place") != std::string::npos);
  const problem no_k = make(dtype::bf16, 64, 64, 0, 1, 63, 64);
  CHECK_FALSE(can_run(twin, no_k, d, &why));
  CHECK(why.find("K = 0") != std::string::npos);
  const problem huge = make(dtype::bf16, 40000, 64, 20001, 20001, 64, 64); // A: 1.6 GB
  CHECK_FALSE(can_run(twin, huge, d, &why));
  CHECK(why.find("1 GiB") != std::string::npos);
  problem f16 = odd;
  f16.ab = f16.out = dtype::f16;
  CHECK_FALSE(can_run(twin, f16, d, &why)); // the base's own rules, on the copies
  CHECK(why.find(registry()[mma].name) != std::string::npos);
}

TEST_CASE("gemm choice: the heuristic's picks for unaligned operands (stand-in sm_90)",
          "[gemm_choice]") {
  const device_state d = hopper();
  auto pick = [&](const problem& p) {
    const auto valid = valid_indices(p, d);
    REQUIRE(!valid.empty());
    return registry()[heuristic(p, d, valid)].name;
  };
  for (dtype t : {dtype::bf16, dtype::f16, dtype::f32}) {
    INFO("dtype " << dtype_name(t));
    // A tiny problem: the copy's launch would cost more than the in-place loads.
    const std::string tiny = pick(make(t, 7, 7, 7, 7, 7, 7));
    INFO("7x7x7: " << tiny);
    CHECK_FALSE(tiny.ends_with("_pack"));
    // 4095^3: an aligned tile on the copies (H100: 1.75-2.56x cuBLAS, bench/JOURNAL.md t6).
    const std::string cube = pick(make(t, 4095, 4095, 4095, 4095, 4095, 4095));
    INFO("4095^3: " << cube);
    CHECK(cube.ends_with("_pack"));
    // The vocabulary projection: C's rows unaligned and large, so no wgmma tile (they store an
    // unaligned C from the accumulators; mma.sync stages it).
    const std::string vocab = pick(make(t, 8192, 50257, 768, 768, 50257, 50257));
    INFO("8192x50257x768: " << vocab);
    CHECK(vocab.ends_with("_pack"));
    CHECK(vocab.find("wgmma") == std::string::npos);
    // The same with C's rows aligned: the wgmma tiles are not rated down.
    problem aligned_c = make(t, 8192, 50256, 768, 768, 50257, 50256);
    const std::string wide = pick(aligned_c);
    INFO("8192x50256x768, C aligned: " << wide);
    CHECK(wide.find("wgmma") != std::string::npos);
  }
}

TEST_CASE("gemm choice: the heuristic streams small-M problems on cluster split-K tiles "
          "(stand-in sm_90)",
          "[gemm_choice]") {
  // Measured on an H100 (bench/results/small_m_h100.md): M <= 64 with N = K = 4096 runs the
  // 64x64 tile split over clusters of two (128 blocks; the fastest at M <= 32, 3% behind the
  // unsplit 64x64 tile at M = 64), M = 128 the unsplit 64x64 tile (128 blocks, the fastest);
  // M <= 64 with N = K = 8192 the 64x128 cluster tile (1-4% behind the unsplit 64x64); larger
  // problems keep the unsplit persistent tiles, not the narrow one.
  const device_state d = hopper();
  const auto pick = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    problem p = make(dtype::bf16, m, n, k, k, n, n);
    return registry()[heuristic(p, d, valid_indices(p, d))].name;
  };
  for (const auto& [m, n] : {std::pair{16, 4096}, {32, 4096}, {64, 4096}}) {
    INFO(m << "x" << n << "x" << n);
    CHECK(pick(m, n, n) == "sm90a_bf16_wgmma_64x64x64_wg1_s10_tma_csplit2");
  }
  CHECK(pick(128, 4096, 4096) == "sm90a_bf16_wgmma_64x64x64_wg1_s12_tma");
  for (const auto& [m, n] : {std::pair{16, 8192}, {64, 8192}}) {
    INFO(m << "x" << n << "x" << n);
    CHECK(pick(m, n, n) == "sm90a_bf16_wgmma_64x128x64_wg1_s6_tma_csplit2");
  }
  for (const auto& [m, n] :
       {std::pair{512, 4096}, {256, 4096}, {4096, 4096}, {128, 8192}, {2048, 2048}}) {
    INFO(m << "x" << n << "x" << n);
    CHECK(pick(m, n, n).find("_csplit") == std::string::npos);
    CHECK(pick(m, n, n).find("_wgmma_") != std::string::npos);
    CHECK(pick(m, n, n).find("x64x64_") == std::string::npos);
  }
}

TEST_CASE("gemm choice: exact fp32 with few rows runs the 8-split SIMT tiles (stand-in sm_90)",
          "[gemm_choice]") {
  // Measured on an H100 (bench/JOURNAL.md t15, the sweep of cufuse-tune --exhaustive): the
  // 64x256 8-split tile was the fastest at M = 64 and 128 with N = K = 4096 and 8192; the
  // heuristic takes it at 128x4096x4096 and 64x8192x8192, and at 64x4096x4096 the 64x128
  // 8-split tile (256 blocks instead of 128; 0.97-1.07x cuBLAS there against 64x256's
  // 1.15-1.26x). M = 16 and 32 keep their narrow tiles (1.0-2.4x cuBLAS).
  const device_state d = hopper();
  const auto pick = [&](std::int64_t m, std::int64_t n, std::int64_t k) {
    problem p = make(dtype::f32, m, n, k, k, n, n);
    p.math = cufuse::gemm_math::fp32;
    return registry()[heuristic(p, d, valid_indices(p, d))].name;
  };
  CHECK(pick(128, 4096, 4096) == "sm80_f32_simt_64x256x16_t8x8_v4_s3_split8");
  CHECK(pick(64, 8192, 8192) == "sm80_f32_simt_64x256x16_t8x8_v4_s3_split8");
  CHECK(pick(64, 4096, 4096) == "sm80_f32_simt_64x128x32_t4x8_v4_s3_split8");
  CHECK(pick(16, 4096, 4096) == "sm70_f32_simt_16x128x32_t4x4_v4_split8");
  CHECK(pick(32, 4096, 4096) == "sm70_f32_simt_32x128x32_t4x4_v4_split8");
}
