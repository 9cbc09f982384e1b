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

/// Types accepted as (weak) scalars in expressions: `A * 2`, `A + 1.5f`.
template <class S>
concept scalar_type = std::is_arithmetic_v<S>;

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

/// Marks a weak operand (a C++ scalar): it only raises the result's category, never its width.
template <class T>
struct weak {};

template <class P>
struct unweak {
  using type = P;
};
template <class T>
struct unweak<weak<T>> {
  using type = T;
};

template <class P>
inline constexpr bool is_weak_v = false;
template <class T>
inline constexpr bool is_weak_v<weak<T>> = true;

/// Normalised weak form of a C++ scalar type: weak<double>, weak<int64_t> or weak<bool>.
template <class S>
using weak_of =
    weak<std::conditional_t<std::same_as<S, bool>, bool,
                            std::conditional_t<std::is_floating_point_v<S>, double, std::int64_t>>>;

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

/// Strong types only (no weak scalar); void means "none yet".
template <class Acc, class P>
struct fold_strong {
  using type = Acc;
};
template <class P>
  requires(!is_weak_v<P>)
struct fold_strong<void, P> {
  using type = P;
};
template <class Acc, class P>
  requires(!std::same_as<Acc, void> && !is_weak_v<P>)
struct fold_strong<Acc, P> {
  using type = typename promote_strong2<Acc, P>::type;
};

template <class P>
inline constexpr int weak_category_v = -1;
template <class T>
inline constexpr int weak_category_v<weak<T>> = category_v<T>;

template <int C>
using default_of_category =
    std::conditional_t<C == 2, float, std::conditional_t<C == 1, std::int64_t, bool>>;

template <class Strong, int WeakCat>
struct apply_weak {
  using type =
      std::conditional_t<(WeakCat > category_v<Strong>), default_of_category<WeakCat>, Strong>;
};
template <int WeakCat>
struct apply_weak<void, WeakCat> {
  using type = default_of_category<(WeakCat < 0 ? 0 : WeakCat)>;
};

template <class Acc, class... Ps>
struct fold_all;
template <class Acc>
struct fold_all<Acc> {
  using type = Acc;
};
template <class Acc, class P, class... Ps>
struct fold_all<Acc, P, Ps...> {
  using type = typename fold_all<typename fold_strong<Acc, P>::type, Ps...>::type;
};

template <class... Ps>
inline constexpr int max_weak_category_v = [] {
  int c = -1;
  ((c = weak_category_v<Ps> > c ? weak_category_v<Ps> : c), ...);
  return c;
}();

/// result_type over promotion types (element types, or weak<S> for scalars).
template <class... Ps>
using promote_t =
    typename apply_weak<typename fold_all<void, Ps...>::type, max_weak_category_v<Ps...>>::type;

/// Floating result for math functions: integers and bool become float (PyTorch's default dtype).
template <class T>
using floating_t = std::conditional_t<is_floating_v<T>, T, float>;

} // namespace detail
} // namespace cufuse
