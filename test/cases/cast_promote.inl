// cast<U> between every pair of dtypes, PyTorch-style promotion (weak scalars), and half/bf16
// computing in float with one rounding at the store. Included after `using space = ...`.

using cft::check_elementwise;
using cft::for_types;

namespace {
template <class From, class To>
double cast_ref(double v) {
  using namespace cufuse::detail;
  if constexpr (is_floating_v<From> && is_integer_v<To>) {
    // saturating, NaN -> 0, truncation toward zero
    const double lo = double(std::numeric_limits<To>::min());
    const double hi = double(std::numeric_limits<To>::max());
    if (std::isnan(v)) {
      return 0;
    }
    return v <= lo ? lo : (v >= hi ? hi : std::trunc(v));
  } else {
    return v; // integer -> integer wraps (from_double), anything -> floating rounds
  }
}

template <class From>
std::pair<double, double> cast_domain() {
  if constexpr (std::is_same_v<From, bool>) {
    return {0, 1};
  } else if constexpr (std::is_same_v<From, std::uint8_t>) {
    return {0, 255};
  } else if constexpr (std::is_same_v<From, std::int64_t>) {
    return {-1e15, 1e15};
  } else if constexpr (std::is_same_v<From, std::int32_t>) {
    return {-2e9, 2e9};
  } else {
    return {-70000, 70000}; // beyond half's range, and beyond uint8/int16-ish ranges
  }
}
} // namespace

TEST_CASE("cast<U> between every pair of dtypes", "[cast]") {
  for_types<float, double, __half, __nv_bfloat16, std::int32_t, std::int64_t, std::uint8_t, bool>(
      []<class From>() {
        for_types<float, double, __half, __nv_bfloat16, std::int32_t, std::int64_t, std::uint8_t,
                  bool>([]<class To>() {
          check_elementwise<space, From>("cast", [](auto a) { return cufuse::cast<To>(a); },
                                         cast_ref<From, To>, {cast_domain<From>()});
        });
      });
}

TEST_CASE("cast of NaN and infinities to integers is defined", "[cast]") {
  const float inf = std::numeric_limits<float>::infinity();
  cufuse::tensor<float, 1, space> a(3);
  a.upload(std::vector<float>{std::numeric_limits<float>::quiet_NaN(), inf, -inf});
  cufuse::tensor<std::int32_t, 1, space> r(3);
  r = cufuse::cast<std::int32_t>(a);
  CHECK(r.download() == std::vector<std::int32_t>{0, std::numeric_limits<std::int32_t>::max(),
                                                  std::numeric_limits<std::int32_t>::min()});
  cufuse::tensor<std::uint8_t, 1, space> u(3);
  u = a; // storing into an integer tensor converts the same way
  CHECK(u.download() == std::vector<std::uint8_t>{0, 255, 0});
}

namespace promo {
using namespace cufuse;
using cufuse::detail::leaf;
template <class T>
using L = leaf<const T, 1, space>;
template <class E>
using V = typename E::value_type;
using i32 = std::int32_t;
using i64 = std::int64_t;
using u8 = std::uint8_t;
using bf16 = __nv_bfloat16;

// strong operands: result_type
static_assert(std::is_same_v<V<decltype(L<__half>{} + L<float>{})>, float>);
static_assert(std::is_same_v<V<decltype(L<__half>{} + L<bf16>{})>, float>);
static_assert(std::is_same_v<V<decltype(L<float>{} + L<double>{})>, double>);
static_assert(std::is_same_v<V<decltype(L<i32>{} + L<float>{})>, float>);
static_assert(std::is_same_v<V<decltype(L<i64>{} * L<__half>{})>, __half>);
static_assert(std::is_same_v<V<decltype(L<u8>{} + L<i32>{})>, i32>);
static_assert(std::is_same_v<V<decltype(L<i32>{} + L<i64>{})>, i64>);
static_assert(std::is_same_v<V<decltype(L<bool>{} + L<u8>{})>, u8>);
static_assert(std::is_same_v<V<decltype(L<float>{} < L<double>{})>, bool>);
// weak scalars only raise the category
static_assert(std::is_same_v<V<decltype(L<__half>{} * 2.0)>, __half>);
static_assert(std::is_same_v<V<decltype(L<float>{} + 10.0)>, float>);
static_assert(std::is_same_v<V<decltype(L<bf16>{} + 1)>, bf16>);
static_assert(std::is_same_v<V<decltype(L<i32>{} + 2)>, i32>);
static_assert(std::is_same_v<V<decltype(L<u8>{} + 300)>, u8>);
static_assert(std::is_same_v<V<decltype(L<i32>{} * 2.5)>, float>);
static_assert(std::is_same_v<V<decltype(L<i64>{} * 2.5f)>, float>);
static_assert(std::is_same_v<V<decltype(L<bool>{} + 1)>, i64>);
static_assert(std::is_same_v<V<decltype(L<bool>{} + 1.5)>, float>);
static_assert(std::is_same_v<V<decltype(2.0 - L<double>{})>, double>);
// math functions on integers compute in float
static_assert(std::is_same_v<V<decltype(sin(L<i32>{}))>, float>);
static_assert(std::is_same_v<V<decltype(sqrt(L<__half>{}))>, __half>);
static_assert(std::is_same_v<V<decltype(where(L<bool>{}, L<__half>{}, 0))>, __half>);
static_assert(std::is_same_v<V<decltype(where(L<bool>{}, L<i32>{}, 0.5))>, float>);
static_assert(std::is_same_v<V<decltype(cast<u8>(L<double>{}))>, u8>);
} // namespace promo

TEST_CASE("mixed dtypes promote and compute correctly", "[promote]") {
  check_elementwise<space, __half, float>(
      "half+float", [](auto a, auto b) { return a + b; }, [](double a, double b) { return a + b; },
      {{-10, 10}, {-10, 10}});
  check_elementwise<space, __half, __nv_bfloat16>(
      "half*bf16", [](auto a, auto b) { return a * b; }, [](double a, double b) { return a * b; },
      {{-10, 10}, {-10, 10}});
  check_elementwise<space, std::int32_t, double>(
      "int32-double", [](auto a, auto b) { return a - b; },
      [](double a, double b) { return a - b; }, {{-1000, 1000}, {-10, 10}});
  check_elementwise<space, std::uint8_t, std::int32_t>(
      "u8*int32", [](auto a, auto b) { return a * b; }, [](double a, double b) { return a * b; },
      {{0, 255}, {-1000, 1000}});
  check_elementwise<space, bool, std::int64_t>(
      "bool+int64", [](auto a, auto b) { return a + b; }, [](double a, double b) { return a + b; },
      {{0, 1}, {-1000, 1000}});
  check_elementwise<space, std::int32_t>(
      "int32*2.5 -> float", [](auto a) { return a * 2.5; }, [](double a) { return a * 2.5; },
      {{-1000, 1000}});
  check_elementwise<space, std::uint8_t>(
      "u8+300 wraps in u8", [](auto a) { return a + 300; },
      [](double a) { return double(std::uint8_t(int(a) + 300)); }, {{0, 255}});
  check_elementwise<space, __half>(
      "half*0.1 stays half", [](auto a) { return a * 0.1; }, [](double a) { return a * 0.1; },
      {{-100, 100}});
}

TEST_CASE("half and bf16 compute in float and round once at the store", "[promote]") {
  // 2048 + 1 + 1 in half: rounding after each add gives 2048 (ulp is 2 there); once gives 2050.
  cufuse::tensor<__half, 1, space> a(5), b(5), r(5);
  a.upload(std::vector<__half>(5, __float2half(2048.0f)));
  b.upload(std::vector<__half>(5, __float2half(1.0f)));
  r = a + b + b;
  for (__half h : r.download()) {
    CHECK(__half2float(h) == 2050.0f);
  }
  // an explicit cast<__half> does round in the middle
  r = cufuse::cast<__half>(a + b) + b;
  for (__half h : r.download()) {
    CHECK(__half2float(h) == 2048.0f);
  }
  cufuse::tensor<__nv_bfloat16, 1, space> c(3), d(3), s(3);
  c.upload(std::vector<__nv_bfloat16>(3, __float2bfloat16(256.0f)));
  d.upload(std::vector<__nv_bfloat16>(3, __float2bfloat16(1.0f)));
  s = c + d + d;
  for (__nv_bfloat16 h : s.download()) {
    CHECK(__bfloat162float(h) == 258.0f);
  }
}
