/// \file cuBLAS as the reference peer of cufuse::gemm in the tool, the tests and the benchmark
/// (never used by the library). Maps a row-major problem to cuBLAS's column-major call:
/// C^T (n x m) = op(B)^T op(A)^T.
#pragma once

#include <cufuse/gemm.cuh>

#include <cublas_v2.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace cufuse_tools {

inline void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cuBLAS: ") + what + " failed with status " +
                             std::to_string(int(s)));
  }
}

inline cudaDataType_t cuda_type(cufuse::gemm_dtype t) {
  using dtype = cufuse::gemm_dtype;
  return t == dtype::f32 ? CUDA_R_32F : (t == dtype::f16 ? CUDA_R_16F : CUDA_R_16BF);
}

/// One strided-batched cuBLAS GEMM of the same problem cufuse would run.
inline void cublas_gemm(cublasHandle_t h, const cufuse::gemm_problem& p, cudaStream_t stream) {
  using dtype = cufuse::gemm_dtype;
  check_cublas(cublasSetStream(h, stream), "cublasSetStream");
  const cublasComputeType_t compute = p.ab == dtype::f32 && p.math == cufuse::gemm_math::tf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  check_cublas(cublasGemmStridedBatchedEx(
                   h, p.b.trans ? CUBLAS_OP_T : CUBLAS_OP_N, p.a.trans ? CUBLAS_OP_T : CUBLAS_OP_N,
                   int(p.n), int(p.m), int(p.k), &p.alpha, p.b.ptr, cuda_type(p.ab), int(p.b.ld),
                   p.b.batch_stride, p.a.ptr, cuda_type(p.ab), int(p.a.ld), p.a.batch_stride,
                   &p.beta, p.c, cuda_type(p.out), int(p.ldc), p.stride_c, int(p.batch), compute,
                   CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
}

/// A cuBLAS handle with the 32 MiB workspace PyTorch sets on Hopper, so that cuBLAS runs the
/// kernels it runs under PyTorch (the benchmarks' reference GEMMs).
class cublas_with_workspace {
public:
  cublas_with_workspace() {
    check_cublas(cublasCreate(&h_), "cublasCreate");
    if (cudaMalloc(&ws_, bytes) != cudaSuccess) {
      cublasDestroy(h_);
      throw std::runtime_error("cudaMalloc of cuBLAS's 32 MiB workspace failed");
    }
    check_cublas(cublasSetWorkspace(h_, ws_, bytes), "cublasSetWorkspace");
  }
  ~cublas_with_workspace() {
    cublasDestroy(h_);
    cudaFree(ws_);
  }
  cublas_with_workspace(const cublas_with_workspace&) = delete;
  cublas_with_workspace& operator=(const cublas_with_workspace&) = delete;
  cublasHandle_t get() const { return h_; }

private:
  static constexpr std::size_t bytes = std::size_t(32) << 20;
  cublasHandle_t h_ = nullptr;
  void* ws_ = nullptr;
};

} // namespace cufuse_tools
