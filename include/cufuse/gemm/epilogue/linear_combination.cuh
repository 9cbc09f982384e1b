/// \file The epilogue interface and its standard implementation. An epilogue is a functor
/// `float operator()(float acc, float alpha, float beta, const void* c, int64 i, int out_type)`
/// that every kernel applies to each accumulator before `store_out` writes it;
/// `linear_combination` is alpha * acc + beta * C. Also the element access of C and the grouped
/// stores the SIMT and split-K paths share.
#pragma once

#include "../arch/device.cuh"

namespace cufuse::gemm_detail {

// ---- element access ------------------------------------------------------------------------

CUFUSE_DEVICE_FN float to_float(float x) { return x; }
CUFUSE_DEVICE_FN float to_float(__half x) { return __half2float(x); }
CUFUSE_DEVICE_FN float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

/// Reads element i of an output of dtype `t` as float.
CUFUSE_DEVICE_FN float load_out(const void* c, std::int64_t i, int t) {
  if (t == int(dtype::f32)) {
    return static_cast<const float*>(c)[i];
  }
  if (t == int(dtype::f16)) {
    return __half2float(static_cast<const __half*>(c)[i]);
  }
  return __bfloat162float(static_cast<const __nv_bfloat16*>(c)[i]);
}

/// Writes v (rounded to nearest even) as element i of an output of dtype `t`.
CUFUSE_DEVICE_FN void store_out(void* c, std::int64_t i, float v, int t) {
  if (t == int(dtype::f32)) {
    static_cast<float*>(c)[i] = v;
  } else if (t == int(dtype::f16)) {
    static_cast<__half*>(c)[i] = __float2half_rn(v);
  } else {
    static_cast<__nv_bfloat16*>(c)[i] = __float2bfloat16_rn(v);
  }
}

/// The standard epilogue: alpha * acc + beta * c. beta == 0 never reads C (C may hold NaN).
struct linear_combination {
  static constexpr const char* name = "lincomb";
  CUFUSE_DEVICE_FN float operator()(float acc, float alpha, float beta, const void* c,
                                    std::int64_t i, int t) const {
    return beta == 0.0f ? alpha * acc : alpha * acc + beta * load_out(c, i, t);
  }
};

/// The dtype code of C: `p.out_type` when `Out` is void (known at run time only), else the code
/// of `Out` (a compile-time constant, so every branch on it folds away).
template <class Out>
CUFUSE_DEVICE_FN int out_code(const gemm_args& p) {
  if constexpr (std::is_same_v<Out, float>) {
    return int(dtype::f32);
  } else if constexpr (std::is_same_v<Out, __half>) {
    return int(dtype::f16);
  } else if constexpr (std::is_same_v<Out, __nv_bfloat16>) {
    return int(dtype::bf16);
  } else {
    return p.out_type;
  }
}

/// Two floats as one 32-bit pair of 16-bit outputs (`t`: f16 or bf16, round to nearest even).
CUFUSE_DEVICE_FN unsigned pack_out16(float x, float y, int t) {
  if (t == int(dtype::f16)) {
    const __half2 h = __floats2half2_rn(x, y);
    return *reinterpret_cast<const unsigned*>(&h);
  }
  const __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
  return *reinterpret_cast<const unsigned*>(&h);
}

/// Writes `Cnt` consecutive outputs of one row (2, 4, or 8 for a 16-bit C) starting at column
/// `col`, with one vector store (two float4 for 8 fp32 outputs) when the whole group is in
/// range and `vec_ok` (C's base and leading dimension aligned to Cnt elements), else one by
/// one. `Out`: C's element type when the caller dispatched on it once (void: look it up per
/// call).
template <int Cnt, class Epi, class Out = void>
CUFUSE_DEVICE_FN void store_group(const gemm_args& p, void* c, std::int64_t row, int col,
                                  const float (&v)[Cnt], bool vec_ok, Epi epi) {
  static_assert(Cnt == 2 || Cnt == 4 || Cnt == 8, "cufuse: store groups are 2, 4 or 8 outputs");
  if (row >= p.m) {
    return;
  }
  const int t = out_code<Out>(p);
  const std::int64_t base = row * p.ldc + col;
  if (vec_ok && col + Cnt <= p.n) {
    float r[Cnt];
    CUFUSE_UNROLL
    for (int j = 0; j < Cnt; ++j) {
      r[j] = epi(v[j], p.alpha, p.beta, c, base + j, t);
    }
    if (t == int(dtype::f32)) {
      float* d = static_cast<float*>(c) + base;
      if constexpr (Cnt == 2) {
        *reinterpret_cast<float2*>(d) = make_float2(r[0], r[1]);
      } else {
        CUFUSE_UNROLL
        for (int j = 0; j < Cnt; j += 4) {
          *reinterpret_cast<float4*>(d + j) = make_float4(r[j], r[j + 1], r[j + 2], r[j + 3]);
        }
      }
    } else {
      unsigned w[Cnt / 2];
      CUFUSE_UNROLL
      for (int j = 0; j < Cnt; j += 2) {
        w[j / 2] = pack_out16(r[j], r[j + 1], t);
      }
      unsigned* d = reinterpret_cast<unsigned*>(static_cast<char*>(c) + base * 2);
      if constexpr (Cnt == 2) {
        *d = w[0];
      } else if constexpr (Cnt == 4) {
        *reinterpret_cast<uint2*>(d) = make_uint2(w[0], w[1]);
      } else {
        *reinterpret_cast<uint4*>(d) = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
    return;
  }
  CUFUSE_UNROLL
  for (int j = 0; j < Cnt; ++j) {
    if (col + j < p.n) {
      store_out(c, base + j, epi(v[j], p.alpha, p.beta, c, base + j, t), t);
    }
  }
}

} // namespace cufuse::gemm_detail
