// GEMM API checks that need no GPU: shape errors name every shape, a transposed C or mixed
// batches are refused, M or N = 0 is a no-op, an unknown variant name or a negative SM count is
// refused. All of these happen before any CUDA call, so they run in CI.
#include <cufuse/gemm.cuh>

#include <catch2/catch.hpp>

namespace {
// Stand-in device addresses: never dereferenced by these checks.
const float* fake = reinterpret_cast<const float*>(std::uintptr_t(1) << 20);
float* fake_out = reinterpret_cast<float*>(std::uintptr_t(1) << 21);

cufuse::matrix_ref<const float> in(long long r, long long c) { return {fake, r, c, c}; }
cufuse::matrix_ref<float> out(long long r, long long c) { return {fake_out, r, c, c}; }
} // namespace

TEST_CASE("gemm: a shape mismatch throws shape_error naming every shape", "[gemm_api]") {
  CHECK_THROWS_MATCHES(cufuse::gemm(in(4, 5), in(6, 7), out(4, 7)), cufuse::shape_error,
                       Catch::Message("cufuse::gemm: shapes do not match: op(A) [4 x 5] is 4 x 5, "
                                      "op(B) [6 x 7] is 6 x 7, C is [4 x 7] (need C = m x n with "
                                      "op(A) m x k, op(B) k x n)"));
  CHECK_THROWS_WITH(cufuse::gemm(cufuse::transpose(in(5, 4)), in(5, 7), out(7, 4)),
                    Catch::Contains("op(A) [5 x 4]^T is 4 x 5") && Catch::Contains("C is [7 x 4]"));
  CHECK_THROWS_AS(cufuse::gemm(in(3, 5), cufuse::transpose(in(5, 8)), out(3, 8)),
                  cufuse::shape_error); // op(B) is 8 x 5
}

TEST_CASE("gemm: misuse is refused before touching the device", "[gemm_api]") {
  CHECK_THROWS_WITH(cufuse::gemm(in(4, 5), in(5, 6), cufuse::transpose(out(6, 4))),
                    Catch::Contains("C cannot be transposed"));
  auto ba = cufuse::matrix_ref<const float>{fake, 4, 5, 5, false, 3, 20};
  auto bb = cufuse::matrix_ref<const float>{fake, 5, 6, 6, false, 2, 30};
  auto bc = cufuse::matrix_ref<float>{fake_out, 4, 6, 6, false, 3, 24};
  CHECK_THROWS_WITH(cufuse::gemm_batched(ba, bb, bc), Catch::Contains("batch counts differ"));
  CHECK_THROWS_WITH(cufuse::gemm(ba, in(5, 6), out(4, 6)),
                    Catch::Contains("use cufuse::gemm_batched"));
  CHECK_THROWS_AS(cufuse::matrix(fake, 4, 5, 3), cufuse::shape_error); // ld < cols
  CHECK_THROWS_AS(cufuse::matrix(fake, -1, 5, 5), cufuse::shape_error);
  CHECK_THROWS_AS(cufuse::batched_matrix(fake, 2, 4, 5, 5, 10), cufuse::shape_error); // overlap
  CHECK_THROWS_AS(cufuse::matrix(static_cast<const float*>(nullptr), 2, 2, 2), cufuse::error);
  cufuse::gemm_options o;
  o.variant = "no_such_variant";
  CHECK_THROWS_WITH(cufuse::gemm(in(4, 5), in(5, 6), out(4, 6), 1.0f, 0.0f, nullptr, o),
                    Catch::Contains("no variant named 'no_such_variant'"));
  cufuse::gemm_options neg;
  neg.sm_count = -2;
  CHECK_THROWS_WITH(cufuse::gemm(in(4, 5), in(5, 6), out(4, 6), 1.0f, 0.0f, nullptr, neg),
                    Catch::Contains("sm_count must be 0 (all SMs) or positive, got -2"));
}

TEST_CASE("gemm: M or N = 0 does nothing (no launch, no device needed)", "[gemm_api]") {
  CHECK_NOTHROW(cufuse::gemm(in(0, 5), in(5, 6), out(0, 6)));
  CHECK_NOTHROW(cufuse::gemm(in(4, 5), in(5, 0), out(4, 0)));
  CHECK_NOTHROW(cufuse::gemm(in(0, 0), in(0, 0), out(0, 0)));
}

TEST_CASE("gemm: views are read through their strides (transpose, slices, empty)", "[gemm_api]") {
  using view = cufuse::tensor_view<float, 2>;
  float* p = fake_out;
  const view a(p, {6, 4}, cufuse::strides<2>{{4, 1}}, view::trusted{});
  auto at = cufuse::as_matrix(cufuse::transpose(a)); // [4, 6]: A^T without moving data
  CHECK(at.transposed);
  CHECK(at.rows == 6);
  CHECK(at.cols == 4);
  CHECK(at.ld == 4);
  // every other row of a wider matrix: a leading dimension of 2 x 10
  const view wide(p, {8, 10}, cufuse::strides<2>{{10, 1}}, view::trusted{});
  auto s = cufuse::as_matrix(cufuse::slice(wide, cufuse::range(0, 8, 2), cufuse::range(1, 5)));
  CHECK(!s.transposed);
  CHECK(s.data == p + 1);
  CHECK(s.rows == 4);
  CHECK(s.cols == 4);
  CHECK(s.ld == 20);
  // empty and one-row matrices have no real leading dimension
  CHECK(cufuse::as_matrix(view(p, {37, 0}, cufuse::strides<2>{{0, 1}}, view::trusted{})).ld >= 1);
  CHECK(cufuse::as_matrix(view(p, {1, 5}, cufuse::strides<2>{{0, 1}}, view::trusted{})).ld == 5);
  // no unit stride in the last two dimensions: refused, naming shape and strides
  CHECK_THROWS_WITH(
      cufuse::as_matrix(cufuse::slice(wide, cufuse::range(0, 8, 2), cufuse::range(0, 10, 2))),
      Catch::Contains("[4, 5]") && Catch::Contains("(20, 2)"));
  // a shape mismatch through transposed views names every shape
  const view c(p, {4, 5}, cufuse::strides<2>{{5, 1}}, view::trusted{});
  CHECK_THROWS_WITH(cufuse::gemm(cufuse::transpose(a), a, c),
                    Catch::Contains("op(A) [6 x 4]^T is 4 x 6"));
}

TEST_CASE("gemm epilogue: operands addressed from a tile origin by 32-bit offsets", "[gemm_api]") {
  // The wgmma TMA epilogue moves each leaf to a thread's first position in the tile once and
  // reads at (dr, dc) from it by 32-bit offsets (epi_leaf::moved, lr, lc); this must address
  // the element the 64-bit position does, and a leaf whose strides do not fit must say so (the
  // host then runs the direct stores).
  using view2 = cufuse::tensor_view<float, 2, cufuse::device_space>;
  using view1 = cufuse::tensor_view<float, 1, cufuse::device_space>;
  float* p = const_cast<float*>(fake);
  const cufuse::extents<3> out{1, 300, 520};
  auto bound = [&](const auto& v) {
    return cufuse::detail::bind_epilogue(cufuse::detail::to_node(v), out, 2);
  };
  const view1 bias(p, cufuse::extents<1>{520}, cufuse::strides<1>{1}, view1::trusted{});
  const view2 res(p, {300, 520}, cufuse::strides<2>{{520, 1}}, view2::trusted{});
  const view2 col(p, {300, 1}, cufuse::strides<2>{{3, 1}}, view2::trusted{});
  const view2 trans(p, {300, 520}, cufuse::strides<2>{{1, 300}}, view2::trusted{});
  const cufuse::index_t big = cufuse::index_t(1) << 22; // the first stride that does not fit
  const view2 wide(p, {300, 520}, cufuse::strides<2>{{big, 1}}, view2::trusted{});
  const view2 far(p, {300, 520}, cufuse::strides<2>{{1, big}}, view2::trusted{});
  std::size_t bad = 0;
  auto same_addresses = [&](const auto& l) {
    for (std::int64_t row0 : {0, 128, 171}) {
      for (std::int64_t col0 : {0, 6, 262}) {
        const auto m = l.moved(row0, col0);
        for (int dr : {0, 1, 8, 64, 127}) {
          for (int dc : {0, 1, 8, 248, 255}) {
            const float* local = m.ptr + (dr * m.lr + dc * m.lc);
            const float* want = l.ptr + ((row0 + dr) * l.sr + (col0 + dc) * l.sc);
            bad += local != want;
            bad += local + m.lc != want + l.sc; // the pair's second column
          }
        }
      }
    }
  };
  const auto lb = bound(bias); // rank 1: repeats along rows at compile time (RowInvariant)
  const auto lr = bound(res), lcol = bound(col), lt = bound(trans);
  static_assert(decltype(lb)::row_invariant && !decltype(lr)::row_invariant &&
                !decltype(lcol)::row_invariant && !decltype(lt)::row_invariant);
  for (const auto* ok : {&lr, &lt}) {
    CHECK(ok->local_ok());
    same_addresses(*ok);
  }
  CHECK(lb.local_ok());
  same_addresses(lb);
  CHECK(lb.lr == 0);
  CHECK(lcol.local_ok());
  CHECK(lcol.lc == 0);
  same_addresses(lcol);
  CHECK(bad == 0);
  CHECK_FALSE(bound(wide).local_ok());
  CHECK_FALSE(bound(far).local_ok());
  // A whole expression: every leaf must fit.
  using cufuse::acc;
  CHECK(cufuse::detail::local_ok_of(cufuse::detail::bind_epilogue(
      cufuse::detail::to_node(cufuse::relu(acc + bias) + res), out, 2)));
  CHECK_FALSE(cufuse::detail::local_ok_of(cufuse::detail::bind_epilogue(
      cufuse::detail::to_node(cufuse::relu(acc + bias) + wide), out, 2)));
}

TEST_CASE("gemm epilogue: the staged operand is the last of Y's dtype and rank >= 2, staged only "
          "where it is laid out as C",
          "[gemm_api]") {
  using view2 = cufuse::tensor_view<float, 2, cufuse::device_space>;
  using view1 = cufuse::tensor_view<float, 1, cufuse::device_space>;
  using half2v = cufuse::tensor_view<__half, 2, cufuse::device_space>;
  using cufuse::acc;
  float* p = const_cast<float*>(fake);
  const view1 bias(p, cufuse::extents<1>{520}, cufuse::strides<1>{1}, view1::trusted{});
  const view2 res(p, {300, 520}, cufuse::strides<2>{{520, 1}}, view2::trusted{});
  const view2 col(p, {300, 1}, cufuse::strides<2>{{1, 1}}, view2::trusted{});
  const half2v hres(reinterpret_cast<__half*>(p), {300, 520}, cufuse::strides<2>{{520, 1}},
                    half2v::trusted{});
  auto index = [](const auto& e) {
    using N = std::remove_cvref_t<decltype(cufuse::detail::to_node(e))>;
    return cufuse::detail::staged_candidate<float, 2, N>::value;
  };
  // Leaves in tree order: relu(acc * col + bias) + res -> col 0, bias 1, res 2.
  CHECK(index(cufuse::relu(acc * col + bias) + res) == 2);
  CHECK(index(cufuse::relu(acc * col + bias)) == 0); // a [m, 1] column is a candidate by type
  CHECK(index(acc + bias) == -1);                    // rank 1
  CHECK(index(acc + hres) == -1);                    // not Y's dtype
  CHECK(index(res * acc + hres + bias) == 0);
  // The bound epilogue marks that leaf and reports its address and strides.
  const cufuse::extents<3> out{1, 300, 520};
  const auto e = cufuse::detail::to_node(cufuse::relu(acc * col + bias) + res);
  const auto bound = cufuse::detail::bind_epilogue<2>(e, out, 2);
  CHECK(cufuse::detail::has_staged_v<std::remove_cvref_t<decltype(bound)>>);
  cufuse::gemm_detail::staged_operand x{};
  cufuse::detail::find_staged(bound, x);
  CHECK(x.ptr == p);
  CHECK(x.sr == 520);
  CHECK(x.sc == 1);
  // Staged only where it is laid out as C: leading dimension, unit column stride, batch stride,
  // 16-byte aligned base, and only on the TMA-store path.
  cufuse::gemm_detail::gemm_args args{};
  args.ldc = 520;
  args.stride_c = 300 * 520;
  args.epi_tma = 1;
  const auto ok = [&](const void* ptr, std::int64_t sb, std::int64_t sr, std::int64_t sc,
                      unsigned batches) {
    return cufuse::gemm_detail::staged_ok(args, {ptr, sb, sr, sc}, batches);
  };
  CHECK(ok(p, 0, 520, 1, 1));
  CHECK(ok(p, 300 * 520, 520, 1, 3));
  CHECK_FALSE(ok(p, 0, 520, 1, 3));     // one residual for every batch, C per batch
  CHECK_FALSE(ok(p, 0, 528, 1, 1));     // another leading dimension
  CHECK_FALSE(ok(p, 0, 1, 300, 1));     // transposed
  CHECK_FALSE(ok(p, 0, 0, 1, 1));       // a row broadcast [1, n]
  CHECK_FALSE(ok(p + 1, 0, 520, 1, 1)); // a 4-byte offset
  args.epi_tma = 0;
  CHECK_FALSE(ok(p, 0, 520, 1, 1));
}
