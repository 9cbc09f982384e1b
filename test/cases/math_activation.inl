// Activations on floating dtypes (and int32, which computes in float).
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

TEST_CASE("activations", "[math]") {
  UNARY_CASE(sigmoid, 1.0 / (1.0 + std::exp(-x)), -10.0, 10.0);
  UNARY_CASE(gelu, 0.5 * x * std::erfc(-x / std::sqrt(2.0)), -6.0, 6.0);
  UNARY_CASE(gelu_tanh,
             0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))), -6.0,
             6.0);
  UNARY_CASE(silu, x / (1.0 + std::exp(-x)), -10.0, 10.0);
  UNARY_CASE(softplus, x > 20 ? x : std::log1p(std::exp(x)), -30.0, 30.0);
}

#undef UNARY_CASE
