// Arithmetic operators, every dtype each supports.
// Included by a suite after it defines `using space = cufuse::host_space` (or device_space).

using cft::check_elementwise;
using cft::for_types;
using i32 = std::int32_t;
using i64 = std::int64_t;
using u8 = std::uint8_t;
using bf16 = __nv_bfloat16;

namespace {
template <class T>
std::pair<double, double> add_domain() {
  if constexpr (std::is_same_v<T, u8>) {
    return {0, 255};
  } else if constexpr (std::is_same_v<T, i32>) {
    return {-100000, 100000};
  } else if constexpr (std::is_same_v<T, i64>) {
    return {-1e12, 1e12};
  } else {
    return {-10, 10};
  }
}
template <class T>
double int_div_ref(double a, double b) {
  if (b == 0) {
    return 0;
  }
  return std::trunc(a / b);
}
} // namespace

TEST_CASE("binary + - * on every numeric dtype", "[arith]") {
  for_types<float, double, __half, bf16, i32, i64, u8>([]<class T>() {
    const auto d = add_domain<T>();
    check_elementwise<space, T, T>(
        "a+b", [](auto a, auto b) { return a + b; }, [](double a, double b) { return a + b; },
        {d, d});
    check_elementwise<space, T, T>(
        "a-b", [](auto a, auto b) { return a - b; }, [](double a, double b) { return a - b; },
        {d, d});
    check_elementwise<space, T, T>(
        "a*b", [](auto a, auto b) { return a * b; },
        [](double a, double b) {
          if constexpr (std::is_same_v<T, i64>) {
            // exact 64-bit wrap-around product
            return double(i64(std::uint64_t(i64(a)) * std::uint64_t(i64(b))));
          } else {
            return a * b;
          }
        },
        {d, std::is_same_v<T, i64> ? std::pair<double, double>{-1000, 1000} : d});
  });
}

TEST_CASE("division: IEEE for floating types, truncating and total for integers", "[arith]") {
  for_types<float, double, __half, bf16>([]<class T>() {
    check_elementwise<space, T, T>(
        "a/b", [](auto a, auto b) { return a / b; }, [](double a, double b) { return a / b; },
        {{-10, 10}, {0.5, 10}});
    check_elementwise<space, T, T>(
        "a/-b", [](auto a, auto b) { return a / -b; }, [](double a, double b) { return a / -b; },
        {{-10, 10}, {0.5, 10}});
  });
  for_types<i32, i64>([]<class T>() {
    check_elementwise<space, T, T>("a/b", [](auto a, auto b) { return a / b; }, int_div_ref<T>,
                                   {{-1000, 1000}, {-7, 7}});
  });
  check_elementwise<space, u8, u8>("a/b", [](auto a, auto b) { return a / b; }, int_div_ref<u8>,
                                   {{0, 255}, {0, 9}});
}

TEST_CASE("integer % truncates like C++ and gives 0 for a zero divisor", "[arith]") {
  for_types<i32, i64>([]<class T>() {
    check_elementwise<space, T, T>(
        "a%b", [](auto a, auto b) { return a % b; },
        [](double a, double b) { return b == 0 ? 0.0 : std::fmod(a, b); },
        {{-1000, 1000}, {-9, 9}});
  });
  check_elementwise<space, u8, u8>(
      "a%b", [](auto a, auto b) { return a % b; },
      [](double a, double b) { return b == 0 ? 0.0 : std::fmod(a, b); }, {{0, 255}, {0, 17}});
}

TEST_CASE("INT_MIN / -1 wraps instead of trapping", "[arith]") {
  cufuse::tensor<i32, 1, space> a(4), b(4), c(4);
  a.upload(std::vector<i32>{std::numeric_limits<i32>::min(), 7, -7, 0});
  b.upload(std::vector<i32>{-1, -1, 0, -1});
  c = a / b;
  CHECK(c.download() == std::vector<i32>{std::numeric_limits<i32>::min(), -7, 0, 0});
  c = a % b;
  CHECK(c.download() == std::vector<i32>{0, 0, 0, 0});
}

TEST_CASE("unary minus and abs on every numeric dtype", "[arith]") {
  for_types<float, double, __half, bf16, i32, i64, u8>([]<class T>() {
    const auto d = add_domain<T>();
    check_elementwise<space, T>(
        "-a", [](auto a) { return -a; }, [](double a) { return -a; }, {d});
    check_elementwise<space, T>(
        "abs", [](auto a) { return cufuse::abs(a); }, [](double a) { return std::fabs(a); }, {d});
  });
}

TEST_CASE("square on floating and 32-bit integer dtypes", "[arith]") {
  for_types<float, double, __half, bf16, i32>([]<class T>() {
    // |a| <= 10 for the floating types, <= 40000 for i32: squares fit (no wrap-around)
    const auto d = std::is_same_v<T, i32> ? std::pair<double, double>{-40000, 40000}
                                          : add_domain<T>();
    check_elementwise<space, T>(
        "square", [](auto a) { return cufuse::square(a); }, [](double a) { return a * a; }, {d});
  });
}
