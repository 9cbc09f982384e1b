/// \file ucb_bandit: picks among pre-instantiated variants ("arms") from measured run times.
/// Pure host code (no CUDA), so the selection logic is tested on the CPU with synthetic arms.
///
/// Model. An arm's sample is a run time t > 0. The bandit works on x = -ln t: differences are
/// ratios of times, so rewards are scale-free (the same on a 10 us and a 10 ms problem), and
/// "3% slower" is the same distance everywhere. Each arm's estimate is the MEDIAN of its x:
/// timing noise is one-sided and heavy-tailed (a preempted or throttled run is far slower, never
/// far faster), and a median ignores such outliers where a mean would chase them.
///
/// Index (UCB1-Normal style, Auer et al. 2002, with a robust noise scale):
///   ucb_i = m_i + c * s * sqrt(2 ln N / n_i)
/// m_i the median of arm i, n_i its samples, N all samples, s the pooled noise scale:
/// 1.4826 x the median absolute deviation of every sample from its arm's median (a MAD is the
/// robust counterpart of a standard deviation), floored at `min_noise`. Unplayed arms first.
///
/// Stopping rule: once every arm has `min_samples`, commit the best arm when its lower bound
/// beats every other arm's upper bound, up to an indifference margin `epsilon` (arms within
/// epsilon of each other need not be told apart), or when `max_pulls` is spent: then commit the
/// arm with the best median.
///
/// Confirmation (`confirm_samples`): with one sample per arm the pooled noise is unknown (it
/// falls back to `min_noise`), so a single slow sample of the true best arm would let a worse
/// arm win at once. Before the stopping rule may commit, the best arm and every arm within
/// `confirm_margin` of it need `confirm_samples` samples; next_arm() asks for those first.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <vector>

namespace cufuse::tune {

/// Parameters of ucb_bandit; the defaults are what cufuse's tuner uses.
struct bandit_config {
  /// c: width of the confidence radius in noise units. 1 is UCB1-Normal's.
  double exploration = 1.0;
  /// Samples every arm gets before the stopping rule may commit.
  int min_samples = 2;
  /// Total samples after which the best median is committed regardless (0: 5 per arm).
  int max_pulls = 0;
  /// Relative time difference treated as a tie when deciding to stop (1%: ln 1.01).
  double epsilon = 0.01;
  /// Floor of the relative noise scale (0.5%): timer resolution makes smaller noise fiction.
  double min_noise = 0.005;
  /// Samples the best arm and its close contenders need before a commit by the stopping rule
  /// (1: no confirmation; min_samples already covers it).
  int confirm_samples = 1;
  /// Relative time behind the best arm within which an arm is a close contender.
  double confirm_margin = 0.25;
};

/// A UCB bandit over `arms` variants that learns from run times.
class ucb_bandit {
public:
  explicit ucb_bandit(int arms, bandit_config config = {})
      : config_(config), samples_(static_cast<std::size_t>(arms)) {
    if (arms < 1) {
      throw std::invalid_argument("cufuse::tune::ucb_bandit: needs at least one arm");
    }
    if (config_.max_pulls <= 0) {
      config_.max_pulls = 5 * arms;
    }
    config_.max_pulls = std::max(config_.max_pulls, arms * std::max(config_.min_samples, 1));
  }

  int arms() const { return static_cast<int>(samples_.size()); }
  int pulls() const { return pulls_; }
  const bandit_config& config() const { return config_; }
  /// Samples recorded for one arm.
  int samples(int arm) const { return static_cast<int>(samples_.at(arm).size()); }

  /// The arm to time next: the committed arm once committed; else an arm below min_samples
  /// (fewest first), else the arm with the largest upper confidence bound.
  int next_arm() const { return next_arm({}); }

  /// The same, counting `in_flight[a]` samples of arm a that were started but are not yet
  /// recorded (asynchronous timing), so that unplayed arms are not all given to one arm.
  int next_arm(const std::vector<int>& in_flight) const {
    if (committed_ >= 0) {
      return committed_;
    }
    auto count = [&](int a) {
      return samples_[a].size() + (a < static_cast<int>(in_flight.size()) ? in_flight[a] : 0);
    };
    int fewest = 0;
    for (int a = 1; a < arms(); ++a) {
      if (count(a) < count(fewest)) {
        fewest = a;
      }
    }
    if (static_cast<int>(count(fewest)) < std::max(config_.min_samples, 1)) {
      return fewest;
    }
    if (const int a = unconfirmed(count); a >= 0) {
      return a;
    }
    const double s = noise();
    int best = fewest;
    double best_ucb = -std::numeric_limits<double>::infinity();
    for (int a = 0; a < arms(); ++a) {
      if (samples_[a].empty()) {
        continue; // only in flight so far: nothing to rank it by yet
      }
      const double u = median(a) + radius(a, s);
      if (u > best_ucb) {
        best_ucb = u;
        best = a;
      }
    }
    return best;
  }

  /// Records one run time (seconds, > 0) of `arm`; may commit. Non-positive or non-finite
  /// times (a failed measurement) are ignored.
  void record(int arm, double seconds) {
    if (committed_ >= 0 || !(seconds > 0) || !std::isfinite(seconds)) {
      return;
    }
    samples_.at(arm).push_back(-std::log(seconds));
    ++pulls_;
    try_commit();
  }

  /// The arm with the best median so far (-1 before any sample).
  int best_arm() const {
    int best = -1;
    for (int a = 0; a < arms(); ++a) {
      if (!samples_[a].empty() && (best < 0 || median(a) > median(best))) {
        best = a;
      }
    }
    return best;
  }

  /// True once the bandit has chosen; then next_arm() always returns committed_arm().
  bool committed() const { return committed_ >= 0; }
  int committed_arm() const { return committed_; }
  /// Median run time (seconds) of an arm; +inf if never run.
  double median_seconds(int arm) const {
    return samples_.at(arm).empty() ? std::numeric_limits<double>::infinity()
                                    : std::exp(-median(arm));
  }

private:
  static double median_of(std::vector<double> v) {
    const std::size_t h = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + h, v.end());
    if (v.size() % 2 == 1) {
      return v[h];
    }
    const double upper = v[h];
    return 0.5 * (upper + *std::max_element(v.begin(), v.begin() + h));
  }
  double median(int a) const { return median_of(samples_[a]); }

  /// Pooled robust noise scale in log-time units.
  double noise() const {
    std::vector<double> dev;
    dev.reserve(static_cast<std::size_t>(pulls_));
    for (int a = 0; a < arms(); ++a) {
      if (samples_[a].size() < 2) {
        continue;
      }
      const double m = median(a);
      for (double x : samples_[a]) {
        dev.push_back(std::fabs(x - m));
      }
    }
    const double mad = dev.empty() ? 0.0 : 1.4826 * median_of(dev);
    return std::max(mad, config_.min_noise);
  }

  /// An arm that must be sampled again before the stopping rule may commit: the best arm or a
  /// close contender with fewer than confirm_samples samples (`count(a)` of them), the best
  /// first, then the fastest contender; -1 if none.
  template <class Count>
  int unconfirmed(Count count) const {
    const int best = best_arm();
    if (best < 0 || config_.confirm_samples <= 1) {
      return -1;
    }
    const auto short_of = [&](int a) {
      return static_cast<int>(count(a)) < config_.confirm_samples;
    };
    if (short_of(best)) {
      return best;
    }
    const double threshold = median(best) - std::log1p(config_.confirm_margin);
    int pick = -1;
    for (int a = 0; a < arms(); ++a) {
      if (!samples_[a].empty() && short_of(a) && median(a) >= threshold &&
          (pick < 0 || median(a) > median(pick))) {
        pick = a;
      }
    }
    return pick;
  }

  double radius(int a, double s) const {
    const double n = static_cast<double>(samples_[a].size());
    const double total = std::max(2.0, static_cast<double>(pulls_));
    return config_.exploration * s * std::sqrt(2.0 * std::log(total) / n);
  }

  void try_commit() {
    for (const auto& v : samples_) {
      if (static_cast<int>(v.size()) < std::max(config_.min_samples, 1)) {
        if (pulls_ >= config_.max_pulls) {
          break; // budget spent before every arm was sampled: commit the best seen
        }
        return;
      }
    }
    const int best = best_arm();
    if (pulls_ >= config_.max_pulls) {
      committed_ = best;
      return;
    }
    if (unconfirmed([&](int a) { return samples_[a].size(); }) >= 0) {
      return;
    }
    const double s = noise();
    const double lower = median(best) - radius(best, s);
    const double margin = std::log1p(config_.epsilon);
    for (int a = 0; a < arms(); ++a) {
      if (a != best && lower + margin < median(a) + radius(a, s)) {
        return;
      }
    }
    committed_ = best;
  }

  bandit_config config_;
  std::vector<std::vector<double>> samples_; // -ln(seconds) per arm
  int pulls_ = 0;
  int committed_ = -1;
};

/// The configuration cufuse's GEMM tuner (online mode and cufuse-tune) uses for `arms` variants:
/// one sample per arm first (GEMM variants differ by far more than the timing noise), a second
/// one for the best arm and every arm within 15% of it (one slow sample must not decide),
/// variants within 3% count as equally good (the tuner's accuracy goal), and at most 2 samples
/// per arm on average (40% of a 5-sample exhaustive sweep) before the best median is committed.
/// Chosen by replaying recorded per-variant samples of 216 GEMM keys (H100 and H200) through the
/// bandit (bench/JOURNAL.md, g12): with the wgmma variants within a few percent of each other the
/// earlier 25% / 2% / 3-per-arm setting needed more measurements than that.
inline bandit_config gemm_bandit_config(int arms) {
  bandit_config c;
  c.min_samples = 1;
  c.confirm_samples = 2;
  c.confirm_margin = 0.15;
  c.max_pulls = 2 * arms;
  c.epsilon = 0.03;
  return c;
}

/// How far behind the cost model's best guess an arm may be predicted and still be explored
/// online: 8x. The GEMM time model (src/gemm/heuristic.cu) has hand-set family rates and ranks
/// tiles only roughly, so only arms it puts far behind are dropped: a whole family that cannot
/// win, such as SIMT tiles for a large bf16 problem (11-23x slower than the wgmma tiles in
/// bench/results/gemm_ab_compose2_h100.md), which took most of an online key's pulls. 4x (the
/// bound for a model wrong by at most 2x either way) left out the winners of small outputs with
/// a long K (bf16 128x128x8192, TF32 1536x1536x512: split-K tiles the model puts further
/// behind), and the online test's committed variant then missed the exhaustive best by more
/// than 5% in 2 of 3 runs (bench/JOURNAL.md t3). The online tests check on 5 keys that the
/// committed variant stays within 5% of the exhaustive best. `cufuse-tune --exhaustive` still
/// measures every variant.
inline constexpr double explore_within = 8.0;

/// The arms of an online key, in the order the bandit gets them: the prior guess first (the
/// database's nearest tuned shape of the family, else the heuristic's choice: `prior`, an index
/// into `predicted`, or -1), so that the first call of an unseen key runs it (the bandit plays
/// the lowest-numbered unplayed arm first); then the others by predicted time, without those
/// predicted more than `within` x slower than the fastest prediction. Returns indices into
/// `predicted` (seconds per call; every arm when they are not all finite and positive).
inline std::vector<int> exploration_order(const std::vector<double>& predicted, int prior,
                                          double within = explore_within) {
  const int n = static_cast<int>(predicted.size());
  bool usable = n > 0;
  double best = std::numeric_limits<double>::infinity();
  for (double t : predicted) {
    usable = usable && std::isfinite(t) && t > 0.0;
    best = std::min(best, t);
  }
  std::vector<int> order;
  if (prior >= 0 && prior < n) {
    order.push_back(prior);
  }
  std::vector<int> rest;
  for (int a = 0; a < n; ++a) {
    if (a != prior && (!usable || predicted[std::size_t(a)] <= within * best)) {
      rest.push_back(a);
    }
  }
  if (usable) {
    std::stable_sort(rest.begin(), rest.end(), [&](int x, int y) {
      return predicted[std::size_t(x)] < predicted[std::size_t(y)];
    });
  }
  order.insert(order.end(), rest.begin(), rest.end());
  return order;
}

} // namespace cufuse::tune
