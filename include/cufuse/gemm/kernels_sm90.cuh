/// \file The Hopper (sm_90a) GEMM kernels: wgmma (kernel/wgmma.cuh) and TF32 mma.sync fed by
/// TMA (kernel/mma_tma.cuh), with every kernel of kernels.cuh. Compiled only for sm_90a
/// (src/CMakeLists.txt).
#pragma once

#include "kernel/mma_tma.cuh"
#include "kernel/wgmma.cuh"
#include "kernels.cuh"
