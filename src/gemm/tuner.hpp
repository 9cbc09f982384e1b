/// \file Internal to libcufuse: the tuner. Per key (device, dtypes, transposes, alignment
/// classes, beta = 0 or not, batch, exact shape) it holds the chosen variant, or, online, the
/// bandit timing the valid ones. Modes: off (heuristic), online (UCB), frozen (the database).
#pragma once

#include "engine.hpp"

#include <cufuse/conv/tuning.hpp>
#include <cufuse/core/config.hpp>
#include <cufuse/core/error.hpp>
#include <cufuse/tune/bandit.hpp>
#include <cufuse/tune/database.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cufuse::gemm_detail {

/// CUFUSE_TUNE_MODE (default frozen).
tune_mode mode_from_env();
/// The database's text key of a problem: everything but the device and the shape.
std::string family_of(const problem& p);

/// The in-memory tuning key: every field of family_of() plus the device, the mode and the
/// shape, as plain values, so that a steady-state call hashes a few integers and allocates
/// nothing (family_of() builds the database's text key only when a key is first seen).
struct run_key {
  int ordinal;
  std::uint8_t mode, ab, out, math, ta, tb, a_align, c_align, beta0;
  std::int64_t batch, m, n, k;
  std::uintptr_t epi; // the expression epilogue's kernel set (0: the standard epilogue)
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
    mix(std::uint64_t(k.epi));
    return static_cast<std::size_t>(h);
  }
};

/// The in-memory key of a conv2d call: the device, the mode, the convolution and the kernel set
/// (input type and epilogue type) that runs it.
struct conv_run_key {
  int ordinal;
  std::uint8_t mode;
  conv_detail::conv_key conv;
  const conv_detail::conv_set* set;
  bool operator==(const conv_run_key&) const = default;
};

struct conv_run_key_hash {
  std::size_t operator()(const conv_run_key& k) const noexcept {
    std::uint64_t h = 1469598103934665603ull; // FNV-1a over the fields
    auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    const conv_detail::conv_key& c = k.conv;
    mix(std::uint64_t(k.ordinal) | std::uint64_t(k.mode) << 16 | std::uint64_t(c.in) << 24 |
        std::uint64_t(c.out) << 32 | std::uint64_t(c.tf32) << 40 | std::uint64_t(c.chunked) << 48);
    for (index_t v :
         {c.n, c.h, c.w, c.c, c.k, c.r, c.s, c.sh, c.sw, c.pt, c.pl, c.pb, c.pr, c.dh, c.dw}) {
      mix(std::uint64_t(v));
    }
    mix(reinterpret_cast<std::uintptr_t>(k.set));
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
  std::string epilogue;     // the expression epilogue's name in database keys (empty: standard)
  int idle_skips = 0;       // exploring calls left untimed because the stream was idle
  std::string label;        // the key as CUFUSE_TUNE_TRACE prints it
  std::vector<std::string> arm_names; // per arm, for the trace

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
    conv_keys_.clear();
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

  /// The state of a conv2d key (conv_tuner.cu), created on first use.
  std::shared_ptr<key_state> conv_state(const conv_run_key& key) {
    {
      std::shared_lock<std::shared_mutex> g(keys_mu_);
      const auto it = conv_keys_.find(key);
      if (it != conv_keys_.end()) {
        return it->second;
      }
    }
    std::unique_lock<std::shared_mutex> g(keys_mu_);
    auto& slot = conv_keys_[key];
    if (!slot) {
      slot = std::make_shared<key_state>();
    }
    return slot;
  }
  std::shared_ptr<key_state> find_conv(const conv_run_key& key) {
    std::shared_lock<std::shared_mutex> g(keys_mu_);
    const auto it = conv_keys_.find(key);
    return it == conv_keys_.end() ? nullptr : it->second;
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
  std::unordered_map<conv_run_key, std::shared_ptr<key_state>, conv_run_key_hash> conv_keys_;
  std::mutex db_mu_;
  std::string file_;
  std::map<int, std::unique_ptr<tune::tuning_database>> dbs_;
};

/// `epi`: the expression epilogue's kernel set (fused_set address), 0 for the standard one.
run_key key_of(const device_state& d, const problem& p, tune_mode mode, std::uintptr_t epi = 0);
/// The database key; an expression epilogue's name is appended to the family (".e=<name>").
tune::tuning_key db_key(const problem& p, const std::string& epilogue = {});
/// The database's variant for this key: the exact shape, else (nearest) the nearest tuned shape
/// of the family; -1 when neither gives a variant that can run this problem (and, with
/// `allowed`, one of those it marks).
int from_database(const problem& p, const device_state& d, bool nearest,
                  const std::string& epilogue = {}, const std::vector<int>* allowed = nullptr);
/// Hands the bandit the timings of finished calls.
void record_finished(key_state& ks);
/// Makes `vi` the key's choice (and writes it to the database, if any).
void commit(key_state& ks, int vi, const problem& p, const device_state& d, double seconds);
/// Whether CUFUSE_TUNE_TRACE asks for the online tuner's samples on stderr (read once).
bool tracing();

/// Starts online exploration of a key over `arms` (variant values, in the order the bandit
/// tries them first: tune::exploration_order). `label` and `names` (per arm) are what the trace
/// prints.
inline void start_exploring(key_state& ks, std::vector<int> arms, std::string label,
                            std::vector<std::string> names) {
  ks.arms = std::move(arms);
  ks.warmed.assign(ks.arms.size(), 0);
  ks.label = std::move(label);
  ks.arm_names = std::move(names);
  const int n = static_cast<int>(ks.arms.size());
  ks.bandit = std::make_unique<tune::ucb_bandit>(n, tune::gemm_bandit_config(n));
}

/// Holds `stream` with a kernel that waits for release_hold(ticket) (or about a millisecond):
/// the events and the call that the host enqueues meanwhile then run back to back on the
/// device, so a sample times the device's work and not the host's launch path, whether the
/// stream was busy or idle. Returns 0 (nothing held) where the hold cannot be made.
std::uint64_t hold(cudaStream_t stream);
/// Lets the kernel of `ticket` (from hold; 0: nothing) finish.
void release_hold(std::uint64_t ticket);

/// Whether `s` is capturing a graph (or cannot tell): no timing then.
bool capturing(cudaStream_t s);

/// One call of a key in online mode, not yet committed: time one arm (or run the best so far
/// untimed). `run(v)` launches variant v (a value of ks.arms); `fallback()` is the variant to
/// run while nothing is measured and no sample can be taken; `commit(v, seconds)` makes v the
/// key's choice once the bandit commits. Shared by GEMM and conv2d keys.
template <class Run, class Fallback, class Commit>
void online_step_with(key_state& ks, cudaStream_t stream, Run&& run, Fallback&& fallback,
                      Commit&& commit_arm) {
  record_finished(ks);
  tune::ucb_bandit& b = *ks.bandit;
  if (b.committed()) {
    const int arm = b.committed_arm();
    commit_arm(ks.arms[arm], b.median_seconds(arm));
    run(ks.arms[arm]);
    return;
  }
  if (static_cast<int>(ks.in_flight.size()) >= max_in_flight || capturing(stream)) {
    const int best = b.best_arm();
    run(best >= 0 ? ks.arms[best] : fallback());
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
    run(ks.arms[arm]);
    return;
  }
  // Every sample is taken behind a hold (see hold()): on an idle stream the start event would
  // otherwise complete at once and the kernel follow only after the host's launch path, a few
  // microseconds that a short kernel counts as its own; on a busy stream the same happens
  // whenever the device drains the queue before the host has enqueued the call.
  // An error from earlier work is left for the checked calls below to report.
  const std::uint64_t ticket = hold(stream);
  if (ticket == 0) {
    // No hold possible: calls on an idle stream run untimed, unless the caller keeps the stream
    // idle (synchronizes after every call): after 2 x arms of them, idle samples are taken.
    const cudaError_t q = cudaStreamQuery(stream);
    if (q == cudaErrorNotReady && cudaPeekAtLastError() == cudaErrorNotReady) {
      (void)cudaGetLastError(); // "not ready" is no error, and is never left as the last error
    }
    if (q == cudaSuccess && ks.idle_skips < 2 * static_cast<int>(ks.arms.size())) {
      ++ks.idle_skips;
      run(ks.arms[arm]);
      return;
    }
  }
  // However this call ends (a launch may throw), the hold ends and the events go back.
  struct timed_call {
    key_state& ks;
    key_state::sample s;
    std::uint64_t ticket;
    bool queued = false;
    ~timed_call() {
      for (cudaEvent_t e : {s.start, s.stop}) {
        if (!queued && e != nullptr) {
          ks.spare.push_back(e);
        }
      }
      release_hold(ticket);
    }
  } call{ks, {arm, nullptr, nullptr}, ticket};
  call.s.start = ks.take_event();
  call.s.stop = ks.take_event();
  CUFUSE_CUDA_CHECK(cudaEventRecord(call.s.start, stream));
  run(ks.arms[arm]);
  CUFUSE_CUDA_CHECK(cudaEventRecord(call.s.stop, stream));
  ks.in_flight.push_back(call.s);
  call.queued = true;
}

/// Online mode, key not yet committed: time one arm (or run the best so far untimed).
void online_step(key_state& ks, const problem& p, const device_state& d, cudaStream_t stream,
                 const fused_call* f = nullptr);

} // namespace cufuse::gemm_detail
