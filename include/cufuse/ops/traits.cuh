/// \file How ops derive types: the building blocks every functor family uses, with the
/// static_asserts that turn a dtype misuse into one readable line.
#pragma once

#include "../core/types.cuh"

#include <type_traits>

namespace cufuse::ops {

using detail::convert;
using detail::opmath_t;

/// Ops whose operands promote together (result_type) and whose result has that type.
struct promoting {
  template <class... P>
  using common = detail::promote_t<P...>;
  template <class C, class... V>
  using result = C;
};

/// Ops that always produce a floating result (integers and bool compute in float).
struct floating_result {
  template <class... P>
  using common = detail::promote_t<P...>;
  template <class C, class... V>
  using result = detail::floating_t<C>;
};

/// Ops that compare in the promoted type and produce bool.
struct bool_result {
  template <class... P>
  using common = detail::promote_t<P...>;
  template <class C, class... V>
  using result = bool;
};

template <class C>
struct require_numeric {
  static_assert(!std::is_same_v<C, bool>,
                "cufuse: arithmetic on bool operands; cast<int32_t>(...) first, or use && || !");
  using type = C;
};
template <class C>
struct require_integer {
  static_assert(detail::is_integer_v<C> || std::is_same_v<C, bool>,
                "cufuse: this operator needs integer (or bool) operands; it is not defined for "
                "floating types");
  using type = C;
};
template <class C>
struct require_strict_integer {
  static_assert(detail::is_integer_v<C>,
                "cufuse: this operator needs integer operands (int32_t, int64_t or uint8_t)");
  using type = C;
};

/// Promoting ops that reject bool.
struct numeric : promoting {
  template <class C, class... V>
  using result = typename require_numeric<C>::type;
};
/// Promoting ops that accept integers and bool only.
struct integral_only : promoting {
  template <class C, class... V>
  using result = typename require_integer<C>::type;
};
/// Promoting ops that accept integers only (not bool).
struct strict_integral_only : promoting {
  template <class C, class... V>
  using result = typename require_strict_integer<C>::type;
};

} // namespace cufuse::ops
