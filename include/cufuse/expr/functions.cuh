/// \file Free functions that build expression nodes: math, activations, where, cast, map.
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_EXPR_FUNCTIONS_CUH
#endif

#include "../ops/activation.cuh"
#include "../ops/arithmetic.cuh"
#include "../ops/compare.cuh"
#include "../ops/math.cuh"
#include "../ops/user.cuh"
#include "node.cuh"

namespace cufuse {

#define CUFUSE_UNARY_FUNCTION(NAME)                                                                \
  /** Elementwise NAME of an expression, tensor or view. */                                        \
  template <tensor_operand A>                                                                      \
  auto NAME(const A& a) {                                                                          \
    return detail::make_map(#NAME, ops::NAME{}, a);                                                \
  }

CUFUSE_UNARY_FUNCTION(abs)
CUFUSE_UNARY_FUNCTION(square)
CUFUSE_UNARY_FUNCTION(sqrt)
CUFUSE_UNARY_FUNCTION(rsqrt)
CUFUSE_UNARY_FUNCTION(cbrt)
CUFUSE_UNARY_FUNCTION(exp)
CUFUSE_UNARY_FUNCTION(exp2)
CUFUSE_UNARY_FUNCTION(expm1)
CUFUSE_UNARY_FUNCTION(log)
CUFUSE_UNARY_FUNCTION(log2)
CUFUSE_UNARY_FUNCTION(log10)
CUFUSE_UNARY_FUNCTION(log1p)
CUFUSE_UNARY_FUNCTION(sin)
CUFUSE_UNARY_FUNCTION(cos)
CUFUSE_UNARY_FUNCTION(tan)
CUFUSE_UNARY_FUNCTION(asin)
CUFUSE_UNARY_FUNCTION(acos)
CUFUSE_UNARY_FUNCTION(atan)
CUFUSE_UNARY_FUNCTION(sinh)
CUFUSE_UNARY_FUNCTION(cosh)
CUFUSE_UNARY_FUNCTION(tanh)
CUFUSE_UNARY_FUNCTION(erf)
CUFUSE_UNARY_FUNCTION(erfc)
CUFUSE_UNARY_FUNCTION(floor)
CUFUSE_UNARY_FUNCTION(ceil)
CUFUSE_UNARY_FUNCTION(round)
CUFUSE_UNARY_FUNCTION(trunc)
CUFUSE_UNARY_FUNCTION(sigmoid)
CUFUSE_UNARY_FUNCTION(relu)
CUFUSE_UNARY_FUNCTION(gelu)
CUFUSE_UNARY_FUNCTION(gelu_tanh)
CUFUSE_UNARY_FUNCTION(silu)
CUFUSE_UNARY_FUNCTION(softplus)
#undef CUFUSE_UNARY_FUNCTION

/// Elementwise a^b; either may be a scalar.
template <operand A, operand B>
  requires(tensor_operand<A> || tensor_operand<B>)
auto pow(const A& a, const B& b) {
  return detail::make_map("pow", ops::pow{}, a, b);
}
/// Elementwise atan2(y, x), a floating result.
template <operand A, operand B>
  requires(tensor_operand<A> || tensor_operand<B>)
auto atan2(const A& y, const B& x) {
  return detail::make_map("atan2", ops::atan2{}, y, x);
}
/// Elementwise minimum (NaN propagates).
template <operand A, operand B>
  requires(tensor_operand<A> || tensor_operand<B>)
auto min(const A& a, const B& b) {
  return detail::make_map("min", ops::minimum{}, a, b);
}
/// Elementwise maximum (NaN propagates).
template <operand A, operand B>
  requires(tensor_operand<A> || tensor_operand<B>)
auto max(const A& a, const B& b) {
  return detail::make_map("max", ops::maximum{}, a, b);
}
/// a * b + c, fused (one rounding) for floating types.
template <operand A, operand B, operand C>
  requires(tensor_operand<A> || tensor_operand<B> || tensor_operand<C>)
auto fma(const A& a, const B& b, const C& c) {
  return detail::make_map("fma", ops::fma{}, a, b, c);
}
/// min(max(x, lo), hi), as torch.clamp.
template <operand X, operand L, operand H>
  requires(tensor_operand<X> || tensor_operand<L> || tensor_operand<H>)
auto clamp(const X& x, const L& lo, const H& hi) {
  return detail::make_map("clamp", ops::clamp{}, x, lo, hi);
}
/// cond ? a : b elementwise; cond is read as bool, a and b promote together.
template <operand Q, operand A, operand B>
  requires(tensor_operand<Q> || tensor_operand<A> || tensor_operand<B>)
auto where(const Q& cond, const A& a, const B& b) {
  return detail::make_map("where", ops::where{}, cond, a, b);
}
/// Converts to element type U (rounds to U even inside a longer float computation).
template <class U, operand A>
  requires tensor_operand<A>
auto cast(const A& a) {
  static_assert(element_type<U>, "cufuse::cast<U>: U must be float, double, __half, "
                                 "__nv_bfloat16, int32_t, int64_t, uint8_t or bool");
  return detail::make_map("cast", ops::cast<U>{}, a);
}

/// Applies a device-callable functor or lambda elementwise: `map(f, A, B, 2.0f)`. The functor
/// receives compute values (half/bf16 as float, scalars as double or int64_t); its return type
/// is the expression's element type. For a __device__ lambda write a trailing return type, or
/// name the result type with map<R>(f, ...).
template <class F, operand... Xs>
  requires(!element_type<F> && (tensor_operand<Xs> || ...))
auto map(F f, const Xs&... xs) {
  static_assert(ops::kernel_copyable<F>(),
                "cufuse::map: the functor must be trivially copyable (it is a kernel parameter)");
  return detail::make_map("map", ops::user<F>{f}, xs...);
}
/// map with the result element type R named explicitly.
template <class R, class F, operand... Xs>
  requires(element_type<R> && (tensor_operand<Xs> || ...))
auto map(F f, const Xs&... xs) {
  static_assert(ops::kernel_copyable<F>(),
                "cufuse::map: the functor must be trivially copyable (it is a kernel parameter)");
  return detail::make_map("map", ops::user<F, R>{f}, xs...);
}

/// The expression node of a tensor, view or expression: pass it to your own kernels by value
/// and read element i with `node[i]` on the device.
template <tensor_operand X>
auto as_expression(const X& x) {
  return detail::to_node(x);
}

} // namespace cufuse

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_EXPR_FUNCTIONS_CUH
#undef CUFUSE_DETAIL_FIRST_EXPR_FUNCTIONS_CUH
#undef CUFUSE_DETAIL_FIRST
#include "../eval/assign.cuh"
#endif
