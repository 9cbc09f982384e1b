// Comparison, logical and bitwise operators, every dtype each supports.
// Included by a suite after it defines `using space = cufuse::host_space` (or device_space).

using cft::check_elementwise;
using cft::for_types;
using i32 = std::int32_t;
using i64 = std::int64_t;
using u8 = std::uint8_t;
using bf16 = __nv_bfloat16;

TEST_CASE("comparisons give bool on every dtype", "[compare]") {
  cft::integer_valued_guard whole; // equal values must occur
  for_types<float, double, __half, bf16, i32, i64, u8, bool>([]<class T>() {
    const std::pair<double, double> d =
        std::is_same_v<T, u8> ? std::pair{0.0, 4.0} : std::pair{-3.0, 3.0};
    check_elementwise<space, T, T>(
        "a==b", [](auto a, auto b) { return a == b; }, [](double a, double b) { return a == b; },
        {d, d});
    check_elementwise<space, T, T>(
        "a!=b", [](auto a, auto b) { return a != b; }, [](double a, double b) { return a != b; },
        {d, d});
    check_elementwise<space, T, T>(
        "a<b", [](auto a, auto b) { return a < b; }, [](double a, double b) { return a < b; },
        {d, d});
    check_elementwise<space, T, T>(
        "a<=b", [](auto a, auto b) { return a <= b; }, [](double a, double b) { return a <= b; },
        {d, d});
    check_elementwise<space, T, T>(
        "a>b", [](auto a, auto b) { return a > b; }, [](double a, double b) { return a > b; },
        {d, d});
    check_elementwise<space, T, T>(
        "a>=b", [](auto a, auto b) { return a >= b; }, [](double a, double b) { return a >= b; },
        {d, d});
  });
}

TEST_CASE("logical && || ! on every dtype", "[compare]") {
  cft::integer_valued_guard whole; // zeros must occur
  for_types<float, double, __half, bf16, i32, i64, u8, bool>([]<class T>() {
    const std::pair<double, double> d =
        std::is_same_v<T, u8> ? std::pair{0.0, 2.0} : std::pair{-1.0, 1.0};
    check_elementwise<space, T, T>(
        "a&&b", [](auto a, auto b) { return a && b; },
        [](double a, double b) { return a != 0 && b != 0; }, {d, d});
    check_elementwise<space, T, T>(
        "a||b", [](auto a, auto b) { return a || b; },
        [](double a, double b) { return a != 0 || b != 0; }, {d, d});
    check_elementwise<space, T>(
        "!a", [](auto a) { return !a; }, [](double a) { return a == 0; }, {d});
  });
}

TEST_CASE("bitwise & | ^ ~ on integers and bool", "[bitwise]") {
  for_types<i32, i64, u8, bool>([]<class T>() {
    const std::pair<double, double> d = std::is_same_v<T, u8>     ? std::pair{0.0, 255.0}
                                        : std::is_same_v<T, bool> ? std::pair{0.0, 1.0}
                                                                  : std::pair{-1e6, 1e6};
    check_elementwise<space, T, T>(
        "a&b", [](auto a, auto b) { return a & b; },
        [](double a, double b) { return double(i64(a) & i64(b)); }, {d, d});
    check_elementwise<space, T, T>(
        "a|b", [](auto a, auto b) { return a | b; },
        [](double a, double b) { return double(i64(a) | i64(b)); }, {d, d});
    check_elementwise<space, T, T>(
        "a^b", [](auto a, auto b) { return a ^ b; },
        [](double a, double b) { return double(i64(a) ^ i64(b)); }, {d, d});
    check_elementwise<space, T>(
        "~a", [](auto a) { return ~a; },
        [](double a) { return std::is_same_v<T, bool> ? double(a == 0) : double(~i64(a)); }, {d});
  });
}

TEST_CASE("shifts on integers, out-of-range amounts defined", "[bitwise]") {
  for_types<i32, i64, u8>([]<class T>() {
    constexpr int bits = int(sizeof(T) * 8);
    const std::pair<double, double> d =
        std::is_same_v<T, u8> ? std::pair{0.0, 255.0} : std::pair{-1e6, 1e6};
    const std::pair<double, double> s =
        std::is_same_v<T, u8> ? std::pair{0.0, bits + 2.0} : std::pair{-2.0, bits + 2.0};
    check_elementwise<space, T, T>(
        "a<<b", [](auto a, auto b) { return a << b; },
        [](double a, double b) {
          if (b < 0 || b >= bits) {
            return 0.0;
          }
          using U = std::make_unsigned_t<T>;
          return double(T(U(U(T(a)) << int(b))));
        },
        {d, s});
    check_elementwise<space, T, T>(
        "a>>b", [](auto a, auto b) { return a >> b; },
        [](double a, double b) {
          if (b < 0 || b >= bits) {
            return a < 0 ? -1.0 : 0.0;
          }
          return std::floor(a / std::ldexp(1.0, int(b))); // arithmetic shift
        },
        {d, s});
  });
}
