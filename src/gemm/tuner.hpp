/// \file Internal to libcufuse: the tuner. Per key (device, dtypes, transposes, alignment
/// classes, beta = 0 or not, batch, exact shape) it holds the chosen variant, or, online, the
/// bandit timing the valid ones. Modes: off (heuristic), online (UCB), frozen (the database).
#pragma once

#include "engine.hpp"

#include <cufuse/core/config.hpp>
#include <cufuse/core/error.hpp>
#include <cufuse/tune/bandit.hpp>
#include <cufuse/tune/database.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
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
/// Online mode, key not yet committed: time one arm (or run the best so far untimed).
void online_step(key_state& ks, const problem& p, const device_state& d, cudaStream_t stream,
                 const fused_call* f = nullptr);

} // namespace cufuse::gemm_detail
