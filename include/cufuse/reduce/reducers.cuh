/// \file Reducers: how a reduction folds values. Each one says, for an input element type T,
/// its state (the accumulator, trivially copyable: it travels through shuffles, shared memory
/// and workspaces), its result type (PyTorch's), and four steps: `init`, `add` (one value at a
/// reduced index; every kernel adds a state's values in increasing index order), `merge` (two
/// states; associative, so any split of the work gives the same answer up to rounding) and
/// `finish` (the state and the reduced count -> the result, in the result's compute type).
/// Accumulation follows PyTorch: half and bf16 in float, integers and bool in int64; `var`/`std`
/// use shifted sums in double, merged exactly (Chan et al.).
#pragma once

#include "../core/types.cuh"

#include <cuda/std/limits>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace cufuse::reducers {

using detail::convert;
using detail::opmath_t;

/// The sum's accumulator: float for half / bf16 / float, double for double, int64 for integers
/// and bool.
template <class T>
using sum_acc_t = std::conditional_t<detail::is_floating_v<T>, opmath_t<T>, std::int64_t>;
/// The sum's result: the input type for floating types, int64 for integers and bool (PyTorch).
template <class T>
using sum_result_t = std::conditional_t<detail::is_floating_v<T>, T, std::int64_t>;

template <class X>
CUFUSE_INLINE bool is_nan(X x) {
  if constexpr (std::is_floating_point_v<X>) {
    return x != x;
  } else {
    return false;
  }
}

struct sum {
  static constexpr const char* name = "sum";
  template <class T>
  using state = sum_acc_t<T>;
  template <class T>
  using result = sum_result_t<T>;
  template <class T>
  CUFUSE_INLINE state<T> init() const {
    return state<T>(0);
  }
  template <class T, class X>
  CUFUSE_INLINE void add(state<T>& s, X x, index_t) const {
    s += convert<state<T>>(x);
  }
  template <class T>
  CUFUSE_INLINE state<T> merge(state<T> a, state<T> b) const {
    return a + b;
  }
  template <class T>
  CUFUSE_INLINE opmath_t<result<T>> finish(state<T> s, index_t) const {
    return convert<opmath_t<result<T>>>(s);
  }
};

struct prod {
  static constexpr const char* name = "prod";
  template <class T>
  using state = sum_acc_t<T>;
  template <class T>
  using result = sum_result_t<T>;
  template <class T>
  CUFUSE_INLINE state<T> init() const {
    return state<T>(1);
  }
  template <class T, class X>
  CUFUSE_INLINE void add(state<T>& s, X x, index_t) const {
    s *= convert<state<T>>(x);
  }
  template <class T>
  CUFUSE_INLINE state<T> merge(state<T> a, state<T> b) const {
    return a * b;
  }
  template <class T>
  CUFUSE_INLINE opmath_t<result<T>> finish(state<T> s, index_t) const {
    return convert<opmath_t<result<T>>>(s);
  }
};

/// Sum of squares, then the square root (the 2-norm).
struct norm {
  static constexpr const char* name = "norm";
  template <class T>
  using state = opmath_t<T>;
  template <class T>
  using result = T;
  template <class T>
  CUFUSE_INLINE state<T> init() const {
    static_assert(detail::is_floating_v<T>, "cufuse::norm needs a floating input, as in PyTorch; "
                                            "write cast<float>(x) first");
    return state<T>(0);
  }
  template <class T, class X>
  CUFUSE_INLINE void add(state<T>& s, X x, index_t) const {
    const auto v = convert<state<T>>(x);
    s += v * v;
  }
  template <class T>
  CUFUSE_INLINE state<T> merge(state<T> a, state<T> b) const {
    return a + b;
  }
  template <class T>
  CUFUSE_INLINE opmath_t<result<T>> finish(state<T> s, index_t) const {
    using std::sqrt;
    return sqrt(s);
  }
};

struct mean {
  static constexpr const char* name = "mean";
  template <class T>
  using state = opmath_t<T>;
  template <class T>
  using result = T;
  template <class T>
  CUFUSE_INLINE state<T> init() const {
    static_assert(detail::is_floating_v<T>, "cufuse::mean needs a floating input, as in PyTorch; "
                                            "write cast<float>(x) first");
    return state<T>(0);
  }
  template <class T, class X>
  CUFUSE_INLINE void add(state<T>& s, X x, index_t) const {
    s += convert<state<T>>(x);
  }
  template <class T>
  CUFUSE_INLINE state<T> merge(state<T> a, state<T> b) const {
    return a + b;
  }
  /// n = 0 gives 0 / 0 = NaN, as PyTorch.
  template <class T>
  CUFUSE_INLINE opmath_t<result<T>> finish(state<T> s, index_t n) const {
    return s / state<T>(n);
  }
};

/// Shifted sums in double: n, the shift k (the first value seen), s1 = sum(x - k),
/// s2 = sum((x - k)^2). Merging re-expresses one state around the other's shift (exact algebra).
struct moments {
  double n, k, s1, s2;
};

/// var (or std) with `correction` (PyTorch's default 1: Bessel's correction).
struct var {
  static constexpr const char* name = "var";
  double correction = 1;
  bool root = false; // std

  template <class T>
  using state = moments;
  template <class T>
  using result = T;
  template <class T>
  CUFUSE_INLINE moments init() const {
    static_assert(detail::is_floating_v<T>, "cufuse::var and std need a floating input, as in "
                                            "PyTorch; write cast<float>(x) first");
    return {0, 0, 0, 0};
  }
  template <class T, class X>
  CUFUSE_INLINE void add(moments& s, X x, index_t) const {
    const double v = convert<double>(x);
    if (s.n == 0) {
      s.k = v;
    }
    const double d = v - s.k;
    s.n += 1;
    s.s1 += d;
    s.s2 += d * d;
  }
  /// The values of one step of a kernel (N float values in index order) as one state: the
  /// shifted sums in float around the step's own mean (two passes over registers), then one
  /// state in double. Around the mean the step's sums are short and free of cancellation (a
  /// shift by one of the values would lose accuracy when that value lies far out), so float
  /// keeps them to a few units of rounding, and the double merges keep the totals; the
  /// per-value conversions to double and double adds are gone (bench/JOURNAL.md r7). A step
  /// whose float sums overflow (or meet inf / NaN) is summed again in double around its first
  /// value, as `add` does.
  static constexpr bool folds_float_steps = true;
  template <class T, int N>
  CUFUSE_INLINE moments fold(const float (&v)[N]) const {
    float sum = 0.0f;
    CUFUSE_UNROLL
    for (int j = 0; j < N; ++j) {
      sum += v[j];
    }
    const float k = sum * (1.0f / float(N));
    float s1 = 0.0f, s2 = 0.0f;
    CUFUSE_UNROLL
    for (int j = 0; j < N; ++j) {
      const float d = v[j] - k;
      s1 += d;
      s2 = fmaf(d, d, s2);
    }
    if (!(s2 <= 3.0e38f)) { // overflow, inf or NaN: in double, as add would
      double t1 = 0, t2 = 0;
      CUFUSE_UNROLL
      for (int j = 1; j < N; ++j) {
        const double d = double(v[j]) - double(v[0]);
        t1 += d;
        t2 += d * d;
      }
      return {double(N), double(v[0]), t1, t2};
    }
    return {double(N), double(k), double(s1), double(s2)};
  }
  template <class T>
  CUFUSE_INLINE moments merge(moments a, moments b) const {
    if (b.n == 0) {
      return a;
    }
    if (a.n == 0) {
      return b;
    }
    const double delta = b.k - a.k; // b around a.k: x - a.k = (x - b.k) + delta
    a.s2 += b.s2 + 2 * delta * b.s1 + b.n * delta * delta;
    a.s1 += b.s1 + b.n * delta;
    a.n += b.n;
    return a;
  }
  template <class T>
  CUFUSE_INLINE opmath_t<result<T>> finish(moments s, index_t) const {
    const double m2 = s.n > 0 ? s.s2 - s.s1 * s.s1 / s.n : 0.0;
    const double denom = s.n - correction;
    double v = (m2 < 0 ? 0.0 : m2) / (denom > 0 ? denom : 0.0); // n <= correction: NaN or inf
    if (s.n == 0) {
      v = NAN;
    }
    using std::sqrt;
    return convert<opmath_t<result<T>>>(root ? sqrt(v) : v);
  }
};

/// amax / amin: NaN propagates (PyTorch).
template <bool Max>
struct extremum {
  static constexpr const char* name = Max ? "amax" : "amin";
  template <class T>
  using state = opmath_t<T>;
  template <class T>
  using result = T;
  template <class T>
  CUFUSE_INLINE state<T> init() const {
    using S = state<T>;
    if constexpr (std::is_same_v<S, bool>) {
      return !Max;
    } else if constexpr (std::is_floating_point_v<S>) {
      return Max ? -cuda::std::numeric_limits<S>::infinity()
                 : cuda::std::numeric_limits<S>::infinity();
    } else {
      return Max ? cuda::std::numeric_limits<S>::lowest() : cuda::std::numeric_limits<S>::max();
    }
  }
  template <class T>
  CUFUSE_INLINE state<T> merge(state<T> a, state<T> b) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (std::is_same_v<state<T>, float>) {
      // One instruction that lets NaN through: the compare-and-branch form below took five
      // per element, with two branches (the amax pass of the bf16 softmax row kernel).
      float r;
      if constexpr (Max) {
        asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
      } else {
        asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
      }
      return r;
    }
#endif
    if (is_nan(a)) {
      return a;
    }
    if (is_nan(b)) {
      return b;
    }
    return (Max ? b > a : b < a) ? b : a;
  }
  template <class T, class X>
  CUFUSE_INLINE void add(state<T>& s, X x, index_t) const {
    s = merge<T>(s, convert<state<T>>(x));
  }
  template <class T>
  CUFUSE_INLINE opmath_t<result<T>> finish(state<T> s, index_t) const {
    return s;
  }
};
using amax = extremum<true>;
using amin = extremum<false>;

template <class V>
struct arg_state {
  V v;
  std::int64_t i; // -1: nothing seen yet
};

/// argmax / argmin: int64, the first index among ties; NaN wins (PyTorch).
template <bool Max>
struct arg_extremum {
  static constexpr const char* name = Max ? "argmax" : "argmin";
  template <class T>
  using state = arg_state<opmath_t<T>>;
  template <class T>
  using result = std::int64_t;
  template <class T>
  CUFUSE_INLINE state<T> init() const {
    return {opmath_t<T>{}, -1};
  }
  template <class T>
  CUFUSE_INLINE state<T> merge(state<T> a, state<T> b) const {
    if (a.i < 0) {
      return b;
    }
    if (b.i < 0) {
      return a;
    }
    const bool na = is_nan(a.v), nb = is_nan(b.v);
    bool take_b;
    if (na || nb) {
      take_b = na && nb ? b.i < a.i : nb;
    } else if (a.v == b.v) {
      take_b = b.i < a.i;
    } else {
      take_b = Max ? b.v > a.v : b.v < a.v;
    }
    return take_b ? b : a;
  }
  /// Every kernel adds a state's elements in increasing index order, so a value replaces the
  /// state's only when it is strictly better (ties keep the first index) or a NaN meets a
  /// number (the first NaN wins): merge's rules for a later index, without its index compares.
  template <class T, class X>
  CUFUSE_INLINE void add(state<T>& s, X x, index_t i) const {
    const auto v = convert<opmath_t<T>>(x);
    const bool better = Max ? v > s.v : v < s.v;
    if (s.i < 0 || better || (is_nan(v) && !is_nan(s.v))) {
      s.v = v;
      s.i = std::int64_t(i);
    }
  }
  template <class T>
  CUFUSE_INLINE std::int64_t finish(state<T> s, index_t) const {
    return s.i;
  }
};
using argmax = arg_extremum<true>;
using argmin = arg_extremum<false>;

/// all (And = true) / any: bool.
template <bool And>
struct logical {
  static constexpr const char* name = And ? "all" : "any";
  template <class T>
  using state = bool;
  template <class T>
  using result = bool;
  template <class T>
  CUFUSE_INLINE bool init() const {
    return And;
  }
  template <class T, class X>
  CUFUSE_INLINE void add(bool& s, X x, index_t) const {
    const bool b = convert<bool>(x);
    s = And ? (s && b) : (s || b);
  }
  template <class T>
  CUFUSE_INLINE bool merge(bool a, bool b) const {
    return And ? (a && b) : (a || b);
  }
  template <class T>
  CUFUSE_INLINE bool finish(bool s, index_t) const {
    return s;
  }
};
using all = logical<true>;
using any = logical<false>;

struct count_nonzero {
  static constexpr const char* name = "count_nonzero";
  template <class T>
  using state = std::int64_t;
  template <class T>
  using result = std::int64_t;
  template <class T>
  CUFUSE_INLINE std::int64_t init() const {
    return 0;
  }
  template <class T, class X>
  CUFUSE_INLINE void add(std::int64_t& s, X x, index_t) const {
    s += convert<bool>(x) ? 1 : 0;
  }
  template <class T>
  CUFUSE_INLINE std::int64_t merge(std::int64_t a, std::int64_t b) const {
    return a + b;
  }
  template <class T>
  CUFUSE_INLINE std::int64_t finish(std::int64_t s, index_t) const {
    return s;
  }
};

/// The running maximum m and sum(exp(x - m)): one pass, rescaled when m grows (the online
/// softmax normalizer).
template <class F>
struct lse_state {
  F m, s;
};

/// log(sum(exp(x))) without overflow; integers compute in float (PyTorch).
struct logsumexp {
  static constexpr const char* name = "logsumexp";
  template <class T>
  using result = detail::floating_t<T>;
  template <class T>
  using state = lse_state<opmath_t<result<T>>>;
  template <class T>
  CUFUSE_INLINE state<T> init() const {
    using F = opmath_t<result<T>>;
    return {-cuda::std::numeric_limits<F>::infinity(), F(0)};
  }
  template <class T>
  CUFUSE_INLINE state<T> merge(state<T> a, state<T> b) const {
    using std::exp;
    using F = opmath_t<result<T>>;
    if (is_nan(a.m) || is_nan(b.m)) {
      return {a.m + b.m, F(0)};
    }
    if (b.m > a.m) {
      const state<T> t = a;
      a = b;
      b = t;
    }
    if (b.m == -cuda::std::numeric_limits<F>::infinity()) {
      return a; // nothing (or only -inf) in b
    }
    if (a.m == cuda::std::numeric_limits<F>::infinity()) {
      return {a.m, F(1)}; // +inf dominates; avoid inf - inf
    }
    return {a.m, a.s + b.s * exp(b.m - a.m)};
  }
  template <class T, class X>
  CUFUSE_INLINE void add(state<T>& s, X x, index_t) const {
    using F = opmath_t<result<T>>;
    s = merge<T>(s, state<T>{convert<F>(x), F(1)});
  }
  template <class T>
  CUFUSE_INLINE opmath_t<result<T>> finish(state<T> s, index_t) const {
    using std::log;
    if (s.s == 0) {
      return s.m; // -inf: an empty or all -inf input
    }
    return s.m + log(s.s);
  }
};

} // namespace cufuse::reducers
