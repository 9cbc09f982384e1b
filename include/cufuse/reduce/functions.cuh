/// \file Normalizations written as ordinary expressions over the reductions (no hand-written
/// kernel for each): assigned to a destination of the operand's shape, each runs as ONE row
/// kernel (reduce/rows.cuh) when its axis is the innermost; `item` brings a value to the host.
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_REDUCE_FUNCTIONS_CUH
#endif

#include "../eval/assign.cuh"
#include "../expr/functions.cuh"
#include "node.cuh"

#include <vector>

namespace cufuse {

namespace ops {
/// e^x through the hardware's exp2 (`ex2.approx`, flushing results below 2^-126 to 0): two
/// instructions instead of expf's eight, within 2e-6 relative for x in [-20, 0] (the rounding
/// of x * log2(e) and ex2's own 2 ulp). softmax uses it for 16-bit inputs only, whose results
/// round to 8 (bf16) or 11 (half) bits, where the difference cannot show beyond one rounding.
struct exp_approx : floating_result {
  template <class C, class A>
  CUFUSE_INLINE auto apply(A a) const {
    using T = opmath_t<cufuse::detail::floating_t<C>>;
    const T x = convert<T>(a);
#if defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<T, float>) {
      float y;
      asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f));
      return y;
    } else {
      return T(::exp(x));
    }
#else
    if constexpr (std::is_same_v<T, float>) {
      return ::expf(x);
    } else {
      return T(::exp(x));
    }
#endif
  }
};
} // namespace ops

#ifndef CUFUSE_SOFTMAX_APPROX_EXP
#define CUFUSE_SOFTMAX_APPROX_EXP 1
#endif

/// exp(x - amax) / sum(exp(x - amax)) along `axis`, the maximum subtracted first (no overflow).
/// Written as exp(x - amax) * (1 / sum): in the row kernel the reciprocal is a row constant,
/// computed once per row, and each column costs a multiplication instead of a division (at
/// most one more rounding: the result is within 1.5 ulp of the quotient in float). For 16-bit
/// inputs the exponential is ops::exp_approx.
template <tensor_operand X>
auto softmax(const X& x, int axis) {
  const auto centred = x - amax(x, axis, keepdim);
  using T = typename decltype(detail::to_node(x))::value_type;
  if constexpr (CUFUSE_SOFTMAX_APPROX_EXP != 0 && detail::is_floating_v<T> && sizeof(T) == 2) {
    const auto e = detail::make_map("exp", ops::exp_approx{}, centred);
    return e * (1.0f / sum(e, axis, keepdim));
  } else {
    const auto e = exp(centred);
    return e * (1.0f / sum(e, axis, keepdim));
  }
}

/// x - logsumexp(x) along `axis`.
template <tensor_operand X>
auto log_softmax(const X& x, int axis) {
  return x - logsumexp(x, axis, keepdim);
}

/// (x - mean) / sqrt(var + eps) over the last axis (var without correction, as PyTorch), the
/// variance computed from the centred values (two passes over the row, on chip in the row
/// kernel). `square(c)` rather than `c * c`: the variance pass reads each element once.
template <tensor_operand X>
auto layer_norm(const X& x, float eps = 1e-5f) {
  const auto centred = x - mean(x, -1, keepdim);
  return centred * rsqrt(mean(square(centred), -1, keepdim) + eps);
}

/// layer_norm with a scale w and a shift b of the last axis's extent ([n]).
template <tensor_operand X, tensor_operand W, tensor_operand B>
auto layer_norm(const X& x, const W& w, const B& b, float eps = 1e-5f) {
  return layer_norm(x, eps) * w + b;
}

/// x / sqrt(mean(x^2) + eps) * w over the last axis.
template <tensor_operand X, tensor_operand W>
auto rms_norm(const X& x, const W& w, float eps = 1e-6f) {
  return x * rsqrt(mean(square(x), -1, keepdim) + eps) * w;
}

/// Evaluates a rank-0 expression (a full reduction: `item(sum(B * C))`) and returns its value on
/// the host. For a device expression this waits for the current stream.
template <tensor_operand E>
auto item(const E& e) {
  const auto n = detail::to_node(e);
  using N = decltype(n);
  static_assert(N::rank == 0, "cufuse::item: the expression must have rank 0 (a full reduction "
                              "such as sum(x), or a rank-0 tensor)");
  using T = typename N::value_type;
  using Space =
      std::conditional_t<std::is_same_v<typename N::space, host_space>, host_space, device_space>;
  tensor<T, 0, Space> t;
  cufuse::assign(t, n, current_stream());
  if constexpr (std::is_same_v<Space, host_space>) {
    return T(t());
  } else {
    return T(t.download()[0]);
  }
}

} // namespace cufuse

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_REDUCE_FUNCTIONS_CUH
#undef CUFUSE_DETAIL_FIRST_REDUCE_FUNCTIONS_CUH
#undef CUFUSE_DETAIL_FIRST
#include "../eval/assign.cuh"
#endif
