// Shared GEMM checks: builds a problem on the host, runs cufuse::gemm (optionally one named
// variant), and compares every element with a double-precision loop written here (sampled
// elements plus a full cuBLAS comparison for the 4096^3 problems). C is poisoned with NaN when
// beta = 0, and the padding columns of C (ldc > n) must come back untouched.
#pragma once

#include "cublas_gemm.hpp"

#include <cufuse/cufuse.cuh>
#include <cufuse/gemm.cuh>

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace gemm_test {

struct dims {
  long long m, n, k;
};
struct layout {
  bool ta, tb;
  /// > 0: A and B start this many elements past an aligned address, and their leading
  /// dimensions are odd (or cols + ld_pad when ld_pad > 0)
  int unaligned;
  /// C's leading dimension and batch stride multiples of 8 elements (16 bytes for 16-bit C):
  /// with rows of whole 16-byte units (n a multiple of 8, or of 4 for fp32 C) the wgmma kernels
  /// then store C through TMA (and load it so when beta != 0). Else ldc = n + 3 (odd strides).
  bool aligned_c = false;
  int ld_pad = 0;
  /// B 16-byte aligned (offset 0, leading dimension a multiple of 8 elements) while A keeps
  /// `unaligned`: the any-alignment tiles then load B in 16-byte pieces and A in smaller ones.
  bool b_aligned = false;
  /// B's offset and leading-dimension padding in this layout.
  int b_unaligned() const { return b_aligned ? 0 : unaligned; }
  int b_ld_pad() const { return b_aligned ? 0 : ld_pad; }
};
struct scaling {
  float alpha, beta;
};
enum class data_kind { integers, small_integers, reals };

template <class T>
float round_to(float x) {
  return static_cast<float>(static_cast<T>(x));
}
template <>
inline float round_to<float>(float x) {
  return x;
}
template <>
inline float round_to<__half>(float x) {
  return __half2float(__float2half_rn(x));
}
template <>
inline float round_to<__nv_bfloat16>(float x) {
  return __bfloat162float(__float2bfloat16_rn(x));
}

template <class T>
T from_float(float x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(x);
  } else {
    return __float2bfloat16_rn(x);
  }
}
template <class T>
float to_f(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __half2float(x);
  } else {
    return __bfloat162float(x);
  }
}

/// Unit roundoff of the output type.
template <class T>
double out_eps() {
  return std::is_same_v<T, float> ? 0x1p-24 : (std::is_same_v<T, __half> ? 0x1p-11 : 0x1p-8);
}

/// Operands of one (possibly batched) problem in device memory, as cufuse::matrix_refs.
struct operand_shape {
  long long rows, cols, ld, stride;
};
/// Aligned layouts pad the leading dimension to a multiple of 8 elements (so every variant can
/// run odd shapes); unaligned ones use an odd leading dimension and odd batch strides.
inline operand_shape shape_of(long long rows, long long cols, int unaligned, int batch,
                              int ld_pad = 0) {
  long long ld = unaligned ? (ld_pad > 0      ? cols + ld_pad
                              : cols % 2 == 0 ? cols + 1
                                              : cols + 2)
                           : (cols + 7) / 8 * 8;
  ld = ld < 1 ? 1 : ld;
  return {rows, cols, ld, batch > 1 ? rows * ld + (unaligned ? 1 : 0) : 0};
}

/// Matrix references of a problem and layout at 256-byte aligned stand-in addresses (never
/// dereferenced) with the same offsets and leading dimensions as check_gemm's buffers.
template <class T, class TC>
struct stand_in {
  cufuse::matrix_ref<const T> a, b;
  cufuse::matrix_ref<TC> c;

  stand_in(const dims& d, const layout& l, long long ldc) {
    const auto sa = shape_of(l.ta ? d.k : d.m, l.ta ? d.m : d.k, l.unaligned, 1, l.ld_pad);
    const auto sb = shape_of(l.tb ? d.n : d.k, l.tb ? d.k : d.n, l.b_unaligned(), 1, l.b_ld_pad());
    const std::uintptr_t base = std::uintptr_t(1) << 20;
    const T* p = reinterpret_cast<const T*>(base);
    a = {p + l.unaligned, sa.rows, sa.cols, sa.ld, l.ta, 1, 0};
    b = {p + l.b_unaligned(), sb.rows, sb.cols, sb.ld, l.tb, 1, 0};
    c = {reinterpret_cast<TC*>(base), d.m, d.n, ldc, false, 1, 0};
  }
};

/// Variants valid for this problem shape and layout (pointers of the right alignment class).
template <class T, class TC>
std::vector<std::string> variants_for(const dims& d, const layout& l,
                                      const cufuse::gemm_options& opt) {
  const stand_in<T, TC> s(d, l, d.n + 3);
  return cufuse::gemm_variants(s.a, s.b, s.c, opt);
}

/// The variant the library settled on for this problem and layout after a check_gemm call
/// with options `opt` and beta = 0 (the same key: shapes, transposes and alignment classes).
template <class T, class TC>
std::string chosen_for(const dims& d, const layout& l, const cufuse::gemm_options& opt = {}) {
  const stand_in<T, TC> s(d, l, l.aligned_c ? (d.n + 7) / 8 * 8 + 8 : d.n + 3);
  return cufuse::gemm_chosen_variant(s.a, s.b, s.c, opt).value_or("(none)");
}

template <class T>
void fill_host(std::vector<float>& v, data_kind kind, std::mt19937& rng) {
  std::uniform_int_distribution<int> ints(-4, 4), small(-2, 2);
  std::uniform_real_distribution<float> reals(-1.0f, 1.0f);
  for (float& x : v) {
    x = kind == data_kind::integers         ? float(ints(rng))
        : kind == data_kind::small_integers ? float(small(rng))
                                            : round_to<T>(reals(rng));
  }
}

/// Runs C = alpha op(A) op(B) + beta C with `opt` and checks it (see the file comment).
/// `sampled`: check 2048 random elements and rows/columns 0 and last against double loops,
/// and every element against cuBLAS.
template <class T, class TC>
void check_gemm(const dims& d, const layout& l, const scaling& sc, data_kind kind,
                const cufuse::gemm_options& opt, std::mt19937& rng, int batch = 1,
                bool sampled = false) {
  INFO("m " << d.m << " n " << d.n << " k " << d.k << " op " << (l.ta ? 'T' : 'N')
            << (l.tb ? 'T' : 'N') << " unaligned " << l.unaligned << " ld pad " << l.ld_pad
            << " B aligned " << l.b_aligned << " aligned C " << l.aligned_c << " alpha " << sc.alpha
            << " beta " << sc.beta << " batch " << batch << " variant '" << opt.variant << "'"
            << " math " << int(opt.math));
  const auto sa = shape_of(l.ta ? d.k : d.m, l.ta ? d.m : d.k, l.unaligned, batch, l.ld_pad);
  const auto sb =
      shape_of(l.tb ? d.n : d.k, l.tb ? d.k : d.n, l.b_unaligned(), batch, l.b_ld_pad());
  // Padding columns that must stay untouched: three, or 8 to 15 with an aligned C.
  const long long ldc = l.aligned_c ? (d.n + 7) / 8 * 8 + 8 : d.n + 3;
  const long long stride_c = batch > 1 ? d.m * ldc + (l.aligned_c ? 8 : 5) : 0;
  const long long na = l.unaligned + (batch - 1) * sa.stride + sa.rows * sa.ld;
  const long long nb = l.b_unaligned() + (batch - 1) * sb.stride + sb.rows * sb.ld;
  const long long nc = (batch - 1) * stride_c + d.m * ldc;

  std::vector<float> ha(na), hb(nb), hc(nc);
  fill_host<T>(ha, kind, rng);
  fill_host<T>(hb, kind, rng);
  const bool poison = sc.beta == 0.0f;
  const float sentinel = 77.0f;
  {
    std::vector<float> c0(nc);
    fill_host<TC>(c0, kind == data_kind::reals ? data_kind::reals : data_kind::small_integers, rng);
    for (long long i = 0; i < nc; ++i) {
      const long long col = (i % (stride_c ? stride_c : nc)) % ldc;
      hc[i] = col >= d.n ? sentinel : (poison ? std::nanf("") : c0[i]);
    }
  }
  std::vector<T> ta(na), tb(nb);
  std::vector<TC> tc(nc);
  for (long long i = 0; i < na; ++i) {
    ta[i] = from_float<T>(ha[i]);
  }
  for (long long i = 0; i < nb; ++i) {
    tb[i] = from_float<T>(hb[i]);
  }
  for (long long i = 0; i < nc; ++i) {
    tc[i] = from_float<TC>(hc[i]);
  }
  cufuse::tensor<T, 1> da(std::max(na, 1LL)), db(std::max(nb, 1LL));
  cufuse::tensor<TC, 1> dc(std::max(nc, 1LL));
  if (na) {
    da.upload(ta);
  }
  if (nb) {
    db.upload(tb);
  }
  if (nc) {
    dc.upload(tc);
  }

  auto a = cufuse::batched_matrix(static_cast<const T*>(da.data()) + l.unaligned, batch, sa.rows,
                                  sa.cols, sa.ld, sa.stride);
  auto b = cufuse::batched_matrix(static_cast<const T*>(db.data()) + l.b_unaligned(), batch,
                                  sb.rows, sb.cols, sb.ld, sb.stride);
  auto c = cufuse::batched_matrix(dc.data(), batch, d.m, d.n, ldc, stride_c);
  auto opa = l.ta ? cufuse::transpose(a) : a;
  auto opb = l.tb ? cufuse::transpose(b) : b;
  if (batch == 1) {
    cufuse::gemm(opa, opb, c, sc.alpha, sc.beta, cufuse::current_stream(), opt);
  } else {
    cufuse::gemm_batched(opa, opb, c, sc.alpha, sc.beta, cufuse::current_stream(), opt);
  }
  std::vector<TC> out(nc);
  if (nc) {
    CUFUSE_CUDA_CHECK(cudaMemcpy(out.data(), dc.data(), nc * sizeof(TC), cudaMemcpyDeviceToHost));
  }

  std::vector<TC> cub;
  if (sampled) {
    cufuse::tensor<TC, 1> dref(std::max(nc, 1LL));
    if (nc) {
      dref.upload(tc);
    }
    cublasHandle_t h;
    cufuse_tools::check_cublas(cublasCreate(&h), "cublasCreate");
    auto p = cufuse::tuning::problem(
        opa, opb, cufuse::batched_matrix(dref.data(), batch, d.m, d.n, ldc, stride_c), sc.alpha,
        sc.beta, opt);
    cufuse_tools::cublas_gemm(h, p, cufuse::current_stream());
    CUFUSE_CUDA_CHECK(cudaStreamSynchronize(cufuse::current_stream()));
    cublasDestroy(h);
    cub.resize(nc);
    CUFUSE_CUDA_CHECK(cudaMemcpy(cub.data(), dref.data(), nc * sizeof(TC), cudaMemcpyDeviceToHost));
  }

  const bool exact = kind != data_kind::reals && std::is_same_v<TC, float>;
  const bool tf32 =
      std::is_same_v<T, float> && opt.math == cufuse::gemm_math::tf32 && kind == data_kind::reals;
  auto A = [&](int bi, long long i, long long kk) {
    const long long off = l.unaligned + bi * sa.stride;
    return double(l.ta ? ha[off + kk * sa.ld + i] : ha[off + i * sa.ld + kk]);
  };
  auto B = [&](int bi, long long kk, long long j) {
    const long long off = l.b_unaligned() + bi * sb.stride;
    return double(l.tb ? hb[off + j * sb.ld + kk] : hb[off + kk * sb.ld + j]);
  };
  long long bad = 0;
  auto check_one = [&](int bi, long long i, long long j) {
    double s = 0, mag = 0;
    for (long long kk = 0; kk < d.k; ++kk) {
      const double p = A(bi, i, kk) * B(bi, kk, j);
      s += p;
      mag += std::fabs(p);
    }
    const long long idx = bi * stride_c + i * ldc + j;
    const double c_old = poison ? 0.0 : double(hc[idx]);
    const double ref = double(sc.alpha) * s + double(sc.beta) * c_old;
    const double got = double(to_f(out[idx]));
    // fp32 accumulation of K products (gamma_K), TF32 input reduction, then one rounding to
    // the output type. Every TF32 variant hands the tensor cores the fp32 bits, which drop the
    // low 13 (toward zero: 2 x 2^-10 per product; test_gemm.cu's "every TF32 variant
    // truncates" checks it).
    const double acc_tol =
        std::fabs(sc.alpha) * mag * (2.0 * d.k * 0x1p-24 + (tf32 ? 0x1p-9 : 0.0));
    const double tol = exact ? 0.0
                             : acc_tol + out_eps<TC>() * (std::fabs(ref) + acc_tol) +
                                   std::fabs(sc.beta * c_old) * 0x1p-24 + 1e-30;
    const bool ok = std::isfinite(got) && std::fabs(got - ref) <= tol;
    if (!ok && bad < 5) {
      UNSCOPED_INFO("C[" << bi << "][" << i << "][" << j << "] = " << got << ", expected " << ref
                         << " (tolerance " << tol << ")");
    }
    bad += ok ? 0 : 1;
  };
  for (int bi = 0; bi < batch; ++bi) {
    if (!sampled) {
      for (long long i = 0; i < d.m; ++i) {
        for (long long j = 0; j < d.n; ++j) {
          check_one(bi, i, j);
        }
      }
    } else {
      std::uniform_int_distribution<long long> ri(0, d.m - 1), rj(0, d.n - 1);
      for (int s = 0; s < 2048; ++s) {
        check_one(bi, ri(rng), rj(rng));
      }
      for (long long j = 0; j < d.n; j += 7) {
        check_one(bi, 0, j);
        check_one(bi, d.m - 1, j);
      }
      // Every element against cuBLAS (same data, same accumulation type).
      for (long long i = 0; i < d.m; ++i) {
        for (long long j = 0; j < d.n; ++j) {
          const long long idx = bi * stride_c + i * ldc + j;
          const double got = to_f(out[idx]), other = to_f(cub[idx]);
          const double tol = exact ? 0.0 : 1e-2 * (1.0 + std::fabs(other));
          if (!(std::fabs(got - other) <= tol)) {
            if (bad < 5) {
              UNSCOPED_INFO("C[" << i << "][" << j << "] = " << got << ", cuBLAS " << other);
            }
            ++bad;
          }
        }
      }
    }
    for (long long i = 0; i < d.m; ++i) {
      for (long long j = d.n; j < ldc; ++j) {
        const long long idx = bi * stride_c + i * ldc + j;
        if (to_f(out[idx]) != sentinel) {
          if (bad < 5) {
            UNSCOPED_INFO("padding C[" << i << "][" << j << "] was overwritten");
          }
          ++bad;
        }
      }
    }
  }
  REQUIRE(bad == 0);
}

} // namespace gemm_test
