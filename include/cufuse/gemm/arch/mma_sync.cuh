/// \file PTX wrappers: ldmatrix and mma.sync (FP16/BF16 m16n8k16, TF32 m16n8k8).
#pragma once

#include "device.cuh"

namespace cufuse::gemm_detail {

/// ldmatrix .x4 at a shared-memory byte address (each lane supplies one row address).
CUFUSE_DEVICE_FN void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#endif
}
CUFUSE_DEVICE_FN void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#endif
}

template <class T>
CUFUSE_DEVICE_FN void mma_16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#endif
}

CUFUSE_DEVICE_FN void mma_1688_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/// An fp32 operand as a TF32 mma.sync operand: its bits as they are. The tensor cores read the
/// top 19 bits and drop the low 13 (toward zero), the same as the wgmma variants, which read
/// fp32 tiles straight from shared memory; so every TF32 variant computes with the same inputs,
/// whichever one the tuner picks. (Rounding by a cvt.rna per fragment register made TF32
/// mma.sync 17-25% slower at 4096^3: bench/JOURNAL.md g18.)
CUFUSE_DEVICE_FN unsigned to_tf32(float x) { return __float_as_uint(x); }

} // namespace cufuse::gemm_detail
