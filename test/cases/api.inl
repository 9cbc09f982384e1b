// Tensor API, views, errors, aliasing, map with lambdas and functors, multi-dimensional shapes.
// Included after `using space = ...`.

namespace {
std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = u(rng);
  }
  return v;
}

struct saxpy_functor {
  float a;
  CUFUSE_HOST_DEVICE float operator()(float x, float y) const { return a * x + y; }
};
} // namespace

TEST_CASE("the quickstart expression on a 2-D tensor", "[api]") {
  const int rows = 37, cols = 129;
  const std::size_t n = std::size_t(rows) * cols;
  cufuse::tensor<float, 2, space> A({rows, cols}), B({rows, cols}), C({rows, cols}),
      D({rows, cols}), E({rows, cols}), F({rows, cols});
  const auto b = random_floats(n, cft::next_seed()), c = random_floats(n, cft::next_seed()),
             d = random_floats(n, cft::next_seed()), e = random_floats(n, cft::next_seed()),
             f = random_floats(n, cft::next_seed());
  B.upload(b);
  C.upload(c);
  D.upload(d);
  E.upload(e);
  F.upload(f);
  A.fill(std::numeric_limits<float>::quiet_NaN());
  A = B + C * D + cufuse::sin(E) * F + 10.0f;
  const auto a = A.download();
  REQUIRE(a.size() == n);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double ref = double(b[i]) + double(c[i]) * d[i] + std::sin(double(e[i])) * f[i] + 10.0;
    bad += !(std::fabs(a[i] - ref) <= 1e-5 * (1 + std::fabs(ref)));
  }
  CHECK(bad == 0);
  CHECK(A.shape() == cufuse::extents<2>(rows, cols));
  CHECK(A.shape().to_string() == "[37, 129]");
  CHECK(A.size() == rows * cols);
}

TEST_CASE("rank 3 tensors and views evaluate every element", "[api]") {
  cufuse::tensor<double, 3, space> X({4, 5, 6}), Y({4, 5, 6});
  std::vector<double> x(120);
  for (int i = 0; i < 120; ++i) {
    x[i] = i * 0.5 - 7;
  }
  X.upload(x);
  Y = X * X - 3 * X;
  const auto y = Y.download();
  for (int i = 0; i < 120; ++i) {
    CHECK(y[i] == x[i] * x[i] - 3 * x[i]);
  }
}

TEST_CASE("shape mismatches throw shape_error naming both shapes", "[api][errors]") {
  cufuse::tensor<float, 2, space> A({3, 4}), B({4, 3}), C({3, 4});
  B.fill(1.0f);
  C.fill(1.0f);
  try {
    A = B + 1.0f;
    FAIL("no exception");
  } catch (const cufuse::shape_error& e) {
    const std::string m = e.what();
    CHECK(m.find("[4, 3]") != std::string::npos);
    CHECK(m.find("[3, 4]") != std::string::npos);
  }
  try {
    A = B + C;
    FAIL("no exception");
  } catch (const cufuse::shape_error& e) {
    const std::string m = e.what();
    CHECK(m.find("[4, 3]") != std::string::npos);
    CHECK(m.find("[3, 4]") != std::string::npos);
    CHECK(m.find("operator+") != std::string::npos);
  }
  CHECK_THROWS_AS(cufuse::where(A > 0, B, C), cufuse::shape_error);
  CHECK_THROWS_AS((cufuse::tensor<float, 1, space>(cufuse::extents<1>(-1))), cufuse::shape_error);
}

TEST_CASE("upload with the wrong element count throws, naming both sizes", "[api][errors]") {
  cufuse::tensor<float, 2, space> A({2, 3});
  try {
    A.upload(std::vector<float>(5));
    FAIL("no exception");
  } catch (const cufuse::shape_error& e) {
    const std::string m = e.what();
    CHECK(m.find("5 elements") != std::string::npos);
    CHECK(m.find("[2, 3]") != std::string::npos);
  }
}

TEST_CASE("a moved-from tensor throws on use", "[api][errors]") {
  cufuse::tensor<float, 1, space> A(16), B(16);
  A.fill(2.0f);
  cufuse::tensor<float, 1, space> M = std::move(A);
  CHECK(A.moved_from());
  CHECK(A.data() == nullptr);
  CHECK_THROWS_WITH(A.download(), Catch::Contains("moved-from"));
  CHECK_THROWS_WITH(B = A + 1.0f, Catch::Contains("moved-from"));
  CHECK_THROWS_WITH(A = B, Catch::Contains("moved-from"));
  CHECK_THROWS_WITH(A.fill(1), Catch::Contains("moved-from"));
  CHECK(M.download() == std::vector<float>(16, 2.0f));
  // assigning a new tensor by move makes it usable again
  A = cufuse::tensor<float, 1, space>(4);
  A.fill(3);
  CHECK(A.download() == std::vector<float>(4, 3.0f));
}

TEST_CASE("clone deep-copies; copy assignment copies elements", "[api]") {
  cufuse::tensor<std::int32_t, 1, space> A(1000), B(1000);
  std::vector<std::int32_t> a(1000);
  for (int i = 0; i < 1000; ++i) {
    a[i] = i * 3 - 500;
  }
  A.upload(a);
  auto C = A.clone();
  CHECK(C.data() != A.data());
  A.fill(0);
  CHECK(C.download() == a);
  B = C; // elementwise copy into B's storage
  CHECK(B.data() != C.data());
  CHECK(B.download() == a);
}

TEST_CASE("size 0 assigns nothing and raises nothing", "[api]") {
  cufuse::tensor<float, 2, space> A({0, 5}), B({0, 5});
  CHECK(A.size() == 0);
  CHECK_NOTHROW(A = B * 2 + cufuse::exp(B));
  CHECK(A.download().empty());
  cufuse::tensor<float, 1, space> empty;
  CHECK(empty.size() == 0);
  CHECK_NOTHROW(empty.fill(1.0f));
}

TEST_CASE("same-index aliasing: A = A * 2 + B", "[api]") {
  for (cufuse::index_t n : cft::sizes()) {
    cufuse::tensor<float, 1, space> A(n), B(n);
    const auto a = random_floats(std::size_t(n), cft::next_seed());
    const auto b = random_floats(std::size_t(n), cft::next_seed());
    A.upload(a);
    B.upload(b);
    A = A * 2 + B;
    A = cufuse::sqrt(cufuse::abs(A)) + A;
    const auto got = A.download();
    std::size_t bad = 0;
    for (std::size_t i = 0; i < std::size_t(n); ++i) {
      const double t = 2.0 * a[i] + b[i];
      const double ref = std::sqrt(std::fabs(t)) + t;
      bad += !(std::fabs(got[i] - ref) <= 1e-5 * (1 + std::fabs(ref)));
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("views wrap memory the caller owns; assigning a view writes elements", "[api]") {
  cufuse::tensor<float, 1, space> storage(12);
  storage.fill(0.0f);
  auto make_view = [](float* p, cufuse::index_t r, cufuse::index_t c) {
    if constexpr (std::is_same_v<space, cufuse::device_space>) {
      return cufuse::view(p, {r, c});
    } else {
      return cufuse::host_view(p, {r, c});
    }
  };
  auto top = make_view(storage.data(), 2, 3);
  auto bottom = make_view(storage.data() + 6, 2, 3);
  top.fill(1.5f);
  bottom = top * 2 + 1; // 4
  top = bottom;         // elementwise copy, not a rebinding
  CHECK(top.data() == storage.data());
  CHECK(storage.download() == std::vector<float>(12, 4.0f));
  // an offset (misaligned) view takes the scalar path and must give the same answer
  auto odd = make_view(storage.data() + 1, 1, 11);
  odd = odd + 1.0f;
  std::vector<float> expect(12, 5.0f);
  expect[0] = 4.0f;
  CHECK(storage.download() == expect);
  CHECK_THROWS_AS(make_view(nullptr, 2, 2), cufuse::error);
}

TEST_CASE("map takes functors and __host__ __device__ lambdas", "[api][map]") {
  const cufuse::index_t n = 5000;
  cufuse::tensor<float, 1, space> x(n), y(n), r(n);
  const auto xs = random_floats(n, cft::next_seed()), ys = random_floats(n, cft::next_seed());
  x.upload(xs);
  y.upload(ys);
  r = cufuse::map(saxpy_functor{3.0f}, x, y);
  auto got = r.download();
  for (cufuse::index_t i = 0; i < n; ++i) {
    // the device may contract 3x + y into one fma: allow an ulp of the terms, not of the result
    const double ref = 3.0 * xs[i] + ys[i];
    REQUIRE(std::fabs(got[i] - ref) <= 2.4e-7 * (3.0 * std::fabs(xs[i]) + std::fabs(ys[i])));
  }
  const float k = 0.25f;
  r = cufuse::map([k] __host__ __device__(float a, float b) { return a > b ? a * k : b; }, x,
                  y * 2) +
      1;
  got = r.download();
  for (cufuse::index_t i = 0; i < n; ++i) {
    const float b2 = ys[i] * 2;
    REQUIRE(got[i] == (xs[i] > b2 ? xs[i] * k : b2) + 1);
  }
  // the functor's return type is the element type; map<R> names it explicitly
  cufuse::tensor<std::int32_t, 1, space> q(n);
  q = cufuse::map([] __host__ __device__(float a) { return static_cast<long long>(a * 10); }, x);
  const auto qs = q.download();
  for (cufuse::index_t i = 0; i < n; ++i) {
    REQUIRE(qs[i] == static_cast<std::int32_t>(static_cast<long long>(xs[i] * 10)));
  }
  r = cufuse::map<double>([] __host__ __device__(float a) { return a * 0.5; }, x);
  got = r.download();
  for (cufuse::index_t i = 0; i < n; ++i) {
    REQUIRE(got[i] == float(double(xs[i]) * 0.5));
  }
  // half operands arrive as float
  cufuse::tensor<__half, 1, space> h(n);
  h = x;
  r = cufuse::map([] __host__ __device__(float a) { return a * a; }, h);
  got = r.download();
  const auto hs = h.download();
  for (cufuse::index_t i = 0; i < n; ++i) {
    const float hv = __half2float(hs[i]);
    REQUIRE(got[i] == hv * hv);
  }
}

TEST_CASE("bool tensors upload and download", "[api]") {
  cufuse::tensor<bool, 1, space> b(7);
  const std::vector<bool> v = {true, false, true, true, false, false, true};
  b.upload(v);
  CHECK(b.download() == v);
  cufuse::tensor<bool, 1, space> nb(7);
  nb = !b;
  std::vector<bool> inv(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    inv[i] = !v[i];
  }
  CHECK(nb.download() == inv);
}

TEST_CASE("expressions are trivially copyable values with element access", "[api]") {
  cufuse::tensor<float, 1, space> a(8), b(8);
  auto e = a * 2.0f + cufuse::exp(b);
  STATIC_REQUIRE(std::is_trivially_copyable_v<decltype(e)>);
  STATIC_REQUIRE(cufuse::expression<decltype(e)>);
  STATIC_REQUIRE(std::is_same_v<decltype(e)::value_type, float>);
  CHECK(e.shape() == cufuse::extents<1>(8));
  STATIC_REQUIRE(decltype(e)::rank == 1);
}

TEST_CASE("stream_guard sets and restores the thread's current stream", "[api]") {
  CHECK(cufuse::current_stream() == nullptr);
  {
    auto fake = reinterpret_cast<cudaStream_t>(0x10);
    cufuse::stream_guard g(fake);
    CHECK(cufuse::current_stream() == fake);
  }
  CHECK(cufuse::current_stream() == nullptr);
}

TEST_CASE("broadcast_to: bias rows, columns and scalars in one kernel", "[api][broadcast]") {
  const int rows = 37, cols = 1029;
  cufuse::tensor<float, 2, space> X({rows, cols}), Y({rows, cols});
  cufuse::tensor<float, 1, space> bias(cols);
  cufuse::tensor<__half, 2, space> col({rows, 1});
  const auto x = random_floats(std::size_t(rows) * cols, cft::next_seed());
  const auto b = random_floats(cols, cft::next_seed());
  const auto c = random_floats(rows, cft::next_seed());
  X.upload(x);
  bias.upload(b);
  std::vector<__half> ch(rows);
  for (int r = 0; r < rows; ++r) {
    ch[r] = __float2half(c[r]);
  }
  col.upload(ch);
  Y.fill(std::numeric_limits<float>::quiet_NaN());
  Y = cufuse::relu(X + cufuse::broadcast_to(bias, X.shape())) *
      cufuse::broadcast_to(col, X.shape());
  const auto y = Y.download();
  std::size_t bad = 0;
  for (int r = 0; r < rows; ++r) {
    for (int k = 0; k < cols; ++k) {
      const double t = double(x[r * cols + k]) + b[k];
      const double ref = (t < 0 ? 0.0 : t) * double(__half2float(ch[r]));
      bad += !(std::fabs(y[r * cols + k] - ref) <= 1e-5 * (1 + std::fabs(ref)));
    }
  }
  CHECK(bad == 0);
  // a rank-1 tensor of extent 1 repeats everywhere; the broadcast can also be the destination's
  // only operand
  cufuse::tensor<float, 1, space> one(1);
  one.fill(2.5f);
  Y = cufuse::broadcast_to(one, Y.shape());
  CHECK(Y.download() == std::vector<float>(std::size_t(rows) * cols, 2.5f));
  // mismatches name both shapes
  cufuse::tensor<float, 1, space> wrong(cols + 1);
  CHECK_THROWS_WITH(cufuse::broadcast_to(wrong, X.shape()),
                    Catch::Contains("[1030]") && Catch::Contains("[37, 1029]"));
}
