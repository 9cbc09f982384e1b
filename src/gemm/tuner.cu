/// \file The tuner: modes, keys, the database lookups, and the online (UCB) step.
#include "tuner.hpp"

#include <cufuse/core/error.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace cufuse::gemm_detail {

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

run_key key_of(const device_state& d, const problem& p, tune_mode mode, std::uintptr_t epi) {
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
          p.k,
          epi};
}

tune::tuning_key db_key(const problem& p, const std::string& epilogue) {
  return {epilogue.empty() ? family_of(p) : family_of(p) + ".e=" + epilogue, p.m, p.n, p.k};
}

int from_database(const problem& p, const device_state& d, bool nearest,
                  const std::string& epilogue, const std::vector<int>* allowed) {
  tune::tuning_database* db = tuner::get().database(d);
  if (db == nullptr) {
    return -1;
  }
  const tune::tuning_key k = db_key(p, epilogue);
  auto usable = [&](int vi) {
    return vi >= 0 && can_run(vi, p, d) &&
           (allowed == nullptr ||
            std::find(allowed->begin(), allowed->end(), vi) != allowed->end());
  };
  if (auto e = db->find(k)) {
    const int vi = find_variant(e->variant);
    if (usable(vi)) {
      return vi;
    }
  }
  if (nearest) {
    if (auto e = db->nearest(k)) {
      const int vi = find_variant(e->second.variant);
      if (usable(vi)) {
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
    db->put(db_key(p, ks.epilogue), {registry()[vi].name, seconds});
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

void online_step(key_state& ks, const problem& p, const device_state& d, cudaStream_t stream,
                 const fused_call* f) {
  online_step_with(
      ks, stream, [&](int vi) { launch(vi, p, d, stream, f); },
      [&] { return heuristic(p, d, ks.arms); },
      [&](int vi, double seconds) { commit(ks, vi, p, d, seconds); });
}

} // namespace cufuse::gemm_detail
