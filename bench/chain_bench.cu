// Kernels back to back: the device time per kernel of a chain of cufuse assignments, with
// programmatic dependent launches (sm_90: each kernel launched while the one before finishes,
// waiting for its results; include/cufuse/core/pdl.cuh) and with ordinary launches, timed in
// turn in one process (the switch `cufuse::detail::dependent_launch_switch`). Every chain's
// result with dependent launches must equal, bit for bit, its result with ordinary ones (the
// kernels are deterministic); the table says "ok" or "DIFFERS".
//
//   flat      x <-> y by `y = x * a + b`, same-shape fp32 (the flat kernel)
//   bcast     `y = relu(x + bias)` then `x = y * col` (the N-d kernel, two broadcasts)
//   softmax   `y = softmax(x, -1)` then `x = y * 2 - z` (the row kernel, then the flat kernel)
//
// Usage: cufuse_bench_chain [--out chain.json]
#include "timing.cuh"

#include <cufuse/cufuse.cuh>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

using cufuse::index_t;

struct row {
  std::string chain;
  index_t elements;
  int kernels;
  double us_dependent, us_ordinary; // per kernel
  bool same;
};

/// Times `step` (enqueues `kernels` kernels) with dependent and with ordinary launches in turn;
/// then runs `reset` + `step` once each way and compares `result()`.
template <class Result>
row measure(const std::string& name, index_t elements, int kernels,
            const std::function<void()>& reset, const std::function<void()>& step,
            const std::function<Result()>& result, bench::timer& tm) {
  auto& on = cufuse::detail::dependent_launch_switch();
  const std::vector<double> ms = tm.interleaved_ms({[&] { step(); },
                                                    [&] {
                                                      on = false;
                                                      step();
                                                      on = true;
                                                    }},
                                                   31, 0.2);
  reset();
  step();
  const Result with = result();
  on = false;
  reset();
  step();
  on = true;
  const Result without = result();
  return {name, elements, kernels, 1e3 * ms[0] / kernels, 1e3 * ms[1] / kernels, with == without};
}

} // namespace

int main(int argc, char** argv) {
  const std::string out = bench::out_arg(argc, argv, "chain.json");
  const cudaDeviceProp prop = bench::print_device();
  bench::timer tm;
  std::vector<row> rows;
  constexpr int pairs = 8; // 16 kernels per chain
  for (const index_t n : {index_t(1) << 14, index_t(1) << 18, index_t(1) << 20, index_t(1) << 22}) {
    cufuse::tensor<float, 1> x({n}), y({n});
    const auto reset = [&] { x.fill(1.5f); };
    reset();
    rows.push_back(measure<std::vector<float>>(
        "flat", n, 2 * pairs, reset,
        [&] {
          for (int p = 0; p < pairs; ++p) {
            y = x * 1.0001f + 0.25f;
            x = y * 0.9999f - 0.25f;
          }
        },
        [&] { return x.download(); }, tm));
  }
  for (const index_t m : {index_t(64), index_t(1024), index_t(8192)}) {
    const index_t n = 1024;
    cufuse::tensor<float, 2> x({m, n}), y({m, n}), col({m, 1});
    cufuse::tensor<float, 1> bias({n});
    bias.fill(0.125f);
    col.fill(0.75f);
    const auto reset = [&] { x.fill(0.5f); };
    reset();
    rows.push_back(measure<std::vector<float>>(
        "bcast [" + std::to_string(m) + ", 1024]", m * n, 2 * pairs, reset,
        [&] {
          for (int p = 0; p < pairs; ++p) {
            y = cufuse::relu(x + bias);
            x = y * col;
          }
        },
        [&] { return x.download(); }, tm));
    cufuse::tensor<float, 2> z({m, n});
    z.fill(0.001f);
    rows.push_back(measure<std::vector<float>>(
        "softmax [" + std::to_string(m) + ", 1024]", m * n, 2 * pairs, reset,
        [&] {
          for (int p = 0; p < pairs; ++p) {
            y = cufuse::softmax(x, -1);
            x = y * 2.0f - z;
          }
        },
        [&] { return x.download(); }, tm));
  }
  // The host's cost of one small assignment, with each form of launch.
  double host_dep = 0, host_ord = 0;
  {
    cufuse::tensor<float, 1> x({1024}), y({1024});
    x.fill(1.0f);
    auto& on = cufuse::detail::dependent_launch_switch();
    host_dep = bench::measure_host_cost([&] { y = x * 2.0f + 1.0f; }).issue_us;
    on = false;
    host_ord = bench::measure_host_cost([&] { y = x * 2.0f + 1.0f; }).issue_us;
    on = true;
  }
  std::printf("%-22s %10s %8s %14s %14s %7s %s\n", "chain", "elements", "kernels", "us/kernel dep",
              "us/kernel ord", "saved", "same");
  bool all_same = true;
  for (const row& r : rows) {
    std::printf("%-22s %10lld %8d %14.2f %14.2f %7.2f %s\n", r.chain.c_str(),
                static_cast<long long>(r.elements), r.kernels, r.us_dependent, r.us_ordinary,
                r.us_ordinary - r.us_dependent, r.same ? "ok" : "DIFFERS");
    all_same = all_same && r.same;
  }
  std::printf("host us per assignment (1024 elements): %.2f dependent, %.2f ordinary\n", host_dep,
              host_ord);
  std::ofstream js(out);
  js << "{\"device\": \"" << prop.name << "\", \"host_us_dependent\": " << host_dep
     << ", \"host_us_ordinary\": " << host_ord << ", \"rows\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const row& r = rows[i];
    js << (i ? ", " : "") << "{\"chain\": \"" << r.chain << "\", \"elements\": " << r.elements
       << ", \"kernels\": " << r.kernels << ", \"us_per_kernel_dependent\": " << r.us_dependent
       << ", \"us_per_kernel_ordinary\": " << r.us_ordinary
       << ", \"same\": " << (r.same ? "true" : "false") << "}";
  }
  js << "]}\n";
  return all_same ? 0 : 1;
}
