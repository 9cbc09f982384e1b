// Elementary functions on floating dtypes (and int32, which computes in float).
// Included by a suite after it defines `using space = ...`.

using cft::check_elementwise;
using cft::for_types;

namespace {
using dom = std::pair<double, double>;

template <class Build, class Ref>
void unary_on_floating(const char* name, Build build, Ref ref, dom d) {
  for_types<float, double, __half, __nv_bfloat16>(
      [&]<class T>() { check_elementwise<space, T>(name, build, ref, {d}); });
  // Integers compute in float (the result type is float), over the whole numbers of the domain.
  const dom whole{std::ceil(d.first), std::floor(d.second)};
  if (whole.first <= whole.second) {
    check_elementwise<space, std::int32_t>(name, build, ref, {whole});
  }
}
} // namespace

#define UNARY_CASE(FN, REF, LO, HI)                                                                \
  unary_on_floating(                                                                               \
      #FN, [](auto a) { return cufuse::FN(a); }, [](double x) { return REF; }, {LO, HI})

TEST_CASE("elementary functions", "[math]") {
  UNARY_CASE(sqrt, std::sqrt(x), 0.0, 100.0);
  UNARY_CASE(rsqrt, 1.0 / std::sqrt(x), 0.1, 100.0);
  UNARY_CASE(cbrt, std::cbrt(x), -100.0, 100.0);
  UNARY_CASE(exp, std::exp(x), -10.0, 10.0);
  UNARY_CASE(exp2, std::exp2(x), -10.0, 10.0);
  UNARY_CASE(expm1, std::expm1(x), -2.0, 2.0);
  UNARY_CASE(log, std::log(x), 0.1, 100.0);
  UNARY_CASE(log2, std::log2(x), 0.1, 100.0);
  UNARY_CASE(log10, std::log10(x), 0.1, 100.0);
  UNARY_CASE(log1p, std::log1p(x), -0.5, 100.0);
  UNARY_CASE(sin, std::sin(x), -10.0, 10.0);
  UNARY_CASE(cos, std::cos(x), -10.0, 10.0);
  UNARY_CASE(tan, std::tan(x), -1.2, 1.2);
  UNARY_CASE(asin, std::asin(x), -0.99, 0.99);
  UNARY_CASE(acos, std::acos(x), -0.99, 0.99);
  UNARY_CASE(atan, std::atan(x), -10.0, 10.0);
  UNARY_CASE(sinh, std::sinh(x), -5.0, 5.0);
  UNARY_CASE(cosh, std::cosh(x), -5.0, 5.0);
  UNARY_CASE(tanh, std::tanh(x), -5.0, 5.0);
  UNARY_CASE(erf, std::erf(x), -3.0, 3.0);
  UNARY_CASE(erfc, std::erfc(x), -3.0, 3.0);
}

#undef UNARY_CASE
