/// \file Operator overloads that build expression nodes. At least one operand must be a tensor,
/// view or expression; the others may be C++ scalars (weak in promotion).
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_EXPR_OPERATORS_CUH
#endif

#include "../ops/arithmetic.cuh"
#include "../ops/compare.cuh"
#include "node.cuh"

namespace cufuse {

#define CUFUSE_BINARY_OPERATOR(SYMBOL, OP)                                                         \
  template <operand A, operand B>                                                                  \
    requires(tensor_operand<A> || tensor_operand<B>)                                               \
  auto operator SYMBOL(const A& a, const B& b) {                                                   \
    return detail::make_map("operator" #SYMBOL, ops::OP{}, a, b);                                  \
  }

CUFUSE_BINARY_OPERATOR(+, plus)
CUFUSE_BINARY_OPERATOR(-, minus)
CUFUSE_BINARY_OPERATOR(*, multiplies)
CUFUSE_BINARY_OPERATOR(/, divides)
CUFUSE_BINARY_OPERATOR(%, modulus)
CUFUSE_BINARY_OPERATOR(==, equal_to)
CUFUSE_BINARY_OPERATOR(!=, not_equal_to)
CUFUSE_BINARY_OPERATOR(<, less)
CUFUSE_BINARY_OPERATOR(<=, less_equal)
CUFUSE_BINARY_OPERATOR(>, greater)
CUFUSE_BINARY_OPERATOR(>=, greater_equal)
CUFUSE_BINARY_OPERATOR(&&, logical_and)
CUFUSE_BINARY_OPERATOR(||, logical_or)
CUFUSE_BINARY_OPERATOR(&, bit_and)
CUFUSE_BINARY_OPERATOR(|, bit_or)
CUFUSE_BINARY_OPERATOR(^, bit_xor)
CUFUSE_BINARY_OPERATOR(<<, shift_left)
CUFUSE_BINARY_OPERATOR(>>, shift_right)
#undef CUFUSE_BINARY_OPERATOR

template <tensor_operand A>
auto operator-(const A& a) {
  return detail::make_map("unary operator-", ops::negate{}, a);
}
template <tensor_operand A>
auto operator+(const A& a) {
  return detail::to_node(a);
}
template <tensor_operand A>
auto operator!(const A& a) {
  return detail::make_map("operator!", ops::logical_not{}, a);
}
template <tensor_operand A>
auto operator~(const A& a) {
  return detail::make_map("operator~", ops::bit_not{}, a);
}

} // namespace cufuse

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_EXPR_OPERATORS_CUH
#undef CUFUSE_DETAIL_FIRST_EXPR_OPERATORS_CUH
#undef CUFUSE_DETAIL_FIRST
#include "../eval/assign.cuh"
#endif
