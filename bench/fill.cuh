// Benchmark inputs shared by the C++ benchmarks: tensors of uniform random values.
#pragma once

#include <cufuse/cufuse.cuh>

#include <cstddef>
#include <random>
#include <vector>

namespace bench {

/// Fills `t` with values drawn uniformly from [-scale, scale), rounded to T (uploaded from the
/// host; synchronizes).
template <class T, int R>
void uniform_fill(cufuse::tensor<T, R>& t, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<T> h(static_cast<std::size_t>(t.size()));
  for (auto& x : h) {
    x = T(u(rng));
  }
  t.upload(h);
}

} // namespace bench
