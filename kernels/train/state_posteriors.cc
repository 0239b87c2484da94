#include "kernels/train/state_posteriors.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"

namespace gmmscore {
namespace {

constexpr double kNegligible = kNegligiblePosteriorNats;

// Silence membership by state, for a model of `num_states` (states past the
// largest silence state are never silence).
class SilenceSet {
 public:
  explicit SilenceSet(const PosteriorPolicy& policy) {
    for (int32_t s : policy.silence_states) {
      if (s < 0) continue;
      if (static_cast<size_t>(s) >= is_silence_.size()) is_silence_.resize(s + 1, false);
      is_silence_[s] = true;
    }
  }
  bool contains(int64_t state) const {
    return state >= 0 && static_cast<size_t>(state) < is_silence_.size() && is_silence_[state];
  }
  bool empty() const { return is_silence_.empty(); }

 private:
  std::vector<bool> is_silence_;
};

// Appends one frame's pairs: states[i] with posterior exp(scores[i] - lse)
// at or above the policy's floor, silence left out as the policy says.
template <typename StateOf, typename ScoreOf>
void AddFramePosteriors(int32_t frame, int64_t count, StateOf state_of, ScoreOf score_of,
                        const PosteriorPolicy& policy, const SilenceSet& silence,
                        std::vector<StatsPair>* out) {
  double best = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < count; ++i) best = std::max(best, static_cast<double>(score_of(i)));
  if (!std::isfinite(best)) return;
  const double floor = best - kNegligible;
  double total = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const double score = score_of(i);
    if (score >= floor) total += std::exp(score - best);
  }
  const double log_total = best + std::log(total);
  double silence_mass = 0.0;
  const size_t start = out->size();
  for (int64_t i = 0; i < count; ++i) {
    const double score = score_of(i);
    if (score < floor) continue;
    const double posterior = std::exp(score - log_total);
    const int64_t state = state_of(i);
    if (silence.contains(state)) {
      silence_mass += posterior;
    } else if (posterior >= policy.min_posterior && posterior > 0.0) {
      out->push_back({frame, static_cast<int32_t>(state), static_cast<float>(posterior)});
    }
  }
  if (policy.silence_threshold > 0.0 && silence_mass >= policy.silence_threshold) {
    out->resize(start);
  }
}

}  // namespace

absl::Status ValidatePosteriorPolicy(const PosteriorPolicy& policy, int num_states) {
  for (size_t i = 0; i < policy.silence_states.size(); ++i) {
    const int32_t s = policy.silence_states[i];
    if (s < 0 || s >= num_states) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "silence_states[%d] = %d is not a state of the model (it has %d states, 0 .. %d)", i,
          s, num_states, num_states - 1));
    }
  }
  if (!(policy.silence_threshold >= 0.0 && policy.silence_threshold <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "silence_threshold %g is outside [0, 1] (0: off)", policy.silence_threshold));
  }
  if (!(policy.min_posterior >= 0.0 && policy.min_posterior < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("min_posterior %g is outside [0, 1)", policy.min_posterior));
  }
  return absl::OkStatus();
}

std::vector<StatsPair> PairsFromScores(ConstMatrixView loglikes, const PosteriorPolicy& policy) {
  const SilenceSet silence(policy);
  std::vector<StatsPair> pairs;
  pairs.reserve(loglikes.rows);
  std::vector<int64_t> near;  // states within kNegligible of the best
  std::vector<float> near_scores;
  for (int64_t t = 0; t < loglikes.rows; ++t) {
    // Two float passes (the best, then the few states near it) before any
    // exp: 4.9 us for a 5000-state row (online_adaptation_bench), most of
    // it reading the row.
    const float* row = loglikes.row(t);
    float best = -INFINITY;
    for (int64_t s = 0; s < loglikes.cols; ++s) best = std::max(best, row[s]);
    if (!std::isfinite(best)) continue;
    const float floor = best - static_cast<float>(kNegligible);
    near.clear();
    near_scores.clear();
    for (int64_t s = 0; s < loglikes.cols; ++s) {
      if (row[s] >= floor) {
        near.push_back(s);
        near_scores.push_back(row[s]);
      }
    }
    AddFramePosteriors(
        static_cast<int32_t>(t), static_cast<int64_t>(near.size()),
        [&near](int64_t i) { return near[i]; }, [&near_scores](int64_t i) { return near_scores[i]; },
        policy, silence, &pairs);
  }
  return pairs;
}

std::vector<StatsPair> PairsFromSparse(const SparseScores& scores, const PosteriorPolicy& policy) {
  const SilenceSet silence(policy);
  std::vector<StatsPair> pairs;
  for (int64_t t = 0; t < scores.num_frames(); ++t) {
    const uint32_t begin = scores.frame_offsets[t];
    const uint32_t* states = scores.state_ids.data() + begin;
    const float* values = scores.values.data() + begin;
    AddFramePosteriors(
        static_cast<int32_t>(t), scores.frame_offsets[t + 1] - begin,
        [states](int64_t i) { return static_cast<int64_t>(states[i]); },
        [values](int64_t i) { return values[i]; }, policy, silence, &pairs);
  }
  return pairs;
}

absl::StatusOr<std::vector<StatsPair>> PairsFromDecoder(absl::Span<const StatsPair> pairs,
                                                        int64_t num_frames, int num_states,
                                                        const PosteriorPolicy& policy) {
  std::vector<double> silence_mass(num_frames, 0.0);
  const SilenceSet silence(policy);
  for (size_t i = 0; i < pairs.size(); ++i) {
    const StatsPair& p = pairs[i];
    if (p.frame < 0 || p.frame >= num_frames) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "posterior %d is for frame %d of the chunk, which has %d frames (0 .. %d)", i, p.frame,
          num_frames, num_frames - 1));
    }
    if (p.target < 0 || p.target >= num_states) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "posterior %d is for state %d; the adapting model has %d states", i, p.target,
          num_states));
    }
    if (!std::isfinite(p.weight) || p.weight < 0.0f) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "posterior %d (frame %d, state %d) has weight %g; weights must be finite and >= 0", i,
          p.frame, p.target, p.weight));
    }
    if (silence.contains(p.target)) silence_mass[p.frame] += p.weight;
  }
  std::vector<StatsPair> kept;
  kept.reserve(pairs.size());
  for (const StatsPair& p : pairs) {
    if (silence.contains(p.target) || p.weight == 0.0f) continue;
    if (policy.silence_threshold > 0.0 && silence_mass[p.frame] >= policy.silence_threshold) continue;
    kept.push_back(p);
  }
  return kept;
}

}  // namespace gmmscore
