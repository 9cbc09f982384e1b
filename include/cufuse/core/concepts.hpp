/// \file The Expression concept: what every node of an expression tree provides.
#pragma once

#include "config.hpp"

#include <type_traits>

namespace cufuse {

/// Memory space of a tensor: device (GPU) memory.
struct device_space {
  static constexpr const char* name = "device";
};
/// Memory space of a tensor: ordinary host memory, evaluated on the CPU.
struct host_space {
  static constexpr const char* name = "host";
};
/// Space of an expression made only of scalars (fits either side).
struct any_space {};

/// A node of an expression tree: a value type, a rank, a memory space, and evaluation at a
/// linear index (`eval`, compute type; `operator[]`, value type). Nodes are trivially copyable,
/// except those holding an extended __host__ __device__ lambda, which nvcc still passes to
/// kernels by value.
template <class E>
concept expression = requires {
  typename E::value_type;
  typename E::promo_type;
  typename E::space;
  { E::rank } -> std::convertible_to<int>;
  requires E::is_cufuse_node;
};

} // namespace cufuse
