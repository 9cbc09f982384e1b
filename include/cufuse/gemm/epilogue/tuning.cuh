/// \file The tuning API of expression epilogues: the variants an epilogue's kernels offer for a
/// problem, the tuner's choice, recording one, and timing them all (what `cufuse-tune
/// --epilogue` does for its named epilogues). Host code over gemm/epilogue/expression.cuh.
#pragma once

#include "expression.cuh"

#include <optional>
#include <string>
#include <vector>

namespace cufuse {

namespace tuning {
/// Names of the variants whose kernels this epilogue instantiates and that can run the problem
/// `gemm(a, b, y, epilogue)` on the current device (tests, tools; force one with
/// gemm_options::variant).
template <gemm_detail::matrix_like A, gemm_detail::matrix_like B, class Y, class E>
std::vector<std::string> epilogue_variants(A&& a, B&& b, Y&& y, const E& epilogue,
                                           const gemm_options& options = {}, bool batched = false) {
  std::vector<std::string> out;
  gemm_detail::run_epilogue_of(a, b, y, epilogue, batched, options, current_stream(),
                               {.list = &out});
  return out;
}

/// Stores a measured choice for `gemm(a, b, y, epilogue)` (its shape, dtypes, layout and
/// epilogue) in the tuning database, as tuning::record does for the standard epilogue; a frozen
/// or online tuner then runs `variant` for that key. Throws if `variant` is not one of the
/// epilogue's variants that can run the problem here, or there is no database file.
template <gemm_detail::matrix_like A, gemm_detail::matrix_like B, class Y, class E>
void record_epilogue(A&& a, B&& b, Y&& y, const E& epilogue, const std::string& variant,
                     double seconds, const gemm_options& options = {}, bool batched = false) {
  gemm_detail::run_epilogue_of(a, b, y, epilogue, batched, options, current_stream(),
                               {.record = &variant, .seconds = seconds});
}

/// The variant the tuner has settled on for `gemm(a, b, y, epilogue)` (its key), if it has: what
/// gemm_chosen_variant tells for the standard epilogue.
template <gemm_detail::matrix_like A, gemm_detail::matrix_like B, class Y, class E>
std::optional<std::string> chosen_epilogue(A&& a, B&& b, Y&& y, const E& epilogue,
                                           const gemm_options& options = {}, bool batched = false) {
  std::optional<std::string> out;
  gemm_detail::run_epilogue_of(a, b, y, epilogue, batched, options, current_stream(),
                               {.chosen = &out});
  return out;
}

/// The fastest of an epilogue's variants for one problem.
struct epilogue_choice {
  std::string variant;
  double seconds = 0.0;
};

/// Times every variant of `gemm(a, b, y, epilogue)` on `stream` (after one untimed run each:
/// `repeats` samples of 10 back-to-back calls between CUDA events, the median per call) and
/// returns the fastest; when a tuning database file is set (tuning::set_file or
/// CUFUSE_TUNE_FILE), also records it there (record_epilogue) for save() to write. What
/// `cufuse-tune --epilogue` does for its named epilogues, for any epilogue of the caller's.
/// The outputs are overwritten many times: an epilogue that reads its own output (Y = acc + Y)
/// compounds it.
template <gemm_detail::matrix_like A, gemm_detail::matrix_like B, class Y, class E>
epilogue_choice tune_epilogue(A&& a, B&& b, Y&& y, const E& epilogue,
                              const gemm_options& options = {}, int repeats = 5,
                              bool batched = false, cudaStream_t stream = current_stream()) {
  if (repeats < 1) {
    throw error("cufuse::tuning::tune_epilogue: repeats must be >= 1, got " +
                std::to_string(repeats));
  }
  const std::vector<std::string> names = epilogue_variants(a, b, y, epilogue, options, batched);
  if (names.empty()) {
    throw error("cufuse::tuning::tune_epilogue: no variant of this epilogue can run the problem");
  }
  epilogue_choice best;
  for (const std::string& name : names) {
    gemm_options o = options;
    o.variant = name;
    // 10 calls per sample: the host's launch path overlaps the queued kernels.
    const double t = gemm_detail::median_call_seconds(stream, repeats, 10, [&] {
      gemm_detail::run_epilogue_of(a, b, y, epilogue, batched, o, stream);
    });
    if (best.variant.empty() || t < best.seconds) {
      best = {name, t};
    }
  }
  if (!file().empty()) {
    record_epilogue(a, b, y, epilogue, best.variant, best.seconds, options, batched);
  }
  return best;
}
} // namespace tuning

} // namespace cufuse
