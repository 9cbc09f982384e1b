// N-d shapes at memory speed: broadcasts, layout changes (transpose, permute) and strided
// slices, against the device-to-device copy measured in the same run. Every workload is checked
// against a host reference on sampled elements before it is timed. Writes JSON (--out); the
// PyTorch side is bench/torch_shapes.py, the table bench/shapes_report.py. SHAPES_BROADCASTS_ONLY=1
// runs the broadcast rows alone (with SHAPES_SLICES=1, the slice rows too).
//
// Bytes per call: each distinct input read once + the output written once, in the logical
// element count (a step-2 slice counts the elements it reads, not the sectors it touches).
#include <cufuse/cufuse.cuh>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "timing.cuh"

namespace {

using bf16 = __nv_bfloat16;
using cufuse::index_t;

using bench::timer;

template <class T, int R>
std::vector<float> random_fill(cufuse::tensor<T, R>& t, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<T> h(static_cast<std::size_t>(t.size()));
  std::vector<float> f(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    h[i] = cufuse::detail::convert<T>(u(rng));
    f[i] = float(h[i]);
  }
  t.upload(h);
  return f;
}

struct row {
  std::string workload, dtype;
  double ms, gbps;
  int bad;
  double ms_launch = 0; // the old timing: one call on an idle device, its launch included
};

/// Compares `samples` random elements of `out` with ref(linear index).
template <class T, int R, class Ref>
int check(const cufuse::tensor<T, R>& out, Ref ref, std::mt19937_64& rng, double tol) {
  const auto got = out.download();
  std::uniform_int_distribution<std::size_t> pick(0, got.size() - 1);
  int bad = 0;
  for (int s = 0; s < 4096; ++s) {
    const std::size_t i = pick(rng);
    const double r = ref(i), g = float(got[i]);
    bad += !(std::fabs(g - r) <= tol * (1 + std::fabs(r)));
  }
  return bad;
}

template <class T>
constexpr double tol_of() {
  return std::is_same_v<T, float> ? 1e-6 : 1.0 / 128;
}

template <class T>
void broadcasts(const char* dtype, index_t m, index_t n, std::vector<row>& rows) {
  std::mt19937_64 rng(7);
  timer tm;
  cufuse::tensor<T, 2> X({m, n}), Y({m, n}), col({m, index_t(1)});
  cufuse::tensor<T, 1> bias({n});
  const auto x = random_fill(X, rng), b = random_fill(bias, rng), c = random_fill(col, rng);
  const double es = sizeof(T);
  {
    Y = cufuse::relu(X + bias);
    const int bad = check(
        Y, [&](std::size_t i) { return std::max(0.0, double(x[i]) + b[i % n]); }, rng, tol_of<T>());
    const double ms = tm.median_ms([&] { Y = cufuse::relu(X + bias); });
    rows.push_back({"relu(X + bias)", dtype, ms, (2.0 * m * n + n) * es / (ms * 1e-3) / 1e9, bad});
    rows.back().ms_launch = tm.launch_ms;
  }
  {
    Y = X * col + bias;
    const int bad = check(
        Y, [&](std::size_t i) { return double(x[i]) * c[i / n] + b[i % n]; }, rng, tol_of<T>());
    const double ms = tm.median_ms([&] { Y = X * col + bias; });
    rows.push_back(
        {"X * col + bias", dtype, ms, (2.0 * m * n + m + n) * es / (ms * 1e-3) / 1e9, bad});
    rows.back().ms_launch = tm.launch_ms;
  }
}

template <class T>
void layouts(const char* dtype, std::vector<row>& rows) {
  std::mt19937_64 rng(11);
  timer tm;
  const double es = sizeof(T);
  if constexpr (std::is_same_v<T, float>) {
    const index_t m = 8192, n = 8192;
    cufuse::tensor<T, 2> X({m, n}), Y({n, m});
    const auto x = random_fill(X, rng);
    Y = cufuse::transpose(X);
    const int bad = check(
        Y, [&](std::size_t i) { return double(x[(i % m) * n + i / m]); }, rng, 0.0);
    const double ms = tm.median_ms([&] { Y = cufuse::transpose(X); });
    rows.push_back(
        {"transpose(X) [8192, 8192]", dtype, ms, 2.0 * m * n * es / (ms * 1e-3) / 1e9, bad});
    rows.back().ms_launch = tm.launch_ms;
  } else {
    const index_t b = 64, r = 1024, c = 1024;
    cufuse::tensor<T, 3> P({b, r, c}), Z({b, c, r}), Y({b, c, r});
    const auto p = random_fill(P, rng), z = random_fill(Z, rng);
    Y = cufuse::permute(P, {0, 2, 1}) + Z;
    const int bad = check(
        Y,
        [&](std::size_t i) {
          const std::size_t bb = i / (r * c), k = (i / r) % c, j = i % r;
          return double(p[(bb * r + j) * c + k]) + z[i];
        },
        rng, tol_of<T>());
    const double ms = tm.median_ms([&] { Y = cufuse::permute(P, {0, 2, 1}) + Z; });
    rows.push_back({"permute(P, {0, 2, 1}) + Z [64, 1024, 1024]", dtype, ms,
                    3.0 * b * r * c * es / (ms * 1e-3) / 1e9, bad});
    rows.back().ms_launch = tm.launch_ms;
  }
}

/// Views the vectorized kernels cannot read 16 bytes at a time: a step-2 slice along the rows
/// (each thread gathers its elements) and a slice that starts one element into each row (every
/// row misaligned), both written to a contiguous tensor.
template <class T>
void slices(const char* dtype, std::vector<row>& rows) {
  std::mt19937_64 rng(13);
  timer tm;
  const index_t m = 8192, n = 8192;
  const double es = sizeof(T);
  cufuse::tensor<T, 2> X({m, n});
  const auto x = random_fill(X, rng);
  {
    cufuse::tensor<T, 2> S({m, n / 2});
    auto expr = [&] { S = cufuse::slice(X, cufuse::all, cufuse::range(0, n, 2)) * 2; };
    expr();
    const int bad = check(
        S, [&](std::size_t i) { return 2.0 * x[(i / (n / 2)) * n + 2 * (i % (n / 2))]; }, rng,
        tol_of<T>());
    const double ms = tm.median_ms(expr);
    rows.push_back({"slice(X, all, range(0, n, 2)) * 2", dtype, ms,
                    2.0 * m * (n / 2) * es / (ms * 1e-3) / 1e9, bad});
    rows.back().ms_launch = tm.launch_ms;
  }
  {
    cufuse::tensor<T, 2> S({m, n - 1});
    auto expr = [&] { S = cufuse::slice(X, cufuse::all, cufuse::range(1, n)) + 1; };
    expr();
    const int bad = check(
        S, [&](std::size_t i) { return 1.0 + x[(i / (n - 1)) * n + 1 + i % (n - 1)]; }, rng,
        tol_of<T>());
    const double ms = tm.median_ms(expr);
    rows.push_back({"slice(X, all, range(1, n)) + 1", dtype, ms,
                    2.0 * m * (n - 1) * es / (ms * 1e-3) / 1e9, bad});
    rows.back().ms_launch = tm.launch_ms;
  }
  {
    // rank 1: differences of neighbours, one operand a view one element in
    const index_t len = m * n;
    auto y = cufuse::reshape(X, {len});
    cufuse::tensor<T, 1> D(len - 1);
    auto expr = [&] {
      D = cufuse::slice(y, cufuse::range(1, len)) - cufuse::slice(y, cufuse::range(0, len - 1));
    };
    expr();
    const int bad = check(
        D, [&](std::size_t i) { return double(x[i + 1]) - x[i]; }, rng, 2 * tol_of<T>());
    const double ms = tm.median_ms(expr);
    rows.push_back({"y[1:] - y[:-1], 2^26", dtype, ms, 2.0 * len * es / (ms * 1e-3) / 1e9, bad});
    rows.back().ms_launch = tm.launch_ms;
  }
  {
    // rows of an odd length (a vocabulary): no row starts aligned but every eighth
    const index_t r = 4096, v = 50257;
    cufuse::tensor<T, 2> L({r, v}), Y({r, v});
    cufuse::tensor<T, 1> bias({v});
    const auto l = random_fill(L, rng), b = random_fill(bias, rng);
    auto expr = [&] { Y = L + bias; };
    expr();
    const int bad = check(
        Y, [&](std::size_t i) { return double(l[i]) + b[i % v]; }, rng, tol_of<T>());
    const double ms = tm.median_ms(expr);
    rows.push_back(
        {"X + bias [4096, 50257]", dtype, ms, (2.0 * r * v + v) * es / (ms * 1e-3) / 1e9, bad});
    rows.back().ms_launch = tm.launch_ms;
    cufuse::tensor<T, 2> col({r, index_t(1)});
    const auto c = random_fill(col, rng);
    auto expr3 = [&] { Y = L * col + bias; };
    expr3();
    const int bad3 = check(
        Y, [&](std::size_t i) { return double(l[i]) * c[i / v] + b[i % v]; }, rng, tol_of<T>());
    const double ms3 = tm.median_ms(expr3);
    rows.push_back({"X * col + bias [4096, 50257]", dtype, ms3,
                    (2.0 * r * v + r + v) * es / (ms3 * 1e-3) / 1e9, bad3});
    rows.back().ms_launch = tm.launch_ms;
  }
}

/// Host microseconds per back-to-back call (issue cost).
double host_us(const std::function<void()>& f) { return bench::measure_host_cost(f).issue_us; }

__global__ void empty_kernel() {}

} // namespace

int main(int argc, char** argv) {
  std::string out = "shapes.json";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--out") {
      out = argv[i + 1];
    }
  }
  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::vector<row> rows;
  // device-to-device copy of 1 GiB: the floor every row is compared with
  const bench::copy_rate copy = bench::measure_copy();
  const double copy_gbps = copy.gbps, copy_launch_gbps = copy.launch_gbps;
  broadcasts<float>("fp32", 8192, 8192, rows);
  broadcasts<bf16>("bf16", 8192, 8192, rows);
  // SHAPES_BROADCASTS_ONLY=1: the broadcast rows alone (A/B sweeps of the N-d kernel)
  if (std::getenv("SHAPES_BROADCASTS_ONLY") == nullptr) {
    layouts<float>("fp32", rows);
    layouts<bf16>("bf16", rows);
  }
  // SHAPES_SLICES=1 adds them to the broadcast rows alone; the full run always has them
  if (std::getenv("SHAPES_BROADCASTS_ONLY") == nullptr || std::getenv("SHAPES_SLICES") != nullptr) {
    slices<float>("fp32", rows);
    slices<bf16>("bf16", rows);
  }
  // the per-call host cost of a small broadcast assignment next to an empty launch
  cufuse::tensor<float, 2> x({32, 32}), y({32, 32});
  cufuse::tensor<float, 1> bias({32});
  x.fill(1.0f);
  bias.fill(1.0f);
  const double empty_us = host_us([] { empty_kernel<<<1, 32>>>(); });
  const double bcast_us = host_us([&] { y = cufuse::relu(x + bias); });
  const double transpose_us = host_us([&] { y = cufuse::transpose(x); });

  std::printf("device: %s; device-to-device copy %.0f GB/s\n", prop.name, copy_gbps);
  std::printf("%-44s %-5s %9s %9s %8s %s\n", "workload", "dtype", "ms", "GB/s", "/copy", "check");
  int bad_total = 0;
  for (const auto& r : rows) {
    std::printf("%-44s %-5s %9.3f %9.0f %8.3f %s\n", r.workload.c_str(), r.dtype.c_str(), r.ms,
                r.gbps, r.gbps / copy_gbps, r.bad ? "WRONG" : "ok");
    bad_total += r.bad;
  }
  std::printf("host us per call (32x32): empty <<<>>> %.2f, relu(x + bias) %.2f, transpose %.2f\n",
              empty_us, bcast_us, transpose_us);
  std::ofstream js(out);
  js << "{\"device\": \"" << prop.name << "\", \"copy_gbps\": " << copy_gbps
     << ", \"copy_launch_gbps\": " << copy_launch_gbps
     << ", \"host_us\": {\"empty_launch\": " << empty_us << ", \"broadcast\": " << bcast_us
     << ", \"transpose\": " << transpose_us << "}, \"rows\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    js << (i ? ", " : "") << "{\"workload\": \"" << rows[i].workload << "\", \"dtype\": \""
       << rows[i].dtype << "\", \"impl\": \"cufuse\", \"ms\": " << rows[i].ms
       << ", \"gbps\": " << rows[i].gbps << ", \"ms_launch\": " << rows[i].ms_launch
       << ", \"bad\": " << rows[i].bad << "}";
  }
  js << "]}\n";
  return bad_total == 0 ? 0 : 1;
}
