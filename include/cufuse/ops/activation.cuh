/// \file Activations: sigmoid, relu, gelu (erf form), gelu_tanh, silu, softplus.
#pragma once

#include "traits.cuh"

#include <cmath>

namespace cufuse::ops {

namespace detail_act {
template <class T>
CUFUSE_INLINE T exp_(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return ::expf(x);
  } else {
    return ::exp(x);
  }
}

/// x / (1 + exp(-y)), the shape of sigmoid, silu and gelu_tanh. fp32 on the GPU: __expf
/// (ex2.approx; its error grows with |y|, about 2 + 1.2 |y| ulp) and a division by reciprocal,
/// about 8 instructions where expf and an IEEE division take about 30 (GEMM epilogues evaluate
/// one per output element: bench/JOURNAL.md e4); the GPU tests hold it to the same 1e-5 relative
/// bound as the other fp32 functions. Elsewhere, and for double, the accurate forms. The limits
/// hold: exp overflowing to inf gives x * 0 (a signed zero), and a NaN stays NaN.
template <class T>
CUFUSE_INLINE T over_one_plus_exp_neg(T x, T y) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>) {
    return __fdividef(x, 1.0f + __expf(-y));
  } else {
    return x / (T(1) + exp_(-y));
  }
#else
  return x / (T(1) + exp_(-y));
#endif
}
} // namespace detail_act

/// 1 / (1 + exp(-x)).
struct sigmoid : floating_result {
  template <class C, class A>
  CUFUSE_INLINE auto apply(A a) const {
    using T = opmath_t<cufuse::detail::floating_t<C>>;
    const T x = convert<T>(a);
    return detail_act::over_one_plus_exp_neg(T(1), x);
  }
};

/// max(x, 0); keeps integer types; NaN stays NaN (as torch.relu).
struct relu : numeric {
  template <class C, class A>
  CUFUSE_INLINE opmath_t<C> apply(A a) const {
    using T = opmath_t<C>;
    const T x = convert<T>(a);
    return x < T(0) ? T(0) : x;
  }
};

/// x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)).
struct gelu : floating_result {
  template <class C, class A>
  CUFUSE_INLINE auto apply(A a) const {
    using T = opmath_t<cufuse::detail::floating_t<C>>;
    const T x = convert<T>(a);
    constexpr T inv_sqrt2 = T(0.70710678118654752440);
    if constexpr (std::is_same_v<T, float>) {
      return T(0.5) * x * (T(1) + ::erff(x * inv_sqrt2));
    } else {
      return T(0.5) * x * (T(1) + ::erf(x * inv_sqrt2));
    }
  }
};

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as torch's gelu(approximate='tanh'),
/// computed as x / (1 + exp(-2 u)) with u the tanh's argument: the same function (1 + tanh(u) =
/// 2 / (1 + exp(-2u))), without the cancellation of 1 + tanh(u) for x below -3.
struct gelu_tanh : floating_result {
  template <class C, class A>
  CUFUSE_INLINE auto apply(A a) const {
    using T = opmath_t<cufuse::detail::floating_t<C>>;
    const T x = convert<T>(a);
    constexpr T k2 = T(2 * 0.79788456080286535588); // 2 sqrt(2/pi)
    return detail_act::over_one_plus_exp_neg(x, k2 * (x + T(0.044715) * x * x * x));
  }
};

/// x * sigmoid(x).
struct silu : floating_result {
  template <class C, class A>
  CUFUSE_INLINE auto apply(A a) const {
    using T = opmath_t<cufuse::detail::floating_t<C>>;
    const T x = convert<T>(a);
    return detail_act::over_one_plus_exp_neg(x, x);
  }
};

/// log(1 + exp(x)), linear above 20 (torch's default beta = 1, threshold = 20).
struct softplus : floating_result {
  template <class C, class A>
  CUFUSE_INLINE auto apply(A a) const {
    using T = opmath_t<cufuse::detail::floating_t<C>>;
    const T x = convert<T>(a);
    if (x > T(20)) {
      return x;
    }
    if constexpr (std::is_same_v<T, float>) {
      return ::log1pf(::expf(x));
    } else {
      return ::log1p(::exp(x));
    }
  }
};

} // namespace cufuse::ops
