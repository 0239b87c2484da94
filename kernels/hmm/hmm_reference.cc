#include "kernels/hmm/hmm_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"

namespace gmmscore {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// log(e^a + e^b) without overflow; -inf + -inf stays -inf.
double LogAdd(double a, double b) {
  if (a < b) std::swap(a, b);
  if (b == kNegInf) return a;
  return a + std::log1p(std::exp(b - a));
}

double Emission(const DenseHmm& hmm, ConstMatrixView loglikes, int64_t t, int j) {
  return loglikes.at(t, hmm.emissions[j]);
}

absl::Status NoPath() {
  return absl::FailedPreconditionError("no state sequence of the HMM can produce these frames");
}

}  // namespace

absl::Status ValidateEmissions(const DenseHmm& hmm, ConstMatrixView loglikes) {
  if (loglikes.rows < 1) return absl::InvalidArgumentError("no frames");
  if (loglikes.cols < hmm.num_emission_states()) {
    return absl::InvalidArgumentError(absl::StrCat("the HMM's emissions need ", hmm.num_emission_states(),
                                                   " GMM states, the log-likelihoods have ", loglikes.cols));
  }
  for (int64_t t = 0; t < loglikes.rows; ++t) {
    for (int64_t s = 0; s < loglikes.cols; ++s) {
      const float v = loglikes.at(t, s);
      if (std::isnan(v) || v == std::numeric_limits<float>::infinity()) {
        return absl::InvalidArgumentError(absl::StrCat("frame ", t, ", state ", s, ": log-likelihood ", v));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateUtterances(const DenseHmm& hmm, absl::Span<const ConstMatrixView> utterances) {
  for (size_t u = 0; u < utterances.size(); ++u) {
    const absl::Status status = ValidateEmissions(hmm, utterances[u]);
    if (!status.ok()) return absl::Status(status.code(), absl::StrCat("utterance ", u, ": ", status.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<HmmPosteriors> ForwardBackwardReference(const DenseHmm& hmm, ConstMatrixView loglikes) {
  GMM_RETURN_IF_ERROR(ValidateEmissions(hmm, loglikes));
  const int n = hmm.num_states;
  const int64_t frames = loglikes.rows;
  std::vector<double> alpha(frames * n, kNegInf), beta(frames * n, kNegInf);
  for (int j = 0; j < n; ++j) alpha[j] = hmm.log_initial[j] + Emission(hmm, loglikes, 0, j);
  for (int64_t t = 1; t < frames; ++t) {
    for (int j = 0; j < n; ++j) {
      double sum = kNegInf;
      for (int i = 0; i < n; ++i) sum = LogAdd(sum, alpha[(t - 1) * n + i] + hmm.log_transition(i, j));
      alpha[t * n + j] = sum + Emission(hmm, loglikes, t, j);
    }
  }
  for (int i = 0; i < n; ++i) beta[(frames - 1) * n + i] = 0.0;
  for (int64_t t = frames - 2; t >= 0; --t) {
    for (int i = 0; i < n; ++i) {
      double sum = kNegInf;
      for (int j = 0; j < n; ++j) {
        sum = LogAdd(sum, hmm.log_transition(i, j) + Emission(hmm, loglikes, t + 1, j) + beta[(t + 1) * n + j]);
      }
      beta[t * n + i] = sum;
    }
  }
  HmmPosteriors out;
  out.log_likelihood = kNegInf;
  for (int j = 0; j < n; ++j) out.log_likelihood = LogAdd(out.log_likelihood, alpha[(frames - 1) * n + j]);
  if (out.log_likelihood == kNegInf) return NoPath();
  out.gamma.resize(frames * n);
  for (int64_t k = 0; k < frames * n; ++k) out.gamma[k] = std::exp(alpha[k] + beta[k] - out.log_likelihood);
  out.transition_counts.assign(int64_t{n} * n, 0.0);
  for (int64_t t = 0; t + 1 < frames; ++t) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        out.transition_counts[i * n + j] +=
            std::exp(alpha[t * n + i] + hmm.log_transition(i, j) + Emission(hmm, loglikes, t + 1, j) +
                     beta[(t + 1) * n + j] - out.log_likelihood);
      }
    }
  }
  return out;
}

absl::StatusOr<ViterbiPath> ViterbiReference(const DenseHmm& hmm, ConstMatrixView loglikes) {
  GMM_RETURN_IF_ERROR(ValidateEmissions(hmm, loglikes));
  const int n = hmm.num_states;
  const int64_t frames = loglikes.rows;
  std::vector<double> score(n), next(n);
  std::vector<int32_t> back(frames * n, -1);
  for (int j = 0; j < n; ++j) score[j] = hmm.log_initial[j] + Emission(hmm, loglikes, 0, j);
  for (int64_t t = 1; t < frames; ++t) {
    for (int j = 0; j < n; ++j) {
      double best = kNegInf;
      int32_t from = -1;
      for (int i = 0; i < n; ++i) {
        const double s = score[i] + hmm.log_transition(i, j);
        if (s > best) best = s, from = i;  // strict: ties keep the lowest i
      }
      next[j] = best + Emission(hmm, loglikes, t, j);
      back[t * n + j] = from;
    }
    score.swap(next);
  }
  ViterbiPath path;
  int32_t last = -1;
  path.log_likelihood = kNegInf;
  for (int j = 0; j < n; ++j) {
    if (score[j] > path.log_likelihood) path.log_likelihood = score[j], last = j;
  }
  if (last < 0) return NoPath();
  path.states.resize(frames);
  for (int64_t t = frames - 1; t >= 0; --t) {
    path.states[t] = last;
    if (t > 0) last = back[t * n + last];
  }
  return path;
}

}  // namespace gmmscore
