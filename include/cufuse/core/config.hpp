/// \file Annotation macros and the library version. Every cufuse header includes this first.
#pragma once

#if !defined(__CUDACC__)
#error "cufuse: these headers contain device code; compile this file with nvcc (as a .cu file)"
#endif

// nvcc 13 defaults to C++17; without this, the first thing to fail is a C++20 concept deep in a
// header, with a hundred errors after it. The preprocessor stops at an #error.
#if __cplusplus < 202002L
#error "cufuse needs C++20: compile with -std=c++20 (and --extended-lambda for map lambdas)"
#endif

#include <cstdint>

#define CUFUSE_VERSION_MAJOR 0
#define CUFUSE_VERSION_MINOR 1
#define CUFUSE_VERSION_PATCH 0
#define CUFUSE_VERSION_STRING "0.1.0"

/// Callable on the host and on the device.
#define CUFUSE_HOST_DEVICE __host__ __device__
/// Callable on the device only.
#define CUFUSE_DEVICE __device__
/// Inlined on both sides; used on the per-element evaluation path.
#define CUFUSE_INLINE __host__ __device__ __forceinline__

/// `#pragma unroll` for the device pass only (the host compiler would warn about it).
#if defined(__CUDA_ARCH__)
#define CUFUSE_UNROLL _Pragma("unroll")
#else
#define CUFUSE_UNROLL
#endif

namespace cufuse {
/// Signed type of extents, sizes and linear indices on the host (64-bit: tensors may exceed 2^31).
using index_t = std::int64_t;
} // namespace cufuse
