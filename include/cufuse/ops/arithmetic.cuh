/// \file + - * / % and unary minus, abs, min, max, clamp, fma, pow.
/// Integer / and % truncate toward zero as in C++; dividing by zero gives 0 (no trap on either
/// side), and INT_MIN / -1 wraps.
#pragma once

#include "traits.cuh"

#include <cmath>

namespace cufuse::ops {

struct plus : numeric {
  template <class C, class A, class B>
  CUFUSE_INLINE opmath_t<C> apply(A a, B b) const {
    using T = opmath_t<C>;
    return T(convert<T>(a) + convert<T>(b));
  }
};

struct minus : numeric {
  template <class C, class A, class B>
  CUFUSE_INLINE opmath_t<C> apply(A a, B b) const {
    using T = opmath_t<C>;
    return T(convert<T>(a) - convert<T>(b));
  }
};

struct multiplies : numeric {
  template <class C, class A, class B>
  CUFUSE_INLINE opmath_t<C> apply(A a, B b) const {
    using T = opmath_t<C>;
    return T(convert<T>(a) * convert<T>(b));
  }
};

struct divides : numeric {
  template <class C, class A, class B>
  CUFUSE_INLINE opmath_t<C> apply(A a, B b) const {
    using T = opmath_t<C>;
    const T x = convert<T>(a), y = convert<T>(b);
    if constexpr (detail::is_integer_v<T>) {
      if (y == T(0)) {
        return T(0);
      }
      if constexpr (std::is_signed_v<T>) {
        if (y == T(-1)) {
          return T(T(0) - static_cast<std::make_unsigned_t<T>>(x)); // wraps for INT_MIN
        }
      }
      return T(x / y);
    } else {
      return x / y;
    }
  }
};

struct modulus : strict_integral_only {
  template <class C, class A, class B>
  CUFUSE_INLINE C apply(A a, B b) const {
    const C x = convert<C>(a), y = convert<C>(b);
    if constexpr (std::is_signed_v<C>) {
      if (y == C(0) || y == C(-1)) {
        return C(0);
      }
    } else {
      if (y == C(0)) {
        return C(0);
      }
    }
    return C(x % y);
  }
};

struct negate : numeric {
  template <class C, class A>
  CUFUSE_INLINE opmath_t<C> apply(A a) const {
    using T = opmath_t<C>;
    if constexpr (detail::is_integer_v<T>) {
      return T(T(0) - static_cast<std::make_unsigned_t<T>>(convert<T>(a)));
    } else {
      return -convert<T>(a);
    }
  }
};

/// x * x (torch.square): one read of x where `x * x` names it twice.
struct square : numeric {
  template <class C, class A>
  CUFUSE_INLINE opmath_t<C> apply(A a) const {
    using T = opmath_t<C>;
    const T x = convert<T>(a);
    return T(x * x);
  }
};

struct abs : numeric {
  template <class C, class A>
  CUFUSE_INLINE opmath_t<C> apply(A a) const {
    using T = opmath_t<C>;
    const T x = convert<T>(a);
    if constexpr (std::is_same_v<T, float>) {
      return ::fabsf(x);
    } else if constexpr (std::is_same_v<T, double>) {
      return ::fabs(x);
    } else if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else {
      return x < T(0) ? T(T(0) - static_cast<std::make_unsigned_t<T>>(x)) : x;
    }
  }
};

namespace detail_arith {
template <class T>
CUFUSE_INLINE bool is_nan(T x) {
  if constexpr (cufuse::detail::is_floating_v<T>) {
    return x != x;
  } else {
    return false;
  }
}
} // namespace detail_arith

/// Elementwise maximum; NaN propagates (as torch.maximum).
struct maximum : numeric {
  template <class C, class A, class B>
  CUFUSE_INLINE opmath_t<C> apply(A a, B b) const {
    using T = opmath_t<C>;
    const T x = convert<T>(a), y = convert<T>(b);
    if (detail_arith::is_nan(x)) {
      return x;
    }
    if (detail_arith::is_nan(y)) {
      return y;
    }
    return x > y ? x : y;
  }
};

/// Elementwise minimum; NaN propagates (as torch.minimum).
struct minimum : numeric {
  template <class C, class A, class B>
  CUFUSE_INLINE opmath_t<C> apply(A a, B b) const {
    using T = opmath_t<C>;
    const T x = convert<T>(a), y = convert<T>(b);
    if (detail_arith::is_nan(x)) {
      return x;
    }
    if (detail_arith::is_nan(y)) {
      return y;
    }
    return x < y ? x : y;
  }
};

/// min(max(x, lo), hi), as torch.clamp: NaN in x propagates; lo > hi gives hi.
struct clamp : numeric {
  template <class C, class A, class L, class H>
  CUFUSE_INLINE opmath_t<C> apply(A a, L lo, H hi) const {
    return minimum{}.apply<C>(maximum{}.apply<C>(a, lo), hi);
  }
};

/// a * b + c; one rounding for floating types.
struct fma : numeric {
  template <class C, class A, class B, class D>
  CUFUSE_INLINE opmath_t<C> apply(A a, B b, D c) const {
    using T = opmath_t<C>;
    const T x = convert<T>(a), y = convert<T>(b), z = convert<T>(c);
    if constexpr (std::is_same_v<T, float>) {
      return ::fmaf(x, y, z);
    } else if constexpr (std::is_same_v<T, double>) {
      return ::fma(x, y, z);
    } else {
      return T(x * y + z);
    }
  }
};

/// a to the power b. Integers: exact by squaring (a negative exponent gives 0 unless |a| = 1).
struct pow : numeric {
  template <class C, class A, class B>
  CUFUSE_INLINE opmath_t<C> apply(A a, B b) const {
    using T = opmath_t<C>;
    const T x = convert<T>(a), y = convert<T>(b);
    if constexpr (std::is_same_v<T, float>) {
      return ::powf(x, y);
    } else if constexpr (std::is_same_v<T, double>) {
      return ::pow(x, y);
    } else {
      if constexpr (std::is_signed_v<T>) {
        if (y < T(0)) {
          return x == T(1) ? T(1) : (x == T(-1) ? ((y & T(1)) ? T(-1) : T(1)) : T(0));
        }
      }
      using U = std::make_unsigned_t<T>;
      U base = static_cast<U>(x), result = 1;
      for (U e = static_cast<U>(y); e != 0; e >>= 1) {
        if (e & 1u) {
          result = U(result * base);
        }
        base = U(base * base);
      }
      return static_cast<T>(result);
    }
  }
};

} // namespace cufuse::ops
