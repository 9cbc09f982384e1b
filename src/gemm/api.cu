/// \file libcufuse's entry points: cufuse::gemm (gemm_detail::run), the variant queries and the
/// tuning API declared in include/cufuse/gemm.cuh.
#include "tuner.hpp"

#include <cufuse/core/error.hpp>
#include <cufuse/gemm.cuh>
#include <cufuse/gemm/fused.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

namespace cufuse::gemm_detail {

namespace {

/// An expression epilogue's kernels on one device: by registry index, null where the set has
/// no kernel or the kernel has no code for the device; `indices`: the non-null ones.
struct fused_table {
  std::vector<launch_fn> kernels;
  std::vector<int> indices;
};

const fused_table& table_for(const fused_set& s, const device_state& d) {
  static std::shared_mutex mu;
  static std::map<std::pair<const fused_set*, int>, std::unique_ptr<fused_table>> tables;
  const auto key = std::make_pair(&s, d.ordinal);
  {
    std::shared_lock<std::shared_mutex> g(mu);
    const auto it = tables.find(key);
    if (it != tables.end()) {
      return *it->second;
    }
  }
  std::unique_lock<std::shared_mutex> g(mu);
  auto& slot = tables[key];
  if (!slot) {
    auto t = std::make_unique<fused_table>();
    t->kernels.assign(registry().size(), nullptr);
    for (const fused_kernel& k : s.kernels) {
      const int vi = find_variant(k.name);
      if (vi < 0) {
        throw error("cufuse::gemm: internal: the epilogue's configuration " + k.name +
                    " is not a variant of this libcufuse (header and library differ?)");
      }
      int arch = 0;
      CUFUSE_CUDA_CHECK_MSG(k.prepare(&arch), "preparing the epilogue's GEMM kernels " + k.name);
      if (arch >= registry()[vi].min_arch && d.arch[vi] >= registry()[vi].min_arch) {
        t->kernels[vi] = k.launch;
        t->indices.push_back(vi);
      }
    }
    // A packing variant runs its base variant's kernels on the aligned copies.
    for (int vi = 0; vi < static_cast<int>(registry().size()); ++vi) {
      const int base = registry()[vi].packs;
      if (base >= 0 && t->kernels[base] != nullptr) {
        t->kernels[vi] = t->kernels[base];
        t->indices.push_back(vi);
      }
    }
    std::sort(t->indices.begin(), t->indices.end());
    slot = std::move(t);
  }
  return *slot;
}

std::vector<int> valid_of(const problem& p, const device_state& d, const fused_table* t) {
  std::vector<int> valid = valid_indices(p, d);
  if (t != nullptr) {
    std::erase_if(valid, [&](int vi) { return t->kernels[vi] == nullptr; });
  }
  return valid;
}

/// cufuse::gemm with the standard epilogue (`set` null) or an expression epilogue.
void run_impl(const problem& p, cudaStream_t stream, const gemm_options& options,
              const fused_set* set, const void* epi) {
  validate(p);
  if (p.m == 0 || p.n == 0 || p.batch == 0) {
    return;
  }
  const int forced = options.variant.empty() ? -1 : find_variant(options.variant);
  if (!options.variant.empty() && forced < 0) {
    throw error("cufuse::gemm: no variant named '" + options.variant + "'");
  }
  const device_state& d = device_state_for(current_device());
  const fused_table* table = set != nullptr ? &table_for(*set, d) : nullptr;
  const fused_call call{table != nullptr ? table->kernels.data() : nullptr, epi};
  const fused_call* f = table != nullptr ? &call : nullptr;
  if (forced >= 0) {
    const int vi = forced;
    std::string why;
    if (!can_run(vi, p, d, &why)) {
      throw error("cufuse::gemm: variant " + options.variant + " cannot run this problem: " + why);
    }
    if (table != nullptr && table->kernels[vi] == nullptr) {
      throw error("cufuse::gemm: variant " + options.variant +
                  " is not instantiated for this epilogue (or has no code for this device)");
    }
    launch(vi, p, d, stream, f);
    return;
  }
  tuner& t = tuner::get();
  const tune_mode mode = t.mode();
  const std::shared_ptr<key_state> ks =
      t.state(key_of(d, p, mode, reinterpret_cast<std::uintptr_t>(set)));
  const int chosen = ks->chosen.load(std::memory_order_acquire);
  if (chosen >= 0) {
    launch(chosen, p, d, stream, f); // steady state: no lock, no timing
    return;
  }
  std::unique_lock<std::mutex> g(ks->mu);
  if (!ks->initialized) {
    const std::vector<int> valid = valid_of(p, d, table);
    if (valid.empty()) {
      throw error("cufuse::gemm: no variant can run this problem (" + family_of(p) +
                  (set != nullptr ? ", epilogue " + set->epilogue : std::string()) + ")");
    }
    if (set != nullptr) {
      ks->epilogue = set->epilogue;
    }
    int vi = -1;
    if (mode != tune_mode::off) {
      vi = from_database(p, d, mode == tune_mode::frozen, ks->epilogue, &valid);
    }
    if (vi < 0 && set != nullptr) {
      // Prior: the plain GEMM's choice for the same problem (in this process, else the
      // database's), when the epilogue has that configuration (docs/gemm.md).
      if (const auto plain = t.find(key_of(d, p, mode))) {
        const int c = plain->chosen.load(std::memory_order_acquire);
        if (c >= 0 && table->kernels[c] != nullptr) {
          vi = c;
        }
      }
      if (vi < 0 && mode != tune_mode::off) {
        vi = from_database(p, d, mode == tune_mode::frozen, {}, &valid);
      }
    }
    if (vi < 0 && mode != tune_mode::online) {
      vi = heuristic(p, d, valid);
    }
    if (vi >= 0) {
      ks->chosen.store(vi, std::memory_order_release);
    } else {
      // Online without an entry for this shape: the prior guess (the family's nearest tuned
      // shape, else the heuristic) is the first arm, so the key's first call runs it; arms the
      // time model puts more than tune::explore_within x behind are not explored.
      int prior = from_database(p, d, true, ks->epilogue, &valid);
      if (prior < 0 && set != nullptr) {
        prior = from_database(p, d, true, {}, &valid);
      }
      if (prior < 0) {
        prior = heuristic(p, d, valid);
      }
      std::vector<double> predicted;
      int prior_at = -1;
      for (std::size_t i = 0; i < valid.size(); ++i) {
        predicted.push_back(predicted_seconds(valid[i], p, d));
        prior_at = valid[i] == prior ? int(i) : prior_at;
      }
      std::vector<int> arms;
      // The any-alignment tensor-core tiles are the cp.async tiles with costlier loads: where
      // aligned tensor-core variants can run, on the operands or on aligned copies of them,
      // they are not explored (unless one is the prior).
      const bool aligned_tc = std::any_of(valid.begin(), valid.end(), [](int vi) {
        const variant& v = registry()[vi];
        return v.fam != family::simt && (v.align > 1 || v.packs >= 0);
      });
      for (int i : tune::exploration_order(predicted, prior_at)) {
        const variant& v = registry()[valid[std::size_t(i)]];
        if (aligned_tc && v.fam == family::mma && v.align == 1 && valid[std::size_t(i)] != prior) {
          continue;
        }
        arms.push_back(valid[std::size_t(i)]);
      }
      std::vector<std::string> names;
      for (int vi : arms) {
        names.push_back(registry()[vi].name);
      }
      const tune::tuning_key k = db_key(p, ks->epilogue);
      start_exploring(*ks, std::move(arms),
                      k.family + " " + std::to_string(k.m) + "x" + std::to_string(k.n) + "x" +
                          std::to_string(k.k),
                      std::move(names));
    }
    ks->initialized = true;
  }
  const int now = ks->chosen.load(std::memory_order_acquire);
  if (now >= 0) {
    g.unlock();
    launch(now, p, d, stream, f);
    return;
  }
  online_step(*ks, p, d, stream, f);
}

} // namespace

void run(const problem& p, cudaStream_t stream, const gemm_options& options) {
  run_impl(p, stream, options, nullptr, nullptr);
}

void run_fused(const problem& p, const fused_set& set, const void* epi, cudaStream_t stream,
               const gemm_options& options) {
  run_impl(p, stream, options, &set, epi);
}

std::vector<std::string> fused_variants(const problem& p, const fused_set& set) {
  validate(p);
  const device_state& d = device_state_for(current_device());
  std::vector<std::string> out;
  for (int vi : valid_of(p, d, &table_for(set, d))) {
    out.push_back(registry()[vi].name);
  }
  return out;
}

/// The variant the tuner has settled on for `p` with the standard epilogue (`set` null) or the
/// set's epilogue, if it has (a finished bandit commits here).
std::optional<std::string> chosen_of(const problem& p, const fused_set* set) {
  const device_state& d = device_state_for(current_device());
  tuner& t = tuner::get();
  const auto ks = t.find(key_of(d, p, t.mode(), reinterpret_cast<std::uintptr_t>(set)));
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

std::optional<std::string> chosen_fused(const problem& p, const fused_set& set) {
  return chosen_of(p, &set);
}

void record_fused(const problem& p, const fused_set& set, const std::string& variant,
                  double seconds) {
  const std::vector<std::string> names = fused_variants(p, set);
  if (std::find(names.begin(), names.end(), variant) == names.end()) {
    throw error("cufuse::tuning::record_epilogue: variant '" + variant +
                "' is not one of this epilogue's variants that can run the problem");
  }
  const device_state& d = device_state_for(current_device());
  tune::tuning_database* db = tuner::get().database(d);
  if (db == nullptr) {
    throw error("cufuse::tuning::record_epilogue: no database file (set CUFUSE_TUNE_FILE or call "
                "cufuse::tuning::set_file)");
  }
  db->put(db_key(p, set.epilogue), {variant, seconds});
}

} // namespace cufuse::gemm_detail

namespace cufuse::tuning {

using gemm_detail::device_state;
using gemm_detail::device_state_for;
using gemm_detail::registry;
using gemm_detail::tuner;

void set_mode(tune_mode mode) { tuner::get().set_mode(mode); }
tune_mode mode() { return tuner::get().mode(); }
void set_file(const std::string& path) { tuner::get().set_file(path); }
std::string file() { return tuner::get().file(); }
void reset() { tuner::get().reset(); }
bool save() { return tuner::get().save_all(); }

std::vector<std::string> variants(const gemm_problem& p, const gemm_options&) {
  gemm_detail::validate(p);
  const device_state& d = device_state_for(gemm_detail::current_device());
  std::vector<std::string> out;
  for (int vi : gemm_detail::valid_indices(p, d)) {
    out.push_back(registry()[vi].name);
  }
  return out;
}

void run(const gemm_problem& p, cudaStream_t stream, const gemm_options& options) {
  gemm_detail::run(p, stream, options);
}

double time(const gemm_problem& p, const std::string& name, cudaStream_t stream, int repeats,
            const gemm_options& options) {
  if (repeats < 1) {
    throw error("cufuse::tuning::time: repeats must be >= 1, got " + std::to_string(repeats));
  }
  gemm_options o = options;
  o.variant = name;
  return gemm_detail::median_call_seconds(stream, repeats, 1,
                                          [&] { gemm_detail::run(p, stream, o); });
}

std::optional<std::string> chosen(const gemm_problem& p, const gemm_options&) {
  return gemm_detail::chosen_of(p, nullptr);
}

void record(const gemm_problem& p, const std::string& name, double seconds, const gemm_options&) {
  const device_state& d = device_state_for(gemm_detail::current_device());
  const int vi = gemm_detail::find_variant(name);
  if (vi < 0 || !gemm_detail::can_run(vi, p, d)) {
    throw error("cufuse::tuning::record: variant '" + name + "' cannot run this problem");
  }
  tune::tuning_database* db = tuner::get().database(d);
  if (db == nullptr) {
    throw error("cufuse::tuning::record: no database file (set CUFUSE_TUNE_FILE or call "
                "cufuse::tuning::set_file)");
  }
  db->put(gemm_detail::db_key(p), {name, seconds});
}

std::string key(const gemm_problem& p) { return gemm_detail::family_of(p); }

} // namespace cufuse::tuning
