// A diagnostic, not a contender: how fast a hand-written layer_norm runs on [32768, 4096] when
// each thread keeps its part of the row in registers (no shared-memory staging), against the
// row kernel (cufuse::layer_norm) and the device-to-device copy, in one process, timed in turn.
// Written to decide whether the row kernel should hold short rows in registers (JOURNAL r14);
// it also times cufuse::layer_norm with the held form off (staged) and on (JOURNAL r16).
// ROWS_PROBE_MLP=1 / ROWS_PROBE_LONG=1: bf16 [8192, 1024] / [131072, 1024] only (profiling).
//   rows_probe [--out FILE]
#include "fill.cuh"
#include "timing.cuh"

#include <cufuse/cufuse.cuh>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

using bf16 = __nv_bfloat16;
using cufuse::index_t;

template <class T>
__device__ __forceinline__ float to_f(T x) {
  return float(x);
}

/// The sum of v over the block (every thread gets it); `red` holds a float per warp.
template <int Threads>
__device__ __forceinline__ float block_sum(float v, float* red) {
  for (int o = 16; o > 0; o /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, o);
  }
  if (threadIdx.x % 32 == 0) {
    red[threadIdx.x / 32] = v;
  }
  __syncthreads();
  float s = 0;
  for (int k = 0; k < Threads / 32; ++k) {
    s += red[k];
  }
  return s;
}

/// layer_norm of one row per block: Threads threads, Chunks 16-byte chunks of the row each, held
/// in registers as float. n == Threads * Chunks * V exactly.
template <class T, int Threads, int Chunks, bool Hints = true>
__global__ void __launch_bounds__(Threads)
    ln_regs(const T* x, const T* w, const T* b, T* y, int n, float eps) {
  constexpr int V = 16 / int(sizeof(T));
  __shared__ float red[2][Threads / 32];
  const T* row = x + index_t(blockIdx.x) * n;
  T* out = y + index_t(blockIdx.x) * n;
  float v[Chunks][V];
#pragma unroll
  for (int i = 0; i < Chunks; ++i) {
    const int c = int(threadIdx.x) + i * Threads;
    const uint4 raw = Hints ? __ldcs(reinterpret_cast<const uint4*>(row) + c)
                            : reinterpret_cast<const uint4*>(row)[c];
    T t[V];
    std::memcpy(t, &raw, 16);
#pragma unroll
    for (int u = 0; u < V; ++u) {
      v[i][u] = to_f(t[u]);
    }
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < Chunks; ++i) {
#pragma unroll
    for (int u = 0; u < V; ++u) {
      s += v[i][u];
    }
  }
  const float mean = block_sum<Threads>(s, red[0]) / float(n);
  float q = 0;
#pragma unroll
  for (int i = 0; i < Chunks; ++i) {
#pragma unroll
    for (int u = 0; u < V; ++u) {
      const float d = v[i][u] - mean;
      q += d * d;
    }
  }
  const float rstd = rsqrtf(block_sum<Threads>(q, red[1]) / float(n) + eps);
#pragma unroll
  for (int i = 0; i < Chunks; ++i) {
    const int c = int(threadIdx.x) + i * Threads;
    const uint4 rw =
        Hints ? __ldg(reinterpret_cast<const uint4*>(w) + c) : reinterpret_cast<const uint4*>(w)[c];
    const uint4 rb =
        Hints ? __ldg(reinterpret_cast<const uint4*>(b) + c) : reinterpret_cast<const uint4*>(b)[c];
    T tw[V], tb[V], o[V];
    std::memcpy(tw, &rw, 16);
    std::memcpy(tb, &rb, 16);
#pragma unroll
    for (int u = 0; u < V; ++u) {
      o[u] = T((v[i][u] - mean) * rstd * to_f(tw[u]) + to_f(tb[u]));
    }
    uint4 ro;
    std::memcpy(&ro, o, 16);
    if (Hints) {
      __stcs(reinterpret_cast<uint4*>(out) + c, ro);
    } else {
      reinterpret_cast<uint4*>(out)[c] = ro;
    }
  }
}

template <class T>
void probe(const char* dtype, index_t m, index_t n, double copy_gbps, std::mt19937& rng,
           std::vector<std::string>& lines) {
  cufuse::tensor<T, 2> x({m, n}), y({m, n}), ref({m, n});
  cufuse::tensor<T, 1> w({n}), b({n});
  bench::uniform_fill(x, 1.0f, rng);
  bench::uniform_fill(w, 1.0f, rng);
  bench::uniform_fill(b, 0.5f, rng);
  auto& held = cufuse::detail::rows_held;
  held = false; // the reference: the staged row kernel
  ref = cufuse::layer_norm(x, w, b, 1e-5f);
  held = true;
  BENCH_CHECK(cudaDeviceSynchronize());
  const auto want = ref.download();
  constexpr int V = 16 / int(sizeof(T));
  const int chunks = int(n) / V;
  struct variant {
    std::string name;
    std::function<void()> f;
  };
  std::vector<variant> vs;
  y = cufuse::layer_norm(x, w, b, 1e-5f);
  const int held_chunks = cufuse::detail::rows_last_held.load();
  vs.push_back({"cufuse::layer_norm, staged", [&] {
                  held = false;
                  y = cufuse::layer_norm(x, w, b, 1e-5f);
                  held = true;
                }});
  if (held_chunks > 0) {
    vs.push_back({"cufuse::layer_norm, held (" + std::to_string(held_chunks) + " chunks/thread)",
                  [&] { y = cufuse::layer_norm(x, w, b, 1e-5f); }});
  }
  if (chunks == 128) {
    vs.push_back({"regs 32 threads x 4 chunks, no cache hints", [&] {
                    ln_regs<T, 32, 4, false><<<unsigned(m), 32>>>(x.data(), w.data(), b.data(),
                                                                  y.data(), int(n), 1e-5f);
                  }});
  }
  auto add = [&]<int Threads, int Chunks>() {
    if (Threads * Chunks == chunks) {
      vs.push_back(
          {"regs " + std::to_string(Threads) + " threads x " + std::to_string(Chunks) + " chunks",
           [&] {
             ln_regs<T, Threads, Chunks>
                 <<<unsigned(m), Threads>>>(x.data(), w.data(), b.data(), y.data(), int(n), 1e-5f);
           }});
    }
  };
  add.template operator()<512, 2>();
  add.template operator()<256, 4>();
  add.template operator()<128, 8>();
  add.template operator()<256, 2>();
  add.template operator()<128, 4>();
  add.template operator()<64, 8>();
  add.template operator()<128, 2>();
  add.template operator()<64, 4>();
  add.template operator()<32, 8>();
  add.template operator()<64, 2>();
  add.template operator()<32, 4>();
  std::vector<std::function<void()>> fs;
  for (auto& v : vs) {
    fs.push_back(v.f);
  }
  bench::timer tm;
  const std::vector<double> ms = tm.interleaved_ms(fs, 21, 0.3);
  const double bytes = 2.0 * double(m) * double(n) * sizeof(T);
  for (std::size_t i = 0; i < vs.size(); ++i) {
    vs[i].f();
    BENCH_CHECK(cudaDeviceSynchronize());
    const auto got = y.download();
    double worst = 0;
    for (std::size_t k = 0; k < got.size(); ++k) {
      worst = std::max(worst, double(std::fabs(float(got[k]) - float(want[k]))));
    }
    const double gbps = bytes / (ms[i] * 1e-3) / 1e9;
    char line[256];
    std::snprintf(line, sizeof(line),
                  "| layer_norm [%lld, %lld] | %s | %s | %.4f | %.0f | %.3f | %.2g |", (long long)m,
                  (long long)n, dtype, vs[i].name.c_str(), ms[i], gbps, gbps / copy_gbps, worst);
    std::printf("%s\n", line);
    lines.push_back(line);
  }
}

} // namespace

int main(int argc, char** argv) {
  const char* out = bench::out_arg(argc, argv);
  const cudaDeviceProp prop = bench::print_device();
  const double copy_gbps = bench::measure_copy().gbps;
  std::printf("device-to-device copy %.0f GB/s\n", copy_gbps);
  std::printf("| workload | dtype | kernel | ms | GB/s | / copy | max abs diff to cufuse |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  std::mt19937 rng(7);
  std::vector<std::string> lines;
  if (std::getenv("ROWS_PROBE_MLP") != nullptr) { // the MLP block's layer_norm only (profiling)
    probe<bf16>("bf16", 8192, 1024, copy_gbps, rng, lines);
    return 0;
  }
  if (std::getenv("ROWS_PROBE_LONG") != nullptr) { // bf16 [131072, 1024] only (profiling)
    probe<bf16>("bf16", 131072, 1024, copy_gbps, rng, lines);
    return 0;
  }
  probe<float>("fp32", 32768, 4096, copy_gbps, rng, lines);
  probe<bf16>("bf16", 32768, 4096, copy_gbps, rng, lines);
  probe<float>("fp32", 131072, 1024, copy_gbps, rng, lines);
  probe<bf16>("bf16", 131072, 1024, copy_gbps, rng, lines);
  probe<bf16>("bf16", 8192, 1024, copy_gbps, rng, lines);
  probe<float>("fp32", 8192, 1024, copy_gbps, rng, lines);
  probe<bf16>("bf16", 16384, 2048, copy_gbps, rng, lines);
  if (out != nullptr) {
    std::ofstream f(out);
    f << "Device: " << prop.name << "; copy " << copy_gbps << " GB/s\n\n";
    f << "| workload | dtype | kernel | ms | GB/s | / copy | max abs diff to cufuse |\n";
    f << "|---|---|---|---|---|---|---|\n";
    for (const auto& l : lines) {
      f << l << "\n";
    }
  }
  return 0;
}
