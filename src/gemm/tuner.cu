/// \file The tuner: modes, keys, the database lookups, and the online (UCB) step.
#include "tuner.hpp"

#include <cufuse/core/error.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

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

bool tracing() {
  static const bool on = [] {
    const char* v = std::getenv("CUFUSE_TUNE_TRACE");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  return on;
}

namespace {

/// Spins until the host has set `*flag` to at least `ticket`, or for `timeout_ns` of the global
/// timer (a host thread that stalls between hold() and release_hold() costs one slow sample).
__global__ void wait_for_host(const volatile unsigned long long* flag, unsigned long long ticket,
                              long long timeout_ns) {
  long long t0 = 0, t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    if (*flag >= ticket) {
      return;
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < timeout_ns);
}

/// The word the holds wait on: pinned host memory that every device reads (mapped, portable;
/// one address for host and devices under unified addressing). Allocated on the first hold,
/// never freed (it lives as long as the process's tuner).
struct hold_word {
  unsigned long long* word = nullptr;
  std::atomic<unsigned long long> next{0};
  hold_word() {
    void* p = nullptr;
    if (cudaHostAlloc(&p, sizeof(unsigned long long),
                      cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    word = static_cast<unsigned long long*>(p);
    *word = 0;
  }
};

hold_word& the_hold_word() {
  static hold_word w;
  return w;
}

} // namespace

std::uint64_t hold(cudaStream_t stream) {
  hold_word& w = the_hold_word();
  if (w.word == nullptr) {
    return 0;
  }
  // An error that earlier work left is not taken here (the caller's checked calls report it):
  // no hold then. "Not ready" (a query's answer) is no error, and is not left behind.
  const cudaError_t before = cudaPeekAtLastError();
  if (before == cudaErrorNotReady) {
    (void)cudaGetLastError();
  } else if (before != cudaSuccess) {
    return 0;
  }
  const unsigned long long ticket = ++w.next;
  constexpr long long timeout_ns = 1000000; // 1 ms: far beyond a launch's host path
  wait_for_host<<<1, 1, 0, stream>>>(w.word, ticket, timeout_ns);
  if (cudaGetLastError() != cudaSuccess) {
    return 0; // the hold's own launch failed: the caller times without one
  }
  return ticket;
}

void release_hold(std::uint64_t ticket) {
  if (ticket == 0) {
    return;
  }
  // Tickets of several host threads may be released out of order: the word only grows.
  std::atomic_ref<unsigned long long> word(*the_hold_word().word);
  unsigned long long now = word.load();
  while (now < ticket && !word.compare_exchange_weak(now, ticket)) {
  }
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
      const bool was = ks.bandit->committed();
      ks.bandit->record(f[i].arm, ms * 1e-3);
      if (tracing()) {
        std::fprintf(stderr, "cufuse tune: %s: sample %s %.2f us\n", ks.label.c_str(),
                     ks.arm_names.at(std::size_t(f[i].arm)).c_str(), ms * 1e3);
        if (!was && ks.bandit->committed()) {
          const int a = ks.bandit->committed_arm();
          std::fprintf(stderr, "cufuse tune: %s: commit %s (median %.2f us) after %d samples\n",
                       ks.label.c_str(), ks.arm_names.at(std::size_t(a)).c_str(),
                       ks.bandit->median_seconds(a) * 1e6, ks.bandit->pulls());
        }
      }
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
