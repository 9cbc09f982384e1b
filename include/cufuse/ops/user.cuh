/// \file user<F, R>: wraps a device-callable functor or lambda given to cufuse::map.
#pragma once

#include "traits.cuh"

#include <cstdint>
#include <type_traits>
#include <utility>

namespace cufuse::ops {

namespace detail_user {
/// Maps a functor's C++ return type onto a cufuse element type (long long -> int64_t, ...).
template <class R>
struct normalize {
  using D = std::remove_cvref_t<R>;
  static constexpr bool is_int = std::is_integral_v<D> && !std::is_same_v<D, bool>;
  using type = std::conditional_t<
      !is_int, D,
      std::conditional_t<std::is_signed_v<D>,
                         std::conditional_t<(sizeof(D) == 8), std::int64_t,
                                            std::conditional_t<(sizeof(D) == 4), std::int32_t, D>>,
                         std::conditional_t<(sizeof(D) == 1), std::uint8_t, D>>>;
  static_assert(cufuse::element_type<type>,
                "cufuse::map: the functor's return type is not a cufuse element type (float, "
                "double, __half, __nv_bfloat16, int32_t, int64_t, uint8_t or bool)");
};

template <class F>
constexpr bool is_device_only() {
#if defined(__CUDACC_EXTENDED_LAMBDA__)
  return __nv_is_extended_device_lambda_closure_type(F);
#else
  return false;
#endif
}

template <class F>
constexpr bool return_type_queryable() {
#if defined(__CUDACC_EXTENDED_LAMBDA__)
  return !__nv_is_extended_device_lambda_closure_type(F) ||
         __nv_is_extended_device_lambda_with_preserved_return_type(F);
#else
  return true;
#endif
}

} // namespace detail_user

/// Kernel parameters are copied bytewise: a functor must be trivially copyable, or an extended
/// lambda (whose wrapper nvcc knows how to pass).
template <class F>
constexpr bool kernel_copyable() {
#if defined(__CUDACC_EXTENDED_LAMBDA__)
  if (__nv_is_extended_host_device_lambda_closure_type(F) ||
      __nv_is_extended_device_lambda_closure_type(F)) {
    return true;
  }
#endif
  return std::is_trivially_copyable_v<F>;
}

namespace detail_user {
template <class R, class F, class... A>
struct result_of {
  using type = R; // given explicitly: map<R>(f, ...)
};
template <class F, class... A>
struct result_of<void, F, A...> {
  static_assert(return_type_queryable<F>(),
                "cufuse::map: the host cannot see the return type of a __device__ lambda; give "
                "it a trailing return type ([] __device__ (float x) -> float {...}), make it "
                "__host__ __device__, or name the result: cufuse::map<float>(f, ...)");
  // F&: nvcc's host stub of a __device__ lambda is non-const.
  static constexpr bool callable = std::is_invocable_v<F&, A...>;
  static_assert(callable, "cufuse::map: the functor cannot be called with the operands given to "
                          "map (one argument per operand, in order; check how many it takes)");
  // After that error, float stands in, so that no further error follows from it.
  using type = typename std::conditional_t<callable, std::invoke_result<F&, A...>,
                                           std::type_identity<float>>::type;
};
template <class R, class F, class... A>
struct callable_with : std::bool_constant<std::is_invocable_v<F&, A...>> {};
template <class F, class... A>
struct callable_with<void, F, A...> : std::bool_constant<result_of<void, F, A...>::callable> {};
} // namespace detail_user

/// Calls `f` on the operands' compute values (half/bf16 arrive as float, scalars as double or
/// int64_t). `R` = void deduces the result type from f.
template <class F, class R = void>
struct user {
  /// False for __device__-only lambdas: such an expression cannot run on host tensors.
  static constexpr bool host_callable = !detail_user::is_device_only<F>();

  template <class... P>
  using common = void;
  template <class C, class... V>
  using result = typename detail_user::normalize<
      typename detail_user::result_of<R, F, opmath_t<V>...>::type>::type;

  F f;

  template <class C, class... A>
  CUFUSE_INLINE auto apply(A... a) const {
    if constexpr (detail_user::callable_with<R, F, A...>::value) {
      return f(a...);
    } else { // map() has already said why (a static_assert): no second error from here
      return result<C, A...>{};
    }
  }
};

} // namespace cufuse::ops
