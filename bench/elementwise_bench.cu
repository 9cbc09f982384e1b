// Elementwise throughput: cufuse vs a hand-written vectorized kernel vs the one-kernel-per-op
// chain vs cub::DeviceTransform, plus the device-to-device copy that bounds them all, and the
// per-call host cost of small back-to-back assignments. Writes JSON (see --out).
//
// Bytes counted per call: (distinct inputs + 1 output) * n * sizeof(T). Times: CUDA events,
// median over repetitions, after warm-up.
#include <cufuse/cufuse.cuh>

#include <cub/device/device_transform.cuh>

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

using bench::host_cost;
using bench::measure_host_cost;
using bench::timer;

using bf16 = __nv_bfloat16;
using cufuse::index_t;

constexpr float kAlpha = 1.7f;
constexpr float kDropP = 0.1f;
constexpr float kDropScale = 1.0f / (1.0f - kDropP);

// ---- the three expressions as plain device functions (used by hand-written and CUB) --------
struct quickstart_op {
  __device__ float operator()(float b, float c, float d, float e, float f) const {
    return b + c * d + sinf(e) * f + 10.0f;
  }
};
struct axpy_op {
  __device__ float operator()(float x, float y) const { return kAlpha * x + y; }
};
struct gelu_dropout_op {
  __device__ float operator()(float x, float u) const {
    const float g = 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f));
    return u > kDropP ? g * kDropScale : 0.0f;
  }
};

template <class T>
__device__ float to_f(T x) {
  return static_cast<float>(x);
}
template <class T>
__device__ T from_f(float x) {
  if constexpr (std::is_same_v<T, bf16>) {
    return __float2bfloat16_rn(x);
  } else {
    return x;
  }
}

template <class T>
struct alignas(16) vec16 {
  static constexpr int n = 16 / sizeof(T);
  T v[n];
};

// What a person writes by hand: one 16-byte vector per input per thread, one thread per
// vector (no grid-stride loop), a scalar tail handled by the first threads.
template <class T>
__global__ void __launch_bounds__(256)
    hand_quickstart(T* __restrict__ a, const T* __restrict__ b, const T* __restrict__ c,
                    const T* __restrict__ d, const T* __restrict__ e, const T* __restrict__ f,
                    index_t n) {
  constexpr int V = vec16<T>::n;
  const index_t t = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t nvec = n / V;
  quickstart_op op;
  if (t < nvec) {
    const auto vb = reinterpret_cast<const vec16<T>*>(b)[t];
    const auto vc = reinterpret_cast<const vec16<T>*>(c)[t];
    const auto vd = reinterpret_cast<const vec16<T>*>(d)[t];
    const auto ve = reinterpret_cast<const vec16<T>*>(e)[t];
    const auto vf = reinterpret_cast<const vec16<T>*>(f)[t];
    vec16<T> o;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      o.v[k] =
          from_f<T>(op(to_f(vb.v[k]), to_f(vc.v[k]), to_f(vd.v[k]), to_f(ve.v[k]), to_f(vf.v[k])));
    }
    reinterpret_cast<vec16<T>*>(a)[t] = o;
  }
  if (t < n - nvec * V) {
    const index_t i = nvec * V + t;
    a[i] = from_f<T>(op(to_f(b[i]), to_f(c[i]), to_f(d[i]), to_f(e[i]), to_f(f[i])));
  }
}

template <class T, class Op>
__global__ void __launch_bounds__(256) hand_binary(T* __restrict__ out, const T* __restrict__ x,
                                                   const T* __restrict__ y, index_t n, Op op) {
  constexpr int V = vec16<T>::n;
  const index_t t = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t nvec = n / V;
  if (t < nvec) {
    const auto vx = reinterpret_cast<const vec16<T>*>(x)[t];
    const auto vy = reinterpret_cast<const vec16<T>*>(y)[t];
    vec16<T> o;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      o.v[k] = from_f<T>(op(to_f(vx.v[k]), to_f(vy.v[k])));
    }
    reinterpret_cast<vec16<T>*>(out)[t] = o;
  }
  if (t < n - nvec * V) {
    const index_t i = nvec * V + t;
    out[i] = from_f<T>(op(to_f(x[i]), to_f(y[i])));
  }
}

__global__ void empty_kernel() {}

// CUB's transform wants a functor over the element types.
template <class T>
struct cub_quickstart {
  __device__ T operator()(T b, T c, T d, T e, T f) const {
    return from_f<T>(quickstart_op{}(to_f(b), to_f(c), to_f(d), to_f(e), to_f(f)));
  }
};
template <class T, class Op>
struct cub_binary {
  __device__ T operator()(T x, T y) const { return from_f<T>(Op{}(to_f(x), to_f(y))); }
};

template <class T>
void fill_random(cufuse::tensor<T, 1>& t, std::mt19937_64& rng, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<T> h(static_cast<std::size_t>(t.size()));
  for (auto& x : h) {
    x = cufuse::detail::convert<T>(u(rng));
  }
  t.upload(h);
}

template <class T>
double max_abs_diff(const cufuse::tensor<T, 1>& a, const cufuse::tensor<T, 1>& b) {
  const auto x = a.download(), y = b.download();
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    m = std::max(m, std::fabs(double(float(x[i])) - double(float(y[i]))));
  }
  return m;
}

struct row {
  std::string expr, dtype, impl;
  index_t n;
  double ms, gbps;
};

unsigned blocks_for(index_t n, int v) {
  return unsigned(std::max<index_t>(1, (n / v + 255) / 256));
}

template <class T>
void run_dtype(const char* dtype, int min_log2, int max_log2, std::vector<row>& rows,
               std::vector<std::string>& notes) {
  std::mt19937_64 rng(42);
  constexpr int V = 16 / sizeof(T);
  for (int lg = min_log2; lg <= max_log2; lg += 2) {
    const index_t n = index_t(1) << lg;
    const int reps = lg >= 24 ? 30 : 200;
    cufuse::tensor<T, 1> A(n), B(n), C(n), D(n), E(n), F(n), R(n), t1(n), t2(n);
    for (auto* t : {&B, &C, &D, &E, &F}) {
      fill_random(*t, rng, -2.0f, 2.0f);
    }
    fill_random(C, rng, -2.0f, 2.0f);
    timer tm;
    auto add = [&](const char* expr, const char* impl, int tensors, double ms) {
      const double bytes = double(tensors) * double(n) * sizeof(T);
      rows.push_back({expr, dtype, impl, n, ms, bytes / (ms * 1e-3) / 1e9});
    };
    // ---- quickstart: A = B + C * D + sin(E) * F + 10 (5 inputs + 1 output) ----
    add("quickstart", "cufuse", 6,
        tm.median_ms([&] { A = B + C * D + cufuse::sin(E) * F + 10.0f; }, reps));
    add("quickstart", "hand", 6,
        tm.median_ms(
            [&] {
              hand_quickstart<T><<<blocks_for(n, V), 256>>>(R.data(), B.data(), C.data(), D.data(),
                                                            E.data(), F.data(), n);
            },
            reps));
    add("quickstart", "chain", 6,
        tm.median_ms(
            [&] {
              t1 = C * D;
              t1 = B + t1;
              t2 = cufuse::sin(E);
              t2 = t2 * F;
              t1 = t1 + t2;
              t2 = t1 + 10.0f;
            },
            reps));
    add("quickstart", "cub", 6,
        tm.median_ms(
            [&] {
              BENCH_CHECK(cub::DeviceTransform::Transform(
                  cuda::std::make_tuple(B.data(), C.data(), D.data(), E.data(), F.data()),
                  t1.data(), n, cub_quickstart<T>{}));
            },
            reps));
    if (lg == max_log2) {
      notes.push_back(std::string("quickstart ") + dtype +
                      " max |cufuse - hand| = " + std::to_string(max_abs_diff(A, R)) +
                      ", |cufuse - chain| = " + std::to_string(max_abs_diff(A, t2)) +
                      ", |cufuse - cub| = " + std::to_string(max_abs_diff(A, t1)));
    }
    // ---- axpy: Y = alpha * X + Y (2 inputs + 1 output; Y read and written) ----
    add("axpy", "cufuse", 3, tm.median_ms([&] { C = kAlpha * B + C; }, reps));
    add("axpy", "hand", 3,
        tm.median_ms(
            [&] {
              hand_binary<T><<<blocks_for(n, V), 256>>>(C.data(), B.data(), C.data(), n, axpy_op{});
            },
            reps));
    add("axpy", "chain", 3,
        tm.median_ms(
            [&] {
              t1 = kAlpha * B;
              C = t1 + C;
            },
            reps));
    add("axpy", "cub", 3,
        tm.median_ms(
            [&] {
              BENCH_CHECK(cub::DeviceTransform::Transform(cuda::std::make_tuple(B.data(), C.data()),
                                                          C.data(), n, cub_binary<T, axpy_op>{}));
            },
            reps));
    // ---- gelu -> dropout mask -> scale: O = gelu(X) * (U > p) * 1/(1-p) ----
    fill_random(E, rng, 0.0f, 1.0f); // U
    add("gelu_dropout", "cufuse", 3,
        tm.median_ms([&] { A = cufuse::gelu(D) * (E > kDropP) * kDropScale; }, reps));
    add("gelu_dropout", "hand", 3,
        tm.median_ms(
            [&] {
              hand_binary<T>
                  <<<blocks_for(n, V), 256>>>(R.data(), D.data(), E.data(), n, gelu_dropout_op{});
            },
            reps));
    add("gelu_dropout", "chain", 3,
        tm.median_ms(
            [&] {
              t1 = cufuse::gelu(D);
              t2 = E > kDropP;
              t1 = t1 * t2;
              t2 = t1 * kDropScale;
            },
            reps));
    add("gelu_dropout", "cub", 3,
        tm.median_ms(
            [&] {
              BENCH_CHECK(cub::DeviceTransform::Transform(cuda::std::make_tuple(D.data(), E.data()),
                                                          t1.data(), n,
                                                          cub_binary<T, gelu_dropout_op>{}));
            },
            reps));
    if (lg == max_log2) {
      notes.push_back(std::string("gelu_dropout ") + dtype +
                      " max |cufuse - hand| = " + std::to_string(max_abs_diff(A, R)));
    }
    BENCH_CHECK(cudaGetLastError());
  }
}

} // namespace

int main(int argc, char** argv) {
  std::string out = "elementwise.json";
  int min_log2 = 10, max_log2 = 28;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--max-log2" && i + 1 < argc) {
      max_log2 = std::atoi(argv[++i]);
    } else if (a == "--min-log2" && i + 1 < argc) {
      min_log2 = std::atoi(argv[++i]);
    }
  }
  if (!cufuse::device_available()) {
    std::printf("no CUDA device: the elementwise benchmark needs a GPU\n");
    return 0;
  }
  cudaDeviceProp prop;
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);

  // ---- the ceiling: device-to-device copy of 2 GiB (bytes read + bytes written) ----
  double copy_gbps = 0;
  {
    const std::size_t bytes = std::size_t(1) << 31;
    void *src, *dst;
    BENCH_CHECK(cudaMalloc(&src, bytes));
    BENCH_CHECK(cudaMalloc(&dst, bytes));
    BENCH_CHECK(cudaMemset(src, 1, bytes));
    timer tm;
    const double ms = tm.median_ms(
        [&] { BENCH_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); }, 20);
    copy_gbps = 2.0 * bytes / (ms * 1e-3) / 1e9;
    BENCH_CHECK(cudaFree(src));
    BENCH_CHECK(cudaFree(dst));
  }
  std::printf("device-to-device copy: %.0f GB/s (read + write)\n", copy_gbps);

  std::vector<row> rows;
  std::vector<std::string> notes;
  run_dtype<float>("fp32", min_log2, max_log2, rows, notes);
  run_dtype<bf16>("bf16", min_log2, max_log2, rows, notes);

  // ---- host cost per back-to-back call at n = 2^10 ----
  host_cost empty{}, fused{}, hand{};
  {
    const index_t n = 1 << 10;
    cufuse::tensor<float, 1> A(n), B(n), C(n), D(n), E(n), F(n);
    for (auto* t : {&B, &C, &D, &E, &F}) {
      t->fill(0.5f);
    }
    empty = measure_host_cost([] { empty_kernel<<<1, 256>>>(); });
    fused = measure_host_cost([&] { A = B + C * D + cufuse::sin(E) * F + 10.0f; });
    hand = measure_host_cost([&] {
      hand_quickstart<float>
          <<<1, 256>>>(A.data(), B.data(), C.data(), D.data(), E.data(), F.data(), n);
    });
    BENCH_CHECK(cudaGetLastError());
  }
  std::printf("host cost per call at n=2^10 (issue / wall, us): empty kernel %.2f / %.2f, "
              "hand-written %.2f / %.2f, cufuse quickstart %.2f / %.2f\n",
              empty.issue_us, empty.wall_us, hand.issue_us, hand.wall_us, fused.issue_us,
              fused.wall_us);
  for (const auto& s : notes) {
    std::printf("check: %s\n", s.c_str());
  }

  std::ofstream js(out);
  js << "{\n  \"device\": \"" << prop.name << "\",\n  \"copy_gbps\": " << copy_gbps
     << ",\n  \"host_cost_us\": {\"empty_kernel\": {\"issue\": " << empty.issue_us
     << ", \"wall\": " << empty.wall_us << "}, \"hand\": {\"issue\": " << hand.issue_us
     << ", \"wall\": " << hand.wall_us << "}, \"cufuse\": {\"issue\": " << fused.issue_us
     << ", \"wall\": " << fused.wall_us << "}},\n  \"rows\": [\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    js << "    {\"expr\": \"" << r.expr << "\", \"dtype\": \"" << r.dtype << "\", \"impl\": \""
       << r.impl << "\", \"n\": " << r.n << ", \"ms\": " << r.ms << ", \"gbps\": " << r.gbps << "}"
       << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  js << "  ]\n}\n";
  std::printf("wrote %s (%zu rows)\n", out.c_str(), rows.size());
  return 0;
}
