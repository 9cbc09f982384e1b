/// \file The one generic evaluation kernel: instantiated once per (destination, expression) type
/// and launch policy. Each thread evaluates the whole expression tree in registers.
#pragma once

#include "../memory/tensor_view.cuh"

namespace cufuse::detail {

/// Threads per block of every evaluation kernel.
inline constexpr int eval_block_size = 256;

/// Blocks per SM to ask the register allocator for. A thread of an expression that reads at
/// most two tensors has at most two 16-byte loads in flight, so the SM needs every warp
/// (8 x 256 threads: at most 32 registers) to keep enough bytes moving; with more inputs each
/// thread has more loads in flight, and capping registers would only cause spills.
/// Measured (H200): fp32 GELU-dropout took 40 registers (75% occupancy) and ran 8% below a
/// hand-written kernel; capping the 5-input quickstart kernel at 32 registers spilled.
template <class Expr>
inline constexpr int eval_min_blocks = Expr::leaf_count <= 2 ? 8 : 1;

/// dst[i] = expr[i] for i in [0, n). V > 1: 16-byte vectorized loads and stores of V elements
/// per step (every pointer 16-byte aligned), a scalar tail; V == 1: one element per step.
/// `I` is int32_t when every index fits (cheaper address arithmetic), else int64_t.
template <int V, class I, class Dst, class Expr>
__global__ void __launch_bounds__(eval_block_size, eval_min_blocks<Expr>)
    evaluate_kernel(Dst dst, Expr expr, I n) {
  using T = typename Dst::value_type;
  const I stride = static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
  const I tid = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + threadIdx.x;
  if constexpr (V == 1) {
    for (I i = tid; i < n; i += stride) {
      dst.ptr[i] = convert<T>(expr.eval(i));
    }
  } else {
    const I nvec = n / V;
    for (I vi = tid; vi < nvec; vi += stride) {
      const auto lanes = expr.template fetch<V>(vi);
      lane_regs<T, V> out;
      CUFUSE_UNROLL
      for (int k = 0; k < V; ++k) {
        out.v[k] = convert<T>(lanes.at(k));
      }
      dst.template store_vec<V>(vi, out);
    }
    const I tail = n - nvec * V; // fewer than V elements
    if (tid < tail) {
      const I i = nvec * V + tid;
      dst.ptr[i] = convert<T>(expr.eval(i));
    }
  }
}

} // namespace cufuse::detail
