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
} // namespace detail_act

/// 1 / (1 + exp(-x)).
struct sigmoid : floating_result {
  template <class C, class A>
  CUFUSE_INLINE auto apply(A a) const {
    using T = opmath_t<cufuse::detail::floating_t<C>>;
    const T x = convert<T>(a);
    return T(1) / (T(1) + detail_act::exp_(-x));
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

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as torch's gelu(approximate='tanh').
struct gelu_tanh : floating_result {
  template <class C, class A>
  CUFUSE_INLINE auto apply(A a) const {
    using T = opmath_t<cufuse::detail::floating_t<C>>;
    const T x = convert<T>(a);
    constexpr T k = T(0.79788456080286535588); // sqrt(2/pi)
    const T inner = k * (x + T(0.044715) * x * x * x);
    if constexpr (std::is_same_v<T, float>) {
      return T(0.5) * x * (T(1) + ::tanhf(inner));
    } else {
      return T(0.5) * x * (T(1) + ::tanh(inner));
    }
  }
};

/// x * sigmoid(x).
struct silu : floating_result {
  template <class C, class A>
  CUFUSE_INLINE auto apply(A a) const {
    using T = opmath_t<cufuse::detail::floating_t<C>>;
    const T x = convert<T>(a);
    return x / (T(1) + detail_act::exp_(-x));
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
