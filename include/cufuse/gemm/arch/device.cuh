/// \file What every GEMM kernel file includes: the kernel arguments, CUDA's types, and the
/// annotation of device-only helpers.
#pragma once

#include "../../core/config.hpp"
#include "../args.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

/// Device-only helpers of the GEMM kernels.
#define CUFUSE_DEVICE_FN __device__ __forceinline__
