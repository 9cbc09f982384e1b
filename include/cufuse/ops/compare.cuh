/// \file Comparisons (bool results), logical and bitwise operators, where, cast.
#pragma once

#include "traits.cuh"

namespace cufuse::ops {

#define CUFUSE_COMPARE_OP(NAME, OP)                                                                \
  struct NAME : bool_result {                                                                      \
    template <class C, class A, class B>                                                           \
    CUFUSE_INLINE bool apply(A a, B b) const {                                                     \
      using T = opmath_t<C>;                                                                       \
      return convert<T>(a) OP convert<T>(b);                                                       \
    }                                                                                              \
  };
CUFUSE_COMPARE_OP(equal_to, ==)
CUFUSE_COMPARE_OP(not_equal_to, !=)
CUFUSE_COMPARE_OP(less, <)
CUFUSE_COMPARE_OP(less_equal, <=)
CUFUSE_COMPARE_OP(greater, >)
CUFUSE_COMPARE_OP(greater_equal, >=)
#undef CUFUSE_COMPARE_OP

struct logical_and : bool_result {
  template <class C, class A, class B>
  CUFUSE_INLINE bool apply(A a, B b) const {
    return convert<bool>(a) && convert<bool>(b);
  }
};
struct logical_or : bool_result {
  template <class C, class A, class B>
  CUFUSE_INLINE bool apply(A a, B b) const {
    return convert<bool>(a) || convert<bool>(b);
  }
};
struct logical_not : bool_result {
  template <class C, class A>
  CUFUSE_INLINE bool apply(A a) const {
    return !convert<bool>(a);
  }
};

#define CUFUSE_BITWISE_OP(NAME, OP)                                                                \
  struct NAME : integral_only {                                                                    \
    template <class C, class A, class B>                                                           \
    CUFUSE_INLINE C apply(A a, B b) const {                                                        \
      return C(convert<C>(a) OP convert<C>(b));                                                    \
    }                                                                                              \
  };
CUFUSE_BITWISE_OP(bit_and, &)
CUFUSE_BITWISE_OP(bit_or, |)
CUFUSE_BITWISE_OP(bit_xor, ^)
#undef CUFUSE_BITWISE_OP

/// ~x for integers; logical not for bool (as torch.bitwise_not).
struct bit_not : integral_only {
  template <class C, class A>
  CUFUSE_INLINE C apply(A a) const {
    if constexpr (std::is_same_v<C, bool>) {
      return !convert<bool>(a);
    } else {
      return C(~convert<C>(a));
    }
  }
};

/// x < 0, without a "pointless comparison" warning for unsigned types.
template <class C>
CUFUSE_INLINE bool is_negative(C x) {
  if constexpr (std::is_signed_v<C>) {
    return x < C(0);
  } else {
    return false;
  }
}

/// a << b; a shift by a negative amount or by the width or more gives 0.
struct shift_left : strict_integral_only {
  template <class C, class A, class B>
  CUFUSE_INLINE C apply(A a, B b) const {
    using U = std::make_unsigned_t<C>;
    const C x = convert<C>(a), s = convert<C>(b);
    if (is_negative(s) || s >= C(sizeof(C) * 8)) {
      return C(0);
    }
    return static_cast<C>(static_cast<U>(static_cast<U>(x) << s));
  }
};

/// a >> b (arithmetic for signed types); an out-of-range shift gives 0, or -1 for negative a.
struct shift_right : strict_integral_only {
  template <class C, class A, class B>
  CUFUSE_INLINE C apply(A a, B b) const {
    const C x = convert<C>(a), s = convert<C>(b);
    if (is_negative(s) || s >= C(sizeof(C) * 8)) {
      return is_negative(x) ? C(-1) : C(0);
    }
    return C(x >> s);
  }
};

/// where(cond, a, b): cond is read as bool; a and b promote together.
struct where {
  template <class P0, class P1, class P2>
  using common = cufuse::detail::promote_t<P1, P2>;
  template <class C, class... V>
  using result = C;
  template <class C, class Q, class A, class B>
  CUFUSE_INLINE opmath_t<C> apply(Q q, A a, B b) const {
    using T = opmath_t<C>;
    return convert<bool>(q) ? convert<T>(a) : convert<T>(b);
  }
};

/// Conversion to U (rounding to U's precision even when the value then feeds float math).
template <class U>
struct cast {
  template <class... P>
  using common = U;
  template <class C, class... V>
  using result = U;
  template <class C, class A>
  CUFUSE_INLINE U apply(A a) const {
    return convert<U>(a);
  }
};

} // namespace cufuse::ops
