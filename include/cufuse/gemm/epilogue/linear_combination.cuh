/// \file The epilogue interface and its standard implementation, `linear_combination`
/// (alpha * acc + beta * C). Every kernel family holds its epilogue object (a kernel parameter)
/// and calls the same members, for positions (row, col) of C as stored:
///
///   e = epi.at_batch(b)                 the epilogue of batch b (once per tile)
///   e.reads_c(p)                        whether this call needs C's old value (then the kernel
///                                       passes it: from memory, or from a TMA-loaded buffer)
///   e.template value<RC>(p, acc, c, row, col)
///                                       C's new value at (row, col), in fp32; the kernel rounds
///                                       once at its store (direct, staged, TMA or split-K
///                                       finish). RC: whether `c` holds C's old value.
///   Epi::loads                          value() reads memory at (row, col): kernels evaluate it
///                                       only inside C (a TMA store would clip the rest)
///   Epi::extra_outputs, e.store_extra<Cnt>(row, col, acc, cnt)
///                                       further outputs of the same accumulators (tie/pack),
///                                       `cnt` of the Cnt consecutive columns inside C
///
/// Expression epilogues (gemm/epilogue/expression.cuh) implement the same members. Also the
/// element access of C and `store_group`, the grouped stores the SIMT, mma.sync and split-K
/// paths share.
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
  static constexpr bool loads = false;
  static constexpr bool extra_outputs = false;
  CUFUSE_DEVICE_FN linear_combination at_batch(int) const { return *this; }
  CUFUSE_DEVICE_FN bool reads_c(const gemm_args& p) const { return p.beta != 0.0f; }
  template <bool RC>
  CUFUSE_DEVICE_FN float value(const gemm_args& p, float acc, float c, std::int64_t,
                               std::int64_t) const {
    if constexpr (RC) {
      return p.alpha * acc + p.beta * c;
    } else {
      return p.alpha * acc;
    }
  }
  template <int Cnt>
  CUFUSE_DEVICE_FN void store_extra(std::int64_t, std::int64_t, const float (&)[Cnt], int) const {}
};

/// The standard epilogue of a wgmma call that stores C through TMA and does not read it
/// (beta = 0), C's element type `Out` fixed at compile time. Its kernels hold only that store:
/// the general ones carry every store form (C's three types, reading C or not, direct stores),
/// 14-26k instructions, and a call right after a different cufuse kernel ran about 1.3 us
/// slower than after itself; with the store forms cut it was 0.6 us (bench/JOURNAL.md t12).
/// launch_variant (gemm/launch.cuh) takes it where it applies.
template <class Out>
struct linear_combination_stored : linear_combination {
  using out_element = Out;
  static constexpr bool tma_store_only = true;
  CUFUSE_DEVICE_FN linear_combination_stored at_batch(int) const { return *this; }
  CUFUSE_DEVICE_FN bool reads_c(const gemm_args&) const { return false; }
};

/// Whether `Epi` stores only through the TMA epilogue (linear_combination_stored).
template <class Epi>
inline constexpr bool tma_store_only = requires { requires Epi::tma_store_only; };

/// The accumulators as they are (split-K partial tiles in the fp32 workspace).
struct identity_epilogue {
  static constexpr const char* name = "identity";
  static constexpr bool loads = false;
  static constexpr bool extra_outputs = false;
  CUFUSE_DEVICE_FN identity_epilogue at_batch(int) const { return *this; }
  CUFUSE_DEVICE_FN bool reads_c(const gemm_args&) const { return false; }
  template <bool RC>
  CUFUSE_DEVICE_FN float value(const gemm_args&, float acc, float, std::int64_t,
                               std::int64_t) const {
    return acc;
  }
  template <int Cnt>
  CUFUSE_DEVICE_FN void store_extra(std::int64_t, std::int64_t, const float (&)[Cnt], int) const {}
};

/// C's new value at (row, col), element `i` of C (dtype `t`), reading C when the epilogue asks.
template <class Epi>
CUFUSE_DEVICE_FN float epilogue_at(const Epi& epi, const gemm_args& p, bool rc, float acc,
                                   const void* c, std::int64_t i, int t, std::int64_t row,
                                   std::int64_t col) {
  return rc ? epi.template value<true>(p, acc, load_out(c, i, t), row, col)
            : epi.template value<false>(p, acc, 0.0f, row, col);
}

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
template <int Cnt, class Out = void, class Epi>
CUFUSE_DEVICE_FN void store_group(const gemm_args& p, void* c, std::int64_t row, int col,
                                  const float (&v)[Cnt], bool vec_ok, const Epi& epi) {
  static_assert(Cnt == 2 || Cnt == 4 || Cnt == 8, "cufuse: store groups are 2, 4 or 8 outputs");
  if (row >= p.m) {
    return;
  }
  const int t = out_code<Out>(p);
  const std::int64_t base = row * p.ldc + col;
  const bool rc = epi.reads_c(p);
  if constexpr (Epi::extra_outputs) {
    epi.store_extra(row, col, v, ::max(0, ::min(Cnt, p.n - col)));
  }
  if (vec_ok && col + Cnt <= p.n) {
    float r[Cnt];
    CUFUSE_UNROLL
    for (int j = 0; j < Cnt; ++j) {
      r[j] = epilogue_at(epi, p, rc, v[j], c, base + j, t, row, col + j);
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
      store_out(c, base + j, epilogue_at(epi, p, rc, v[j], c, base + j, t, row, col + j), t);
    }
  }
}

} // namespace cufuse::gemm_detail
