// Test harness shared by the host and GPU suites: random inputs, poisoned outputs, offset
// (misaligned) views, and element-by-element comparison with double-precision references.
#pragma once

#include <cufuse/cufuse.cuh>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace cft {

using cufuse::index_t;

/// Sizes every elementwise case runs at.
inline const std::vector<index_t>& sizes() {
  static const std::vector<index_t> s = {0, 1, 3, 4095, (index_t(1) << 20) + 3};
  return s;
}

/// A fresh seed per call, printed on failure (Catch's --rng-seed makes runs repeatable).
inline std::uint64_t next_seed() {
  static std::mt19937_64 seeder(Catch::rngSeed() + 0x9e3779b97f4a7c15ull);
  return seeder();
}

template <class T>
constexpr bool is_fp = cufuse::detail::is_floating_v<T>;

/// Tolerance of a result of type R against a double reference: |got - ref| <= atol + rtol|ref|.
/// float: a few ulp of the CUDA math library (<= 4 ulp) with headroom for cancellation inside
/// composite functions; half/bf16: one ulp of the storage type (results round once);
/// integers and bool: exact.
struct tolerance {
  double rtol, atol;
};
template <class R>
constexpr tolerance tolerance_of() {
  if constexpr (std::is_same_v<R, float>) {
    return {1e-5, 1e-5};
  } else if constexpr (std::is_same_v<R, double>) {
    return {1e-12, 1e-12};
  } else if constexpr (std::is_same_v<R, __half>) {
    return {1.0 / 1024, 1.0 / 1024};
  } else if constexpr (std::is_same_v<R, __nv_bfloat16>) {
    return {1.0 / 128, 1.0 / 128};
  } else {
    return {0, 0};
  }
}

template <class T>
double to_double(T x) {
  return static_cast<double>(x);
}
template <>
inline double to_double<__half>(__half x) {
  return static_cast<double>(__half2float(x));
}
template <>
inline double to_double<__nv_bfloat16>(__nv_bfloat16 x) {
  return static_cast<double>(__bfloat162float(x));
}

/// The value a reference double becomes when stored as R with cufuse's documented conversion
/// rules (integers: truncation then wrap-around for out-of-range integer arithmetic).
template <class R>
R from_double(double v) {
  if constexpr (std::is_same_v<R, bool>) {
    return v != 0.0;
  } else if constexpr (cufuse::detail::is_integer_v<R>) {
    // within int64: truncate, then wrap like the device arithmetic; beyond it: saturate
    if (v >= 9223372036854775808.0) {
      return std::numeric_limits<R>::max();
    }
    if (v < -9223372036854775808.0) {
      return std::numeric_limits<R>::min();
    }
    return static_cast<R>(static_cast<std::int64_t>(v));
  } else {
    return cufuse::detail::convert<R>(v);
  }
}

template <class R>
bool close(R got, double ref) {
  const double g = to_double(got);
  if (std::isnan(ref)) {
    return std::isnan(g);
  }
  if constexpr (!is_fp<R>) {
    return got == from_double<R>(ref);
  } else {
    if (std::isinf(ref)) {
      return g == ref;
    }
    const tolerance t = tolerance_of<R>();
    // Beyond R's range the stored reference is +-inf; compare against what R can hold.
    const double r = to_double(cufuse::detail::convert<R>(ref));
    if (std::isinf(r)) {
      return g == r;
    }
    return std::fabs(g - ref) <= t.atol + t.rtol * std::fabs(ref);
  }
}

/// Random values of T in [lo, hi] (integers: whole numbers), as stored and as doubles.
template <class T>
struct random_values {
  std::vector<T> stored;
  std::vector<double> exact;
};

/// While set, floating inputs are whole numbers too (so that comparisons see equal values).
inline bool& integer_valued_floats() {
  static bool on = false;
  return on;
}
struct integer_valued_guard {
  integer_valued_guard() { integer_valued_floats() = true; }
  ~integer_valued_guard() { integer_valued_floats() = false; }
};

template <class T>
random_values<T> make_random(index_t n, double lo, double hi, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  random_values<T> r;
  r.stored.reserve(n);
  r.exact.reserve(n);
  for (index_t i = 0; i < n; ++i) {
    T v;
    if constexpr (std::is_same_v<T, bool>) {
      v = std::uniform_int_distribution<int>(0, 1)(rng) != 0;
    } else if (cufuse::detail::is_integer_v<T> || integer_valued_floats()) {
      v = cufuse::detail::convert<T>(
          std::uniform_int_distribution<std::int64_t>(std::int64_t(lo), std::int64_t(hi))(rng));
    } else {
      v = cufuse::detail::convert<T>(std::uniform_real_distribution<double>(lo, hi)(rng));
    }
    r.stored.push_back(v);
    r.exact.push_back(to_double(v));
  }
  return r;
}

/// Storage of n + offset elements and a view of the last n: offset 1 misaligns every pointer,
/// which forces the scalar path.
template <class T, class Space>
struct buffer {
  cufuse::tensor<T, 1, Space> storage;
  index_t offset;
  buffer(index_t n, index_t off) : storage(cufuse::extents<1>(n + off)), offset(off) {}
  cufuse::tensor_view<T, 1, Space> view() {
    return cufuse::tensor_view<T, 1, Space>(storage.data() + offset,
                                            cufuse::extents<1>(storage.size() - offset));
  }
  void upload(const std::vector<T>& v) {
    std::vector<T> all(static_cast<std::size_t>(storage.size()), v.empty() ? T{} : v[0]);
    for (std::size_t i = 0; i < v.size(); ++i) {
      all[i + std::size_t(offset)] = v[i];
    }
    if constexpr (std::is_same_v<T, bool>) {
      storage.upload(std::vector<bool>(all.begin(), all.end()));
    } else {
      storage.upload(all);
    }
  }
  std::vector<T> download() const {
    auto all = storage.download();
    return std::vector<T>(all.begin() + offset, all.end());
  }
};

/// A value no correct result of a test equals (NaN for floating types).
template <class T>
T poison(int which) {
  if constexpr (is_fp<T>) {
    return cufuse::detail::convert<T>(std::numeric_limits<float>::quiet_NaN());
  } else if constexpr (std::is_same_v<T, bool>) {
    return which == 0;
  } else {
    return static_cast<T>(which == 0 ? 0x5A : 0x3C);
  }
}

template <class T>
std::string show(T x) {
  std::ostringstream s;
  s.precision(17);
  s << to_double(x);
  return s.str();
}

template <class... Ts, std::size_t... Is>
auto make_inputs(index_t n, const std::vector<std::pair<double, double>>& domains,
                 std::uint64_t seed, std::index_sequence<Is...>) {
  REQUIRE(domains.size() == sizeof...(Ts));
  return std::make_tuple(
      make_random<Ts>(n, domains[Is].first, domains[Is].second, seed + 7919 * Is)...);
}

/// Evaluates `build(views...)` into a poisoned output and checks every element against
/// `ref(doubles...)`. Runs every size, aligned and offset. Integer and bool outputs run twice
/// with different poisons, so an unwritten element cannot match by chance.
template <class Space, class... Ts, class Build, class Ref>
void check_elementwise(const std::string& what, Build build, Ref ref,
                       const std::vector<std::pair<double, double>>& domains) {
  static_assert(sizeof...(Ts) >= 1);
  for (index_t n : sizes()) {
    for (index_t off : {index_t(0), index_t(1)}) {
      const std::uint64_t seed = next_seed();
      auto inputs = make_inputs<Ts...>(n, domains, seed, std::index_sequence_for<Ts...>{});
      auto bufs = std::apply(
          [&](auto&... in) {
            return std::make_tuple(
                std::make_unique<
                    buffer<typename std::remove_cvref_t<decltype(in.stored)>::value_type, Space>>(
                    n, off)...);
          },
          inputs);
      std::apply(
          [&](auto&... b) {
            std::apply([&](auto&... in) { (b->upload(in.stored), ...); }, inputs);
          },
          bufs);
      auto expr = std::apply([&](auto&... b) { return build(b->view()...); }, bufs);
      using R = typename decltype(expr)::value_type;
      buffer<R, Space> out(n, off);
      const int passes = is_fp<R> ? 1 : 2;
      for (int pass = 0; pass < passes; ++pass) {
        {
          std::vector<R> p(static_cast<std::size_t>(out.storage.size()), poison<R>(pass));
          if constexpr (std::is_same_v<R, bool>) {
            out.storage.upload(std::vector<bool>(p.begin(), p.end()));
          } else {
            out.storage.upload(p);
          }
        }
        auto ov = out.view();
        ov = std::apply([&](auto&... b) { return build(b->view()...); }, bufs);
        const std::vector<R> got = out.download();
        index_t bad = 0;
        std::string first;
        for (index_t i = 0; i < n; ++i) {
          const double r = std::apply(
              [&](auto&... in) { return double(ref(in.exact[std::size_t(i)]...)); }, inputs);
          if (!close(got[std::size_t(i)], r)) {
            if (bad++ == 0) {
              std::ostringstream s;
              s.precision(17);
              s << what << " [" << cufuse::type_name<R>() << "] n=" << n << " offset=" << off
                << " seed=" << seed << ": element " << i << " got " << show(got[std::size_t(i)])
                << " expected " << r << " from inputs";
              std::apply([&](auto&... in) { ((s << " " << in.exact[std::size_t(i)]), ...); },
                         inputs);
              first = s.str();
            }
          }
        }
        INFO(first);
        CHECK(bad == 0);
      }
    }
  }
}

/// Runs `f.template operator()<T>()` for each type T.
template <class... Ts, class F>
void for_types(F&& f) {
  (f.template operator()<Ts>(), ...);
}

} // namespace cft
