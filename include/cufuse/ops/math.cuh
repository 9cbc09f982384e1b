/// \file Elementary functions. Integer and bool operands compute in float (PyTorch's default
/// dtype); half and bf16 compute in float and round once at the store.
#pragma once

#include "traits.cuh"

#include <cmath>

namespace cufuse::ops {

/// One unary floating function: F(float) for float compute, D(double) for double.
#define CUFUSE_UNARY_FLOAT_OP(NAME, FLOAT_EXPR, DOUBLE_EXPR)                                       \
  struct NAME : floating_result {                                                                  \
    template <class C, class A>                                                                    \
    CUFUSE_INLINE auto apply(A a) const {                                                          \
      using T = opmath_t<cufuse::detail::floating_t<C>>;                                           \
      const T x = convert<T>(a);                                                                   \
      if constexpr (std::is_same_v<T, float>) {                                                    \
        return T(FLOAT_EXPR);                                                                      \
      } else {                                                                                     \
        return T(DOUBLE_EXPR);                                                                     \
      }                                                                                            \
    }                                                                                              \
  };

CUFUSE_UNARY_FLOAT_OP(sqrt, ::sqrtf(x), ::sqrt(x))
CUFUSE_UNARY_FLOAT_OP(cbrt, ::cbrtf(x), ::cbrt(x))
CUFUSE_UNARY_FLOAT_OP(exp, ::expf(x), ::exp(x))
CUFUSE_UNARY_FLOAT_OP(exp2, ::exp2f(x), ::exp2(x))
CUFUSE_UNARY_FLOAT_OP(expm1, ::expm1f(x), ::expm1(x))
CUFUSE_UNARY_FLOAT_OP(log, ::logf(x), ::log(x))
CUFUSE_UNARY_FLOAT_OP(log2, ::log2f(x), ::log2(x))
CUFUSE_UNARY_FLOAT_OP(log10, ::log10f(x), ::log10(x))
CUFUSE_UNARY_FLOAT_OP(log1p, ::log1pf(x), ::log1p(x))
CUFUSE_UNARY_FLOAT_OP(sin, ::sinf(x), ::sin(x))
CUFUSE_UNARY_FLOAT_OP(cos, ::cosf(x), ::cos(x))
CUFUSE_UNARY_FLOAT_OP(tan, ::tanf(x), ::tan(x))
CUFUSE_UNARY_FLOAT_OP(asin, ::asinf(x), ::asin(x))
CUFUSE_UNARY_FLOAT_OP(acos, ::acosf(x), ::acos(x))
CUFUSE_UNARY_FLOAT_OP(atan, ::atanf(x), ::atan(x))
CUFUSE_UNARY_FLOAT_OP(sinh, ::sinhf(x), ::sinh(x))
CUFUSE_UNARY_FLOAT_OP(cosh, ::coshf(x), ::cosh(x))
CUFUSE_UNARY_FLOAT_OP(tanh, ::tanhf(x), ::tanh(x))
CUFUSE_UNARY_FLOAT_OP(erf, ::erff(x), ::erf(x))
CUFUSE_UNARY_FLOAT_OP(erfc, ::erfcf(x), ::erfc(x))

/// 1 / sqrt(x); the device uses the hardware reciprocal square root.
struct rsqrt : floating_result {
  template <class C, class A>
  CUFUSE_INLINE auto apply(A a) const {
    using T = opmath_t<cufuse::detail::floating_t<C>>;
    const T x = convert<T>(a);
#if defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<T, float>) {
      return ::rsqrtf(x);
    } else {
      return ::rsqrt(x);
    }
#else
    if constexpr (std::is_same_v<T, float>) {
      return 1.0f / ::sqrtf(x);
    } else {
      return 1.0 / ::sqrt(x);
    }
#endif
  }
};

/// Rounding functions keep integer operands unchanged (and their type).
#define CUFUSE_ROUNDING_OP(NAME, FLOAT_EXPR, DOUBLE_EXPR)                                          \
  struct NAME : numeric {                                                                          \
    template <class C, class A>                                                                    \
    CUFUSE_INLINE opmath_t<C> apply(A a) const {                                                   \
      using T = opmath_t<C>;                                                                       \
      const T x = convert<T>(a);                                                                   \
      if constexpr (std::is_same_v<T, float>) {                                                    \
        return FLOAT_EXPR;                                                                         \
      } else if constexpr (std::is_same_v<T, double>) {                                            \
        return DOUBLE_EXPR;                                                                        \
      } else {                                                                                     \
        return x;                                                                                  \
      }                                                                                            \
    }                                                                                              \
  };

CUFUSE_ROUNDING_OP(floor, ::floorf(x), ::floor(x))
CUFUSE_ROUNDING_OP(ceil, ::ceilf(x), ::ceil(x))
CUFUSE_ROUNDING_OP(trunc, ::truncf(x), ::trunc(x))
/// Rounds half to even, as torch.round and numpy.round (not std::round).
CUFUSE_ROUNDING_OP(round, ::rintf(x), ::rint(x))

/// atan2(y, x) with a floating result.
struct atan2 : floating_result {
  template <class C, class A, class B>
  CUFUSE_INLINE auto apply(A a, B b) const {
    using T = opmath_t<cufuse::detail::floating_t<C>>;
    if constexpr (std::is_same_v<T, float>) {
      return ::atan2f(convert<T>(a), convert<T>(b));
    } else {
      return ::atan2(convert<T>(a), convert<T>(b));
    }
  }
};

#undef CUFUSE_UNARY_FLOAT_OP
#undef CUFUSE_ROUNDING_OP

} // namespace cufuse::ops
