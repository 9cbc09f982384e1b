/// \file Element types, the compute ("opmath") type, conversions and PyTorch-style promotion.
#pragma once

#include "config.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <concepts>
#include <cstdint>
#include <cuda/std/limits>
#include <string_view>
#include <type_traits>

namespace cufuse {

/// The element types a tensor may hold.
template <class T>
concept element_type =
    std::same_as<T, float> || std::same_as<T, double> || std::same_as<T, __half> ||
    std::same_as<T, __nv_bfloat16> || std::same_as<T, std::int32_t> ||
    std::same_as<T, std::int64_t> || std::same_as<T, std::uint8_t> || std::same_as<T, bool>;

/// Types accepted as (weak) scalars in expressions and fills: `A * 2`, `A + 1.5f`,
/// `X * __float2half(2.0f)`, `H.fill(__float2bfloat16(0.5f))`. A scalar never widens a tensor's
/// type within its category (PyTorch's "wrapped number" rule): `half_tensor * 2.0` stays half.
template <class S>
concept scalar_type =
    std::is_arithmetic_v<S> || std::same_as<S, __half> || std::same_as<S, __nv_bfloat16>;

/// Printable name of an element type ("float", "bf16", ...).
template <class T>
constexpr std::string_view type_name() {
  if constexpr (std::same_as<T, float>) {
    return "float";
  } else if constexpr (std::same_as<T, double>) {
    return "double";
  } else if constexpr (std::same_as<T, __half>) {
    return "half";
  } else if constexpr (std::same_as<T, __nv_bfloat16>) {
    return "bf16";
  } else if constexpr (std::same_as<T, std::int32_t>) {
    return "int32";
  } else if constexpr (std::same_as<T, std::int64_t>) {
    return "int64";
  } else if constexpr (std::same_as<T, std::uint8_t>) {
    return "uint8";
  } else if constexpr (std::same_as<T, bool>) {
    return "bool";
  } else {
    return "unsupported";
  }
}

namespace detail {

template <class T>
inline constexpr bool is_reduced_float_v =
    std::same_as<T, __half> || std::same_as<T, __nv_bfloat16>;

template <class T>
inline constexpr bool is_floating_v = std::is_floating_point_v<T> || is_reduced_float_v<T>;

template <class T>
inline constexpr bool is_integer_v = std::is_integral_v<T> && !std::same_as<T, bool>;

/// Promotion category, as in PyTorch: bool < integer < floating.
template <class T>
inline constexpr int category_v = std::same_as<T, bool> ? 0 : (is_integer_v<T> ? 1 : 2);

/// Type in which arithmetic on T is done: half and bf16 compute in float.
template <class T>
struct opmath {
  using type = T;
};
template <>
struct opmath<__half> {
  using type = float;
};
template <>
struct opmath<__nv_bfloat16> {
  using type = float;
};
template <class T>
using opmath_t = typename opmath<T>::type;

/// Converts between element/compute types. Floating to integer saturates and maps NaN to 0 (the
/// same on host and device, so a host tensor and a device tensor give the same answer).
template <class To, class From>
CUFUSE_INLINE To convert(From x) {
  if constexpr (std::same_as<To, From>) {
    return x;
  } else if constexpr (std::same_as<From, __half> || std::same_as<From, __nv_bfloat16>) {
    return convert<To>(static_cast<float>(x));
  } else if constexpr (std::same_as<To, __half>) {
    if constexpr (std::same_as<From, double>) {
      return __double2half(x);
    } else {
      return __float2half_rn(static_cast<float>(x));
    }
  } else if constexpr (std::same_as<To, __nv_bfloat16>) {
    if constexpr (std::same_as<From, double>) {
      return __double2bfloat16(x);
    } else {
      return __float2bfloat16_rn(static_cast<float>(x));
    }
  } else if constexpr (std::same_as<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (x != x) {
      return To(0);
    }
    // Compare in From: the bounds are exact powers of two (or 0), representable in float/double.
    constexpr From lo = static_cast<From>(cuda::std::numeric_limits<To>::min());
    constexpr From hi = static_cast<From>(cuda::std::numeric_limits<To>::max());
    if (x <= lo) {
      return cuda::std::numeric_limits<To>::min();
    }
    if (x >= hi) {
      return cuda::std::numeric_limits<To>::max();
    }
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

// ---- promotion (PyTorch's result_type) ------------------------------------------------------
//
// Three tiers, as in PyTorch: dimensioned operands (rank >= 1), zero-dimensional ones (rank-0
// tensors, and expressions made only of them) and wrapped numbers (C++ scalars). A lower tier
// changes the result only when it is of a higher category (bool < integer < floating).

/// Marks a weak operand (a C++ scalar): it only raises the result's category, never its width.
template <class T>
struct weak {};
/// Marks a zero-dimensional operand: it wins within its category only over scalars.
template <class T>
struct zero_dim {};

template <class P>
inline constexpr bool is_weak_v = false;
template <class T>
inline constexpr bool is_weak_v<weak<T>> = true;
template <class P>
inline constexpr bool is_zero_dim_v = false;
template <class T>
inline constexpr bool is_zero_dim_v<zero_dim<T>> = true;

/// The element type behind a promotion tag.
template <class P>
struct unweak {
  using type = P;
};
template <class T>
struct unweak<weak<T>> {
  using type = T;
};
template <class T>
struct unweak<zero_dim<T>> {
  using type = T;
};

/// Normalised weak form of a C++ scalar type: weak<double>, weak<int64_t> or weak<bool>.
template <class S>
using weak_of =
    weak<std::conditional_t<std::same_as<S, bool>, bool,
                            std::conditional_t<std::is_floating_point_v<S> || is_reduced_float_v<S>,
                                               double, std::int64_t>>>;

template <class A, class B>
struct promote_strong2;

template <class A, class B>
  requires std::same_as<A, B>
struct promote_strong2<A, B> {
  using type = A;
};

template <class A, class B>
  requires(!std::same_as<A, B>)
struct promote_strong2<A, B> {
  static constexpr int ca = category_v<A>, cb = category_v<B>;
  using type = std::conditional_t<
      (ca > cb), A,
      std::conditional_t<(cb > ca), B,
                         std::conditional_t<
                             // same category, different types
                             (is_reduced_float_v<A>&& is_reduced_float_v<B>), float,
                             std::conditional_t<(sizeof(A) >= sizeof(B)), A, B>>>>;
};

/// Promotes two element types, either of which may be void ("none yet").
template <class A, class B>
struct promote_or_void {
  using type = typename promote_strong2<A, B>::type;
};
template <class B>
struct promote_or_void<void, B> {
  using type = B;
};
template <class A>
struct promote_or_void<A, void> {
  using type = A;
};
template <>
struct promote_or_void<void, void> {
  using type = void;
};

/// The promoted element type of one tier (void when no operand is in that tier). Wrapped
/// numbers of the floating category become float (PyTorch's default dtype), integers int64.
template <template <class> class Tier, class... Ps>
struct tier_result;
template <template <class> class Tier>
struct tier_result<Tier> {
  using type = void;
};
template <template <class> class Tier, class P, class... Ps>
struct tier_result<Tier, P, Ps...> {
  using rest = typename tier_result<Tier, Ps...>::type;
  using type = typename promote_or_void<typename Tier<P>::type, rest>::type;
};
template <class P>
struct dim_tier {
  using type = std::conditional_t<is_weak_v<P> || is_zero_dim_v<P>, void, P>;
};
template <class P>
struct zero_tier {
  using type = void;
};
template <class T>
struct zero_tier<zero_dim<T>> {
  using type = T;
};
template <class P>
struct wrapped_tier {
  using type = void;
};
template <class T>
struct wrapped_tier<weak<T>> {
  using type = std::conditional_t<std::same_as<T, double>, float, T>;
};

/// PyTorch's combine_categories: the higher tier's type, unless the lower tier is of a higher
/// category.
template <class Higher, class Lower>
struct combine_tiers {
  using type =
      std::conditional_t<is_floating_v<Higher>, Higher,
                         std::conditional_t<(std::same_as<Higher, bool> || is_floating_v<Lower>),
                                            typename promote_strong2<Higher, Lower>::type, Higher>>;
};
template <class Lower>
struct combine_tiers<void, Lower> {
  using type = Lower;
};
template <class Higher>
struct combine_tiers<Higher, void> {
  using type = Higher;
};
template <>
struct combine_tiers<void, void> {
  using type = bool;
};

/// result_type over promotion types: element types (dimensioned), zero_dim<T>, weak<S>.
template <class... Ps>
using promote_t = typename combine_tiers<
    typename tier_result<dim_tier, Ps...>::type,
    typename combine_tiers<typename tier_result<zero_tier, Ps...>::type,
                           typename tier_result<wrapped_tier, Ps...>::type>::type>::type;

/// Floating result for math functions: integers and bool become float (PyTorch's default dtype).
template <class T>
using floating_t = std::conditional_t<is_floating_v<T>, T, float>;

} // namespace detail
} // namespace cufuse
