/// \file GEMM: C = alpha * op(A) * op(B) + beta * C on the GPU, with pre-instantiated tile
/// variants chosen per problem (heuristic, online UCB bandit, or an offline-tuned database).
/// Link `cufuse::gemm` (libcufuse); the kernels are compiled once there, not in your files.
///
///   cufuse::tensor<__nv_bfloat16, 2> A({m, k}), B({k, n});
///   cufuse::tensor<float, 2> C({m, n});
///   cufuse::gemm(A, B, C);                              // C = A * B
///   cufuse::gemm(cufuse::transpose(A2), B, C, 2.0f, 1.0f, stream);   // C = 2 A2^T B + C
#pragma once

// The first cufuse header of a file brings the evaluation engine at its end (see below).
#ifndef CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST
#define CUFUSE_DETAIL_FIRST_GEMM_CUH
#endif

#include "core/error.hpp"
#include "gemm/problem.hpp"
#include "memory/stream.hpp"
#include "memory/tensor.cuh"
#include "memory/tensor_view.cuh"
#include "memory/views.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace cufuse {

/// A row-major matrix (or a strided batch of them) in device memory: `rows x cols` elements,
/// `ld` elements from one row to the next, `batch_stride` elements from one matrix to the next.
/// `transposed`: GEMM uses its transpose (see cufuse::transpose).
template <class T>
struct matrix_ref {
  T* data = nullptr;
  index_t rows = 0, cols = 0, ld = 0;
  bool transposed = false;
  index_t batch = 1, batch_stride = 0;
};

namespace gemm_detail {
inline void check_matrix(index_t batch, index_t rows, index_t cols, index_t ld, index_t stride,
                         const void* p) {
  // Appended piece by piece: gcc 12 reports a false -Wrestrict in `"[" + std::to_string(...)`.
  auto shape = [&] {
    std::string s = "[";
    s += std::to_string(batch);
    s += " x ";
    s += std::to_string(rows);
    s += " x ";
    s += std::to_string(cols);
    s += ", ld ";
    s += std::to_string(ld);
    s += ", batch stride ";
    s += std::to_string(stride);
    s += "]";
    return s;
  };
  if (batch < 0 || rows < 0 || cols < 0) {
    throw shape_error("cufuse::matrix: negative extent in " + shape());
  }
  if (ld < (cols > 0 ? cols : 1)) {
    throw shape_error("cufuse::matrix: leading dimension smaller than the column count in " +
                      shape());
  }
  if (batch > 1 && rows > 0 && cols > 0 && stride < (rows - 1) * ld + cols && stride != 0) {
    throw shape_error("cufuse::matrix: batch stride makes matrices overlap in " + shape());
  }
  if (p == nullptr && batch > 0 && rows > 0 && cols > 0) {
    throw error("cufuse::matrix: null pointer for a non-empty matrix " + shape());
  }
}
} // namespace gemm_detail

/// A device matrix you own with a leading dimension: `cufuse::matrix(ptr, rows, cols, ld)`.
template <class T>
matrix_ref<T> matrix(T* device_ptr, index_t rows, index_t cols, index_t ld) {
  gemm_detail::check_matrix(1, rows, cols, ld, 0, device_ptr);
  return {device_ptr, rows, cols, ld, false, 1, 0};
}
/// A strided batch of device matrices: `batch` matrices `batch_stride` elements apart.
template <class T>
matrix_ref<T> batched_matrix(T* device_ptr, index_t batch, index_t rows, index_t cols, index_t ld,
                             index_t batch_stride) {
  gemm_detail::check_matrix(batch, rows, cols, ld, batch_stride, device_ptr);
  return {device_ptr, rows, cols, ld, false, batch, batch_stride};
}

/// The matrix behind a rank-2 (one matrix) or rank-3 (a batch) tensor or device view.
template <class T>
matrix_ref<T> as_matrix(const matrix_ref<T>& m) {
  return m;
}
/// The matrix (or batch) behind a rank-2 or rank-3 device view: unit stride along one of its
/// last two dimensions (the other gives the leading dimension; a unit stride along the rows
/// is a transposed matrix, as cufuse::transpose makes).
template <class T, int Rank>
matrix_ref<T> as_matrix(const tensor_view<T, Rank, device_space>& v) {
  static_assert(Rank == 2 || Rank == 3,
                "cufuse::gemm: operands are rank-2 matrices (or rank-3 batches for gemm_batched)");
  constexpr int r = Rank - 2, c = Rank - 1;
  const auto& s = v.shape();
  const auto& st = v.strides();
  const index_t batch = Rank == 3 ? s[0] : 1;
  const index_t batch_stride = Rank == 3 && s[0] > 1 ? st[0] : 0;
  // The leading dimension: the stride between rows where there are several non-empty rows;
  // otherwise any value >= the row length works (an empty or one-row matrix has no real one).
  auto ld_of = [](index_t rows, index_t cols, index_t row_stride) {
    return rows > 1 && cols > 0 ? row_stride : (cols > 0 ? cols : 1);
  };
  matrix_ref<T> m{v.data(), s[r], s[c], 0, false, batch, batch_stride};
  if (st[c] == 1 || s[c] <= 1) {
    m.ld = ld_of(s[r], s[c], st[r]);
  } else if (st[r] == 1 || s[r] <= 1) {
    m = {v.data(), s[c], s[r], ld_of(s[c], s[r], st[c]), true, batch, batch_stride};
  } else {
    throw shape_error("cufuse::gemm: an operand of shape " + s.to_string() + " with strides " +
                      st.to_string() +
                      " has no unit stride in its last two dimensions; copy it into a tensor "
                      "first");
  }
  gemm_detail::check_matrix(m.batch, m.rows, m.cols, m.ld, m.batch_stride, m.data);
  return m;
}
template <class T, int Rank>
matrix_ref<T> as_matrix(tensor<T, Rank, device_space>& t) {
  return as_matrix(t.view());
}
template <class T, int Rank>
matrix_ref<const T> as_matrix(const tensor<T, Rank, device_space>& t) {
  return as_matrix(t.view());
}

/// op(X) = X^T of a matrix_ref: `gemm(transpose(matrix(p, m, k, ld)), B, C)`. Tensors and views
/// are transposed by cufuse::transpose in memory/views.cuh (a strided view), which gemm reads
/// the same way.
template <class T>
matrix_ref<T> transpose(matrix_ref<T> m) {
  m.transposed = !m.transposed;
  return m;
}

namespace gemm_detail {

template <class T>
constexpr bool is_gemm_input =
    std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <class T>
constexpr dtype dtype_v = std::is_same_v<T, float>    ? dtype::f32
                          : std::is_same_v<T, __half> ? dtype::f16
                                                      : dtype::bf16;

template <class X>
concept matrix_like = requires(X&& x) { as_matrix(std::forward<X>(x)); };

template <class M>
struct ref_element;
template <class T>
struct ref_element<matrix_ref<T>> {
  using type = T;
};
template <class X>
using element_of = typename ref_element<decltype(as_matrix(std::declval<X>()))>::type;

// Implemented in libcufuse (src/gemm/api.cu).
void run(const problem& p, cudaStream_t stream, const gemm_options& options);

template <class TA, class TB, class TC>
problem make_problem(const matrix_ref<TA>& a, const matrix_ref<TB>& b, const matrix_ref<TC>& c,
                     float alpha, float beta, const gemm_options& options, bool batched) {
  using A = std::remove_const_t<TA>;
  using B = std::remove_const_t<TB>;
  using C = TC;
  static_assert(is_gemm_input<A>, "cufuse::gemm: A must hold float, __half or __nv_bfloat16");
  static_assert(std::is_same_v<A, B>, "cufuse::gemm: A and B must have the same element type");
  static_assert(!std::is_const_v<C>, "cufuse::gemm: C must be writable (not const)");
  static_assert(std::is_same_v<C, A> || std::is_same_v<C, float>,
                "cufuse::gemm: C must have A's element type or float");
  auto dims = [](const auto& x) {
    return "[" + (x.batch != 1 ? std::to_string(x.batch) + " x " : std::string()) +
           std::to_string(x.rows) + " x " + std::to_string(x.cols) + "]" +
           (x.transposed ? "^T" : "");
  };
  if (c.transposed) {
    throw error("cufuse::gemm: C cannot be transposed; transpose the product instead "
                "(C^T = B^T A^T)");
  }
  const index_t m = a.transposed ? a.cols : a.rows;
  const index_t ka = a.transposed ? a.rows : a.cols;
  const index_t kb = b.transposed ? b.cols : b.rows;
  const index_t n = b.transposed ? b.rows : b.cols;
  if (ka != kb || c.rows != m || c.cols != n) {
    throw shape_error("cufuse::gemm: shapes do not match: op(A) " + dims(a) + " is " +
                      std::to_string(m) + " x " + std::to_string(ka) + ", op(B) " + dims(b) +
                      " is " + std::to_string(kb) + " x " + std::to_string(n) + ", C is " +
                      dims(c) + " (need C = m x n with op(A) m x k, op(B) k x n)");
  }
  if (!batched && (a.batch != 1 || b.batch != 1 || c.batch != 1)) {
    throw shape_error("cufuse::gemm: operands are batches (A " + dims(a) + ", B " + dims(b) +
                      ", C " + dims(c) + "); use cufuse::gemm_batched");
  }
  if (a.batch != c.batch || b.batch != c.batch) {
    throw shape_error("cufuse::gemm_batched: batch counts differ: A " + dims(a) + ", B " + dims(b) +
                      ", C " + dims(c));
  }
  problem p;
  p.ab = dtype_v<A>;
  p.out = dtype_v<C>;
  p.math = options.math;
  p.m = m;
  p.n = n;
  p.k = ka;
  p.batch = c.batch;
  p.a = {a.data, a.rows, a.cols, a.ld, a.batch_stride, a.transposed};
  p.b = {b.data, b.rows, b.cols, b.ld, b.batch_stride, b.transposed};
  p.c = c.data;
  p.ldc = c.ld;
  p.stride_c = c.batch_stride;
  p.alpha = alpha;
  p.beta = beta;
  p.sm_count = options.sm_count;
  return p;
}

/// Median seconds per call of `launch()` on `stream`: after one untimed call, `repeats` samples
/// of `calls` back-to-back calls between CUDA events (more than one call per sample lets the
/// host's launch path overlap the queued kernels). Synchronizes the stream.
template <class F>
double median_call_seconds(cudaStream_t stream, int repeats, int calls, F&& launch) {
  launch(); // untimed: first launch, caches, clocks
  struct events {
    cudaEvent_t start = nullptr, stop = nullptr;
    ~events() {
      (void)cudaEventDestroy(start);
      (void)cudaEventDestroy(stop);
    }
  } ev;
  CUFUSE_CUDA_CHECK(cudaEventCreate(&ev.start));
  CUFUSE_CUDA_CHECK(cudaEventCreate(&ev.stop));
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    CUFUSE_CUDA_CHECK(cudaEventRecord(ev.start, stream));
    for (int c = 0; c < calls; ++c) {
      launch();
    }
    CUFUSE_CUDA_CHECK(cudaEventRecord(ev.stop, stream));
    CUFUSE_CUDA_CHECK(cudaEventSynchronize(ev.stop));
    float ms = 0.0f;
    CUFUSE_CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    seconds.push_back(double(ms) * 1e-3 / calls);
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return seconds[seconds.size() / 2];
}

} // namespace gemm_detail

/// C = alpha * op(A) * op(B) + beta * C on `stream`. A, B: rank-2 tensors, device views or
/// matrix_refs (optionally wrapped in cufuse::transpose); C: the same, not transposed.
/// M, N, K may be 0 (K = 0 gives beta * C; M or N = 0 does nothing). beta = 0 never reads C.
/// Throws shape_error on mismatched shapes (naming all of them).
template <gemm_detail::matrix_like A, gemm_detail::matrix_like B, gemm_detail::matrix_like C>
void gemm(A&& a, B&& b, C&& c, float alpha = 1.0f, float beta = 0.0f,
          cudaStream_t stream = current_stream(), const gemm_options& options = {}) {
  gemm_detail::run(gemm_detail::make_problem(as_matrix(a), as_matrix(b), as_matrix(c), alpha, beta,
                                             options, false),
                   stream, options);
}

/// The same for a strided batch: rank-3 tensors/views ([batch, rows, cols]) or batched_matrix.
template <gemm_detail::matrix_like A, gemm_detail::matrix_like B, gemm_detail::matrix_like C>
void gemm_batched(A&& a, B&& b, C&& c, float alpha = 1.0f, float beta = 0.0f,
                  cudaStream_t stream = current_stream(), const gemm_options& options = {}) {
  gemm_detail::run(gemm_detail::make_problem(as_matrix(a), as_matrix(b), as_matrix(c), alpha, beta,
                                             options, true),
                   stream, options);
}

/// Tuning: the mode and the database, and the type-erased API that cufuse-tune and the
/// benchmarks use (docs/gemm.md). The initial mode comes from CUFUSE_TUNE_MODE (off | online |
/// frozen; default frozen, which without a database is the heuristic) and the database path from
/// CUFUSE_TUNE_FILE (default: none, nothing persisted). Online, each timed call runs behind a
/// short kernel that holds the stream until the call is enqueued, so a sample is the GPU's work
/// alone; CUFUSE_TUNE_TRACE=1 prints every sample and the commit on stderr.
namespace tuning {
void set_mode(tune_mode mode);
tune_mode mode();
/// Uses `path` as the tuning database from now on ("" for none); loads it lazily.
void set_file(const std::string& path);
std::string file();
/// Forgets every in-memory choice and bandit (the file is untouched).
void reset();
/// Writes the choices made in this process to the database file now (merging); false when
/// there is no file or it could not be written (a warning says why).
bool save();

/// The type-erased problem of `gemm_batched(a, b, c, alpha, beta)` (a rank-2 operand is a batch
/// of one), checked as cufuse::gemm checks it (shape_error naming every shape).
template <gemm_detail::matrix_like A, gemm_detail::matrix_like B, gemm_detail::matrix_like C>
gemm_problem problem(A&& a, B&& b, C&& c, float alpha = 1.0f, float beta = 0.0f,
                     const gemm_options& options = {}) {
  return gemm_detail::make_problem(as_matrix(a), as_matrix(b), as_matrix(c), alpha, beta, options,
                                   true);
}
/// Names of the variants that can run `p` on the current device.
std::vector<std::string> variants(const gemm_problem& p, const gemm_options& options = {});
/// Runs `p` once on `stream`, as cufuse::gemm does: `options.variant` names the variant (throws
/// if it cannot run `p`), else the tuner chooses.
void run(const gemm_problem& p, cudaStream_t stream, const gemm_options& options = {});
/// Median seconds of `repeats` runs of the variant `name` on `p` (CUDA events on `stream`, after
/// one untimed run). Synchronizes `stream`. Times the launch path with the kernel: cufuse-tune
/// queues a short spin kernel first to time kernels alone.
double time(const gemm_problem& p, const std::string& name, cudaStream_t stream, int repeats = 5,
            const gemm_options& options = {});
/// The variant the tuner has settled on for `p`'s key, if it has.
std::optional<std::string> chosen(const gemm_problem& p, const gemm_options& options = {});
/// Stores a measured choice for `p`'s key (what cufuse-tune does); save() persists it. Throws if
/// the variant cannot run `p` or there is no database file.
void record(const gemm_problem& p, const std::string& variant, double seconds,
            const gemm_options& options = {});
/// The database key of `p`, without its shape: dtypes, transposes, alignment classes, batch and
/// whether beta is 0 (e.g. "bf16>f32.NN.a8.c4.b1.ab").
std::string key(const gemm_problem& p);

/// record() for typed operands.
template <class A, class B, class C>
void record(A&& a, B&& b, C&& c, const gemm_options& options, const std::string& variant,
            double seconds, float beta = 0.0f) {
  record(problem(a, b, c, 1.0f, beta, options), variant, seconds, options);
}
} // namespace tuning

/// Names of the variants that can run this problem on the current device (tests, tools).
template <class A, class B, class C>
std::vector<std::string> gemm_variants(A&& a, B&& b, C&& c, const gemm_options& options = {}) {
  return tuning::variants(tuning::problem(a, b, c, 1.0f, 0.0f, options), options);
}

/// The variant the tuner has settled on for this problem (its key), if it has.
/// `beta`: only whether it is zero matters (it is part of the key).
template <class A, class B, class C>
std::optional<std::string>
gemm_chosen_variant(A&& a, B&& b, C&& c, const gemm_options& options = {}, float beta = 0.0f) {
  return tuning::chosen(tuning::problem(a, b, c, 1.0f, beta, options), options);
}

} // namespace cufuse

// GEMM epilogues written as expressions: cufuse::acc, gemm(A, B, Y, epilogue).
#include "gemm/epilogue/expression.cuh"

// Assignments (`=`, fill) call cufuse::assign, defined by the engine: included here, at the end
// of the first cufuse header of the file, when everything that header includes is complete,
// so that a file including any one header alone links.
#ifdef CUFUSE_DETAIL_FIRST_GEMM_CUH
#undef CUFUSE_DETAIL_FIRST_GEMM_CUH
#undef CUFUSE_DETAIL_FIRST
#include "eval/assign.cuh"
#endif
