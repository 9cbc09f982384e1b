// relu, rounding, binary and ternary functions, NaN propagation.
// Included by a suite after it defines `using space = ...`.

using cft::check_elementwise;
using cft::for_types;

using dom = std::pair<double, double>;

TEST_CASE("relu keeps the dtype, integers included", "[math]") {
  for_types<float, double, __half, __nv_bfloat16, std::int32_t, std::int64_t>([]<class T>() {
    check_elementwise<space, T>(
        "relu", [](auto a) { return cufuse::relu(a); }, [](double x) { return x < 0 ? 0.0 : x; },
        {{-10, 10}});
  });
}

TEST_CASE("rounding functions; round is half-to-even", "[math]") {
  for_types<float, double, __half, __nv_bfloat16, std::int32_t, std::int64_t>([]<class T>() {
    const dom d{-100, 100};
    check_elementwise<space, T>(
        "floor", [](auto a) { return cufuse::floor(a); }, [](double x) { return std::floor(x); },
        {d});
    check_elementwise<space, T>(
        "ceil", [](auto a) { return cufuse::ceil(a); }, [](double x) { return std::ceil(x); }, {d});
    check_elementwise<space, T>(
        "trunc", [](auto a) { return cufuse::trunc(a); }, [](double x) { return std::trunc(x); },
        {d});
    check_elementwise<space, T>(
        "round", [](auto a) { return cufuse::round(a); },
        [](double x) { return std::nearbyint(x); }, {d});
  });
  cufuse::tensor<float, 1, space> a(8), r(8);
  a.upload(std::vector<float>{-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f, 0.49999997f});
  r = cufuse::round(a);
  CHECK(r.download() == std::vector<float>{-2, -2, -0.0f, 0, 2, 2, 4, 0});
}

TEST_CASE("binary functions: pow, atan2, min, max", "[math]") {
  for_types<float, double, __half, __nv_bfloat16>([]<class T>() {
    check_elementwise<space, T, T>(
        "pow", [](auto a, auto b) { return cufuse::pow(a, b); },
        [](double a, double b) { return std::pow(a, b); }, {{0.5, 2}, {-3, 3}});
    check_elementwise<space, T, T>(
        "atan2", [](auto a, auto b) { return cufuse::atan2(a, b); },
        [](double a, double b) { return std::atan2(a, b); }, {{-10, 10}, {-10, 10}});
  });
  for_types<std::int32_t, std::int64_t>([]<class T>() {
    check_elementwise<space, T, T>(
        "int pow", [](auto a, auto b) { return cufuse::pow(a, b); },
        [](double a, double b) {
          if (b < 0) {
            return a == 1 ? 1.0 : (a == -1 ? (std::fmod(b, 2) != 0 ? -1.0 : 1.0) : 0.0);
          }
          return std::pow(a, b);
        },
        {{-6, 6}, {-2, 9}});
  });
  for_types<float, double, __half, __nv_bfloat16, std::int32_t, std::int64_t, std::uint8_t>(
      []<class T>() {
        const dom d = std::is_same_v<T, std::uint8_t> ? dom{0, 255} : dom{-100, 100};
        check_elementwise<space, T, T>(
            "min", [](auto a, auto b) { return cufuse::min(a, b); },
            [](double a, double b) { return std::min(a, b); }, {d, d});
        check_elementwise<space, T, T>(
            "max", [](auto a, auto b) { return cufuse::max(a, b); },
            [](double a, double b) { return std::max(a, b); }, {d, d});
      });
}

TEST_CASE("min, max, clamp and relu propagate NaN", "[math]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  cufuse::tensor<float, 1, space> a(4), b(4), r(4);
  a.upload(std::vector<float>{nan, 1.0f, nan, -2.0f});
  b.upload(std::vector<float>{1.0f, nan, nan, 3.0f});
  for (int which = 0; which < 4; ++which) {
    if (which == 0) {
      r = cufuse::min(a, b);
    } else if (which == 1) {
      r = cufuse::max(a, b);
    } else if (which == 2) {
      r = cufuse::clamp(a, b, 5.0f);
    } else {
      r = cufuse::relu(a) + cufuse::relu(b);
    }
    const auto got = r.download();
    INFO("case " << which);
    CHECK(std::isnan(got[0]));
    CHECK(std::isnan(got[1]));
    CHECK(std::isnan(got[2]));
    CHECK_FALSE(std::isnan(got[3]));
  }
}

TEST_CASE("ternary functions: fma, clamp, where", "[math]") {
  for_types<float, double, __half, __nv_bfloat16, std::int32_t, std::int64_t>([]<class T>() {
    const dom d{-100, 100};
    check_elementwise<space, T, T, T>(
        "fma", [](auto a, auto b, auto c) { return cufuse::fma(a, b, c); },
        [](double a, double b, double c) { return a * b + c; }, {d, d, d});
    check_elementwise<space, T, T, T>(
        "clamp", [](auto x, auto lo, auto hi) { return cufuse::clamp(x, lo, hi); },
        [](double x, double lo, double hi) { return std::min(std::max(x, lo), hi); },
        {d, {-50, 0}, {0, 50}});
    check_elementwise<space, T>(
        "clamp scalars", [](auto x) { return cufuse::clamp(x, -5, 7); },
        [](double x) { return std::min(std::max(x, -5.0), 7.0); }, {d});
  });
  for_types<float, double, __half, __nv_bfloat16, std::int32_t, std::int64_t, std::uint8_t, bool>(
      []<class T>() {
        const dom d = std::is_same_v<T, bool>           ? dom{0, 1}
                      : std::is_same_v<T, std::uint8_t> ? dom{0, 255}
                                                        : dom{-100, 100};
        check_elementwise<space, bool, T, T>(
            "where", [](auto c, auto a, auto b) { return cufuse::where(c, a, b); },
            [](double c, double a, double b) { return c != 0 ? a : b; }, {{0, 1}, d, d});
      });
  check_elementwise<space, float, double>(
      "where(float cond, double, scalar)",
      [](auto c, auto a) { return cufuse::where(c > 0.0f, a, -1); },
      [](double c, double a) { return c > 0 ? a : -1.0; }, {{-1, 1}, {-10, 10}});
}
