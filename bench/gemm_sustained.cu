// Sustained GEMM throughput: each contender (cuBLAS and the named cufuse variants) runs back to
// back for a few seconds on random inputs, and its TFLOP/s is the median over the last two
// thirds of that time, with the SM clock and board power sampled meanwhile (nvidia-smi). The
// table gives medians over rounds; the ratio pairs each round with cuBLAS's in that round.
//
// Why next to cufuse-tune's numbers: the tuner times single calls on an otherwise idle GPU
// (bursts). Held at full load, an H100 reaches its board power limit within a second and
// lowers its clock, by a different amount for each kernel (bench/JOURNAL.md g23): the sustained
// ratios are those of a long training or solver run.
//
//   cufuse_bench_gemm_sustained --variants NAME[,NAME...] [--dtypes tf32,f16] [--trans NN,NT]
//       [--shapes 4096x4096x4096,...] [--seconds 3] [--rounds 2] [--json out.json]
// A variant runs for the dtypes its name carries (sm80_f16_..., sm80_tf32_...).
#include "cublas_gemm.hpp"

#include <cufuse/cufuse.cuh>
#include <cufuse/gemm.cuh>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');) {
    if (!x.empty()) {
      out.push_back(x);
    }
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) {
    return 0.0;
  }
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 == 1 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

/// Uniform values in [-1, 1) from a hash of the index: every run sees the same data, and
/// the tensor cores see data that toggles like real operands (constant inputs draw far less
/// power and would hide the clock drop this benchmark is about).
template <class T>
__global__ void fill_random(T* p, std::int64_t n, unsigned seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u ^ seed ^ unsigned(i >> 32) * 40503u;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    p[i] = T(float(x >> 8) * 0x1p-23f - 1.0f);
  }
}

/// Device buffer of n elements of `bytes` each, filled with fill_random.
struct buffer {
  void* p = nullptr;
  buffer(std::int64_t n, cufuse::gemm_dtype t, unsigned seed) {
    using dtype = cufuse::gemm_dtype;
    CUFUSE_CUDA_CHECK(cudaMalloc(&p, std::size_t(n) * cufuse::gemm_dtype_size(t)));
    if (t == dtype::f32) {
      fill_random<<<1024, 256>>>(static_cast<float*>(p), n, seed);
    } else if (t == dtype::f16) {
      fill_random<<<1024, 256>>>(static_cast<__half*>(p), n, seed);
    } else {
      fill_random<<<1024, 256>>>(static_cast<__nv_bfloat16*>(p), n, seed);
    }
    CUFUSE_CUDA_CHECK(cudaGetLastError());
  }
  ~buffer() { cudaFree(p); }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
};

/// SM clock (MHz) and board power (W) samples from nvidia-smi while a phase runs.
/// The GPU is named by its PCI address, which CUDA_VISIBLE_DEVICES does not renumber.
struct power_monitor {
  std::string query;
  std::atomic<bool> stop{false};
  std::vector<double> mhz, watts;
  std::thread th;
  explicit power_monitor(const cudaDeviceProp& prop) {
    char id[32];
    std::snprintf(id, sizeof id, "%08x:%02x:%02x.0", unsigned(prop.pciDomainID),
                  unsigned(prop.pciBusID), unsigned(prop.pciDeviceID));
    query = std::string("nvidia-smi --id=") + id +
            " --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits 2>/dev/null";
  }
  void start() {
    stop = false;
    mhz.clear();
    watts.clear();
    th = std::thread([this] {
      while (!stop) {
        FILE* f = popen(query.c_str(), "r");
        double c = 0, w = 0;
        if (f != nullptr && std::fscanf(f, "%lf, %lf", &c, &w) == 2) {
          mhz.push_back(c);
          watts.push_back(w);
        }
        if (f != nullptr) {
          pclose(f);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  void finish() {
    stop = true;
    th.join();
  }
  /// Mean over the last two thirds of the samples (the phase's steady state).
  static double tail_mean(const std::vector<double>& v) {
    if (v.empty()) {
      return 0.0;
    }
    double s = 0;
    const std::size_t from = v.size() / 3;
    for (std::size_t i = from; i < v.size(); ++i) {
      s += v[i];
    }
    return s / double(v.size() - from);
  }
};

struct result {
  std::string name;
  std::vector<double> tflops, mhz, watts; // one per round
};

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> dtypes = {"tf32", "f16"}, trans = {"NN"}, shapes = {"4096x4096x4096"},
                           variants;
  double seconds = 3.0;
  int rounds = 2;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--dtypes") {
      dtypes = split(value());
    } else if (a == "--trans") {
      trans = split(value());
    } else if (a == "--shapes") {
      shapes = split(value());
    } else if (a == "--variants") {
      variants = split(value());
    } else if (a == "--seconds") {
      seconds = std::atof(value().c_str());
    } else if (a == "--rounds") {
      rounds = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--json") {
      json = value();
    } else {
      std::fprintf(stderr,
                   "usage: %s --variants NAME[,NAME...] [--dtypes tf32,f16,bf16,f32] "
                   "[--trans NN,NT,TN,TT] [--shapes MxNxK,...] [--seconds S] [--rounds R] "
                   "[--json FILE]\n",
                   argv[0]);
      return 2;
    }
  }
  if (!(seconds > 0.0)) {
    std::fprintf(stderr, "--seconds must be positive\n");
    return 2;
  }
  for (const auto& dt : dtypes) {
    if (dt != "f32" && dt != "tf32" && dt != "f16" && dt != "bf16") {
      std::fprintf(stderr, "unknown dtype '%s' (f32, tf32, f16, bf16)\n", dt.c_str());
      return 2;
    }
  }
  for (const auto& tr : trans) {
    if (tr.size() != 2 || (tr[0] != 'N' && tr[0] != 'T') || (tr[1] != 'N' && tr[1] != 'T')) {
      std::fprintf(stderr, "unknown transpose pair '%s' (NN, NT, TN, TT)\n", tr.c_str());
      return 2;
    }
  }
  if (!cufuse::device_available()) {
    std::printf("no CUDA device found: nothing to measure\n");
    return 0;
  }
  try {
    cudaDeviceProp prop{};
    CUFUSE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    cudaStream_t stream = nullptr;
    CUFUSE_CUDA_CHECK(cudaStreamCreate(&stream));
    cublasHandle_t handle = nullptr;
    cufuse_tools::check_cublas(cublasCreate(&handle), "cublasCreate");
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    CUFUSE_CUDA_CHECK(cudaEventCreate(&e0));
    CUFUSE_CUDA_CHECK(cudaEventCreate(&e1));
    std::printf("# sustained GEMM on %s: %.1f s per contender and round, %d rounds, random "
                "inputs in [-1, 1), C in the input type\n",
                prop.name, seconds, rounds);
    std::printf("| dtype | op | shape | contender | TFLOP/s | / cuBLAS | SM MHz | W |\n"
                "|---|---|---|---|---|---|---|---|\n");
    std::ostringstream js;
    js << "{\"device\": \"" << prop.name << "\", \"seconds\": " << seconds
       << ", \"rounds\": " << rounds << ", \"keys\": [";
    bool first_key = true;
    for (const auto& dt : dtypes) {
      using dtype = cufuse::gemm_dtype;
      const dtype ab = dt == "bf16" ? dtype::bf16 : dt == "f16" ? dtype::f16 : dtype::f32;
      for (const auto& tr : trans) {
        for (const auto& sh : shapes) {
          long long m = 0, n = 0, k = 0;
          if (std::sscanf(sh.c_str(), "%lldx%lldx%lld", &m, &n, &k) != 3) {
            throw std::runtime_error("bad shape " + sh);
          }
          const bool ta = tr[0] == 'T', tb = tr[1] == 'T';
          buffer A(m * k, ab, 1), B(k * n, ab, 2), C(m * n, ab, 3);
          cufuse::gemm_problem p;
          p.ab = ab;
          p.out = ab; // C in the input type
          p.math = dt == "tf32" ? cufuse::gemm_math::tf32 : cufuse::gemm_math::fp32;
          p.m = m;
          p.n = n;
          p.k = k;
          p.a = {A.p, ta ? k : m, ta ? m : k, ta ? m : k, 0, ta};
          p.b = {B.p, tb ? n : k, tb ? k : n, tb ? k : n, 0, tb};
          p.c = C.p;
          p.ldc = n;
          cufuse::gemm_options opt;
          opt.math = p.math;
          std::vector<std::pair<std::string, std::function<void()>>> runs;
          runs.emplace_back("cuBLAS", [&] { cufuse_tools::cublas_gemm(handle, p, stream); });
          for (const auto& v : variants) {
            if (v.find("_" + dt + "_") == std::string::npos) {
              continue;
            }
            cufuse::gemm_options o = opt;
            o.variant = v;
            std::function<void()> f = [&, o] { cufuse::tuning::run(p, stream, o); };
            try { // a variant that cannot run this problem (layout, alignment) is left out
              f();
            } catch (const cufuse::cuda_error&) {
              throw;
            } catch (const cufuse::error& e) {
              std::printf("| %s | %s | %lldx%lldx%lld | %s | not run: %s | | | |\n", dt.c_str(),
                          tr.c_str(), m, n, k, v.c_str(), e.what());
              continue;
            }
            runs.emplace_back(v, f);
          }
          std::vector<result> res(runs.size());
          const double flop = 2.0 * double(m) * double(n) * double(k);
          for (int r = 0; r < rounds; ++r) {
            for (std::size_t c = 0; c < runs.size(); ++c) {
              // Rounds alternate the order, so no contender always follows the same one.
              const std::size_t ci = r % 2 == 0 ? c : runs.size() - 1 - c;
              auto& run = runs[ci].second;
              res[ci].name = runs[ci].first;
              run(); // module load, first-call checks
              CUFUSE_CUDA_CHECK(cudaStreamSynchronize(stream));
              power_monitor mon(prop);
              mon.start();
              std::vector<double> per_call;
              const auto t0 = std::chrono::steady_clock::now();
              const auto until = t0 + std::chrono::duration<double>(seconds);
              const auto steady = t0 + std::chrono::duration<double>(seconds / 3);
              while (std::chrono::steady_clock::now() < until) {
                CUFUSE_CUDA_CHECK(cudaEventRecord(e0, stream));
                for (int i = 0; i < 4; ++i) {
                  run();
                }
                CUFUSE_CUDA_CHECK(cudaEventRecord(e1, stream));
                CUFUSE_CUDA_CHECK(cudaEventSynchronize(e1));
                float ms = 0;
                CUFUSE_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
                if (std::chrono::steady_clock::now() >= steady) {
                  per_call.push_back(ms * 1e-3 / 4);
                }
              }
              mon.finish();
              res[ci].tflops.push_back(flop / median(per_call) / 1e12);
              res[ci].mhz.push_back(power_monitor::tail_mean(mon.mhz));
              res[ci].watts.push_back(power_monitor::tail_mean(mon.watts));
            }
          }
          // Ratios pair each round with cuBLAS's reading of the same round.
          auto ratio = [&](const result& x) {
            std::vector<double> r;
            for (std::size_t i = 0; i < x.tflops.size(); ++i) {
              r.push_back(res[0].tflops[i] > 0 ? x.tflops[i] / res[0].tflops[i] : 0.0);
            }
            return median(r);
          };
          js << (first_key ? "" : ", ") << "{\"dtype\": \"" << dt << "\", \"trans\": \"" << tr
             << "\", \"m\": " << m << ", \"n\": " << n << ", \"k\": " << k << ", \"contenders\": [";
          first_key = false;
          for (std::size_t c = 0; c < res.size(); ++c) {
            const double tf = median(res[c].tflops);
            std::printf("| %s | %s | %lldx%lldx%lld | %s | %.1f | %.3f | %.0f | %.0f |\n",
                        dt.c_str(), tr.c_str(), m, n, k, res[c].name.c_str(), tf, ratio(res[c]),
                        median(res[c].mhz), median(res[c].watts));
            std::fflush(stdout);
            js << (c ? ", " : "") << "{\"name\": \"" << res[c].name << "\", \"tflops\": [";
            for (std::size_t r = 0; r < res[c].tflops.size(); ++r) {
              js << (r ? ", " : "") << res[c].tflops[r];
            }
            js << "], \"mhz\": [";
            for (std::size_t r = 0; r < res[c].mhz.size(); ++r) {
              js << (r ? ", " : "") << res[c].mhz[r];
            }
            js << "], \"watts\": [";
            for (std::size_t r = 0; r < res[c].watts.size(); ++r) {
              js << (r ? ", " : "") << res[c].watts[r];
            }
            js << "]}";
          }
          js << "]}";
        }
      }
    }
    js << "]}\n";
    if (!json.empty()) {
      std::ofstream(json) << js.str();
    }
    cublasDestroy(handle);
    CUFUSE_CUDA_CHECK(cudaStreamDestroy(stream));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cufuse_bench_gemm_sustained: %s\n", e.what());
    return 1;
  }
  return 0;
}
