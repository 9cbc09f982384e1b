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

/// x / (1 + exp(-y)), the shape of sigmoid, silu and gelu_tanh. Elsewhere than fp32 on the GPU
/// (and for double), the accurate form; fp32 on the GPU goes through over_one_plus_exp2.
template <class T>
CUFUSE_INLINE T over_one_plus_exp_neg(T x, T y) {
  return x / (T(1) + exp_(-y));
}

#if defined(__CUDA_ARCH__)
/// x / (1 + 2^z) in fp32 on the GPU: ex2.approx (its error grows with |z|, about 2 + 1.2 |z|
/// ulp) and rcp.approx, 4 instructions where expf and an IEEE division take about 30 (GEMM
/// epilogues evaluate one per output element: bench/JOURNAL.md e4, e5); the GPU tests hold it to
/// the same 1e-5 relative bound as the other fp32 functions. The .ftz forms: without it each
/// takes 3 more instructions to scale subnormals, and here flushing changes nothing: 2^z below
/// 2^-126 leaves 1 + 2^z = 1, and 1 + 2^z >= 1 is never subnormal. The limits hold: 2^z
/// overflowing to inf gives x * 0 (a signed zero), and a NaN stays NaN.
CUFUSE_INLINE float over_one_plus_exp2(float x, float z) {
  float e, r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(z));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + e));
  return x * r;
}
#endif

/// -1 / ln 2: exp(-y) = 2^(y * neg_log2e).
inline constexpr float neg_log2e = -1.44269504088896340736f;
} // namespace detail_act

/// 1 / (1 + exp(-x)).
struct sigmoid : floating_result {
  template <class C, class A>
  CUFUSE_INLINE auto apply(A a) const {
    using T = opmath_t<cufuse::detail::floating_t<C>>;
    const T x = convert<T>(a);
#if defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<T, float>) {
      return detail_act::over_one_plus_exp2(1.0f, x * detail_act::neg_log2e);
    }
#endif
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
#if defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<T, float>) {
      // 2^z with z = -log2(e) 2u = x (c0 + c1 x^2): the constants folded, 3 instructions.
      constexpr float c0 = float(-1.44269504088896340736 * 2 * 0.79788456080286535588);
      constexpr float c1 = float(-1.44269504088896340736 * 2 * 0.79788456080286535588 * 0.044715);
      return detail_act::over_one_plus_exp2(x, x * ::fmaf(c1, x * x, c0));
    }
#endif
    return detail_act::over_one_plus_exp_neg(x, k2 * (x + T(0.044715) * x * x * x));
  }
};

/// x * sigmoid(x).
struct silu : floating_result {
  template <class C, class A>
  CUFUSE_INLINE auto apply(A a) const {
    using T = opmath_t<cufuse::detail::floating_t<C>>;
    const T x = convert<T>(a);
#if defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<T, float>) {
      return detail_act::over_one_plus_exp2(x, x * detail_act::neg_log2e);
    }
#endif
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
