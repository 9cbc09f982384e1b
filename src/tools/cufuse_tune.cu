/// \file cufuse-tune: offline GEMM tuning. For each shape x dtype x transpose it runs the UCB
/// bandit over the valid variants on rotating input buffers (> 2x L2, so no run finds its inputs
/// in cache), prints the choice, its TFLOP/s and its ratio to cuBLAS measured in the same run,
/// and writes the tuning database. --exhaustive also times every variant (the regret reference)
/// and replays UCB and epsilon-greedy on those samples to compare tuning costs.
///
///   cufuse-tune --shapes 4096x4096x4096,512x4096x4096 --dtypes bf16,f16 --trans NN,NT \
///               --file tune.db [--exhaustive] [--json out.json]
///
/// --epilogue bias_gelu[,bias_relu,bias] tunes GEMMs with those epilogues instead (the keys of
/// `cufuse::gemm(A, W, Y, cufuse::gelu_tanh(cufuse::acc + bias))` and the like; tune_epilogue.hpp):
/// every variant of the epilogue's set timed, the fastest recorded.
///
/// --conv N,H,W,C,K,R,S,stride,pad[,dilation] (repeated, or --conv-file with one per line)
/// tunes conv2d's implicit-GEMM variants for those convolutions instead (NHWC / KRSC, the
/// --dtypes given; a 1x1 convolution that runs as a GEMM tunes that GEMM; tune_conv.hpp).
#include "../gemm/engine.hpp" // the static heuristic's pick, reported beside the tuned one
#include "cublas_gemm.hpp"
#include "hold_stream.cuh"
#include "tune_conv.hpp"
#include "tune_epilogue.hpp"

#include <cufuse/gemm.cuh>
#include <cufuse/memory/device.hpp>
#include <cufuse/tune/bandit.hpp>

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace {

using dtype = cufuse::gemm_dtype;

struct shape {
  long long m, n, k;
};

struct options {
  std::vector<shape> shapes;
  std::vector<std::string> dtypes{"bf16"};
  std::vector<std::string> trans{"NN"};
  std::string out_dtype = "same"; // or f32
  long long batch = 1;
  float beta = 0.0f; // C = A B + beta C (nonzero: every epilogue also reads C)
  std::string file;
  std::string json;
  bool exhaustive = false;
  bool cublas = true;
  std::vector<std::string> only;      // keep variants whose name contains one of these (profiling)
  std::vector<std::string> epilogues; // --epilogue: tune these named epilogues instead
  std::vector<cufuse_tools::conv_spec> convs; // --conv: tune these convolutions instead
  int samples = 5;                            // exhaustive samples per variant
  int reruns = 10; // runs of the chosen variant and of cuBLAS for the reported speed
  int replays = 200;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(
      stderr,
      "cufuse-tune: %s\n"
      "usage: cufuse-tune --shapes MxNxK[,MxNxK...] | --shapes-file FILE\n"
      "         [--dtypes f32,tf32,f16,bf16] [--trans NN,NT,TN,TT] [--out-dtype same|f32]\n"
      "         [--batch B] [--file DB] [--exhaustive] [--samples N] [--json OUT]\n"
      "         [--no-cublas] [--only SUBSTR[,SUBSTR...]] [--beta B]\n"
      "         [--epilogue bias,bias_relu,bias_gelu]  (the GEMM with that epilogue instead)\n"
      "   or: cufuse-tune --conv N,H,W,C,K,R,S,stride,pad[,dilation] [--conv ...] | --conv-file F\n"
      "         [--dtypes f32,tf32,f16,bf16] [--out-dtype same|f32] [--file DB] [--samples N]\n"
      "         [--json OUT]  (conv2d, NHWC input, KRSC filter)\n"
      "DB defaults to $CUFUSE_TUNE_FILE, else cufuse-tune.db\n",
      why.c_str());
  std::exit(2);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) {
    if (!item.empty()) {
      out.push_back(item);
    }
  }
  return out;
}

shape parse_shape(const std::string& s) {
  shape r{};
  if (std::sscanf(s.c_str(), "%lldx%lldx%lld", &r.m, &r.n, &r.k) != 3 || r.m < 0 || r.n < 0 ||
      r.k < 0) {
    usage("bad shape '" + s + "' (want MxNxK)");
  }
  return r;
}

options parse(int argc, char** argv) {
  options o;
  if (const char* f = std::getenv("CUFUSE_TUNE_FILE")) {
    o.file = f;
  }
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage(a + " needs a value");
      }
      return argv[++i];
    };
    if (a == "--shapes") {
      for (const auto& s : split(value(), ',')) {
        o.shapes.push_back(parse_shape(s));
      }
    } else if (a == "--shapes-file") {
      std::ifstream in(value());
      std::string line;
      while (std::getline(in, line)) {
        if (!line.empty() && line[0] != '#') {
          o.shapes.push_back(parse_shape(line));
        }
      }
    } else if (a == "--dtypes") {
      o.dtypes = split(value(), ',');
    } else if (a == "--trans") {
      o.trans = split(value(), ',');
    } else if (a == "--out-dtype") {
      o.out_dtype = value();
    } else if (a == "--batch") {
      o.batch = std::atoll(value().c_str());
    } else if (a == "--file") {
      o.file = value();
    } else if (a == "--beta") {
      const std::string v = value();
      char* end = nullptr;
      o.beta = std::strtof(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !std::isfinite(o.beta)) {
        usage("bad --beta '" + v + "' (want a finite number)");
      }
    } else if (a == "--json") {
      o.json = value();
    } else if (a == "--exhaustive") {
      o.exhaustive = true;
    } else if (a == "--samples") {
      o.samples = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--no-cublas") {
      o.cublas = false;
    } else if (a == "--only") {
      o.only = split(value(), ',');
    } else if (a == "--epilogue") {
      o.epilogues = split(value(), ',');
    } else if (a == "--conv" || a == "--conv-file") {
      std::vector<std::string> specs;
      if (a == "--conv") {
        specs.push_back(value());
      } else {
        std::ifstream in(value());
        if (!in) {
          usage("cannot read " + std::string(argv[i]));
        }
        std::string line;
        while (std::getline(in, line)) {
          if (!line.empty() && line[0] != '#') {
            specs.push_back(line);
          }
        }
      }
      for (const std::string& spec : specs) {
        cufuse_tools::conv_spec c{};
        if (!cufuse_tools::parse_conv_spec(spec, c)) {
          usage("bad --conv '" + spec +
                "' (want N,H,W,C,K,R,S,stride,pad[,dilation], all >= 1 "
                "but pad >= 0)");
        }
        o.convs.push_back(c);
      }
    } else if (a == "--help" || a == "-h") {
      usage("help");
    } else {
      usage("unknown argument " + a);
    }
  }
  if (!o.convs.empty() && (!o.shapes.empty() || !o.epilogues.empty() || o.exhaustive)) {
    usage("--conv tunes convolutions only (no --shapes, --epilogue or --exhaustive)");
  }
  if (o.shapes.empty() && o.convs.empty()) {
    usage("no shapes");
  }
  if (o.file.empty()) {
    o.file = "cufuse-tune.db";
  }
  for (const auto& t : o.trans) {
    if (t.size() != 2 || (t[0] != 'N' && t[0] != 'T') || (t[1] != 'N' && t[1] != 'T')) {
      usage("bad transpose '" + t + "' (want NN, NT, TN or TT)");
    }
  }
  if (o.batch < 1) {
    usage("--batch must be >= 1");
  }
  for (const auto& e : o.epilogues) {
    const auto& known = cufuse_tools::named_epilogues();
    if (std::none_of(known.begin(), known.end(), [&](const auto& k) { return k.first == e; })) {
      std::string names;
      for (const auto& k : known) {
        names += (names.empty() ? "" : ", ") + k.first + " (" + k.second + ")";
      }
      usage("unknown epilogue '" + e + "'; known: " + names);
    }
  }
  if (!o.epilogues.empty() && (o.batch != 1 || o.beta != 0.0f || o.exhaustive)) {
    usage("--epilogue times every variant of the epilogue (no --exhaustive), without --batch or "
          "--beta");
  }
  return o;
}

#define CHECK(call) CUFUSE_CUDA_CHECK(call)

template <class T>
__global__ void fill_uniform(T* p, long long n, unsigned seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u ^ seed;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    p[i] = static_cast<T>(float(x & 0xffff) / 32768.0f - 1.0f);
  }
}

/// Device buffers for one (dtype, shape, transpose) key: `sets` rotating copies of A, B and C.
struct buffers {
  std::vector<void*> a, b, c;
  ~buffers() {
    for (auto* v : {&a, &b, &c}) {
      for (void* p : *v) {
        cudaFree(p);
      }
    }
  }
};

template <class T>
void fill(void* p, long long n, unsigned seed) {
  if (n > 0) {
    fill_uniform<T><<<1024, 256>>>(static_cast<T*>(p), n, seed);
    CHECK(cudaGetLastError());
  }
}

struct progress {
  int total, done = 0;
  bool tty = isatty(2) != 0;
  void step(const std::string& what) {
    ++done;
    if (!tty) {
      return;
    }
    const int w = 30, filled = total > 0 ? done * w / total : w;
    std::fprintf(stderr, "\r[%s%s] %d/%d %-60s", std::string(filled, '#').c_str(),
                 std::string(w - filled, '.').c_str(), done, total, what.c_str());
    std::fflush(stderr);
  }
  void clear() {
    if (tty) {
      std::fprintf(stderr, "\r%100s\r", "");
    }
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()
             ? 0.0
             : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}

/// Replays a strategy on recorded per-arm samples (drawn with replacement): returns the pulls
/// after which its pick stays within 3% of the best for the rest of the horizon, the seconds
/// those pulls cost, whether the final pick is within 3%, and (UCB) the pulls at commit.
struct replay_result {
  double pulls_to_3pct = 0, seconds_to_3pct = 0, final_ok = 0, commit_pulls = 0;
};

replay_result replay(const std::vector<std::vector<double>>& samples, bool ucb, double eps,
                     int seeds) {
  const int arms = static_cast<int>(samples.size());
  std::vector<double> med(arms);
  for (int a = 0; a < arms; ++a) {
    med[a] = median(samples[a]);
  }
  const double best = *std::min_element(med.begin(), med.end());
  const int horizon = 5 * arms;
  replay_result r;
  for (int seed = 0; seed < seeds; ++seed) {
    std::mt19937_64 rng(1234 + seed);
    auto draw = [&](int a) {
      std::uniform_int_distribution<std::size_t> d(0, samples[a].size() - 1);
      return samples[a][d(rng)];
    };
    std::vector<std::vector<double>> seen(arms);
    std::vector<double> cost(horizon + 1, 0.0);
    std::vector<int> pick(horizon + 1, -1);
    cufuse::tune::ucb_bandit bandit(arms, cufuse::tune::gemm_bandit_config(arms));
    int commit_at = 0;
    for (int t = 1; t <= horizon; ++t) {
      int a;
      if (ucb) {
        a = bandit.next_arm();
      } else {
        a = -1;
        for (int i = 0; i < arms && a < 0; ++i) {
          if (seen[i].empty()) {
            a = i;
          }
        }
        if (a < 0) {
          std::uniform_real_distribution<double> u(0, 1);
          if (u(rng) < eps) {
            a = std::uniform_int_distribution<int>(0, arms - 1)(rng);
          } else {
            a = 0;
            for (int i = 1; i < arms; ++i) {
              if (median(seen[i]) < median(seen[a])) {
                a = i;
              }
            }
          }
        }
      }
      const double x = draw(a);
      seen[a].push_back(x);
      cost[t] = cost[t - 1] + x;
      if (ucb) {
        const bool was = bandit.committed();
        bandit.record(a, x);
        if (!was && bandit.committed()) {
          commit_at = t;
        }
        pick[t] = bandit.committed() ? bandit.committed_arm() : bandit.best_arm();
        if (bandit.committed()) {
          for (int u = t + 1; u <= horizon; ++u) {
            pick[u] = pick[t];
            cost[u] = cost[t];
          }
          break;
        }
      } else {
        int b = -1;
        for (int i = 0; i < arms; ++i) {
          if (!seen[i].empty() && (b < 0 || median(seen[i]) < median(seen[b]))) {
            b = i;
          }
        }
        pick[t] = b;
      }
    }
    int reach = horizon;
    for (int t = horizon; t >= 1; --t) {
      if (pick[t] < 0 || med[pick[t]] > 1.03 * best) {
        break;
      }
      reach = t;
    }
    r.pulls_to_3pct += reach;
    r.seconds_to_3pct += cost[reach];
    r.final_ok += med[pick[horizon]] <= 1.03 * best ? 1.0 : 0.0;
    r.commit_pulls += ucb ? (commit_at > 0 ? commit_at : horizon) : horizon;
  }
  r.pulls_to_3pct /= seeds;
  r.seconds_to_3pct /= seeds;
  r.final_ok /= seeds;
  r.commit_pulls /= seeds;
  return r;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
    }
    o += c;
  }
  return o;
}

/// Writes the JSON (--json) and the database; 1 if the database was not written.
int finish(const options& opt, const std::string& json) {
  if (!opt.json.empty()) {
    std::ofstream(opt.json) << json;
  }
  if (!cufuse::tuning::save()) {
    std::fprintf(stderr, "cufuse-tune: the database %s was not written\n", opt.file.c_str());
    return 1;
  }
  std::printf("# wrote %s\n", opt.file.c_str());
  return 0;
}

/// The named epilogue on `ab` inputs, from the file of that type (CMake builds all three, or
/// only bf16 where nothing runs: CUFUSE_COMPILE_ONLY).
cufuse::tuning::epilogue_choice tune_epilogue_of(dtype ab, const std::string& e,
                                                 const cufuse_tools::epilogue_problem& p,
                                                 const cufuse::gemm_options& go, int repeats,
                                                 cudaStream_t stream) {
  [[maybe_unused]] auto missing = [&](const char* t) -> cufuse::tuning::epilogue_choice {
    throw cufuse::error(std::string("this cufuse-tune was built without the ") + t +
                        " epilogues (a CUFUSE_COMPILE_ONLY build)");
  };
  if (ab == dtype::f32) {
#ifdef CUFUSE_TUNE_EPILOGUE_f32
    return cufuse_tools::tune_named_epilogue_f32(e, p, go, repeats, stream);
#else
    return missing("f32");
#endif
  }
  if (ab == dtype::f16) {
#ifdef CUFUSE_TUNE_EPILOGUE_f16
    return cufuse_tools::tune_named_epilogue_f16(e, p, go, repeats, stream);
#else
    return missing("f16");
#endif
  }
#ifdef CUFUSE_TUNE_EPILOGUE_bf16
  return cufuse_tools::tune_named_epilogue_bf16(e, p, go, repeats, stream);
#else
  return missing("bf16");
#endif
}

/// --epilogue: for each epilogue x dtype x transpose x shape, every variant of the epilogue's
/// kernels timed (cufuse::tuning::tune_epilogue) and the fastest recorded in the database.
int tune_epilogues(const options& opt, const cudaDeviceProp& prop, cudaStream_t stream) {
  std::printf("# cufuse-tune --epilogue on %s (%d SMs), database %s\n", prop.name,
              prop.multiProcessorCount, opt.file.c_str());
  std::printf("%-6s %-3s %-20s %-10s %-44s %9s %8s\n", "dtype", "op", "shape", "epilogue",
              "chosen variant", "ms", "TFLOP/s");
  std::ostringstream js;
  js << "{\"device\": \"" << json_escape(prop.name) << "\", \"epilogue_keys\": [";
  bool first_key = true;
  for (const std::string& dt : opt.dtypes) {
    cufuse::gemm_options go;
    dtype ab = dtype::bf16;
    if (dt == "f32" || dt == "tf32") {
      ab = dtype::f32;
      go.math = dt == "tf32" ? cufuse::gemm_math::tf32 : cufuse::gemm_math::fp32;
    } else if (dt == "f16") {
      ab = dtype::f16;
    } else if (dt != "bf16") {
      usage("unknown dtype " + dt);
    }
    const dtype out = opt.out_dtype == "f32" ? dtype::f32 : ab;
    for (const std::string& tr : opt.trans) {
      for (const shape& s : opt.shapes) {
        cufuse_tools::epilogue_problem p{ab,  out, nullptr, nullptr,      nullptr,     nullptr,
                                         s.m, s.n, s.k,     tr[0] == 'T', tr[1] == 'T'};
        const long long na = s.m * s.k, nb = s.k * s.n, ny = s.m * s.n;
        buffers buf; // frees what it holds
        for (auto [ptr, n, t] : {std::tuple{&p.a, na, ab}, std::tuple{&p.b, nb, ab},
                                 std::tuple{&p.y, ny, out}, std::tuple{&p.bias, s.n, ab}}) {
          CHECK(cudaMalloc(ptr, std::max<long long>(n, 1) * cufuse::gemm_dtype_size(t)));
          buf.a.push_back(*ptr);
          if (t == dtype::f32) {
            fill<float>(*ptr, n, 11 + unsigned(n));
          } else if (t == dtype::f16) {
            fill<__half>(*ptr, n, 11 + unsigned(n));
          } else {
            fill<__nv_bfloat16>(*ptr, n, 11 + unsigned(n));
          }
        }
        CHECK(cudaDeviceSynchronize());
        for (const std::string& e : opt.epilogues) {
          const auto c = tune_epilogue_of(ab, e, p, go, opt.samples, stream);
          const double tf = 2.0 * s.m * s.n * s.k / c.seconds * 1e-12;
          char shape_s[64];
          std::snprintf(shape_s, sizeof shape_s, "%lldx%lldx%lld", s.m, s.n, s.k);
          std::printf("%-6s %-3s %-20s %-10s %-44s %9.4f %8.1f\n", dt.c_str(), tr.c_str(), shape_s,
                      e.c_str(), c.variant.c_str(), c.seconds * 1e3, tf);
          std::fflush(stdout);
          js << (first_key ? "" : ",") << "\n  {\"dtype\": \"" << dt << "\", \"out\": \""
             << cufuse::gemm_dtype_name(out) << "\", \"trans\": \"" << tr << "\", \"m\": " << s.m
             << ", \"n\": " << s.n << ", \"k\": " << s.k << ", \"epilogue\": \"" << e
             << "\", \"chosen\": \"" << c.variant << "\", \"chosen_s\": " << c.seconds
             << ", \"tflops\": " << tf << "}";
          first_key = false;
        }
      }
    }
  }
  js << "\n]}\n";
  return finish(opt, js.str());
}

/// --conv: for each convolution x dtype, every conv2d variant that can run it timed
/// (cufuse::tuning::tune_conv2d) and the fastest recorded in the database.
int tune_convs(const options& opt, const cudaDeviceProp& prop, cudaStream_t stream) {
  std::printf("# cufuse-tune --conv on %s (%d SMs), database %s\n", prop.name,
              prop.multiProcessorCount, opt.file.c_str());
  std::printf("%-6s %-36s %-34s %9s %8s\n", "dtype", "N,H,W,C,K,R,S,stride,pad,dil",
              "chosen variant", "ms", "TFLOP/s");
  std::ostringstream js;
  js << "{\"device\": \"" << json_escape(prop.name) << "\", \"conv_keys\": [";
  bool first_key = true;
  for (const std::string& dt : opt.dtypes) {
    for (const cufuse_tools::conv_spec& c : opt.convs) {
      const auto t = cufuse_tools::tune_conv(c, dt, opt.out_dtype == "f32", opt.samples, stream);
      const double tf =
          2.0 * double(c.n * t.p * t.q) * double(c.k) * double(c.r * c.s * c.c) / t.seconds * 1e-12;
      char spec[96];
      std::snprintf(spec, sizeof spec, "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", c.n,
                    c.h, c.w, c.c, c.k, c.r, c.s, c.stride, c.pad, c.dilation);
      std::printf("%-6s %-36s %-34s %9.4f %8.1f\n", dt.c_str(), spec, t.variant.c_str(),
                  t.seconds * 1e3, tf);
      std::fflush(stdout);
      js << (first_key ? "" : ",") << "\n  {\"dtype\": \"" << dt << "\", \"conv\": \"" << spec
         << "\", \"chosen\": \"" << t.variant << "\", \"chosen_s\": " << t.seconds
         << ", \"tflops\": " << tf << "}";
      first_key = false;
    }
  }
  js << "\n]}\n";
  return finish(opt, js.str());
}

} // namespace

int main(int argc, char** argv) {
  const options opt = parse(argc, argv);
  if (!cufuse::device_available()) {
    std::fprintf(stderr, "cufuse-tune: no CUDA device found; tuning needs a GPU\n");
    return 1;
  }
  try {
    cufuse::tuning::set_file(opt.file);
    int dev = 0;
    CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop{};
    CHECK(cudaGetDeviceProperties(&prop, dev));
    cublasHandle_t handle = nullptr;
    if (opt.cublas) {
      cufuse_tools::check_cublas(cublasCreate(&handle), "cublasCreate");
    }
    cudaStream_t stream = nullptr;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (!opt.epilogues.empty() || !opt.convs.empty()) {
      const int rc =
          opt.convs.empty() ? tune_epilogues(opt, prop, stream) : tune_convs(opt, prop, stream);
      if (handle) {
        cublasDestroy(handle);
      }
      return rc;
    }
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));

    char beta_s[48] = "";
    if (opt.beta != 0.0f) {
      std::snprintf(beta_s, sizeof beta_s, ", C = A B + %g C", double(opt.beta));
    }
    std::printf("# cufuse-tune on %s (%d SMs, L2 %d MiB), database %s%s\n", prop.name,
                prop.multiProcessorCount, prop.l2CacheSize >> 20, opt.file.c_str(), beta_s);
    std::printf("%-6s %-3s %-20s %-44s %8s %8s %6s %11s %s\n", "dtype", "op", "shape",
                "chosen variant", "TFLOP/s", "cuBLAS", "ratio", "trials/exh",
                opt.exhaustive ? "regret  exhaustive-best" : "");
    std::ostringstream js;
    js << "{\"device\": \"" << json_escape(prop.name) << "\", \"sms\": " << prop.multiProcessorCount
       << ", \"keys\": [";
    bool first_key = true;
    progress bar{int(opt.shapes.size() * opt.dtypes.size() * opt.trans.size())};

    for (const std::string& dt : opt.dtypes) {
      dtype ab;
      cufuse::gemm_options go;
      if (dt == "f32" || dt == "tf32") {
        ab = dtype::f32;
        go.math = dt == "tf32" ? cufuse::gemm_math::tf32 : cufuse::gemm_math::fp32;
      } else if (dt == "f16") {
        ab = dtype::f16;
      } else if (dt == "bf16") {
        ab = dtype::bf16;
      } else {
        usage("unknown dtype " + dt);
      }
      const dtype out = opt.out_dtype == "f32" ? dtype::f32 : ab;
      for (const std::string& tr : opt.trans) {
        for (const shape& s : opt.shapes) {
          const bool ta = tr[0] == 'T', tb = tr[1] == 'T';
          const long long a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k;
          const long long b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
          const long long na = a_rows * a_cols * opt.batch, nb = b_rows * b_cols * opt.batch,
                          nc = s.m * s.n * opt.batch;
          const double set_bytes = double(na + nb) * cufuse::gemm_dtype_size(ab) +
                                   double(nc) * cufuse::gemm_dtype_size(out);
          const int sets =
              std::max(2, int(std::ceil(2.0 * prop.l2CacheSize / std::max(set_bytes, 1.0))) + 1);
          buffers buf;
          for (int i = 0; i < sets; ++i) {
            void *a = nullptr, *b = nullptr, *c = nullptr;
            CHECK(cudaMalloc(&a, std::max<long long>(na, 1) * cufuse::gemm_dtype_size(ab)));
            CHECK(cudaMalloc(&b, std::max<long long>(nb, 1) * cufuse::gemm_dtype_size(ab)));
            CHECK(cudaMalloc(&c, std::max<long long>(nc, 1) * cufuse::gemm_dtype_size(out)));
            buf.a.push_back(a);
            buf.b.push_back(b);
            buf.c.push_back(c);
            if (ab == dtype::f32) {
              fill<float>(a, na, 11 + i);
              fill<float>(b, nb, 23 + i);
            } else if (ab == dtype::f16) {
              fill<__half>(a, na, 11 + i);
              fill<__half>(b, nb, 23 + i);
            } else {
              fill<__nv_bfloat16>(a, na, 11 + i);
              fill<__nv_bfloat16>(b, nb, 23 + i);
            }
            if (opt.beta != 0.0f) { // C is read: give it values (the same type as the output)
              if (out == dtype::f32) {
                fill<float>(c, nc, 37 + i);
              } else if (out == dtype::f16) {
                fill<__half>(c, nc, 37 + i);
              } else {
                fill<__nv_bfloat16>(c, nc, 37 + i);
              }
            }
          }
          CHECK(cudaDeviceSynchronize());
          auto problem_of = [&](int i) {
            cufuse::gemm_problem p;
            p.ab = ab;
            p.out = out;
            p.math = go.math;
            p.m = s.m;
            p.n = s.n;
            p.k = s.k;
            p.batch = opt.batch;
            p.a = {buf.a[i], a_rows, a_cols, a_cols, a_rows * a_cols, ta};
            p.b = {buf.b[i], b_rows, b_cols, b_cols, b_rows * b_cols, tb};
            p.c = buf.c[i];
            p.ldc = s.n;
            p.stride_c = s.m * s.n;
            p.beta = opt.beta;
            return p;
          };
          auto arms = cufuse::tuning::variants(problem_of(0), go);
          if (!opt.only.empty()) {
            std::erase_if(arms, [&](const std::string& name) {
              return std::none_of(opt.only.begin(), opt.only.end(), [&](const std::string& o) {
                return name.find(o) != std::string::npos;
              });
            });
            if (arms.empty()) {
              std::printf("%-6s %-3s %lldx%lldx%lld: no valid variant matches --only\n", dt.c_str(),
                          tr.c_str(), s.m, s.n, s.k);
              continue;
            }
          }
          // What an untuned call runs (the static heuristic), for the report.
          std::string heuristic_pick;
          {
            namespace gd = cufuse::gemm_detail;
            const gd::device_state& d = gd::device_state_for(gd::current_device());
            const cufuse::gemm_problem p0 = problem_of(0);
            const int hv = gd::heuristic(p0, d, gd::valid_indices(p0, d));
            if (hv >= 0) {
              heuristic_pick = gd::registry()[hv].name;
            }
          }
          int rot = 0;
          auto time_one = [&](auto&& launch) {
            const int i = rot++ % sets;
            // The stream is kept busy while the host enqueues the timed call, so its event pair
            // brackets the kernel, not the host's launch path (a few microseconds, which on a
            // 20-40 us problem would outweigh the differences between variants).
            static const long long hold_ns = [] {
              const char* e = std::getenv("CUFUSE_TUNE_HOLD_US"); // experiments (JOURNAL t11)
              return e != nullptr ? std::atoll(e) * 1000 : 50'000LL;
            }();
            cufuse_tools::hold_stream<<<1, 1, 0, stream>>>(hold_ns);
            CHECK(cudaGetLastError());
            CHECK(cudaEventRecord(e0, stream));
            launch(i);
            CHECK(cudaEventRecord(e1, stream));
            CHECK(cudaEventSynchronize(e1));
            float ms = 0;
            CHECK(cudaEventElapsedTime(&ms, e0, e1));
            return ms * 1e-3;
          };
          auto run_variant = [&](int arm) {
            return [&, arm](int i) {
              cufuse::gemm_options o = go;
              o.variant = arms[arm];
              cufuse::tuning::run(problem_of(i), stream, o);
            };
          };
          // Warm-up: every variant once (module loading, clocks), untimed.
          for (int a = 0; a < int(arms.size()); ++a) {
            run_variant(a)(0);
          }
          CHECK(cudaStreamSynchronize(stream));

          // Live UCB.
          const auto t0 = std::chrono::steady_clock::now();
          cufuse::tune::ucb_bandit bandit(int(arms.size()),
                                          cufuse::tune::gemm_bandit_config(int(arms.size())));
          while (!bandit.committed()) {
            const int a = bandit.next_arm();
            bandit.record(a, time_one(run_variant(a)));
          }
          const double tune_s =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          const int chosen = bandit.committed_arm();
          const auto run_cublas = [&](int i) {
            cufuse_tools::cublas_gemm(handle, problem_of(i), stream);
          };
          std::vector<double> tc, tb_;
          for (int r = 0; r < opt.reruns; ++r) {
            tc.push_back(time_one(run_variant(chosen)));
          }
          double t_cublas = 0;
          if (handle) {
            cufuse_tools::cublas_gemm(handle, problem_of(0), stream); // warm-up
            for (int r = 0; r < opt.reruns; ++r) {
              tb_.push_back(time_one(run_cublas));
            }
            t_cublas = median(tb_);
          }
          const double t_chosen = median(tc);
          const double flop = 2.0 * s.m * s.n * s.k * opt.batch;
          cufuse::tuning::record(problem_of(0), arms[chosen], t_chosen, go);

          // Exhaustive sweep (the regret reference) and replays of UCB and epsilon-greedy.
          std::ostringstream extra;
          std::string exh_text;
          if (opt.exhaustive) {
            const auto x0 = std::chrono::steady_clock::now();
            // cuBLAS takes its turn in every round too, so that the sweep's medians compare
            // with a cuBLAS timed the same way: interleaved with other kernels, each call after
            // a different one. Timed back to back (the reruns above), the same kernels ran up
            // to 10% faster than in the sweep (H100, 20 us small-M GEMMs; bench/JOURNAL.md t11).
            std::vector<std::vector<double>> samples(arms.size());
            std::vector<double> sweep_cublas;
            for (int r = 0; r < opt.samples; ++r) {
              for (int a = 0; a < int(arms.size()); ++a) {
                samples[a].push_back(time_one(run_variant(a)));
              }
              if (handle) {
                sweep_cublas.push_back(time_one(run_cublas));
              }
            }
            const double exh_s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - x0).count();
            int best = 0;
            for (int a = 1; a < int(arms.size()); ++a) {
              if (median(samples[a]) < median(samples[best])) {
                best = a;
              }
            }
            const double regret = median(samples[chosen]) / median(samples[best]);
            const replay_result ru = replay(samples, true, 0.0, opt.replays);
            const replay_result re = replay(samples, false, 0.1, opt.replays);
            char b[160];
            std::snprintf(b, sizeof b, "%6.3f  %s", regret, arms[best].c_str());
            exh_text = b;
            const auto h = std::find(arms.begin(), arms.end(), heuristic_pick);
            if (h != arms.end()) {
              extra << ", \"heuristic\": \"" << heuristic_pick
                    << "\", \"heuristic_s\": " << median(samples[std::size_t(h - arms.begin())]);
            }
            extra << ", \"exhaustive\": {\"best\": \"" << arms[best]
                  << "\", \"best_s\": " << median(samples[best])
                  << ", \"cublas_s\": " << (sweep_cublas.empty() ? 0.0 : median(sweep_cublas))
                  << ", \"measurements\": " << arms.size() * opt.samples
                  << ", \"seconds\": " << exh_s << ", \"ucb_regret\": " << regret
                  << ", \"samples\": {";
            for (int a = 0; a < int(arms.size()); ++a) {
              extra << (a ? ", " : "") << "\"" << arms[a] << "\": [";
              for (std::size_t j = 0; j < samples[a].size(); ++j) {
                extra << (j ? ", " : "") << samples[a][j];
              }
              extra << "]";
            }
            extra << "}}, \"replay\": {\"seeds\": " << opt.replays
                  << ", \"ucb\": {\"commit_pulls\": " << ru.commit_pulls
                  << ", \"pulls_to_3pct\": " << ru.pulls_to_3pct
                  << ", \"seconds_to_3pct\": " << ru.seconds_to_3pct
                  << ", \"p_within_3pct\": " << ru.final_ok << "}, \"egreedy\": {\"epsilon\": 0.1"
                  << ", \"pulls_to_3pct\": " << re.pulls_to_3pct
                  << ", \"seconds_to_3pct\": " << re.seconds_to_3pct
                  << ", \"p_within_3pct\": " << re.final_ok << "}}";
          }
          bar.clear();
          char shape_s[64], trials[32];
          std::snprintf(shape_s, sizeof shape_s, "%lldx%lldx%lld%s", s.m, s.n, s.k,
                        opt.batch > 1 ? ("b" + std::to_string(opt.batch)).c_str() : "");
          std::snprintf(trials, sizeof trials, "%d/%d", bandit.pulls(),
                        int(arms.size()) * opt.samples);
          const double tf = flop / t_chosen * 1e-12;
          const double tfb = t_cublas > 0 ? flop / t_cublas * 1e-12 : 0.0;
          std::printf("%-6s %-3s %-20s %-44s %8.1f %8.1f %6.3f %11s %s\n", dt.c_str(), tr.c_str(),
                      shape_s, arms[chosen].c_str(), tf, tfb, tfb > 0 ? tf / tfb : 0.0, trials,
                      exh_text.c_str());
          std::fflush(stdout);
          bar.step(dt + " " + tr + " " + shape_s);
          js << (first_key ? "" : ",") << "\n  {\"dtype\": \"" << dt << "\", \"out\": \""
             << cufuse::gemm_dtype_name(out) << "\", \"trans\": \"" << tr << "\", \"m\": " << s.m
             << ", \"n\": " << s.n << ", \"k\": " << s.k << ", \"batch\": " << opt.batch
             << ", \"beta\": " << opt.beta << ", \"arms\": " << arms.size() << ", \"chosen\": \""
             << arms[chosen] << "\", \"chosen_s\": " << t_chosen << ", \"cublas_s\": " << t_cublas
             << ", \"tflops\": " << tf << ", \"cublas_tflops\": " << tfb
             << ", \"ucb_pulls\": " << bandit.pulls() << ", \"ucb_seconds\": " << tune_s
             << ", \"exhaustive_measurements\": " << arms.size() * opt.samples << extra.str()
             << "}";
          first_key = false;
        }
      }
    }
    bar.clear();
    js << "\n]}\n";
    const int rc = finish(opt, js.str());
    if (handle) {
      cublasDestroy(handle);
    }
    if (rc != 0) {
      return rc;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cufuse-tune: %s\n", e.what());
    return 1;
  }
  return 0;
}
