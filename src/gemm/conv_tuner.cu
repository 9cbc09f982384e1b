/// \file The tuner's side of conv2d (cufuse/conv/tuning.hpp): per convolution key the chosen
/// implicit-GEMM variant, from the database (frozen: the exact entry, else the family's nearest
/// shape), the heuristic (off, or frozen without either), or online, the UCB bandit timing the
/// valid variants during real calls (the GEMM keys' online step, online_step_with).
#include "tuner.hpp"

#include <cufuse/conv/tuning.hpp>
#include <cufuse/core/error.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

namespace cufuse::conv_detail {

namespace {

using gemm_detail::conv_run_key;
using gemm_detail::key_state;
using gemm_detail::tuner;

/// FNV-1a of the set's variant names: the family carries it, so that entries measured with
/// another set of conv variants are not used.
std::string variant_set_hash(const conv_set& set) {
  std::uint32_t h = 2166136261u;
  for (const std::string& n : set.names) {
    for (char c : n) {
      h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
    }
    h = (h ^ 0xffu) * 16777619u;
  }
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", h);
  return buf;
}

tune::tuning_key db_key(const conv_key& k, const conv_set& set) {
  return {conv_family(k, set), k.n * k.p * k.q, k.k, k.r * k.s * k.c};
}

int index_of(const conv_set& set, const std::string& name) {
  const auto it = std::find(set.names.begin(), set.names.end(), name);
  return it == set.names.end() ? -1 : static_cast<int>(it - set.names.begin());
}

/// The database's variant for `key` (the exact shape, else with `nearest` the family's nearest
/// tuned shape), if it is one of `valid`; -1 otherwise.
int from_database(const conv_key& key, const conv_set& set, std::uint32_t valid, int ordinal,
                  bool nearest) {
  tune::tuning_database* db = tuner::get().database(gemm_detail::device_state_for(ordinal));
  if (db == nullptr) {
    return -1;
  }
  const tune::tuning_key k = db_key(key, set);
  auto usable = [&](int v) { return v >= 0 && v < 32 && (valid >> v & 1u) != 0; };
  if (auto e = db->find(k)) {
    const int v = index_of(set, e->variant);
    if (usable(v)) {
      return v;
    }
  }
  if (nearest) {
    if (auto e = db->nearest(k)) {
      const int v = index_of(set, e->second.variant);
      if (usable(v)) {
        return v;
      }
    }
  }
  return -1;
}

} // namespace

std::string conv_family(const conv_key& k, const conv_set& set) {
  using gemm_detail::dtype;
  const std::string in = k.in == std::uint8_t(dtype::f32) && k.tf32 != 0
                             ? "tf32"
                             : gemm_detail::dtype_name(dtype(k.in));
  auto n = [](index_t v) { return std::to_string(v); };
  return "conv." + in + ">" + gemm_detail::dtype_name(dtype(k.out)) + ".c" + n(k.chunked) + ".f" +
         n(k.r) + "x" + n(k.s) + ".s" + n(k.sh) + "x" + n(k.sw) + ".p" + n(k.pt) + "," + n(k.pl) +
         "," + n(k.pb) + "," + n(k.pr) + ".d" + n(k.dh) + "x" + n(k.dw) +
         (set.epilogue.empty() ? std::string() : ".e=" + set.epilogue) +
         ".v=" + variant_set_hash(set);
}

void run_conv(const conv_key& key, const conv_set& set, std::uint32_t valid, int heuristic,
              conv_launch_fn launch, const void* call, cudaStream_t stream) {
  if (valid == 0 || heuristic < 0 || (valid >> heuristic & 1u) == 0) {
    throw error("cufuse::conv2d: internal: no valid variant to choose from");
  }
  const int ordinal = gemm_detail::current_device();
  tuner& t = tuner::get();
  const tune_mode mode = t.mode();
  const std::shared_ptr<key_state> ks =
      t.conv_state(conv_run_key{ordinal, std::uint8_t(mode), key, &set});
  const int chosen = ks->chosen.load(std::memory_order_acquire);
  if (chosen >= 0) {
    launch(chosen, call, stream); // steady state: no lock, no timing
    return;
  }
  std::unique_lock<std::mutex> g(ks->mu);
  if (!ks->initialized) {
    ks->epilogue = set.epilogue;
    int v = -1;
    if (mode != tune_mode::off) {
      v = from_database(key, set, valid, ordinal, mode == tune_mode::frozen);
    }
    int arms = 0;
    for (int i = 0; i < 32; ++i) {
      arms += (valid >> i & 1u) != 0 ? 1 : 0;
    }
    if (v < 0 && (mode != tune_mode::online || arms == 1)) {
      v = heuristic;
    }
    if (v >= 0) {
      ks->chosen.store(v, std::memory_order_release);
    } else {
      // The prior guess first (the family's nearest tuned shape, else the heuristic), so that
      // the key's first call runs it; conv variants have no time model to leave any out.
      int prior = from_database(key, set, valid, ordinal, true);
      prior = prior >= 0 ? prior : heuristic;
      std::vector<int> arms, order;
      int prior_at = -1;
      for (int i = 0; i < 32; ++i) {
        if ((valid >> i & 1u) != 0) {
          prior_at = i == prior ? int(arms.size()) : prior_at;
          arms.push_back(i);
        }
      }
      for (int i : tune::exploration_order(std::vector<double>(arms.size(), 0.0), prior_at)) {
        order.push_back(arms[std::size_t(i)]);
      }
      std::vector<std::string> names;
      for (int v : order) {
        names.push_back(set.names[std::size_t(v)]);
      }
      const tune::tuning_key k = db_key(key, set);
      gemm_detail::start_exploring(*ks, std::move(order),
                                   k.family + " " + std::to_string(k.m) + "x" +
                                       std::to_string(k.n) + "x" + std::to_string(k.k),
                                   std::move(names));
    }
    ks->initialized = true;
  }
  const int now = ks->chosen.load(std::memory_order_acquire);
  if (now >= 0) {
    g.unlock();
    launch(now, call, stream);
    return;
  }
  gemm_detail::online_step_with(
      *ks, stream, [&](int v) { launch(v, call, stream); }, [&] { return heuristic; },
      [&](int v, double seconds) {
        ks->chosen.store(v, std::memory_order_release);
        if (tune::tuning_database* db = t.database(gemm_detail::device_state_for(ordinal))) {
          db->put(db_key(key, set), {set.names[std::size_t(v)], seconds});
          db->save();
        }
      });
}

std::optional<std::string> chosen_conv(const conv_key& key, const conv_set& set) {
  const int ordinal = gemm_detail::current_device();
  tuner& t = tuner::get();
  if (auto ks = t.find_conv(conv_run_key{ordinal, std::uint8_t(t.mode()), key, &set})) {
    const int c = ks->chosen.load(std::memory_order_acquire);
    if (c >= 0) {
      return set.names[std::size_t(c)];
    }
  }
  if (tune::tuning_database* db = t.database(gemm_detail::device_state_for(ordinal))) {
    if (auto e = db->find(db_key(key, set))) {
      return e->variant;
    }
  }
  return std::nullopt;
}

void record_conv(const conv_key& key, const conv_set& set, const std::string& variant,
                 double seconds) {
  if (index_of(set, variant) < 0) {
    throw error("cufuse::tuning::record_conv2d: '" + variant + "' is not a conv2d variant");
  }
  tuner& t = tuner::get();
  tune::tuning_database* db =
      t.database(gemm_detail::device_state_for(gemm_detail::current_device()));
  if (db == nullptr) {
    throw error("cufuse::tuning::record_conv2d: no tuning database file (set CUFUSE_TUNE_FILE or "
                "call cufuse::tuning::set_file)");
  }
  db->put(db_key(key, set), {variant, seconds});
}

} // namespace cufuse::conv_detail
