/// \file The GEMM engine: problem checks, variant constraints, the static heuristic, the tuner
/// (off / online UCB / frozen database) and the launch (with the split-K workspace).
#include "registry.hpp"

#include <cufuse/core/error.hpp>
#include <cufuse/gemm.cuh>
#include <cufuse/tune/bandit.hpp>
#include <cufuse/tune/database.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace cufuse::gemm_detail {
namespace {

// ---- the variant registry --------------------------------------------------------------------

const std::vector<variant>& registry() {
  static const std::vector<variant> all = [] {
    std::vector<variant> v;
    for (auto part : {simt_set(), f16_set(), bf16_set(), tf32_set(), wgmma_set()}) {
      v.insert(v.end(), part.begin(), part.end());
    }
    return v;
  }();
  return all;
}

std::string variant_set_hash() {
  std::uint32_t h = 2166136261u; // FNV-1a over every name, in order
  for (const variant& v : registry()) {
    for (char c : v.name + "\n") {
      h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
    }
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", h);
  return buf;
}

int find_variant(const std::string& name) {
  const auto& r = registry();
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (r[i].name == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// ---- devices ---------------------------------------------------------------------------------

struct device_state {
  int ordinal = 0;
  std::string name;
  int sms = 0, cc = 0, l2 = 0, smem_per_sm = 0, runtime = 0;
  std::vector<int> arch; // per variant: SASS arch of its kernels on this device (0: none)
  // Split-K workspaces come from this pool, which keeps up to 256 MiB mapped between calls;
  // the default pool hands freed memory back to the driver at every synchronization, so the
  // next call paid for a fresh mapping (bench/JOURNAL.md g12, g15, g27). Null: the default pool.
  cudaMemPool_t pool = nullptr;
};

const device_state& device_state_for(int ordinal) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<device_state>> states;
  std::lock_guard<std::mutex> g(mu);
  auto& slot = states[ordinal];
  if (!slot) {
    auto d = std::make_unique<device_state>();
    d->ordinal = ordinal;
    cudaDeviceProp prop{};
    CUFUSE_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
    d->name = prop.name;
    d->sms = prop.multiProcessorCount;
    d->cc = prop.major * 10 + prop.minor;
    d->l2 = prop.l2CacheSize;
    d->smem_per_sm = static_cast<int>(prop.sharedMemPerMultiprocessor);
    CUFUSE_CUDA_CHECK(cudaRuntimeGetVersion(&d->runtime));
    for (const variant& v : registry()) {
      int a = 0;
      if (v.smem <= static_cast<int>(prop.sharedMemPerBlockOptin)) {
        CUFUSE_CUDA_CHECK_MSG(v.prepare(&a), "preparing GEMM variant " + v.name);
      }
      d->arch.push_back(a);
    }
    int pools = 0;
    if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, ordinal) == cudaSuccess &&
        pools != 0) {
      cudaMemPoolProps props{};
      props.allocType = cudaMemAllocationTypePinned;
      props.location.type = cudaMemLocationTypeDevice;
      props.location.id = ordinal;
      CUFUSE_CUDA_CHECK_MSG(cudaMemPoolCreate(&d->pool, &props),
                            "creating the split-K workspace pool of device " +
                                std::to_string(ordinal));
      std::uint64_t keep = std::uint64_t(256) << 20;
      CUFUSE_CUDA_CHECK_MSG(
          cudaMemPoolSetAttribute(d->pool, cudaMemPoolAttrReleaseThreshold, &keep),
          "setting the release threshold of the split-K workspace pool");
    }
    slot = std::move(d);
  }
  return *slot;
}

// ---- constraints -----------------------------------------------------------------------------

bool aligned(const void* p, std::int64_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(bytes) == 0;
}

/// Largest element alignment (8, 4, 2 or 1) that A's and B's pointers, leading dimensions and
/// batch strides all share.
int ab_align_class(const problem& p) {
  const int e = dtype_size(p.ab);
  for (int a : {8, 4, 2}) {
    bool ok =
        aligned(p.a.ptr, a * e) && aligned(p.b.ptr, a * e) && p.a.ld % a == 0 && p.b.ld % a == 0;
    if (p.batch > 1) {
      ok = ok && p.a.batch_stride % a == 0 && p.b.batch_stride % a == 0;
    }
    if (ok) {
      return a;
    }
  }
  return 1;
}

int c_align_class(const problem& p) {
  const int e = dtype_size(p.out);
  for (int a : {4, 2}) {
    if (aligned(p.c, a * e) && p.ldc % a == 0 && (p.batch <= 1 || p.stride_c % a == 0)) {
      return a;
    }
  }
  return 1;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// Splits actually used for a problem (each split covers whole BK tiles) and its K chunk.
std::pair<int, int> split_plan(const variant& v, const problem& p) {
  if (v.splits <= 1 || p.k == 0) {
    return {1, static_cast<int>(std::max<std::int64_t>(p.k, 1))};
  }
  const std::int64_t chunk = ceil_div(ceil_div(p.k, v.splits), v.bk) * v.bk;
  return {static_cast<int>(ceil_div(p.k, chunk)), static_cast<int>(chunk)};
}

constexpr std::int64_t max_workspace_bytes = std::int64_t(1) << 30;

/// Whether variant `vi` can run `p` on `d`; if not, `why` says which constraint fails.
bool can_run(int vi, const problem& p, const device_state& d, std::string* why = nullptr) {
  const variant& v = registry()[vi];
  auto no = [&](const std::string& w) {
    if (why) {
      *why = w;
    }
    return false;
  };
  if (v.ab != p.ab) {
    return no(std::string("it takes ") + dtype_name(v.ab) + " inputs, not " + dtype_name(p.ab));
  }
  if (v.tf32 && p.math != gemm_math::tf32) {
    return no("it uses TF32 tensor cores and the call asks for fp32 math (gemm_options.math)");
  }
  if (d.arch[vi] < v.min_arch) {
    return no("it needs sm_" + std::to_string(v.min_arch) + (v.min_arch == 90 ? "a" : "") +
              " code, which this library build has not for this device (compute capability " +
              std::to_string(d.cc) + ")");
  }
  if (((v.layouts >> (2 * int(p.a.trans) + int(p.b.trans))) & 1) == 0) {
    return no("it does not take this combination of transposes");
  }
  if (ab_align_class(p) < v.align) {
    return no("it needs " + std::to_string(v.align * dtype_size(p.ab)) +
              "-byte aligned A/B pointers, leading dimensions and batch strides");
  }
  // Either orientation: TF32 NN on mma.sync runs as C^T = B^T A^T (n x m tiles of bm x bn).
  const std::int64_t tiles = std::max(ceil_div(p.m, v.bm) * ceil_div(p.n, v.bn),
                                      ceil_div(p.n, v.bm) * ceil_div(p.m, v.bn));
  const auto [splits, chunk] = split_plan(v, p);
  if (tiles > INT_MAX) {
    return no("the output has more tiles than a grid can hold");
  }
  if (p.batch * splits > 65535) {
    return no("batch x splits exceeds 65535");
  }
  if (v.splits > 1) {
    if (p.k < std::int64_t(v.bk) * v.splits || splits < 2) {
      return no("split-K needs K >= splits x BK");
    }
    if (p.m * p.n * p.batch * splits * 4 > max_workspace_bytes) {
      return no("its split-K workspace would exceed 1 GiB");
    }
  }
  if (v.fam == family::wgmma && double(tiles) * double(p.batch) > INT_MAX) {
    return no("its persistent blocks count batch x tiles in 32 bits");
  }
  if (v.tma && p.batch > 1) {
    // TMA walks batches as a third tensor dimension: each batch must start past the previous
    // one's last row (or every batch shares one matrix, stride 0).
    for (const operand* o : {&p.a, &p.b}) {
      if (o->batch_stride != 0 && o->batch_stride < o->rows * o->ld) {
        return no("its TMA loads need batch strides of at least rows x leading dimension");
      }
    }
  }
  (void)chunk;
  return true;
}

std::vector<int> valid_indices(const problem& p, const device_state& d) {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(registry().size()); ++i) {
    if (can_run(i, p, d)) {
      out.push_back(i);
    }
  }
  return out;
}

// ---- the static heuristic --------------------------------------------------------------------

/// A rough time model: waves of blocks over the SMs, each block's work divided by a per-SM rate
/// that grows with the tile's arithmetic intensity, plus the split-K reduction's traffic.
double predicted_seconds(int vi, const problem& p, const device_state& d) {
  const variant& v = registry()[vi];
  const auto [splits, chunk] = split_plan(v, p);
  const double tiles = double(ceil_div(p.m, v.bm) * ceil_div(p.n, v.bn)) * p.batch * splits;
  const int per_sm = std::max(1, std::min({d.smem_per_sm / std::max(v.smem, 1), 2048 / v.threads,
                                           v.fam == family::simt ? 2 : 2}));
  const double waves = std::ceil(tiles / (double(d.sms) * per_sm));
  double rate = v.fam == family::simt ? 0.45e12 : (v.tf32 ? 2.2e12 : 4.5e12);
  if (v.fam == family::wgmma) {
    rate = v.tf32 ? 3.5e12 : 7.0e12;
  }
  const double intensity = std::min(1.0, (double(v.bm) * v.bn / (v.bm + v.bn)) / 64.0);
  const double k_work = double(ceil_div(std::max<std::int64_t>(chunk, 1), v.bk) * v.bk);
  double t = waves * 2.0 * v.bm * v.bn * k_work * per_sm / (rate * intensity);
  if (v.align == 1 && v.fam == family::simt) {
    t *= 1.3; // scalar loads
  }
  if (splits > 1) {
    t += double(p.m) * p.n * p.batch * (splits + 2) * 4 / 2.5e12 + 3e-6;
  }
  if (v.fam == family::wgmma) {
    // Persistent TMA kernels, calibrated on H200 measurements (bench/results/gemm.json):
    // ping-pong hides the epilogue but pays a serialized start, so it wins only with several
    // tiles per block and a long K loop; 128x256 wins only with many tiles per block.
    const double per_block = tiles / (double(d.sms) * per_sm);
    if (v.pingpong) {
      t *= (per_block >= 4 && p.k >= 2048) ? 0.95 : 1.3;
    } else if (v.bm * v.bn > 128 * 128) {
      t *= per_block >= 12 ? 0.97 : 1.08;
    }
  }
  return t;
}

int heuristic(const problem& p, const device_state& d, const std::vector<int>& valid) {
  int best = -1;
  double best_t = 0;
  for (int vi : valid) {
    const double t = predicted_seconds(vi, p, d);
    if (best < 0 || t < best_t) {
      best = vi;
      best_t = t;
    }
  }
  return best;
}

// ---- launch ----------------------------------------------------------------------------------

void launch(int vi, const problem& p, const device_state& d, cudaStream_t stream) {
  const variant& v = registry()[vi];
  const int sms = p.sm_count > 0 ? std::min(p.sm_count, d.sms) : d.sms;
  const auto [splits, chunk] = split_plan(v, p);
  gemm_args args{};
  args.a = p.a.ptr;
  args.b = p.b.ptr;
  args.lda = p.a.ld;
  args.ldb = p.b.ld;
  args.stride_a = p.a.batch_stride;
  args.stride_b = p.b.batch_stride;
  args.m = static_cast<int>(p.m);
  args.n = static_cast<int>(p.n);
  args.k = static_cast<int>(p.k);
  args.batch = static_cast<int>(p.batch);
  args.splits = splits;
  args.k_chunk = chunk;
  const dim3 grid(static_cast<unsigned>(ceil_div(p.m, v.bm) * ceil_div(p.n, v.bn)), 1,
                  static_cast<unsigned>(p.batch * splits));
  gemm_args out = args;
  out.c = p.c;
  out.ldc = p.ldc;
  out.stride_c = p.stride_c;
  out.split_stride_c = 0;
  out.alpha = p.alpha;
  out.beta = p.beta;
  out.out_type = int(p.out);
  if (splits == 1) {
    CUFUSE_CUDA_CHECK_MSG(v.launch(out, p.a.trans, p.b.trans, grid, sms, stream),
                          "preparing the launch of GEMM variant " + v.name);
    CUFUSE_CUDA_CHECK_MSG(cudaGetLastError(), "launching GEMM variant " + v.name);
    return;
  }
  // Split-K. Up to 4 splits: one launch; each block writes its partial tile to the workspace
  // and the last split of a tile to arrive (a counter per tile) sums them and writes C
  // (kernels.cuh splitk_fixup). More splits: the blocks write partials only and a reduction
  // kernel sums them over the whole GPU, since one block per tile reading 8 or 16 partials
  // was slower than the second launch (bench/JOURNAL.md g27).
  const bool fixup = splits <= 4;
  // Counters for every output tile of the grid the kernel runs: TF32 NN on mma.sync runs as
  // C^T = B^T A^T, n x m in tiles of bm x bn (variants.cuh), whose count differs when bm != bn.
  const std::int64_t tiles = std::max(ceil_div(p.m, v.bm) * ceil_div(p.n, v.bn),
                                      ceil_div(p.n, v.bm) * ceil_div(p.m, v.bn)) *
                             p.batch;
  const std::size_t ws_bytes = static_cast<std::size_t>(p.m * p.n * p.batch * splits * 4);
  const std::size_t count_at = (ws_bytes + 255) / 256 * 256;
  const std::size_t bytes =
      fixup ? count_at + static_cast<std::size_t>(tiles) * sizeof(unsigned) : ws_bytes;
  void* ws = nullptr;
  const std::string what = "the " + std::to_string(bytes) + "-byte split-K workspace of " + v.name;
  CUFUSE_CUDA_CHECK_MSG(d.pool ? cudaMallocFromPoolAsync(&ws, bytes, d.pool, stream)
                               : cudaMallocAsync(&ws, bytes, stream),
                        "allocating " + what);
  out.ws = static_cast<float*>(ws);
  cudaError_t e = cudaSuccess;
  if (fixup) {
    out.ws_count = reinterpret_cast<unsigned*>(static_cast<char*>(ws) + count_at);
    e = cudaMemsetAsync(out.ws_count, 0, bytes - count_at, stream);
  }
  if (e == cudaSuccess) {
    e = v.launch(out, p.a.trans, p.b.trans, grid, sms, stream);
  }
  if (e == cudaSuccess) {
    e = cudaGetLastError();
  }
  if (e == cudaSuccess && !fixup) {
    e = launch_splitk_reduce(out.ws, out, static_cast<int>(p.batch), d.sms, stream);
  }
  const cudaError_t f = cudaFreeAsync(ws, stream);
  CUFUSE_CUDA_CHECK_MSG(e, "launching GEMM variant " + v.name);
  CUFUSE_CUDA_CHECK_MSG(f, "freeing " + what);
}

// ---- problem checks --------------------------------------------------------------------------

void validate(const problem& p) {
  auto shape = [&] {
    return "m = " + std::to_string(p.m) + ", n = " + std::to_string(p.n) +
           ", k = " + std::to_string(p.k) + ", batch = " + std::to_string(p.batch);
  };
  if (p.m > INT_MAX || p.n > INT_MAX || p.k > INT_MAX) {
    throw shape_error("cufuse::gemm: each of m, n, k must be below 2^31 (" + shape() + ")");
  }
  if (p.batch > 65535) {
    throw shape_error("cufuse::gemm_batched: at most 65535 batches (" + shape() + ")");
  }
  if (p.ab == dtype::f32 && p.out != dtype::f32) {
    throw error("cufuse::gemm: float inputs need a float C");
  }
  if (p.sm_count < 0) {
    throw error("cufuse::gemm: gemm_options.sm_count must be 0 (all SMs) or positive, got " +
                std::to_string(p.sm_count));
  }
}

// ---- the tuner -------------------------------------------------------------------------------

tune_mode mode_from_env() {
  const char* s = std::getenv("CUFUSE_TUNE_MODE");
  if (s == nullptr || *s == '\0') {
    return tune_mode::frozen;
  }
  const std::string v = s;
  if (v == "off") {
    return tune_mode::off;
  }
  if (v == "online") {
    return tune_mode::online;
  }
  if (v == "frozen") {
    return tune_mode::frozen;
  }
  std::fprintf(stderr,
               "cufuse: warning: CUFUSE_TUNE_MODE=%s is not off, online or frozen; using frozen\n",
               s);
  return tune_mode::frozen;
}

std::string family_of(const problem& p) {
  std::string in =
      p.ab == dtype::f32 ? (p.math == gemm_math::tf32 ? "tf32" : "f32") : dtype_name(p.ab);
  return in + ">" + dtype_name(p.out) + "." + (p.a.trans ? "T" : "N") + (p.b.trans ? "T" : "N") +
         ".a" + std::to_string(ab_align_class(p)) + ".c" + std::to_string(c_align_class(p)) + ".b" +
         std::to_string(p.batch) + (p.beta == 0.0f ? ".ab" : ".abc");
}

/// The in-memory tuning key: every field of family_of() plus the device, the mode and the
/// shape, as plain values, so that a steady-state call hashes a few integers and allocates
/// nothing (family_of() builds the database's text key only when a key is first seen).
struct run_key {
  int ordinal;
  std::uint8_t mode, ab, out, math, ta, tb, a_align, c_align, beta0;
  std::int64_t batch, m, n, k;
  bool operator==(const run_key&) const = default;
};

struct run_key_hash {
  std::size_t operator()(const run_key& k) const noexcept {
    std::uint64_t h = 1469598103934665603ull; // FNV-1a over the fields
    auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(std::uint64_t(k.ordinal));
    mix(k.mode | k.ab << 8 | k.out << 16 | k.math << 24 | std::uint64_t(k.ta) << 32 |
        std::uint64_t(k.tb) << 40 | std::uint64_t(k.a_align) << 48 |
        std::uint64_t(k.c_align) << 56);
    mix(k.beta0);
    mix(std::uint64_t(k.batch));
    mix(std::uint64_t(k.m));
    mix(std::uint64_t(k.n));
    mix(std::uint64_t(k.k));
    return static_cast<std::size_t>(h);
  }
};

constexpr int max_in_flight = 8;

struct key_state {
  std::mutex mu;
  std::atomic<int> chosen{-1}; // committed variant index
  bool initialized = false;
  std::vector<int> arms; // variant indices (online)
  std::unique_ptr<tune::ucb_bandit> bandit;
  struct sample {
    int arm;
    cudaEvent_t start, stop;
  };
  std::vector<sample> in_flight;
  std::vector<cudaEvent_t> spare;
  std::vector<char> warmed; // per arm: its first call ran untimed (clocks, caches, first launch)
  int idle_skips = 0;       // exploring calls left untimed because the stream was idle

  ~key_state() {
    for (const sample& s : in_flight) {
      spare.push_back(s.start);
      spare.push_back(s.stop);
    }
    for (cudaEvent_t e : spare) {
      (void)cudaEventDestroy(e); // may fail after the runtime is torn down at exit
    }
  }
  cudaEvent_t take_event() {
    if (!spare.empty()) {
      cudaEvent_t e = spare.back();
      spare.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    CUFUSE_CUDA_CHECK(cudaEventCreate(&e));
    return e;
  }
};

class tuner {
public:
  static tuner& get() {
    static tuner t;
    return t;
  }

  tune_mode mode() const { return mode_.load(std::memory_order_relaxed); }
  void set_mode(tune_mode m) {
    mode_.store(m);
    reset();
  }
  void reset() {
    std::unique_lock<std::shared_mutex> g(keys_mu_);
    keys_.clear();
  }
  void set_file(const std::string& path) {
    {
      std::lock_guard<std::mutex> g(db_mu_);
      file_ = path;
      dbs_.clear();
    }
    reset();
  }
  std::string file() {
    std::lock_guard<std::mutex> g(db_mu_);
    return file_;
  }

  /// The database of this device (loaded on first use), or null without a file.
  tune::tuning_database* database(const device_state& d) {
    std::lock_guard<std::mutex> g(db_mu_);
    if (file_.empty()) {
      return nullptr;
    }
    auto& slot = dbs_[d.ordinal];
    if (!slot) {
      tune::validators v{d.name, d.sms, d.cc, d.runtime, CUFUSE_VERSION_STRING, variant_set_hash()};
      slot = std::make_unique<tune::tuning_database>(file_, v);
      slot->load();
    }
    return slot.get();
  }

  bool save_all() {
    std::lock_guard<std::mutex> g(db_mu_);
    if (file_.empty()) {
      std::fprintf(stderr, "cufuse: warning: tuning::save(): no database file "
                           "(set CUFUSE_TUNE_FILE or call cufuse::tuning::set_file)\n");
      return false;
    }
    bool ok = true;
    for (auto& [dev, db] : dbs_) {
      ok = db->save() && ok;
    }
    return ok;
  }

  std::shared_ptr<key_state> state(const run_key& key) {
    {
      std::shared_lock<std::shared_mutex> g(keys_mu_);
      const auto it = keys_.find(key);
      if (it != keys_.end()) {
        return it->second;
      }
    }
    std::unique_lock<std::shared_mutex> g(keys_mu_);
    auto& slot = keys_[key];
    if (!slot) {
      slot = std::make_shared<key_state>();
    }
    return slot;
  }

  std::shared_ptr<key_state> find(const run_key& key) {
    std::shared_lock<std::shared_mutex> g(keys_mu_);
    const auto it = keys_.find(key);
    return it == keys_.end() ? nullptr : it->second;
  }

private:
  tuner() : mode_(mode_from_env()) {
    if (const char* f = std::getenv("CUFUSE_TUNE_FILE")) {
      file_ = f;
    }
  }
  std::atomic<tune_mode> mode_;
  std::shared_mutex keys_mu_;
  std::unordered_map<run_key, std::shared_ptr<key_state>, run_key_hash> keys_;
  std::mutex db_mu_;
  std::string file_;
  std::map<int, std::unique_ptr<tune::tuning_database>> dbs_;
};

run_key key_of(const device_state& d, const problem& p, tune_mode mode) {
  return {d.ordinal,
          std::uint8_t(mode),
          std::uint8_t(p.ab),
          std::uint8_t(p.out),
          std::uint8_t(p.ab == dtype::f32 ? p.math : gemm_math::fp32),
          std::uint8_t(p.a.trans),
          std::uint8_t(p.b.trans),
          std::uint8_t(ab_align_class(p)),
          std::uint8_t(c_align_class(p)),
          std::uint8_t(p.beta == 0.0f),
          p.batch,
          p.m,
          p.n,
          p.k};
}

tune::tuning_key db_key(const problem& p) { return {family_of(p), p.m, p.n, p.k}; }

/// Looks the key up in the database: the exact shape, else (frozen) the nearest tuned shape of
/// the family; -1 when neither gives a variant that can run this problem.
int from_database(const problem& p, const device_state& d, bool nearest) {
  tune::tuning_database* db = tuner::get().database(d);
  if (db == nullptr) {
    return -1;
  }
  const tune::tuning_key k = db_key(p);
  if (auto e = db->find(k)) {
    const int vi = find_variant(e->variant);
    if (vi >= 0 && can_run(vi, p, d)) {
      return vi;
    }
  }
  if (nearest) {
    if (auto e = db->nearest(k)) {
      const int vi = find_variant(e->second.variant);
      if (vi >= 0 && can_run(vi, p, d)) {
        return vi;
      }
    }
  }
  return -1;
}

void record_finished(key_state& ks) {
  auto& f = ks.in_flight;
  std::size_t i = 0;
  while (i < f.size()) {
    const cudaError_t q = cudaEventQuery(f[i].stop);
    if (q == cudaErrorNotReady) {
      ++i;
      continue;
    }
    float ms = 0;
    if (q == cudaSuccess && cudaEventElapsedTime(&ms, f[i].start, f[i].stop) == cudaSuccess) {
      ks.bandit->record(f[i].arm, ms * 1e-3);
    } else {
      (void)cudaGetLastError();
    }
    ks.spare.push_back(f[i].start);
    ks.spare.push_back(f[i].stop);
    f.erase(f.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void commit(key_state& ks, int vi, const problem& p, const device_state& d, double seconds) {
  ks.chosen.store(vi, std::memory_order_release);
  if (tune::tuning_database* db = tuner::get().database(d)) {
    db->put(db_key(p), {registry()[vi].name, seconds});
    db->save();
  }
}

bool capturing(cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(s, &st) != cudaSuccess) {
    (void)cudaGetLastError();
    return true; // cannot tell: do not time
  }
  return st != cudaStreamCaptureStatusNone;
}

/// Online mode, key not yet committed: time one arm (or run the best so far untimed).
void online_step(key_state& ks, const problem& p, const device_state& d, cudaStream_t stream) {
  record_finished(ks);
  tune::ucb_bandit& b = *ks.bandit;
  if (b.committed()) {
    const int arm = b.committed_arm();
    commit(ks, ks.arms[arm], p, d, b.median_seconds(arm));
    launch(ks.arms[arm], p, d, stream);
    return;
  }
  if (static_cast<int>(ks.in_flight.size()) >= max_in_flight || capturing(stream)) {
    const int best = b.best_arm();
    launch(best >= 0 ? ks.arms[best] : heuristic(p, d, ks.arms), p, d, stream);
    return;
  }
  std::vector<int> pending(ks.arms.size(), 0);
  for (const auto& s : ks.in_flight) {
    ++pending[s.arm];
  }
  const int arm = b.next_arm(pending);
  if (!ks.warmed[arm]) {
    // An arm's first run is not a measurement: the first launch of a kernel and a change of
    // working set make it slower than its steady state, which would bias a one-sample start.
    ks.warmed[arm] = 1;
    launch(ks.arms[arm], p, d, stream);
    return;
  }
  // On an idle stream the start event completes at once and the kernel follows only after the
  // host's launch path: a few microseconds that a short GEMM would count as its own. Such calls
  // run untimed, unless the caller keeps the stream idle (synchronizes after every call): after
  // 2 x arms of them, idle samples are taken anyway.
  // An error from earlier work is left for the checked calls below to report; "not ready" is
  // no error, and is never left behind as the last error.
  const cudaError_t q = cudaStreamQuery(stream);
  if (q == cudaErrorNotReady && cudaPeekAtLastError() == cudaErrorNotReady) {
    (void)cudaGetLastError();
  }
  if (q == cudaSuccess && ks.idle_skips < 2 * static_cast<int>(ks.arms.size())) {
    ++ks.idle_skips;
    launch(ks.arms[arm], p, d, stream);
    return;
  }
  key_state::sample s{arm, ks.take_event(), ks.take_event()};
  CUFUSE_CUDA_CHECK(cudaEventRecord(s.start, stream));
  launch(ks.arms[arm], p, d, stream);
  CUFUSE_CUDA_CHECK(cudaEventRecord(s.stop, stream));
  ks.in_flight.push_back(s);
}

int current_device() {
  int dev = 0;
  CUFUSE_CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}

} // namespace

// ---- entry points (declared in include/cufuse/gemm.cuh) ---------------------------------------

void run(const problem& p, cudaStream_t stream, const gemm_options& options) {
  validate(p);
  if (p.m == 0 || p.n == 0 || p.batch == 0) {
    return;
  }
  const int forced = options.variant.empty() ? -1 : find_variant(options.variant);
  if (!options.variant.empty() && forced < 0) {
    throw error("cufuse::gemm: no variant named '" + options.variant + "'");
  }
  const device_state& d = device_state_for(current_device());
  if (forced >= 0) {
    const int vi = forced;
    std::string why;
    if (!can_run(vi, p, d, &why)) {
      throw error("cufuse::gemm: variant " + options.variant + " cannot run this problem: " + why);
    }
    launch(vi, p, d, stream);
    return;
  }
  tuner& t = tuner::get();
  const tune_mode mode = t.mode();
  const std::shared_ptr<key_state> ks = t.state(key_of(d, p, mode));
  const int chosen = ks->chosen.load(std::memory_order_acquire);
  if (chosen >= 0) {
    launch(chosen, p, d, stream); // steady state: no lock, no timing
    return;
  }
  std::unique_lock<std::mutex> g(ks->mu);
  if (!ks->initialized) {
    const std::vector<int> valid = valid_indices(p, d);
    if (valid.empty()) {
      throw error("cufuse::gemm: no variant can run this problem (" + family_of(p) + ")");
    }
    int vi = -1;
    if (mode != tune_mode::off) {
      vi = from_database(p, d, mode == tune_mode::frozen);
    }
    if (vi < 0 && mode != tune_mode::online) {
      vi = heuristic(p, d, valid);
    }
    if (vi >= 0) {
      ks->chosen.store(vi, std::memory_order_release);
    } else {
      ks->arms = valid;
      ks->warmed.assign(valid.size(), 0);
      ks->bandit = std::make_unique<tune::ucb_bandit>(
          static_cast<int>(valid.size()), tune::gemm_bandit_config(static_cast<int>(valid.size())));
    }
    ks->initialized = true;
  }
  const int now = ks->chosen.load(std::memory_order_acquire);
  if (now >= 0) {
    g.unlock();
    launch(now, p, d, stream);
    return;
  }
  online_step(*ks, p, d, stream);
}

std::vector<std::string> valid_variants(const problem& p, const gemm_options&) {
  validate(p);
  const device_state& d = device_state_for(current_device());
  std::vector<std::string> out;
  for (int vi : valid_indices(p, d)) {
    out.push_back(registry()[vi].name);
  }
  return out;
}

std::optional<std::string> chosen_variant(const problem& p, const gemm_options&) {
  const device_state& d = device_state_for(current_device());
  tuner& t = tuner::get();
  const auto ks = t.find(key_of(d, p, t.mode()));
  if (!ks) {
    return std::nullopt;
  }
  const int vi = ks->chosen.load(std::memory_order_acquire);
  if (vi < 0) {
    std::lock_guard<std::mutex> g(ks->mu);
    if (ks->bandit) {
      record_finished(*ks); // let a finished bandit commit without another call
      if (ks->bandit->committed()) {
        const int arm = ks->bandit->committed_arm();
        commit(*ks, ks->arms[arm], p, d, ks->bandit->median_seconds(arm));
        return registry()[ks->arms[arm]].name;
      }
    }
    return std::nullopt;
  }
  return registry()[vi].name;
}

void record_choice(const problem& p, const gemm_options&, const std::string& name, double seconds) {
  const device_state& d = device_state_for(current_device());
  const int vi = find_variant(name);
  if (vi < 0 || !can_run(vi, p, d)) {
    throw error("cufuse::tuning::record: variant '" + name + "' cannot run this problem");
  }
  tune::tuning_database* db = tuner::get().database(d);
  if (db == nullptr) {
    throw error("cufuse::tuning::record: no database file (set CUFUSE_TUNE_FILE or call "
                "cufuse::tuning::set_file)");
  }
  db->put(db_key(p), {name, seconds});
}

} // namespace cufuse::gemm_detail

namespace cufuse::tuning {
void set_mode(tune_mode mode) { gemm_detail::tuner::get().set_mode(mode); }
tune_mode mode() { return gemm_detail::tuner::get().mode(); }
void set_file(const std::string& path) { gemm_detail::tuner::get().set_file(path); }
std::string file() { return gemm_detail::tuner::get().file(); }
void reset() { gemm_detail::tuner::get().reset(); }
bool save() { return gemm_detail::tuner::get().save_all(); }
} // namespace cufuse::tuning
