// Reductions and the row kernel at memory speed: softmax, layer_norm, rms_norm (fp32 / bf16),
// per-axis sums, full sum / argmax / var, against the device-to-device copy of the same run.
// Every workload is checked on sampled results against a double reference before it is timed.
// Writes JSON (--out); the PyTorch side is bench/torch_reduce.py, the table
// bench/reduce_report.py.
//
// Bytes per call: inputs read once + outputs written once.
#include <cufuse/cufuse.cuh>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "timing.cuh"

namespace {

using bf16 = __nv_bfloat16;
using bench::timer;
using cufuse::index_t;

struct row {
  std::string workload, dtype;
  double ms, gbps;
  int bad;
  double ms_launch = 0; // the old timing: one call on an idle device, its launch included
};

template <class T, int R>
std::vector<float> random_fill(cufuse::tensor<T, R>& t, std::mt19937_64& rng, float lo = -2,
                               float hi = 2) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<T> h(static_cast<std::size_t>(t.size()));
  std::vector<float> f(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    h[i] = cufuse::detail::convert<T>(u(rng));
    f[i] = float(h[i]);
  }
  t.upload(h);
  return f;
}

template <class T>
constexpr double tol_of() {
  return std::is_same_v<T, float> ? 1e-5 : 1.0 / 64;
}

/// Checks 16 sampled rows of a row-wise result against ref(row values) -> row outputs.
template <class T, class Ref>
int check_rows(const cufuse::tensor<T, 2>& y, const std::vector<float>& x, index_t m, index_t n,
               Ref ref, std::mt19937_64& rng) {
  const auto got = y.download();
  std::uniform_int_distribution<index_t> pick(0, m - 1);
  int bad = 0;
  for (int s = 0; s < 16; ++s) {
    const index_t r = pick(rng);
    std::vector<double> in(x.begin() + r * n, x.begin() + (r + 1) * n);
    const auto want = ref(in);
    for (index_t j = 0; j < n; ++j) {
      const double g = float(got[std::size_t(r * n + j)]);
      bad += !(std::fabs(g - want[std::size_t(j)]) <=
               tol_of<T>() * (1 + std::fabs(want[std::size_t(j)])));
    }
  }
  return bad;
}

std::vector<double> softmax_ref(const std::vector<double>& r) {
  double m = -INFINITY, s = 0;
  for (double v : r) {
    m = std::max(m, v);
  }
  for (double v : r) {
    s += std::exp(v - m);
  }
  std::vector<double> y;
  for (double v : r) {
    y.push_back(std::exp(v - m) / s);
  }
  return y;
}

template <class T>
void rowwise(const char* dtype, index_t m, index_t n, bool only_softmax_ln,
             std::vector<row>& rows) {
  std::mt19937_64 rng(5);
  timer tm;
  cufuse::tensor<T, 2> X({m, n}), Y({m, n});
  cufuse::tensor<T, 1> w({n}), b({n});
  const auto x = random_fill(X, rng), wv = random_fill(w, rng), bv = random_fill(b, rng);
  const double es = sizeof(T);
  const std::string shape = " [" + std::to_string(m) + ", " + std::to_string(n) + "]";
  {
    Y = cufuse::softmax(X, -1);
    const int bad = check_rows(Y, x, m, n, softmax_ref, rng);
    const double ms = tm.median_ms([&] { Y = cufuse::softmax(X, -1); });
    rows.push_back({"softmax" + shape, dtype, ms, 2.0 * m * n * es / (ms * 1e-3) / 1e9, bad});
    rows.back().ms_launch = tm.launch_ms;
  }
  {
    Y = cufuse::layer_norm(X, w, b, 1e-5f);
    const int bad = check_rows(
        Y, x, m, n,
        [&](const std::vector<double>& r) {
          double mu = 0, v = 0;
          for (double a : r) {
            mu += a;
          }
          mu /= double(r.size());
          for (double a : r) {
            v += (a - mu) * (a - mu);
          }
          v /= double(r.size());
          std::vector<double> out;
          for (std::size_t j = 0; j < r.size(); ++j) {
            out.push_back((r[j] - mu) / std::sqrt(v + 1e-5) * wv[j] + bv[j]);
          }
          return out;
        },
        rng);
    const double ms = tm.median_ms([&] { Y = cufuse::layer_norm(X, w, b, 1e-5f); });
    rows.push_back(
        {"layer_norm" + shape, dtype, ms, (2.0 * m * n + 2.0 * n) * es / (ms * 1e-3) / 1e9, bad});
    rows.back().ms_launch = tm.launch_ms;
  }
  if (only_softmax_ln) {
    return;
  }
  {
    Y = cufuse::rms_norm(X, w, 1e-6f);
    const int bad = check_rows(
        Y, x, m, n,
        [&](const std::vector<double>& r) {
          double ms2 = 0;
          for (double a : r) {
            ms2 += a * a;
          }
          ms2 /= double(r.size());
          std::vector<double> out;
          for (std::size_t j = 0; j < r.size(); ++j) {
            out.push_back(r[j] / std::sqrt(ms2 + 1e-6) * wv[j]);
          }
          return out;
        },
        rng);
    const double ms = tm.median_ms([&] { Y = cufuse::rms_norm(X, w, 1e-6f); });
    rows.push_back(
        {"rms_norm" + shape, dtype, ms, (2.0 * m * n + n) * es / (ms * 1e-3) / 1e9, bad});
    rows.back().ms_launch = tm.launch_ms;
  }
}

void axis_sums(std::vector<row>& rows) {
  std::mt19937_64 rng(9);
  timer tm;
  const index_t m = 8192, n = 8192;
  cufuse::tensor<float, 2> X({m, n});
  cufuse::tensor<float, 1> r({m}), c({n});
  const auto x = random_fill(X, rng);
  r = cufuse::sum(X, 1);
  c = cufuse::sum(X, 0);
  const auto gr = r.download(), gc = c.download();
  int bad = 0;
  for (index_t i = 0; i < 64; ++i) {
    double s = 0, t = 0;
    for (index_t j = 0; j < n; ++j) {
      s += x[std::size_t(i * n + j)];
      t += x[std::size_t(j * n + i)];
    }
    bad += !(std::fabs(gr[std::size_t(i)] - s) <= 1e-3);
    bad += !(std::fabs(gc[std::size_t(i)] - t) <= 1e-3);
  }
  const double ms1 = tm.median_ms([&] { r = cufuse::sum(X, 1); });
  const double ms1_launch = tm.launch_ms;
  const double ms0 = tm.median_ms([&] { c = cufuse::sum(X, 0); });
  rows.push_back(
      {"sum(X, 1) [8192, 8192]", "fp32", ms1, (m * n + m) * 4.0 / (ms1 * 1e-3) / 1e9, bad});
  rows.back().ms_launch = ms1_launch;
  rows.push_back(
      {"sum(X, 0) [8192, 8192]", "fp32", ms0, (m * n + n) * 4.0 / (ms0 * 1e-3) / 1e9, bad});
  rows.back().ms_launch = tm.launch_ms;
  // The middle axis of a rank-3 tensor.
  const index_t a = 256, b = 1024, k = 256;
  cufuse::tensor<float, 3> T({a, b, k});
  cufuse::tensor<float, 2> s({a, k});
  const auto t = random_fill(T, rng);
  s = cufuse::sum(T, 1);
  const auto gs = s.download();
  int bad_t = 0;
  for (index_t i = 0; i < a; i += 37) {
    for (index_t j = 0; j < k; j += 5) {
      double ref = 0;
      for (index_t q = 0; q < b; ++q) {
        ref += t[std::size_t((i * b + q) * k + j)];
      }
      bad_t += !(std::fabs(gs[std::size_t(i * k + j)] - ref) <= 1e-3);
    }
  }
  const double mst = tm.median_ms([&] { s = cufuse::sum(T, 1); });
  rows.push_back({"sum(T, 1) [256, 1024, 256]", "fp32", mst,
                  (a * b * k + a * k) * 4.0 / (mst * 1e-3) / 1e9, bad_t});
  rows.back().ms_launch = tm.launch_ms;
}

void full(std::vector<row>& rows) {
  std::mt19937_64 rng(13);
  timer tm;
  const index_t n = index_t(1) << 28;
  cufuse::tensor<float, 1> B{cufuse::extents<1>(n)}, C{cufuse::extents<1>(n)};
  const auto b = random_fill(B, rng), c = random_fill(C, rng);
  cufuse::tensor<float, 0> d;
  cufuse::tensor<std::int64_t, 0> am;
  double ref = 0, mean = 0, m2 = 0;
  std::size_t best = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    ref += double(b[i]) * c[i];
    mean += b[i];
    best = b[i] > b[best] ? i : best;
  }
  mean /= double(n);
  for (float v : b) {
    m2 += (v - mean) * (v - mean);
  }
  d = cufuse::sum(B * C);
  const int bad_dot = !(std::fabs(d.download()[0] - ref) <= 1e-4 * std::sqrt(double(n)) * 4);
  const double ms_dot = tm.median_ms([&] { d = cufuse::sum(B * C); });
  rows.push_back({"sum(B * C) 2^28", "fp32", ms_dot, 2.0 * n * 4 / (ms_dot * 1e-3) / 1e9, bad_dot});
  rows.back().ms_launch = tm.launch_ms;
  am = cufuse::argmax(B);
  const int bad_am = am.download()[0] != std::int64_t(best);
  const double ms_am = tm.median_ms([&] { am = cufuse::argmax(B); });
  rows.push_back({"argmax(B) 2^28", "fp32", ms_am, 1.0 * n * 4 / (ms_am * 1e-3) / 1e9, bad_am});
  rows.back().ms_launch = tm.launch_ms;
  d = cufuse::var(B);
  const double vref = m2 / double(n - 1);
  const int bad_var = !(std::fabs(d.download()[0] - vref) <= 1e-6 * vref);
  const double ms_var = tm.median_ms([&] { d = cufuse::var(B); });
  rows.push_back({"var(B) 2^28", "fp32", ms_var, 1.0 * n * 4 / (ms_var * 1e-3) / 1e9, bad_var});
  rows.back().ms_launch = tm.launch_ms;
}

/// softmax and layer_norm inputs of [m, n] for the sweeps below.
template <class T>
struct row_inputs {
  index_t m, n;
  cufuse::tensor<T, 2> X, Y;
  cufuse::tensor<T, 1> w, b;
  row_inputs(index_t rows, index_t cols, std::uint64_t seed)
      : m(rows), n(cols), X({rows, cols}), Y({rows, cols}), w({cols}), b({cols}) {
    std::mt19937_64 rng(seed);
    random_fill(X, rng);
    random_fill(w, rng);
    random_fill(b, rng);
  }
  /// softmax and layer_norm as fractions of the copy bandwidth, with the current settings.
  std::pair<double, double> of_copy(double copy_gbps) {
    timer tm;
    const double sm = tm.median_ms([&] { Y = cufuse::softmax(X, -1); });
    const double ln = tm.median_ms([&] { Y = cufuse::layer_norm(X, w, b, 1e-5f); });
    const double bytes = 2.0 * m * n * sizeof(T);
    return {bytes / (sm * 1e-3) / 1e9 / copy_gbps, bytes / (ln * 1e-3) / 1e9 / copy_gbps};
  }
};

/// The row kernel's block size: softmax and layer_norm at [32768, 4096] for each bound on the
/// chunks per thread (detail::rows_chunks_per_thread; the default is 8).
template <class T>
void chunk_sweep(const char* dtype, double copy_gbps) {
  row_inputs<T> in(32768, 4096, 21);
  const int keep = cufuse::detail::rows_chunks_per_thread.load();
  for (int cpt : {1, 2, 4, 8, 16}) {
    cufuse::detail::rows_chunks_per_thread.store(cpt);
    const auto [sm, ln] = in.of_copy(copy_gbps);
    std::printf("sweep %s chunks/thread %2d: softmax %.3f of copy, layer_norm %.3f of copy\n",
                dtype, cpt, sm, ln);
  }
  cufuse::detail::rows_chunks_per_thread.store(keep);
#ifdef CUFUSE_ROWS_MIN_THREADS
  // the smallest block, for short rows and for many chunks per thread
  const int keep_min = cufuse::detail::rows_min_threads.load();
  for (int least : {32, 64}) {
    cufuse::detail::rows_min_threads.store(least);
    cufuse::detail::rows_chunks_per_thread.store(16);
    const auto [sm, ln] = in.of_copy(copy_gbps);
    cufuse::detail::rows_chunks_per_thread.store(keep);
    row_inputs<T> shortr(131072, 1024, 22);
    const auto [ssm, sln] = shortr.of_copy(copy_gbps);
    std::printf("sweep %s blocks of >= %d threads: [32768, 4096] at 16 chunks/thread softmax "
                "%.3f, layer_norm %.3f; [131072, 1024] softmax %.3f, layer_norm %.3f of copy\n",
                dtype, least, sm, ln, ssm, sln);
  }
  cufuse::detail::rows_min_threads.store(keep_min);
#endif
}

/// When a cluster of blocks shares a row (detail::rows_cluster_from: staged bytes per row above
/// which it does; detail::rows_cluster_bytes: the most a block of it stages): softmax and
/// layer_norm for each setting, the default (96 KB, 48 KB) included.
template <class T>
void cluster_sweep(const char* dtype, index_t n, double copy_gbps) {
  row_inputs<T> in((index_t(1) << 27) / n, n, 23);
  const int keep_from = cufuse::detail::rows_cluster_from.load();
  const int keep_bytes = cufuse::detail::rows_cluster_bytes.load();
  const int settings[][2] = {{8, 8}, {16, 16}, {32, 32}, {48, 48}, {96, 48}, {1 << 20, 48}};
  for (const auto& kb : settings) {
    cufuse::detail::rows_cluster_from.store(kb[0] * 1024);
    cufuse::detail::rows_cluster_bytes.store(kb[1] * 1024);
    const auto [sm, ln] = in.of_copy(copy_gbps);
    std::printf("cluster sweep %s [%lld, %lld] above %7d KB, parts <= %2d KB (%d blocks per "
                "row): softmax %.3f of copy, layer_norm %.3f of copy\n",
                dtype, static_cast<long long>(in.m), static_cast<long long>(n), kb[0], kb[1],
                cufuse::detail::rows_last_cluster.load(), sm, ln);
  }
  cufuse::detail::rows_cluster_from.store(keep_from);
  cufuse::detail::rows_cluster_bytes.store(keep_bytes);
}

/// bf16 softmax and layer_norm on the transformer MLP's rows ([8192, 1024] and [16384, 4096]: a
/// working set near or within L2) and on [131072, 1024] and [32768, 4096], for each smallest
/// block of the row kernel (detail::rows_min_threads) with and without short rows two to a block
/// (detail::rows_split), next to a device-to-device copy of the same bytes timed the same way.
/// REDUCE_MID_SWEEP=1 runs it alone.
void mid_sweep() {
  timer tm;
  for (const auto& mn :
       {std::pair<index_t, index_t>{8192, 1024}, {16384, 4096}, {131072, 1024}, {32768, 4096}}) {
    row_inputs<bf16> in(mn.first, mn.second, 24);
    const double bytes = 2.0 * in.m * in.n * sizeof(bf16);
    const double copy_ms = tm.median_ms([&] {
      BENCH_CHECK(cudaMemcpyAsync(in.Y.data(), in.X.data(), std::size_t(bytes / 2),
                                  cudaMemcpyDeviceToDevice));
    });
    const int keep_min = cufuse::detail::rows_min_threads.load();
    auto& pdl = cufuse::detail::dependent_launch_switch();
    for (int least : {32, 64}) {
      cufuse::detail::rows_min_threads.store(least);
      for (int split : {1, 0}) {
        cufuse::detail::rows_split.store(split != 0);
        for (int dep : {1, 0}) { // dependent launches, then ordinary ones
          pdl.store(dep != 0);
          const double sm = tm.median_ms([&] { in.Y = cufuse::softmax(in.X, -1); });
          const double ln =
              tm.median_ms([&] { in.Y = cufuse::layer_norm(in.X, in.w, in.b, 1e-5f); });
          std::printf("mid sweep bf16 [%lld, %lld] blocks of >= %3d threads, split %d, dependent "
                      "%d: copy %.4f ms, softmax %.4f ms (%.3f of copy), layer_norm %.4f ms (%.3f "
                      "of copy)\n",
                      static_cast<long long>(in.m), static_cast<long long>(in.n), least, split, dep,
                      copy_ms, sm, copy_ms / sm, ln, copy_ms / ln);
        }
        pdl.store(true);
      }
    }
    cufuse::detail::rows_split.store(true);
    cufuse::detail::rows_min_threads.store(keep_min);
  }
}

double host_us(const std::function<void()>& f) { return bench::measure_host_cost(f).issue_us; }

__global__ void empty_kernel() {}

} // namespace

int main(int argc, char** argv) {
  std::string out = "reduce.json";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--out") {
      out = argv[i + 1];
    }
  }
  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::vector<row> rows;
  const bench::copy_rate copy = bench::measure_copy();
  const double copy_gbps = copy.gbps, copy_launch_gbps = copy.launch_gbps;
  if (std::getenv("REDUCE_MID_SWEEP") != nullptr) { // set: that sweep alone
    mid_sweep();
    return 0;
  }
  if (std::getenv("REDUCE_NO_ROWS") == nullptr) { // set: the axis and full reductions only
    rowwise<float>("fp32", 32768, 4096, false, rows);
    rowwise<bf16>("bf16", 32768, 4096, false, rows);
    for (index_t n : {index_t(1024), index_t(8192), index_t(32768)}) {
      rowwise<float>("fp32", (index_t(1) << 27) / n, n, true, rows);
      rowwise<bf16>("bf16", (index_t(1) << 27) / n, n, true, rows);
    }
  }
  if (std::getenv("REDUCE_ROWS_ONLY") == nullptr) { // set: the row kernel's workloads only
    axis_sums(rows);
    full(rows);
  }
  cufuse::tensor<float, 2> xs({32, 32}), ys({32, 32});
  xs.fill(1.0f);
  const double empty_us = host_us([] { empty_kernel<<<1, 32>>>(); });
  const double softmax_us = host_us([&] { ys = cufuse::softmax(xs, -1); });

  std::printf("device: %s; device-to-device copy %.0f GB/s\n", prop.name, copy_gbps);
  std::printf("%-34s %-5s %9s %9s %8s %s\n", "workload", "dtype", "ms", "GB/s", "/copy", "check");
  int bad_total = 0;
  for (const auto& r : rows) {
    std::printf("%-34s %-5s %9.3f %9.0f %8.3f %s\n", r.workload.c_str(), r.dtype.c_str(), r.ms,
                r.gbps, r.gbps / copy_gbps, r.bad ? "WRONG" : "ok");
    bad_total += r.bad;
  }
  std::printf("host us per call (32x32 softmax): empty <<<>>> %.2f, softmax %.2f\n", empty_us,
              softmax_us);
  if (std::getenv("REDUCE_CLUSTER_SWEEP") != nullptr) {
    for (index_t n : {index_t(4096), index_t(8192), index_t(32768)}) {
      cluster_sweep<float>("fp32", n, copy_gbps);
    }
    cluster_sweep<bf16>("bf16", 32768, copy_gbps);
  }
  if (std::getenv("REDUCE_NO_SWEEP") == nullptr) { // the block-size sweep: set it to skip
    chunk_sweep<float>("fp32", copy_gbps);
    chunk_sweep<bf16>("bf16", copy_gbps);
  }
  std::ofstream js(out);
  js << "{\"device\": \"" << prop.name << "\", \"copy_gbps\": " << copy_gbps
     << ", \"copy_launch_gbps\": " << copy_launch_gbps
     << ", \"host_us\": {\"empty_launch\": " << empty_us << ", \"softmax_32x32\": " << softmax_us
     << "}, \"rows\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    js << (i ? ", " : "") << "{\"workload\": \"" << rows[i].workload << "\", \"dtype\": \""
       << rows[i].dtype << "\", \"impl\": \"cufuse\", \"ms\": " << rows[i].ms
       << ", \"gbps\": " << rows[i].gbps << ", \"ms_launch\": " << rows[i].ms_launch
       << ", \"bad\": " << rows[i].bad << "}";
  }
  js << "]}\n";
  return bad_total == 0 ? 0 : 1;
}
