/// \file Host side of the TMA variants: the driver's tensor-map encoder, looked up once through
/// the runtime (no link against libcuda), and the operand descriptors built from it.
#include <cufuse/gemm/launch.cuh>

#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace cufuse::gemm_detail {

namespace {

/// A driver entry point looked up once through the runtime (no link against libcuda); null
/// where the driver lacks it.
template <class Fn>
Fn driver_entry(const char* name) {
  void* f = nullptr;
  cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
  const cudaError_t e =
      cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &found);
#else
  const cudaError_t e = cudaGetDriverEntryPoint(name, &f, cudaEnableDefault, &found);
#endif
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    f = nullptr;
  }
  return reinterpret_cast<Fn>(f);
}

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const auto fn = driver_entry<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled");
  return fn;
}

PFN_cuTensorMapEncodeIm2col_v12000 im2col_encoder() {
  static const auto fn =
      driver_entry<PFN_cuTensorMapEncodeIm2col_v12000>("cuTensorMapEncodeIm2col");
  return fn;
}

} // namespace

cudaError_t encode_im2col_operand(CUtensorMap* map, dtype t, const void* ptr,
                                  const conv_geometry& g, int pixels, int channels) {
  const auto encode = im2col_encoder();
  if (encode == nullptr) {
    return cudaErrorNotSupported;
  }
  const std::int64_t esize = dtype_size(t);
  const cuuint64_t dims[4] = {cuuint64_t(g.c), cuuint64_t(g.wd), cuuint64_t(g.h), cuuint64_t(g.n)};
  const cuuint64_t strides[3] = {cuuint64_t(g.xs_w * esize), cuuint64_t(g.xs_h * esize),
                                 cuuint64_t(g.xs_n * esize)};
  // The window origins the output pixels take: from -padding to the last output pixel's origin,
  // relative to the last input column / row (so that a row of Q origins wraps to the next).
  const int lower[2] = {-g.pw, -g.ph};
  const int upper[2] = {(g.q - 1) * g.sw - g.pw - (g.wd - 1), (g.p - 1) * g.sh - g.ph - (g.h - 1)};
  const cuuint32_t elem_strides[4] = {1, cuuint32_t(g.sw), cuuint32_t(g.sh), 1};
  const CUtensorMapDataType type =
      t == dtype::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = encode(map, type, 4, const_cast<void*>(ptr), dims, strides, lower, upper,
                            cuuint32_t(channels), cuuint32_t(pixels), elem_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t encode_tma_operand(CUtensorMap* map, dtype t, const void* ptr, std::int64_t inner,
                               std::int64_t outer, std::int64_t ld, std::int64_t batch,
                               std::int64_t batch_stride, int box_inner, int box_outer) {
  const auto encode = tensor_map_encoder();
  if (encode == nullptr) {
    return cudaErrorNotSupported; // a driver without cuTensorMapEncodeTiled
  }
  const std::int64_t esize = dtype_size(t);
  const bool batched = batch > 1 && batch_stride != 0;
  // An unused third dimension still needs a legal (16-byte multiple) stride.
  const std::int64_t stride2 =
      batched ? batch_stride * esize
              : ((std::max<std::int64_t>(outer, 1) * ld * esize + 15) / 16) * 16;
  const cuuint64_t dims[3] = {cuuint64_t(std::max<std::int64_t>(inner, 1)),
                              cuuint64_t(std::max<std::int64_t>(outer, 1)),
                              cuuint64_t(batched ? batch : 1)};
  const cuuint64_t strides[2] = {cuuint64_t(ld * esize), cuuint64_t(stride2)};
  const cuuint32_t box[3] = {cuuint32_t(box_inner), cuuint32_t(box_outer), 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUtensorMapDataType type = t == dtype::bf16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                   : t == dtype::f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                     : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const CUresult r = encode(map, type, 3, const_cast<void*>(ptr), dims, strides, box, elem_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

} // namespace cufuse::gemm_detail

namespace cufuse::gemm_detail {

bool tma_store_allowed() {
  const char* e = std::getenv("CUFUSE_GEMM_TMA_STORE");
  return e == nullptr || std::string(e) != "0";
}

} // namespace cufuse::gemm_detail
