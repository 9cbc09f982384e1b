// N-d shapes: implicit broadcasting, rank-0 tensors, slices, transposes, permutes, reshapes,
// assignment into views, aliasing through a temporary, odd extents and misaligned views.
// References are plain loops in double over multi-indices. Included after `using space = ...`.

namespace {

using cufuse::index_t;
template <std::size_t R>
using idx_t = std::array<index_t, R>;

template <class T, int R>
struct filled {
  cufuse::tensor<T, R, space> t;
  std::vector<double> v; // the stored values, as doubles, row-major
};

template <class T, int R>
void upload_values(cufuse::tensor<T, R, space>& t, const std::vector<T>& v) {
  if constexpr (std::is_same_v<T, bool>) {
    t.upload(std::vector<bool>(v.begin(), v.end()));
  } else {
    t.upload(v);
  }
}

/// A tensor of `shape` with fresh random values in [lo, hi] (whole numbers for integers).
template <class T, int R>
filled<T, R> random_tensor(const cufuse::extents<R>& shape, double lo = -3, double hi = 3) {
  auto r = cft::make_random<T>(shape.size(), lo, hi, cft::next_seed());
  filled<T, R> f{cufuse::tensor<T, R, space>(shape), r.exact};
  upload_values(f.t, r.stored);
  return f;
}

/// Fills with a value no correct result equals (NaN, or a sentinel for integers).
template <class T, int R>
void poison(cufuse::tensor<T, R, space>& t) {
  std::vector<T> p(std::size_t(t.size()), cft::poison<T>(0));
  upload_values(t, p);
}

template <class T, int R>
std::vector<double> values(const cufuse::tensor<T, R, space>& t) {
  const auto got = t.download();
  std::vector<double> out(got.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    out[i] = cft::to_double(T(got[i]));
  }
  return out;
}

/// Row-major offset of multi-index c in shape s, reading a rank-r operand through the trailing
/// coordinates with extent-1 dimensions repeated (NumPy's rules): the reference's broadcast.
template <std::size_t R, int r>
index_t at(const idx_t<R>& c, const cufuse::extents<r>& s) {
  index_t off = 0;
  for (int d = 0; d < r; ++d) {
    const index_t x = s[d] == 1 ? 0 : c[R - r + d];
    off = off * s[d] + x;
  }
  return off;
}

/// Calls f(c) for every multi-index of `shape` in row-major order.
template <int R, class F>
void for_each_index(const cufuse::extents<R>& shape, F f) {
  if (shape.size() == 0) {
    return;
  }
  idx_t<R> c{};
  for (index_t i = 0; i < shape.size(); ++i) {
    f(c);
    for (int d = R - 1; d >= 0; --d) {
      if (++c[d] < shape[d]) {
        break;
      }
      c[d] = 0;
    }
  }
}

/// Checks every element of `t` against ref(multi-index), with the tolerance of T.
template <class T, int R, class Ref>
void expect_all(const std::string& what, const cufuse::tensor<T, R, space>& t, Ref ref) {
  const auto got = t.download();
  index_t bad = 0, i = 0;
  std::string first;
  for_each_index(t.shape(), [&](const idx_t<R>& c) {
    const double r = ref(c);
    const T g = got[std::size_t(i)];
    if (!cft::close(g, r)) {
      if (bad++ == 0) {
        std::ostringstream s;
        s << what << " [" << cufuse::type_name<T>() << "] shape " << t.shape().to_string()
          << ": element " << i << " got " << cft::show(g) << " expected " << r;
        first = s.str();
      }
    }
    ++i;
  });
  INFO(first);
  CHECK(bad == 0);
}

template <class T>
double relu_d(double x) {
  return x < 0 ? 0.0 : x;
}

} // namespace

TEST_CASE("broadcasting: [m,n] + [n], * [m,1], rank differences, every dtype", "[shapes]") {
  cft::for_types<float, __nv_bfloat16, __half, std::int32_t, double>([]<class T>() {
    for (index_t n : {index_t(1), index_t(3), index_t(1000), index_t(4097)}) {
      const index_t m = 7;
      auto X = random_tensor<T, 2>({m, n});
      auto bias = random_tensor<T, 1>(cufuse::extents<1>(n));
      auto col = random_tensor<T, 2>({m, index_t(1)});
      cufuse::tensor<T, 2, space> Y({m, n});
      poison(Y);
      Y = cufuse::relu(X.t + bias.t) * col.t;
      expect_all("relu(X + bias) * col", Y, [&](const idx_t<2>& c) {
        return relu_d<T>(X.v[at(c, X.t.shape())] + bias.v[c[1]]) * col.v[c[0]];
      });
      // a row and a column broadcast against each other: [1, n] + [m, 1] -> [m, n]
      auto row = random_tensor<T, 2>({index_t(1), n});
      poison(Y);
      Y = row.t - col.t;
      expect_all("[1,n] - [m,1]", Y, [&](const idx_t<2>& c) { return row.v[c[1]] - col.v[c[0]]; });
    }
  });
}

TEST_CASE("broadcasting in every n-ary function: where, fma, clamp, map, pow", "[shapes]") {
  const index_t a = 4, b = 5, c = 6;
  auto X = random_tensor<float, 3>({a, b, c});
  auto Y = random_tensor<float, 2>({b, index_t(1)});
  auto Z = random_tensor<float, 1>(cufuse::extents<1>(c));
  auto lo = random_tensor<float, 3>({a, index_t(1), index_t(1)}, -1, 0);
  cufuse::tensor<float, 3, space> out({a, b, c});
  poison(out);
  out = cufuse::where(X.t > Y.t, Z.t, X.t * 2.0f);
  expect_all("where", out, [&](const idx_t<3>& i) {
    const double x = X.v[at(i, X.t.shape())], y = Y.v[at(i, Y.t.shape())];
    return x > y ? Z.v[i[2]] : x * 2;
  });
  poison(out);
  out = cufuse::fma(X.t, Y.t, Z.t);
  expect_all("fma", out, [&](const idx_t<3>& i) {
    return X.v[at(i, X.t.shape())] * Y.v[at(i, Y.t.shape())] + Z.v[i[2]];
  });
  poison(out);
  out = cufuse::clamp(X.t, lo.t, Z.t);
  expect_all("clamp", out, [&](const idx_t<3>& i) {
    const double x = X.v[at(i, X.t.shape())], l = lo.v[i[0]], h = Z.v[i[2]];
    return std::min(std::max(x, l), h);
  });
  poison(out);
  out = cufuse::map([] __host__ __device__(float p, float q) { return p * q - 1.0f; }, Y.t, Z.t) +
        X.t;
  expect_all("map", out, [&](const idx_t<3>& i) {
    return double(float(float(Y.v[i[1]]) * float(Z.v[i[2]]) - 1.0f)) + X.v[at(i, X.t.shape())];
  });
}

TEST_CASE("shapes that do not broadcast throw shape_error naming every shape", "[shapes][errors]") {
  cufuse::tensor<float, 2, space> A({3, 4}), B({4, 3});
  cufuse::tensor<float, 1, space> v(5);
  cufuse::tensor<float, 3, space> T3({2, 3, 1});
  CHECK_THROWS_WITH(A + B, Catch::Contains("[3, 4]") && Catch::Contains("[4, 3]") &&
                               Catch::Contains("operator+"));
  CHECK_THROWS_WITH(cufuse::where(A > 0, v, T3), Catch::Contains("[3, 4]") &&
                                                     Catch::Contains("[5]") &&
                                                     Catch::Contains("[2, 3, 1]"));
  CHECK_THROWS_AS(cufuse::fma(A, v, 1.0f), cufuse::shape_error);
  // the destination's shape must equal the expression's: no broadcasting into it
  cufuse::tensor<float, 2, space> wide({3, 8});
  CHECK_THROWS_WITH(wide = A * 2, Catch::Contains("[3, 4]") && Catch::Contains("[3, 8]"));
  cufuse::tensor<float, 2, space> col({3, 1});
  CHECK_THROWS_AS(col = A + col, cufuse::shape_error);
}

TEST_CASE("rank-0 tensors are scalars that broadcast; promotion follows PyTorch", "[shapes]") {
  cufuse::tensor<float, 0, space> d;
  CHECK(d.size() == 1);
  CHECK(d.shape().to_string() == "[]");
  d.fill(2.5f);
  auto X = random_tensor<float, 2>({3, 5});
  cufuse::tensor<float, 2, space> Y({3, 5});
  poison(Y);
  Y = X.t * d + d;
  expect_all("X * d + d", Y, [&](const idx_t<2>& c) { return X.v[c[0] * 5 + c[1]] * 2.5 + 2.5; });
  poison(Y);
  Y = d; // a rank-0 expression fills
  expect_all("Y = d", Y, [](const idx_t<2>&) { return 2.5; });
  // at rank 1 too (4097: a vector tail)
  cufuse::tensor<float, 1, space> v(4097);
  v.fill(2.0f);
  v = v * d - 1;
  expect_all("v * d - 1", v, [](const idx_t<1>&) { return 4.0; });
  cufuse::tensor<float, 0, space> e;
  e = d * 3 + 1;
  CHECK(e.download() == std::vector<float>{8.5f});
  // PyTorch: a 0-d tensor does not widen a dimensioned one of its category, but a higher
  // category wins with its own type; a C++ scalar is weaker still
  cufuse::tensor<__half, 1, space> h(4);
  cufuse::tensor<std::int32_t, 1, space> i(4);
  cufuse::tensor<double, 0, space> dd;
  cufuse::tensor<__half, 0, space> hd;
  STATIC_REQUIRE(std::is_same_v<decltype(h * d)::value_type, __half>);
  STATIC_REQUIRE(std::is_same_v<decltype(i * d)::value_type, float>);
  STATIC_REQUIRE(std::is_same_v<decltype(i * hd)::value_type, __half>);
  STATIC_REQUIRE(std::is_same_v<decltype(h + dd)::value_type, __half>);
  STATIC_REQUIRE(std::is_same_v<decltype(d + dd)::value_type, double>);
  STATIC_REQUIRE(std::is_same_v<decltype(hd * 2.0)::value_type, __half>);
  STATIC_REQUIRE(std::is_same_v<decltype(i * 2.0)::value_type, float>);
  STATIC_REQUIRE(decltype(d * 3)::rank == 0);
}

TEST_CASE("half and bf16 values are scalars: fill, and weak operands", "[shapes]") {
  cufuse::tensor<__nv_bfloat16, 2, space> H({3, 7});
  H.fill(__float2bfloat16(0.5f));
  for (auto x : H.download()) {
    REQUIRE(__bfloat162float(x) == 0.5f);
  }
  auto X = random_tensor<float, 2>({3, 7});
  auto Xh = X.t * __float2half(2.0f); // a half scalar is weak: float stays float
  STATIC_REQUIRE(std::is_same_v<decltype(Xh)::value_type, float>);
  // bf16 * half scalar stays bf16 (weak)
  STATIC_REQUIRE(std::is_same_v<decltype(H * __float2half(3.0f))::value_type, __nv_bfloat16>);
  cufuse::tensor<std::int32_t, 2, space> I({3, 7});
  I.fill(3);
  STATIC_REQUIRE(std::is_same_v<decltype(I * __float2bfloat16(0.5f))::value_type, float>);
  cufuse::tensor<float, 2, space> Y({3, 7});
  poison(Y);
  Y = Xh;
  expect_all("X * half(2)", Y, [&](const idx_t<2>& c) { return X.v[c[0] * 7 + c[1]] * 2; });
  poison(Y);
  Y = I * __float2bfloat16(0.5f);
  expect_all("int * bf16(0.5)", Y, [](const idx_t<2>&) { return 1.5; });
}

TEST_CASE("brace construction works at every rank", "[shapes]") {
  const int n = 5;
  const std::size_t un = 6;
  cufuse::tensor<float, 1, space> v({n});
  cufuse::tensor<float, 1, space> w({un});
  cufuse::tensor<float, 2, space> m({n, 3});
  cufuse::tensor<float, 3, space> t({2, n, 3});
  cufuse::tensor<float, 6, space> six({1, 2, 1, 3, 1, 2});
  CHECK(v.shape() == cufuse::extents<1>(5));
  CHECK(w.size() == 6);
  CHECK(m.shape().to_string() == "[5, 3]");
  CHECK(t.size() == 30);
  CHECK(six.size() == 12);
}

TEST_CASE("slices: steps, negative indices, empty ranges, slices of slices", "[shapes][views]") {
  const index_t m = 9, n = 13;
  auto X = random_tensor<float, 2>({m, n});
  using cufuse::all;
  using cufuse::range;
  auto s = cufuse::slice(X.t, range(1, m, 2), range(-10, -1, 3)); // rows 1,3,5,7; cols 3,6,9
  CHECK(s.shape() == cufuse::extents<2>(4, 3));
  cufuse::tensor<float, 2, space> S(s.shape());
  poison(S);
  S = s * 2;
  expect_all("strided slice * 2", S,
             [&](const idx_t<2>& c) { return X.v[(1 + 2 * c[0]) * n + (3 + 3 * c[1])] * 2; });
  // an integer index drops the dimension; negative counts from the end
  auto r = cufuse::slice(X.t, -2, range(1, n));
  STATIC_REQUIRE(decltype(r)::rank == 1);
  cufuse::tensor<float, 1, space> R(r.shape());
  R = r;
  expect_all("row -2", R, [&](const idx_t<1>& c) { return X.v[(m - 2) * n + 1 + c[0]]; });
  // a slice of a slice
  auto ss = cufuse::slice(s, range(1, 4, 2), 2); // rows 3 and 7 of X, column 9
  cufuse::tensor<float, 1, space> SS(ss.shape());
  SS = ss + 0.0f;
  expect_all("slice of slice", SS, [&](const idx_t<1>& c) { return X.v[(3 + 4 * c[0]) * n + 9]; });
  // empty ranges are size-0 views; assigning to them does nothing
  auto e = cufuse::slice(X.t, range(4, 4), all);
  CHECK(e.size() == 0);
  CHECK(cufuse::slice(X.t, range(5, 2), all).size() == 0);
  CHECK_NOTHROW(e = 1.0f);
  // out-of-range bounds name the dimension, the bound and the extent
  CHECK_THROWS_WITH(cufuse::slice(X.t, all, range(0, 14)), Catch::Contains("range end 14") &&
                                                               Catch::Contains("dimension 1") &&
                                                               Catch::Contains("extent 13"));
  CHECK_THROWS_WITH(cufuse::slice(X.t, 9), Catch::Contains("index 9") &&
                                               Catch::Contains("dimension 0") &&
                                               Catch::Contains("extent 9"));
  CHECK_THROWS_AS(cufuse::slice(X.t, -10), cufuse::shape_error);
  CHECK_THROWS_AS(cufuse::slice(X.t, range(-10, 2)), cufuse::shape_error);
  CHECK_THROWS_WITH(cufuse::slice(X.t, range(0, 4, 0)), Catch::Contains("step"));
}

TEST_CASE("assignment into slices writes exactly the viewed elements", "[shapes][views]") {
  for (index_t n : {index_t(3), index_t(1000), index_t(4097)}) {
    const index_t m = 6;
    auto X = random_tensor<float, 2>({m, n});
    auto B = random_tensor<float, 1>(cufuse::extents<1>((n + 1) / 2));
    using cufuse::range;
    cufuse::slice(X.t, range(0, 4), cufuse::all) = 0.0f;
    auto odd = cufuse::slice(X.t, range(1, m, 2), range(0, n, 2));
    odd = odd * 3 + B.t; // same-index aliasing on a strided view, plus a broadcast row
    expect_all("slice assignment", X.t, [&](const idx_t<2>& c) {
      double x = c[0] < 4 ? 0.0 : X.v[c[0] * n + c[1]];
      if (c[0] % 2 == 1 && c[1] % 2 == 0) {
        x = x * 3 + B.v[c[1] / 2];
      }
      return x;
    });
  }
}

TEST_CASE("transpose and permute of rank 2 to 5, as operands and destinations", "[shapes][views]") {
  // rank 2, square and not, odd extents: also the shared-memory tile path on the GPU
  for (auto [m, n] : {std::pair<index_t, index_t>{33, 47}, {64, 64}, {1, 9}, {1000, 3}}) {
    auto X = random_tensor<float, 2>({m, n});
    cufuse::tensor<float, 2, space> T({n, m});
    poison(T);
    T = cufuse::transpose(X.t);
    expect_all("transpose", T, [&](const idx_t<2>& c) { return X.v[c[1] * n + c[0]]; });
    poison(T);
    cufuse::transpose(T) = X.t * 2; // a transposed destination
    expect_all("transposed destination", T,
               [&](const idx_t<2>& c) { return X.v[c[1] * n + c[0]] * 2; });
  }
  // rank 3: permute + a contiguous operand, bf16
  {
    const index_t a = 3, b = 40, c = 37;
    auto P = random_tensor<__nv_bfloat16, 3>({a, b, c});
    auto Z = random_tensor<__nv_bfloat16, 3>({a, c, b});
    cufuse::tensor<__nv_bfloat16, 3, space> Y({a, c, b});
    poison(Y);
    Y = cufuse::permute(P.t, {0, 2, 1}) + Z.t;
    expect_all("permute(P, {0,2,1}) + Z", Y, [&](const idx_t<3>& i) {
      return P.v[(i[0] * b + i[2]) * c + i[1]] + Z.v[(i[0] * c + i[1]) * b + i[2]];
    });
    // the destination is the contiguous operand (same-index aliasing): still one direct kernel,
    // whose steps read Z before their stores
    Z.t = cufuse::permute(P.t, {0, 2, 1}) + Z.t;
    expect_all("Z = permute(P, {0,2,1}) + Z", Z.t, [&](const idx_t<3>& i) {
      return P.v[(i[0] * b + i[2]) * c + i[1]] + Z.v[(i[0] * c + i[1]) * b + i[2]];
    });
    cufuse::tensor<__nv_bfloat16, 3, space> W({c, a, b});
    poison(W);
    W = cufuse::permute(P.t, {2, 0, 1});
    expect_all("permute {2,0,1}", W,
               [&](const idx_t<3>& i) { return P.v[(i[1] * b + i[2]) * c + i[0]]; });
  }
  // ranks 4 and 5: every dimension moves; transpose(x, d0, d1) of two inner ones
  {
    auto Q = random_tensor<float, 4>({2, 3, 4, 5});
    cufuse::tensor<float, 4, space> Y({5, 3, 2, 4});
    poison(Y);
    Y = cufuse::permute(Q.t, {3, 1, 0, 2}) * 1.5f;
    expect_all("permute rank 4", Y, [&](const idx_t<4>& i) {
      return Q.v[((i[2] * 3 + i[1]) * 4 + i[3]) * 5 + i[0]] * 1.5;
    });
    auto F = random_tensor<std::int32_t, 5>({2, 3, 2, 4, 3});
    cufuse::tensor<std::int32_t, 5, space> G({2, 4, 2, 3, 3});
    poison(G);
    G = cufuse::transpose(F.t, 1, -2) - 1;
    expect_all("transpose(F, 1, -2)", G, [&](const idx_t<5>& i) {
      return F.v[(((i[0] * 3 + i[3]) * 2 + i[2]) * 4 + i[1]) * 3 + i[4]] - 1;
    });
  }
  cufuse::tensor<float, 3, space> A({2, 3, 4});
  CHECK_THROWS_WITH(cufuse::permute(A, {0, 0, 1}), Catch::Contains("not a permutation"));
  CHECK_THROWS_AS(cufuse::permute(A, {0, 3, 1}), cufuse::shape_error);
  CHECK_THROWS_AS(cufuse::transpose(A, 0, 3), cufuse::shape_error);
}

TEST_CASE("reshape of contiguous views, refusal of strided ones; unsqueeze, squeeze",
          "[shapes][views]") {
  const index_t m = 6, n = 8;
  auto X = random_tensor<float, 2>({m, n});
  auto q = cufuse::reshape(X.t, {m, n / 4, index_t(4)});
  STATIC_REQUIRE(decltype(q)::rank == 3);
  CHECK(q.shape() == cufuse::extents<3>(m, n / 4, 4));
  cufuse::tensor<float, 3, space> Q(q.shape());
  Q = q + 1;
  expect_all("reshape", Q, [&](const idx_t<3>& i) { return X.v[i[0] * n + i[1] * 4 + i[2]] + 1; });
  CHECK(cufuse::reshape(X.t, {-1}).shape() == cufuse::extents<1>(m * n));
  CHECK(cufuse::reshape(X.t, {2, -1, 4}).shape() == cufuse::extents<3>(2, 6, 4));
  CHECK_THROWS_WITH(cufuse::reshape(cufuse::transpose(X.t), {m * n}),
                    Catch::Contains("not contiguous"));
  CHECK_THROWS_WITH(cufuse::reshape(X.t, {5, 9}),
                    Catch::Contains("[6, 8]") && Catch::Contains("[5, 9]"));
  // a slice of whole rows is contiguous, and reshapes
  CHECK_NOTHROW(cufuse::reshape(cufuse::slice(X.t, cufuse::range(2, 4)), {2 * n}));
  auto bias = random_tensor<float, 1>(cufuse::extents<1>(n));
  auto u = cufuse::unsqueeze(bias.t, 0);
  CHECK(u.shape() == cufuse::extents<2>(1, n));
  auto uc = cufuse::unsqueeze(bias.t, -1);
  CHECK(uc.shape() == cufuse::extents<2>(n, 1));
  cufuse::tensor<float, 2, space> outer({n, n});
  poison(outer);
  outer = u * uc; // [1, n] * [n, 1]
  expect_all("outer product by broadcast", outer,
             [&](const idx_t<2>& c) { return bias.v[c[1]] * bias.v[c[0]]; });
  CHECK(cufuse::squeeze(u, 0).shape() == cufuse::extents<1>(n));
  CHECK_THROWS_WITH(cufuse::squeeze(u, 1), Catch::Contains("not 1"));
  CHECK_THROWS_AS(cufuse::unsqueeze(bias.t, 3), cufuse::shape_error);
}

TEST_CASE("aliasing: a destination read at other elements goes through a temporary",
          "[shapes][alias]") {
  using cufuse::all;
  using cufuse::range;
  for (index_t n : {index_t(1), index_t(5), index_t(1000)}) {
    const index_t m = 37;
    auto X = random_tensor<float, 2>({m, n});
    // shifted self-slice: X[1:] = X[:-1] + 1 must read the old rows
    cufuse::slice(X.t, range(1, m), all) = cufuse::slice(X.t, range(0, m - 1), all) + 1;
    expect_all("X[1:] = X[:-1] + 1", X.t, [&](const idx_t<2>& c) {
      return c[0] == 0 ? X.v[c[1]] : X.v[(c[0] - 1) * n + c[1]] + 1;
    });
  }
  for (index_t n : {index_t(2), index_t(33), index_t(100)}) {
    auto S = random_tensor<float, 2>({n, n});
    S.t = cufuse::transpose(S.t) * 2 + S.t; // in-place transpose, and same-index reads
    expect_all("S = S^T * 2 + S", S.t,
               [&](const idx_t<2>& c) { return S.v[c[1] * n + c[0]] * 2 + S.v[c[0] * n + c[1]]; });
  }
  // overlapping slices of a 1-D tensor, both directions
  auto V = random_tensor<std::int32_t, 1>(cufuse::extents<1>(100), -1000, 1000);
  cufuse::slice(V.t, range(0, 90)) = cufuse::slice(V.t, range(10, 100)) * 2;
  expect_all("V[:90] = V[10:] * 2", V.t,
             [&](const idx_t<1>& c) { return c[0] < 90 ? V.v[c[0] + 10] * 2 : V.v[c[0]]; });
  // a repeated row read while every row is written
  auto W = random_tensor<float, 2>({5, 7});
  W.t = W.t - cufuse::slice(W.t, range(2, 3), all);
  expect_all("W = W - W[2:3]", W.t,
             [&](const idx_t<2>& c) { return W.v[c[0] * 7 + c[1]] - W.v[2 * 7 + c[1]]; });
  // a view that repeats elements cannot be written
  cufuse::tensor<float, 1, space> row(7);
  const cufuse::tensor_view<float, 2, space> rep(row.data(), {5, 7}, cufuse::strides<2>{{0, 1}});
  CHECK_THROWS_WITH(rep = 1.0f, Catch::Contains("repeats elements"));
}

TEST_CASE("offsets that defeat 16-byte alignment, odd extents, broadcasts", "[shapes]") {
  for (index_t n : {index_t(1), index_t(3), index_t(1000), index_t(4097)}) {
    const index_t m = 5;
    auto big = random_tensor<__half, 1>(cufuse::extents<1>(m * n + 3));
    auto bias = random_tensor<float, 1>(cufuse::extents<1>(n + 1));
    cufuse::tensor<__half, 1, space> out(m * n + 3);
    poison(out);
    for (index_t off : {index_t(0), index_t(1), index_t(3)}) {
      auto src = cufuse::reshape(cufuse::slice(big.t, cufuse::range(off, off + m * n)), {m, n});
      auto b = cufuse::slice(bias.t, cufuse::range(1, n + 1));
      auto dst = cufuse::reshape(cufuse::slice(out, cufuse::range(off, off + m * n)), {m, n});
      dst = src * b;
      const auto got = values(out);
      index_t bad = 0;
      for (index_t i = 0; i < m; ++i) {
        for (index_t j = 0; j < n; ++j) {
          const double ref = big.v[off + i * n + j] * bias.v[1 + j];
          bad += !cft::close(cufuse::detail::convert<__half>(got[off + i * n + j]), ref);
        }
      }
      INFO("n=" << n << " offset " << off);
      CHECK(bad == 0);
    }
  }
}

namespace {
/// Y = S2 * col + M - bias + S3 with S2 a step-2 slice, S3 a step-3 slice starting at 1, M a
/// slice one element into each row (misaligned), col [m, 1] and bias [n]: on the GPU the
/// destination's vectors are written whole and these operands gathered lane by lane where n
/// allows vectors (a multiple of the vector, or one row), element by element otherwise. Then the
/// same expression into a step-2 slice of a wider tensor (a destination no vector can write),
/// whose other elements must keep their values.
template <class T>
void gathered_operands(index_t m, index_t n) {
  using cufuse::all;
  using cufuse::range;
  // ranges that keep uint8 results in [0, 18]
  auto X2 = random_tensor<T, 2>({m, 2 * n}, 0, 3);
  auto X3 = random_tensor<T, 2>({m, 3 * n + 1}, 0, 3);
  auto XM = random_tensor<T, 2>({m, n + 1}, 3, 6);
  auto col = random_tensor<T, 2>({m, index_t(1)}, 0, 3);
  auto bias = random_tensor<T, 1>(cufuse::extents<1>(n), 0, 3);
  auto s2 = cufuse::slice(X2.t, all, range(0, 2 * n, 2));
  auto s3 = cufuse::slice(X3.t, all, range(1, 3 * n + 1, 3));
  auto sm = cufuse::slice(XM.t, all, range(1, n + 1));
  auto ref = [&](const idx_t<2>& c) {
    const index_t i = c[0], j = c[1];
    return X2.v[i * 2 * n + 2 * j] * col.v[i] + XM.v[i * (n + 1) + 1 + j] - bias.v[j] +
           X3.v[i * (3 * n + 1) + 1 + 3 * j];
  };
  const std::string what =
      "S2 * col + M - bias + S3, [" + std::to_string(m) + ", " + std::to_string(n) + "]";
  cufuse::tensor<T, 2, space> Y({m, n});
  poison(Y);
  Y = s2 * col.t + sm - bias.t + s3;
  expect_all(what, Y, ref);
  auto W = random_tensor<T, 2>({m, 2 * n + 1});
  auto dst = cufuse::slice(W.t, all, range(1, 2 * n + 1, 2));
  dst = s2 * col.t + sm - bias.t + s3;
  expect_all(what + " into a step-2 slice", W.t, [&](const idx_t<2>& c) {
    return c[1] % 2 == 1 ? ref({c[0], c[1] / 2}) : W.v[c[0] * (2 * n + 1) + c[1]];
  });
}
} // namespace

TEST_CASE("strided and misaligned operands into vector-aligned destinations", "[shapes][views]") {
  // {m, n}: n a multiple of 16 (every element size's vector), one row with a tail, odd n
  const std::pair<index_t, index_t> shapes[] = {{37, 96}, {1, 1003}, {5, 4097}, {3, 16}, {2, 1}};
  for (auto [m, n] : shapes) {
    gathered_operands<float>(m, n);
    gathered_operands<__nv_bfloat16>(m, n);
    gathered_operands<std::uint8_t>(m, n);
  }
  // rank 1: neighbours one element apart (a misaligned operand) and a step-3 slice
  for (index_t n : {index_t(1), index_t(7), index_t(1000), index_t(4097)}) {
    auto y = random_tensor<float, 1>(cufuse::extents<1>(n + 1), 0, 3);
    auto z = random_tensor<float, 1>(cufuse::extents<1>(3 * n), 0, 3);
    cufuse::tensor<float, 1, space> d(n);
    poison(d);
    d = cufuse::slice(y.t, cufuse::range(1, n + 1)) * 2 - cufuse::slice(y.t, cufuse::range(0, n)) +
        cufuse::slice(z.t, cufuse::range(0, 3 * n, 3));
    expect_all("rank-1 neighbours and a step-3 slice", d,
               [&](const idx_t<1>& c) { return y.v[c[0] + 1] * 2 - y.v[c[0]] + z.v[3 * c[0]]; });
    auto h = random_tensor<__nv_bfloat16, 1>(cufuse::extents<1>(n + 1));
    cufuse::tensor<__nv_bfloat16, 1, space> e(n);
    poison(e);
    e = cufuse::slice(h.t, cufuse::range(1, n + 1)) - cufuse::slice(h.t, cufuse::range(0, n));
    expect_all("rank-1 bf16 differences", e,
               [&](const idx_t<1>& c) { return h.v[c[0] + 1] - h.v[c[0]]; });
  }
  // rank 3, the gathered operand a step-2 slice of the middle and the innermost dimensions
  auto T = random_tensor<__half, 3>({4, 10, 64});
  auto B = random_tensor<__half, 3>({4, 5, 32});
  cufuse::tensor<__half, 3, space> Y({4, 5, 32});
  poison(Y);
  using cufuse::all;
  using cufuse::range;
  Y = cufuse::slice(T.t, all, range(0, 10, 2), range(1, 64, 2)) * B.t;
  expect_all("rank-3 strided half", Y, [&](const idx_t<3>& c) {
    return T.v[(c[0] * 10 + 2 * c[1]) * 64 + 1 + 2 * c[2]] * B.v[(c[0] * 5 + c[1]) * 32 + c[2]];
  });
}

TEST_CASE("views of views, host and device memory, and user-made strided views",
          "[shapes][views]") {
  cufuse::tensor<float, 1, space> storage(64);
  std::vector<float> init(64);
  for (int i = 0; i < 64; ++i) {
    init[i] = float(i);
  }
  storage.upload(init);
  auto make = [&](float* p) {
    if constexpr (std::is_same_v<space, cufuse::device_space>) {
      return cufuse::view(p, {4, 5}, {10, 2}); // every other element of 4 rows of 10
    } else {
      return cufuse::host_view(p, {4, 5}, {10, 2});
    }
  };
  auto v = make(storage.data() + 1);
  CHECK(!v.is_contiguous());
  auto t = cufuse::transpose(cufuse::slice(v, cufuse::range(1, 4)));
  CHECK(t.shape() == cufuse::extents<2>(5, 3));
  cufuse::tensor<float, 2, space> T({5, 3});
  T = t;
  expect_all("view of a view of a user view", T,
             [](const idx_t<2>& c) { return 1.0 + (1 + c[1]) * 10 + c[0] * 2; });
}

TEST_CASE("layout changes of 1- and 2-byte elements, mixed operand sizes, misaligned views",
          "[shapes][views]") {
  // extents that are multiples of 4 (bf16) or 8 (uint8): the tiled kernel moves 8 bytes per
  // thread and access on the GPU; 130 is not, so the scalar tiles run it
  for (auto [b, c] : {std::pair<index_t, index_t>{132, 100}, {130, 96}}) {
    const index_t a = 2;
    auto P = random_tensor<__nv_bfloat16, 3>({a, b, c});
    auto Z = random_tensor<float, 3>({a, c, b}); // a wider operand read along the innermost
    auto s = random_tensor<__nv_bfloat16, 1>(cufuse::extents<1>(b));
    cufuse::tensor<__nv_bfloat16, 3, space> Y({a, c, b});
    poison(Y);
    Y = cufuse::permute(P.t, {0, 2, 1}) * s.t + Z.t;
    expect_all("permute(P) * s + Z (bf16, float)", Y, [&](const idx_t<3>& i) {
      return P.v[(i[0] * b + i[2]) * c + i[1]] * s.v[i[2]] + Z.v[(i[0] * c + i[1]) * b + i[2]];
    });
  }
  for (index_t n : {index_t(64), index_t(100), index_t(102), index_t(104)}) {
    auto U = random_tensor<std::uint8_t, 2>({index_t(40), n}, 0, 200);
    cufuse::tensor<std::uint8_t, 2, space> T({n, index_t(40)});
    poison(T);
    T = cufuse::transpose(U.t) + std::uint8_t(1);
    expect_all("uint8 transpose", T, [&](const idx_t<2>& i) { return U.v[i[1] * n + i[0]] + 1; });
    for (index_t r : {index_t(66), index_t(68)}) {
      auto H = random_tensor<__half, 2>({r, n});
      cufuse::tensor<__half, 2, space> HT({n, r});
      poison(HT);
      HT = cufuse::transpose(H.t);
      expect_all("half transpose", HT, [&](const idx_t<2>& i) { return H.v[i[1] * n + i[0]]; });
    }
  }
  // a view one element in: the vector accesses would be misaligned, so the scalar tiles run
  auto big = random_tensor<__nv_bfloat16, 1>(cufuse::extents<1>(64 * 64 + 1));
  auto src = cufuse::reshape(cufuse::slice(big.t, cufuse::range(1, 64 * 64 + 1)), {64, 64});
  cufuse::tensor<__nv_bfloat16, 2, space> D({64, 64});
  poison(D);
  D = cufuse::transpose(src);
  expect_all("misaligned bf16 transpose", D,
             [&](const idx_t<2>& i) { return big.v[1 + i[1] * 64 + i[0]]; });
}

TEST_CASE("rank 6: broadcasting and a permute at the largest tested rank", "[shapes]") {
  auto A = random_tensor<float, 6>({2, 3, 1, 4, 2, 5});
  auto B = random_tensor<float, 5>({3, 3, 4, 1, 5}); // aligns with A's last five dimensions
  cufuse::tensor<float, 6, space> Y({2, 3, 3, 4, 2, 5});
  poison(Y);
  Y = A.t * B.t - 1.0f; // both operands repeat along some dimension
  expect_all("rank 6 broadcast", Y, [&](const idx_t<6>& i) {
    return A.v[at(i, A.t.shape())] * B.v[at(i, B.t.shape())] - 1.0;
  });
  cufuse::tensor<float, 6, space> Z({5, 2, 4, 3, 3, 2});
  poison(Z);
  Z = cufuse::permute(Y, {5, 4, 3, 2, 1, 0}) + 1.0f;
  const auto y = values(Y);
  expect_all("rank 6 permute", Z, [&](const idx_t<6>& i) {
    const idx_t<6> j{i[5], i[4], i[3], i[2], i[1], i[0]};
    return y[at(j, Y.shape())] + 1.0;
  });
}
