// Reductions: every reduction x dtype x axis form against double-precision loops, keepdim
// shapes, odd extents, NaN / Inf / ties, empty inputs, reductions inside maps (the row form and
// the materialized forms), softmax / log_softmax / layer_norm / rms_norm, item and rank-0
// destinations, axis errors. Included after `using space = ...`.

namespace {

using cufuse::index_t;

template <class T, int R>
struct rfilled {
  cufuse::tensor<T, R, space> t;
  std::vector<double> v;
};

template <class T, int R>
void rupload(cufuse::tensor<T, R, space>& t, const std::vector<T>& v) {
  if constexpr (std::is_same_v<T, bool>) {
    t.upload(std::vector<bool>(v.begin(), v.end()));
  } else {
    t.upload(v);
  }
}

template <class T, int R>
rfilled<T, R> rrandom(const cufuse::extents<R>& shape, double lo = -3, double hi = 3) {
  auto r = cft::make_random<T>(shape.size(), lo, hi, cft::next_seed());
  rfilled<T, R> f{cufuse::tensor<T, R, space>(shape), r.exact};
  rupload(f.t, r.stored);
  return f;
}

template <class T, int R>
rfilled<T, R> rfrom(const cufuse::extents<R>& shape, const std::vector<double>& v) {
  std::vector<T> s(v.size());
  rfilled<T, R> f{cufuse::tensor<T, R, space>(shape), {}};
  for (std::size_t i = 0; i < v.size(); ++i) {
    s[i] = cufuse::detail::convert<T>(v[i]);
    f.v.push_back(cft::to_double(s[i]));
  }
  rupload(f.t, s);
  return f;
}

template <class T, int R>
void rpoison(cufuse::tensor<T, R, space>& t) {
  std::vector<T> p(std::size_t(t.size()), cft::poison<T>(0));
  rupload(t, p);
}

template <class T, int R>
std::vector<double> rvalues(const cufuse::tensor<T, R, space>& t) {
  const auto got = t.download();
  std::vector<double> out(got.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    out[i] = cft::to_double(T(got[i]));
  }
  return out;
}

enum class rk { sum, prod, mean, var, stdev, amax, amin, argmax, argmin, norm, all, any, count, lse };

/// The double reference of one reduction of `x` (row-major values of `shape`) over the axes in
/// `mask`: returns the results row-major over the kept axes.
template <int R>
std::vector<double> ref_reduce(rk k, const std::vector<double>& x, const cufuse::extents<R>& shape,
                               unsigned mask, double correction = 1) {
  index_t outer = 1, inner = 1;
  for (int d = 0; d < R; ++d) {
    (((mask >> d) & 1u) ? inner : outer) *= shape[d];
  }
  std::vector<std::vector<double>> groups(static_cast<std::size_t>(outer));
  std::array<index_t, R> c{};
  for (index_t i = 0; i < shape.size(); ++i) {
    index_t o = 0;
    for (int d = 0; d < R; ++d) {
      if (!((mask >> d) & 1u)) {
        o = o * shape[d] + c[d];
      }
    }
    groups[std::size_t(o)].push_back(x[std::size_t(i)]); // reduced order: row-major
    for (int d = R - 1; d >= 0; --d) {
      if (++c[d] < shape[d]) {
        break;
      }
      c[d] = 0;
    }
  }
  std::vector<double> out;
  for (const auto& g : groups) {
    const double n = double(g.size());
    double r = 0;
    switch (k) {
    case rk::sum:
      for (double v : g) r += v;
      break;
    case rk::prod:
      r = 1;
      for (double v : g) r *= v;
      break;
    case rk::mean:
      for (double v : g) r += v;
      r /= n;
      break;
    case rk::var:
    case rk::stdev: {
      double m = 0;
      for (double v : g) m += v;
      m /= n;
      for (double v : g) r += (v - m) * (v - m);
      r = n == 0 ? NAN : r / std::max(n - correction, 0.0);
      if (k == rk::stdev) r = std::sqrt(r);
      break;
    }
    case rk::amax:
    case rk::amin:
      r = k == rk::amax ? -INFINITY : INFINITY;
      for (double v : g) {
        if (std::isnan(v)) { r = v; break; }
        r = k == rk::amax ? std::max(r, v) : std::min(r, v);
      }
      break;
    case rk::argmax:
    case rk::argmin: {
      std::size_t best = 0;
      for (std::size_t i = 1; i < g.size(); ++i) {
        if (std::isnan(g[best])) break;
        if (std::isnan(g[i]) || (k == rk::argmax ? g[i] > g[best] : g[i] < g[best])) best = i;
      }
      r = double(best);
      break;
    }
    case rk::norm:
      for (double v : g) r += v * v;
      r = std::sqrt(r);
      break;
    case rk::all:
      r = 1;
      for (double v : g) r = (r != 0 && v != 0) ? 1 : 0;
      break;
    case rk::any:
      for (double v : g) r = (r != 0 || v != 0) ? 1 : 0;
      break;
    case rk::count:
      for (double v : g) r += v != 0;
      break;
    case rk::lse: {
      double m = -INFINITY;
      for (double v : g) m = std::max(m, v);
      double s = 0;
      for (double v : g) s += std::exp(v - m);
      r = g.empty() ? -INFINITY : m + std::log(s);
      break;
    }
    }
    out.push_back(r);
  }
  return out;
}

/// Checks `got` (row-major results) against `ref` with the output type's tolerance, widened for
/// accumulated rounding by `slack` ulps of float per reduced element when the data are not whole
/// numbers.
template <class T>
void expect_values(const std::string& what, const std::vector<double>& got,
                   const std::vector<double>& ref) {
  REQUIRE(got.size() == ref.size());
  index_t bad = 0;
  std::string first;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const T g = cufuse::detail::convert<T>(got[i]);
    if (!cft::close(g, ref[i])) {
      if (bad++ == 0) {
        std::ostringstream s;
        s << what << " [" << cufuse::type_name<T>() << "]: result " << i << " got " << got[i]
          << " expected " << ref[i];
        first = s.str();
      }
    }
  }
  INFO(first);
  CHECK(bad == 0);
}

/// Runs one reduction in every axis form of a rank-3 operand and checks it.
template <class T, rk K, class Build>
void check_forms(const cufuse::extents<3>& shape, Build build) {
  using Res = typename decltype(build(std::declval<const cufuse::tensor<T, 3, space>&>()))::type;
  auto X = rrandom<T, 3>(shape);
  const std::string name = std::string(Res::name) + " over " + shape.to_string();
  auto run = [&](auto node, unsigned mask, const std::string& form) {
    using N = decltype(node);
    using V = typename N::value_type;
    cufuse::tensor<V, N::rank, space> out(node.shape());
    if (out.size() == 0) {
      return;
    }
    rpoison(out);
    out = node;
    expect_values<V>(name + " " + form, rvalues(out), ref_reduce(K, X.v, shape, mask));
  };
  auto f = build(X.t);
  run(f.all(), 7u, "(all)");
  run(f.axis(0), 1u, "(axis 0)");
  run(f.axis(1), 2u, "(axis 1)");
  run(f.axis(-1), 4u, "(axis -1)");
  run(f.keep(1), 2u, "(axis 1, keepdim)");
  run(f.keep(2), 4u, "(axis 2, keepdim)");
  if constexpr (requires { f.axes02(); }) {
    run(f.axes02(), 5u, "({0, 2})");
    run(f.axes02keep(), 5u, "({0, 2}, keepdim)");
  }
}

#define REDUCTION_FORMS_1(FN, RED)                                                                 \
  struct forms {                                                                                   \
    using type = cufuse::reducers::RED;                                                            \
    const std::remove_cvref_t<decltype(in)>& x;                                                    \
    auto all() const { return FN(x); }                                                             \
    auto axis(int a) const { return FN(x, a); }                                                    \
    auto keep(int a) const { return FN(x, a, cufuse::keepdim); }                                   \
  };
/// The forms of one reduction: all, one axis, keepdim, and (where PyTorch has it) a list.
#define REDUCTION_FORMS(FN, RED, WITH_LIST) REDUCTION_FORMS_##WITH_LIST(FN, RED)
#define REDUCTION_FORMS_true(FN, RED)                                                              \
  [](const auto& in) {                                                                              \
    REDUCTION_FORMS_1(FN, RED)                                                                     \
    struct listed : forms {                                                                        \
      auto axes02() const { return FN(this->x, {0, 2}); }                                          \
      auto axes02keep() const { return FN(this->x, {0, -1}, cufuse::keepdim); }                    \
    };                                                                                             \
    return listed{{in}};                                                                            \
  }
#define REDUCTION_FORMS_false(FN, RED)                                                             \
  [](const auto& in) {                                                                              \
    REDUCTION_FORMS_1(FN, RED)                                                                     \
    return forms{in};                                                                               \
  }

const std::vector<cufuse::extents<3>>& rshapes() {
  static const std::vector<cufuse::extents<3>> s = {
      {2, 3, 4}, {3, 1, 1000}, {1, 5, 4097}, {37, 129, 3}, {2, 1, 1}};
  return s;
}

} // namespace

// Part 1: every reducer, dtype and axis form; part 2: row functions, placements, tie/pack,
// overlaps. A suite compiles both parts (CUFUSE_REDUCE_PART unset) or one of them per
// translation unit, so that the two halves of the biggest instantiation set build in parallel.
#if !defined(CUFUSE_REDUCE_PART) || CUFUSE_REDUCE_PART == 1
TEST_CASE("sum, prod, amax, amin, count_nonzero, any, all: every axis form and integer dtype",
          "[reduce]") {
  cft::integer_valued_guard whole; // sums are exact, so a wrong element cannot hide
  cft::for_types<float, double, __nv_bfloat16, __half, std::int32_t>([]<class T>() {
    for (const auto& s : rshapes()) {
      check_forms<T, rk::sum>(s, REDUCTION_FORMS(cufuse::sum, sum, true));
      check_forms<T, rk::amax>(s, REDUCTION_FORMS(cufuse::amax, amax, true));
      check_forms<T, rk::amin>(s, REDUCTION_FORMS(cufuse::amin, amin, true));
      check_forms<T, rk::count>(s, REDUCTION_FORMS(cufuse::count_nonzero, count_nonzero, true));
      check_forms<T, rk::any>(s, REDUCTION_FORMS(cufuse::any, any, true));
      check_forms<T, rk::all>(s, REDUCTION_FORMS(cufuse::all, all, true));
    }
    // prod of small shapes (values stay exact)
    check_forms<T, rk::prod>({2, 3, 4}, REDUCTION_FORMS(cufuse::prod, prod, true));
  });
}

TEST_CASE("mean, var, std, norm, logsumexp: floating dtypes, every axis form", "[reduce]") {
  cft::for_types<float, double, __nv_bfloat16, __half>([]<class T>() {
    for (const auto& s : rshapes()) {
      check_forms<T, rk::mean>(s, REDUCTION_FORMS(cufuse::mean, mean, true));
      check_forms<T, rk::var>(s, REDUCTION_FORMS(cufuse::var, var, true));
      check_forms<T, rk::stdev>(s, REDUCTION_FORMS(cufuse::std, var, true));
      check_forms<T, rk::norm>(s, REDUCTION_FORMS(cufuse::norm, norm, true));
      check_forms<T, rk::lse>(s, REDUCTION_FORMS(cufuse::logsumexp, logsumexp, true));
    }
  });
}

TEST_CASE("argmax, argmin: none or one axis, int64, first index among ties", "[reduce]") {
  cft::integer_valued_guard whole; // few distinct values: many ties
  cft::for_types<float, __nv_bfloat16, std::int32_t, double>([]<class T>() {
    for (const auto& s : rshapes()) {
      check_forms<T, rk::argmax>(s, REDUCTION_FORMS(cufuse::argmax, argmax, false));
      check_forms<T, rk::argmin>(s, REDUCTION_FORMS(cufuse::argmin, argmin, false));
    }
  });
}

TEST_CASE("reductions of maps: the map runs inside; bool input; var correction", "[reduce]") {
  const index_t m = 9, n = 1000;
  auto X = rrandom<float, 2>({m, n});
  auto Y = rrandom<float, 2>({m, n});
  cufuse::tensor<float, 1, space> r({m});
  rpoison(r);
  r = cufuse::amax(X.t * 2, -1);
  std::vector<double> x2(X.v.size()), xy(X.v.size()), pos(X.v.size());
  for (std::size_t i = 0; i < X.v.size(); ++i) {
    x2[i] = X.v[i] * 2;
    xy[i] = X.v[i] * Y.v[i];
    pos[i] = X.v[i] > 0;
  }
  expect_values<float>("amax(X * 2, -1)", rvalues(r), ref_reduce(rk::amax, x2, X.t.shape(), 2u));
  // count of a comparison (bool input), sum of bool gives int64
  cufuse::tensor<std::int64_t, 1, space> c({n});
  rpoison(c);
  c = cufuse::sum(X.t > 0, 0);
  expect_values<std::int64_t>("sum(X > 0, 0)", rvalues(c), ref_reduce(rk::sum, pos, X.t.shape(), 1u));
  // dot and the full sum of a product, rank 0
  cufuse::tensor<float, 0, space> d;
  d = cufuse::dot(X.t, Y.t);
  const double ref = ref_reduce(rk::sum, xy, X.t.shape(), 3u)[0];
  CHECK(std::fabs(double(rvalues(d)[0]) - ref) <= 1e-5 * 3 * 3 * double(m * n));
  CHECK(std::fabs(double(cufuse::item(cufuse::sum(X.t * Y.t))) - ref) <= 1e-5 * 9 * double(m * n));
  // var with correction 0 and 2
  for (double corr : {0.0, 2.0}) {
    cufuse::tensor<float, 1, space> v({m});
    rpoison(v);
    v = cufuse::var(X.t, 1, cufuse::correction{corr});
    expect_values<float>("var(X, 1, correction)", rvalues(v),
                         ref_reduce(rk::var, X.v, X.t.shape(), 2u, corr));
  }
}

TEST_CASE("reductions: NaN propagates in amax/amin and wins argmax; Inf; ties", "[reduce]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
  cft::for_types<float, __nv_bfloat16, double>([&]<class T>() {
    auto X = rfrom<T, 2>({3, 5}, {1, nan, 7, 7, nan,   // NaN wins; the first NaN
                                  -inf, 2, inf, inf, 0, // ties of +inf: the first
                                  3, 3, 3, 3, 3});      // all equal: index 0
    cufuse::tensor<T, 1, space> mx({3});
    cufuse::tensor<std::int64_t, 1, space> am({3}), an({3});
    rpoison(mx);
    mx = cufuse::amax(X.t, 1);
    const auto got = rvalues(mx);
    CHECK(std::isnan(got[0]));
    CHECK(got[1] == inf);
    CHECK(got[2] == 3);
    am = cufuse::argmax(X.t, 1);
    CHECK(rvalues(am) == std::vector<double>{1, 2, 0});
    an = cufuse::argmin(X.t, 1);
    CHECK(rvalues(an) == std::vector<double>{1, 0, 0});
    cufuse::tensor<T, 1, space> sm({3});
    sm = cufuse::sum(X.t, 1);
    const auto s = rvalues(sm);
    CHECK(std::isnan(s[0]));
    CHECK(std::isnan(s[1])); // inf + -inf
    CHECK(s[2] == 15);
    // the flattened index of a full argmax
    CHECK(cufuse::item(cufuse::argmax(X.t)) == 1);
  });
}

TEST_CASE("reductions: empty inputs, keepdim shapes, axis errors", "[reduce]") {
  auto E = rrandom<float, 2>({0, 5});
  cufuse::tensor<float, 1, space> s5({5}), m5({5}), p5({5});
  s5 = cufuse::sum(E.t, 0);
  p5 = cufuse::prod(E.t, 0);
  m5 = cufuse::mean(E.t, 0);
  for (double v : rvalues(s5)) CHECK(v == 0);
  for (double v : rvalues(p5)) CHECK(v == 1);
  for (double v : rvalues(m5)) CHECK(std::isnan(v));
  cufuse::tensor<float, 1, space> none({0});
  none = cufuse::amax(E.t, 1); // an empty result: nothing to reduce, no error
  CHECK_THROWS_AS(cufuse::amax(E.t, 0), cufuse::shape_error);
  CHECK_THROWS_WITH(cufuse::argmax(E.t), Catch::Contains("empty axis") && Catch::Contains("[0, 5]"));
  CHECK(cufuse::item(cufuse::sum(E.t)) == 0);

  auto X = rrandom<float, 3>({2, 3, 4});
  CHECK(cufuse::sum(X.t, 1, cufuse::keepdim).shape() == cufuse::extents<3>{2, 1, 4});
  CHECK(cufuse::sum(X.t, {0, 2}, cufuse::keepdim).shape() == cufuse::extents<3>{1, 3, 1});
  CHECK(cufuse::sum(X.t, {0, 2}).shape() == cufuse::extents<1>{3});
  CHECK(cufuse::sum(X.t, -1).shape() == cufuse::extents<2>{2, 3});
  CHECK_THROWS_WITH(cufuse::sum(X.t, 3), Catch::Contains("axis 3") && Catch::Contains("rank 3"));
  CHECK_THROWS_WITH(cufuse::sum(X.t, -4), Catch::Contains("axis -4"));
  CHECK_THROWS_WITH(cufuse::sum(X.t, {1, -2}), Catch::Contains("named twice"));
  cufuse::tensor<float, 2, space> wrong({2, 4});
  CHECK_THROWS_WITH(wrong = cufuse::sum(X.t, 2),
                    Catch::Contains("[2, 3]") && Catch::Contains("[2, 4]"));
}

#endif

#if !defined(CUFUSE_REDUCE_PART) || CUFUSE_REDUCE_PART == 2
namespace {

/// Row-wise reference over [rows, n]: f(row values) -> row outputs.
template <class F>
std::vector<double> per_row(const std::vector<double>& x, index_t rows, index_t n, F f) {
  std::vector<double> out;
  for (index_t r = 0; r < rows; ++r) {
    std::vector<double> row(x.begin() + r * n, x.begin() + (r + 1) * n);
    const auto y = f(row);
    out.insert(out.end(), y.begin(), y.end());
  }
  return out;
}

std::vector<double> ref_softmax(const std::vector<double>& row) {
  double m = -INFINITY, s = 0;
  for (double v : row) m = std::max(m, v);
  for (double v : row) s += std::exp(v - m);
  std::vector<double> y;
  for (double v : row) y.push_back(std::exp(v - m) / s);
  return y;
}

std::vector<double> ref_layer_norm(const std::vector<double>& row, double eps) {
  double m = 0, v = 0;
  for (double x : row) m += x;
  m /= double(row.size());
  for (double x : row) v += (x - m) * (x - m);
  v /= double(row.size());
  std::vector<double> y;
  for (double x : row) y.push_back((x - m) / std::sqrt(v + eps));
  return y;
}

} // namespace

TEST_CASE("softmax, log_softmax, layer_norm, rms_norm and hand-written row forms", "[reduce]") {
  cft::for_types<float, __nv_bfloat16, __half>([]<class T>() {
    for (index_t n : {index_t(1), index_t(3), index_t(1000), index_t(4097)}) {
      const index_t m = 5;
      // large magnitudes and one row of identical values
      auto X = rrandom<T, 2>({m, n}, -8, 8);
      auto W = rrandom<T, 1>(cufuse::extents<1>(n), 0.5, 1.5);
      auto B = rrandom<T, 1>(cufuse::extents<1>(n));
      cufuse::tensor<T, 2, space> Y({m, n});
      auto check = [&](const char* what, auto&& expr, const std::vector<double>& ref) {
        rpoison(Y);
        Y = expr;
        expect_values<T>(std::string(what) + " n=" + std::to_string(n), rvalues(Y), ref);
      };
      check("softmax", cufuse::softmax(X.t, -1), per_row(X.v, m, n, ref_softmax));
      check("exp(X) / sum(exp(X))", cufuse::exp(X.t) / cufuse::sum(cufuse::exp(X.t), -1, cufuse::keepdim),
            per_row(X.v, m, n, ref_softmax));
      check("log_softmax", cufuse::log_softmax(X.t, 1), per_row(X.v, m, n, [](const auto& r) {
              auto y = ref_softmax(r);
              for (auto& v : y) v = std::log(v);
              return y;
            }));
      check("X - amax(X, -1, keepdim)", X.t - cufuse::amax(X.t, -1, cufuse::keepdim),
            per_row(X.v, m, n, [](const auto& r) {
              double mx = -INFINITY;
              for (double v : r) mx = std::max(mx, v);
              std::vector<double> y;
              for (double v : r) y.push_back(v - mx);
              return y;
            }));
      std::size_t col = 0;
      check("layer_norm(X, w, b)", cufuse::layer_norm(X.t, W.t, B.t, 1e-5f),
            per_row(X.v, m, n, [&](const auto& r) {
              auto y = ref_layer_norm(r, 1e-5);
              for (std::size_t j = 0; j < y.size(); ++j) y[j] = y[j] * W.v[j] + B.v[j];
              return y;
            }));
      (void)col;
      check("rms_norm(X, w)", cufuse::rms_norm(X.t, W.t, 1e-6f), per_row(X.v, m, n, [&](const auto& r) {
              double ms = 0;
              for (double v : r) ms += v * v;
              ms /= double(r.size());
              std::vector<double> y;
              for (std::size_t j = 0; j < r.size(); ++j) y.push_back(r[j] / std::sqrt(ms + 1e-6) * W.v[j]);
              return y;
            }));
    }
  });
  // rows of identical values, around 1e4 (float)
  const index_t m = 3, n = 777;
  std::vector<double> same(std::size_t(m * n), 1e4);
  auto S = rfrom<float, 2>({m, n}, same);
  cufuse::tensor<float, 2, space> Y({m, n});
  rpoison(Y);
  Y = cufuse::softmax(S.t, -1);
  for (double v : rvalues(Y)) CHECK(std::fabs(v - 1.0 / double(n)) <= 1e-6);
  rpoison(Y);
  Y = cufuse::layer_norm(S.t, 1e-5f);
  for (double v : rvalues(Y)) CHECK(v == 0);
}

TEST_CASE("reductions of other placements materialize correctly", "[reduce]") {
  const index_t a = 6, b = 7, c = 9;
  auto X = rrandom<float, 3>({a, b, c});
  cufuse::tensor<float, 3, space> Y({a, b, c});
  // over axis 0 in a map; over a middle axis; two axes at once; no keepdim (NumPy alignment)
  rpoison(Y);
  Y = X.t - cufuse::mean(X.t, 0, cufuse::keepdim);
  const auto m0 = ref_reduce(rk::mean, X.v, X.t.shape(), 1u);
  std::vector<double> ref;
  for (index_t i = 0; i < a * b * c; ++i) ref.push_back(X.v[std::size_t(i)] - m0[std::size_t(i % (b * c))]);
  expect_values<float>("X - mean(X, 0, keepdim)", rvalues(Y), ref);
  rpoison(Y);
  Y = X.t * cufuse::amax(X.t, 1, cufuse::keepdim) + cufuse::sum(X.t, {0, 1});
  const auto mx = ref_reduce(rk::amax, X.v, X.t.shape(), 2u);
  const auto s01 = ref_reduce(rk::sum, X.v, X.t.shape(), 3u);
  ref.clear();
  for (index_t i = 0; i < a * b * c; ++i) {
    const index_t ia = i / (b * c), ic = i % c;
    ref.push_back(X.v[std::size_t(i)] * mx[std::size_t(ia * c + ic)] + s01[std::size_t(ic)]);
  }
  expect_values<float>("X * amax(X, 1, keepdim) + sum(X, {0, 1})", rvalues(Y), ref);
  // a full reduction broadcast into every element, and a reduction of a reduction
  rpoison(Y);
  Y = X.t / cufuse::sum(cufuse::abs(X.t));
  double total = 0;
  for (double v : X.v) total += std::fabs(v);
  ref.clear();
  for (double v : X.v) ref.push_back(v / total);
  expect_values<float>("X / sum(abs(X))", rvalues(Y), ref);
  cufuse::tensor<float, 1, space> r({c});
  rpoison(r);
  r = cufuse::amax(cufuse::sum(X.t, 1), 0);
  const auto s1 = ref_reduce(rk::sum, X.v, X.t.shape(), 2u);
  expect_values<float>("amax(sum(X, 1), 0)", rvalues(r),
                       ref_reduce(rk::amax, s1, cufuse::extents<2>{a, c}, 1u));
  // softmax over a middle axis (not the row form): materialized, still right
  rpoison(Y);
  Y = cufuse::softmax(X.t, 1);
  ref.assign(X.v.size(), 0);
  for (index_t i = 0; i < a; ++i) {
    for (index_t k = 0; k < c; ++k) {
      std::vector<double> col;
      for (index_t j = 0; j < b; ++j) col.push_back(X.v[std::size_t((i * b + j) * c + k)]);
      const auto sm = ref_softmax(col);
      for (index_t j = 0; j < b; ++j) ref[std::size_t((i * b + j) * c + k)] = sm[std::size_t(j)];
    }
  }
  expect_values<float>("softmax(X, 1)", rvalues(Y), ref);
  // the destination is a strided view: the row form writes through its strides
  cufuse::tensor<float, 2, space> T2({c, b});
  rpoison(T2);
  auto X2 = rrandom<float, 2>({b, c});
  cufuse::transpose(T2) = cufuse::softmax(X2.t, -1);
  const auto got = rvalues(T2);
  const auto sm = per_row(X2.v, b, c, ref_softmax);
  std::vector<double> gt;
  for (index_t j = 0; j < b; ++j) {
    for (index_t k = 0; k < c; ++k) gt.push_back(got[std::size_t(k * b + j)]);
  }
  expect_values<float>("transpose(T) = softmax(X, -1)", gt, sm);
}

TEST_CASE("tie(...) = pack(...): several outputs of one shape, and the row form", "[reduce]") {
  const index_t m = 6, n = 129;
  auto X = rrandom<float, 2>({m, n});
  auto bias = rrandom<float, 1>(cufuse::extents<1>(n));
  cufuse::tensor<float, 2, space> A({m, n}), B({m, n});
  cufuse::tensor<__nv_bfloat16, 2, space> C({m, n});
  rpoison(A);
  rpoison(B);
  rpoison(C);
  // broadcasting inputs, different output dtypes
  cufuse::tie(A, B, C) = cufuse::pack(X.t + bias.t, cufuse::relu(X.t + bias.t), X.t * 2);
  std::vector<double> ra, rb, rc;
  for (index_t i = 0; i < m * n; ++i) {
    const double v = X.v[std::size_t(i)] + bias.v[std::size_t(i % n)];
    ra.push_back(v);
    rb.push_back(v < 0 ? 0 : v);
    rc.push_back(2 * X.v[std::size_t(i)]);
  }
  expect_values<float>("tie: X + bias", rvalues(A), ra);
  expect_values<float>("tie: relu(X + bias)", rvalues(B), rb);
  expect_values<__nv_bfloat16>("tie: X * 2 (bf16)", rvalues(C), rc);
  // layer_norm's forward for training: the output, and the per-row mean and rstd
  cufuse::tensor<float, 2, space> Y({m, n}), mu({m, 1}), rstd({m, 1});
  rpoison(Y);
  rpoison(mu);
  rpoison(rstd);
  const auto mean = cufuse::mean(X.t, -1, cufuse::keepdim);
  const auto centred = X.t - mean;
  const auto rs = cufuse::rsqrt(cufuse::mean(centred * centred, -1, cufuse::keepdim) + 1e-5f);
  cufuse::tie(Y, mu, rstd) = cufuse::pack(centred * rs, mean, rs);
  std::vector<double> ry, rm, rr;
  for (index_t i = 0; i < m; ++i) {
    double mm = 0, v = 0;
    for (index_t j = 0; j < n; ++j) mm += X.v[std::size_t(i * n + j)];
    mm /= double(n);
    for (index_t j = 0; j < n; ++j) v += std::pow(X.v[std::size_t(i * n + j)] - mm, 2);
    v /= double(n);
    rm.push_back(mm);
    rr.push_back(1 / std::sqrt(v + 1e-5));
    for (index_t j = 0; j < n; ++j) ry.push_back((X.v[std::size_t(i * n + j)] - mm) * rr.back());
  }
  expect_values<float>("tie: layer_norm output", rvalues(Y), ry);
  expect_values<float>("tie: per-row mean", rvalues(mu), rm);
  expect_values<float>("tie: per-row rstd", rvalues(rstd), rr);
  // an output that is also an input, read at other elements: evaluated as if all first
  rpoison(B);
  A = X.t;
  cufuse::tie(A, B) = cufuse::pack(cufuse::transpose(cufuse::reshape(A, {n, m})) * 0 + 1,
                                   A + 1);
  std::vector<double> ones(std::size_t(m * n), 1.0), xp1;
  for (double v : X.v) xp1.push_back(v + 1);
  expect_values<float>("tie with aliasing: B = A + 1 reads the old A", rvalues(B), xp1);
  // mismatched shapes name every shape
  cufuse::tensor<float, 2, space> small({m, n - 1});
  CHECK_THROWS_WITH((cufuse::tie(A, small) = cufuse::pack(X.t, X.t)),
                    Catch::Contains("[6, 129]") && Catch::Contains("[6, 128]"));
}

TEST_CASE("in-place and overlapping destinations of reductions", "[reduce]") {
  const index_t m = 5, n = 300;
  auto X = rrandom<float, 2>({m, n});
  const auto ref = per_row(X.v, m, n, ref_softmax);
  X.t = cufuse::softmax(X.t, -1); // in place: each row is read whole before it is written
  expect_values<float>("X = softmax(X) in place", rvalues(X.t), ref);
  auto Z = rrandom<float, 2>({m, n});
  std::vector<double> rs;
  for (index_t i = 0; i < m; ++i) {
    double s = 0;
    for (index_t j = 0; j < n; ++j) s += Z.v[std::size_t(i * n + j)];
    rs.push_back(s);
  }
  cufuse::slice(Z.t, cufuse::all, 0) = cufuse::sum(Z.t, 1); // the result lands inside the input
  const auto got = rvalues(Z.t);
  std::vector<double> col;
  for (index_t i = 0; i < m; ++i) col.push_back(got[std::size_t(i * n)]);
  expect_values<float>("slice(Z, all, 0) = sum(Z, 1)", col, rs);
}
#endif
