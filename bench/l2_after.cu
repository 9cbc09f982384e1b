// What the streaming L2 policy (CUFUSE_STREAM_L2_HINT: operand reads with evict_last) leaves
// for the kernel after it. Lines read with evict_last are evicted after normal ones, so a large
// hinted kernel could leave L2 full of them and starve the next kernel's reuse of L2. Measured
// here: a 24 MB array W is summed twice after each "big" kernel; the second sum finds W in L2
// when the big kernel left room for it. Its time after each hinted kernel is compared with its
// time after a device-to-device copy of the same bytes (no hint) and after nothing.
//
//   big kernels: cudaMemcpy 512 MB; bf16 `Y = relu(X + bias)` [16384, 16384] (N-d kernel);
//   fp32 `Y = layer_norm(X, w, b)` [32768, 4096] (row kernel)
//
// Usage: cufuse_bench_l2_after [--out l2_after.json]
#include "timing.cuh"

#include <cufuse/cufuse.cuh>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

using bf16 = __nv_bfloat16;
using cufuse::index_t;

struct result {
  std::string before;
  double first_us, second_us;
};

/// Median over `reps` of the two sums of W (first and second) after `big`, each timed by its
/// own events.
result after(const std::string& name, const std::function<void()>& big, cufuse::tensor<float, 1>& w,
             cufuse::tensor<float, 0>& s, int reps = 15) {
  cudaEvent_t e0, e1, e2;
  BENCH_CHECK(cudaEventCreate(&e0));
  BENCH_CHECK(cudaEventCreate(&e1));
  BENCH_CHECK(cudaEventCreate(&e2));
  std::vector<double> first, second;
  for (int r = 0; r < reps; ++r) {
    big();
    BENCH_CHECK(cudaEventRecord(e0));
    s = cufuse::sum(w);
    BENCH_CHECK(cudaEventRecord(e1));
    s = cufuse::sum(w);
    BENCH_CHECK(cudaEventRecord(e2));
    BENCH_CHECK(cudaEventSynchronize(e2));
    float a = 0, b = 0;
    BENCH_CHECK(cudaEventElapsedTime(&a, e0, e1));
    BENCH_CHECK(cudaEventElapsedTime(&b, e1, e2));
    first.push_back(a * 1e3);
    second.push_back(b * 1e3);
  }
  std::sort(first.begin(), first.end());
  std::sort(second.begin(), second.end());
  BENCH_CHECK(cudaEventDestroy(e0));
  BENCH_CHECK(cudaEventDestroy(e1));
  BENCH_CHECK(cudaEventDestroy(e2));
  return {name, first[first.size() / 2], second[second.size() / 2]};
}

} // namespace

int main(int argc, char** argv) {
  const char* out = bench::out_arg(argc, argv, "l2_after.json");
  const cudaDeviceProp prop = bench::print_device();
  cufuse::tensor<float, 1> w({index_t(6) << 20}); // 24 MB
  cufuse::tensor<float, 0> s;
  w.fill(1.0f);
  cufuse::tensor<bf16, 2> xb({16384, 16384}), yb({16384, 16384});
  cufuse::tensor<bf16, 1> bias({16384});
  xb.fill(__float2bfloat16(0.5f));
  bias.fill(__float2bfloat16(-0.25f));
  cufuse::tensor<float, 2> xf({32768, 4096}), yf({32768, 4096});
  cufuse::tensor<float, 1> lw({4096}), lb({4096});
  xf.fill(0.5f);
  lw.fill(1.0f);
  lb.fill(0.0f);
  const std::size_t big_bytes = std::size_t(xb.size()) * sizeof(bf16) * 2;
  std::vector<result> rows;
  rows.push_back(after(
      "nothing", [] {}, w, s));
  rows.push_back(after(
      "cudaMemcpy 512 MB",
      [&] {
        BENCH_CHECK(cudaMemcpyAsync(yb.data(), xb.data(), big_bytes / 2, cudaMemcpyDeviceToDevice));
      },
      w, s));
  rows.push_back(after(
      "relu(X + bias) bf16 [16384, 16384]", [&] { yb = cufuse::relu(xb + bias); }, w, s));
  rows.push_back(after(
      "layer_norm fp32 [32768, 4096]", [&] { yf = cufuse::layer_norm(xf, lw, lb, 1e-5f); }, w, s));
  // cudaCtxResetPersistingL2Cache is not stream-ordered: after the kernel has finished.
  rows.push_back(after(
      "relu(X + bias), then cudaCtxResetPersistingL2Cache",
      [&] {
        yb = cufuse::relu(xb + bias);
        BENCH_CHECK(cudaDeviceSynchronize());
        BENCH_CHECK(cudaCtxResetPersistingL2Cache());
      },
      w, s));
  rows.push_back(after(
      "relu(X + bias), then a device synchronization",
      [&] {
        yb = cufuse::relu(xb + bias);
        BENCH_CHECK(cudaDeviceSynchronize());
      },
      w, s));
  rows.push_back(after(
      "cudaMemcpy 512 MB (again)",
      [&] {
        BENCH_CHECK(cudaMemcpyAsync(yb.data(), xb.data(), big_bytes / 2, cudaMemcpyDeviceToDevice));
      },
      w, s));
  const float got = cufuse::item(s);
  const bool ok = got == float(w.size());
  std::printf("L2 policy of the streaming kernels: CUFUSE_STREAM_L2_HINT=%d\n",
              CUFUSE_STREAM_L2_HINT);
  std::printf("%-40s %12s %12s\n", "before the two sums of W (24 MB)", "first us", "second us");
  for (const auto& r : rows) {
    std::printf("%-40s %12.2f %12.2f\n", r.before.c_str(), r.first_us, r.second_us);
  }
  std::printf("sum check: %s\n", ok ? "ok" : "WRONG");
  std::ofstream js(out);
  js << "{\"device\": \"" << prop.name << "\", \"hint\": " << CUFUSE_STREAM_L2_HINT
     << ", \"rows\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    js << (i ? ", " : "") << "{\"before\": \"" << rows[i].before
       << "\", \"first_us\": " << rows[i].first_us << ", \"second_us\": " << rows[i].second_us
       << "}";
  }
  js << "]}\n";
  return ok ? 0 : 1;
}
