#include "kernels/hmm/baum_welch.h"

#include <chrono>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "kernels/core/status_macros.h"
#include "kernels/hmm/forward_backward_cpu.h"
#include "kernels/train/stats_pass.h"

namespace gmmscore {
namespace {

// Posteriors below this carry nothing measurable into the statistics.
constexpr double kMinPairWeight = 1e-8;

absl::Status CheckShapes(const HmmWithGmms& model, const std::vector<FloatMatrix>& utterances) {
  if (utterances.empty()) return absl::InvalidArgumentError("no utterances");
  if (model.gmm.num_states() < model.hmm.num_emission_states()) {
    return absl::InvalidArgumentError(absl::StrCat("the HMM's emissions need ", model.hmm.num_emission_states(),
                                                   " GMM states, the model has ", model.gmm.num_states()));
  }
  for (size_t u = 0; u < utterances.size(); ++u) {
    if (utterances[u].cols() != model.gmm.dim) {
      return absl::InvalidArgumentError(absl::StrCat("utterance ", u, " has dimension ", utterances[u].cols(),
                                                     ", the GMMs ", model.gmm.dim));
    }
  }
  return absl::OkStatus();
}

// Every utterance's emission log-likelihoods under `gmm`.
absl::StatusOr<std::vector<FloatMatrix>> ScoreAll(ScoringBackend& scorer, const NaturalGmm& gmm,
                                                  const std::vector<FloatMatrix>& utterances) {
  GMM_ASSIGN_OR_RETURN(DiagGmmModel model, gmm.ToModel());
  GMM_ASSIGN_OR_RETURN(std::shared_ptr<const PreparedModel> prepared,
                       scorer.Prepare(std::make_shared<const DiagGmmModel>(std::move(model))));
  std::vector<FloatMatrix> scores(utterances.size());
  ScoreOptions options;
  options.frame_totals = false;
  for (size_t u = 0; u < utterances.size(); ++u) {
    ScoreResult result;
    GMM_RETURN_IF_ERROR(scorer.Score(*prepared, utterances[u].view(), options, &result));
    scores[u] = std::move(result.loglikes);
  }
  return scores;
}

// Forward-backward of every utterance: the batch at once, or, when one
// cannot be produced, one at a time so that the rest go on.
std::vector<absl::StatusOr<HmmPosteriors>> AllPosteriors(const DenseHmm& hmm, const std::vector<FloatMatrix>& scores) {
  std::vector<ConstMatrixView> views;
  for (const FloatMatrix& m : scores) views.push_back(m.view());
  std::vector<absl::StatusOr<HmmPosteriors>> out;
  absl::StatusOr<std::vector<HmmPosteriors>> batch = ForwardBackwardCpu(hmm, views);
  if (batch.ok()) {
    for (HmmPosteriors& p : *batch) out.push_back(std::move(p));
    return out;
  }
  for (const ConstMatrixView& view : views) {
    absl::StatusOr<std::vector<HmmPosteriors>> one = ForwardBackwardCpu(hmm, {view});
    if (one.ok()) out.push_back(std::move((*one)[0]));
    else out.push_back(one.status());
  }
  return out;
}

// Transitions from counts (rows without counts keep theirs), the initial
// distribution from the gamma_0 sums.
absl::StatusOr<DenseHmm> ReestimateHmm(const DenseHmm& hmm, const std::vector<double>& counts,
                                       const std::vector<double>& initial_counts) {
  const int n = hmm.num_states;
  std::vector<double> transitions(int64_t{n} * n), initial(n);
  double initial_sum = 0;
  for (double c : initial_counts) initial_sum += c;
  for (int i = 0; i < n; ++i) {
    initial[i] = initial_sum > 0 ? initial_counts[i] / initial_sum : std::exp(hmm.log_initial[i]);
    double row = 0;
    for (int j = 0; j < n; ++j) row += counts[int64_t{i} * n + j];
    for (int j = 0; j < n; ++j) {
      transitions[int64_t{i} * n + j] =
          row > 0 ? counts[int64_t{i} * n + j] / row : std::exp(hmm.log_transition(i, j));
    }
  }
  return MakeDenseHmm(hmm.emissions, initial, transitions);
}

}  // namespace

absl::StatusOr<std::vector<absl::StatusOr<double>>> DenseHmmLogLikelihoods(
    ScoringBackend& scorer, const HmmWithGmms& model, const std::vector<FloatMatrix>& utterances) {
  GMM_RETURN_IF_ERROR(CheckShapes(model, utterances));
  GMM_ASSIGN_OR_RETURN(const std::vector<FloatMatrix> scores, ScoreAll(scorer, model.gmm, utterances));
  std::vector<absl::StatusOr<double>> out;
  for (absl::StatusOr<HmmPosteriors>& post : AllPosteriors(model.hmm, scores)) {
    if (post.ok()) out.push_back(post->log_likelihood);
    else out.push_back(post.status());
  }
  return out;
}

absl::StatusOr<HmmWithGmms> TrainDenseHmm(ScoringBackend& scorer, StatsBackend& stats,
                                          const std::vector<FloatMatrix>& utterances, HmmWithGmms model,
                                          const BaumWelchOptions& options,
                                          const std::function<void(const BaumWelchIteration&)>& on_iteration) {
  GMM_RETURN_IF_ERROR(CheckShapes(model, utterances));
  if (options.iterations < 0) return absl::InvalidArgumentError("iterations must be >= 0");
  // All frames in one block, each utterance from its offset.
  std::vector<TrainingBlock> blocks(1);
  int64_t total_frames = 0;
  for (const FloatMatrix& u : utterances) total_frames += u.rows();
  blocks[0].frames = FloatMatrix(total_frames, model.gmm.dim);
  std::vector<int64_t> offsets;
  for (const FloatMatrix& u : utterances) {
    offsets.push_back(offsets.empty() ? 0 : offsets.back() + utterances[offsets.size() - 1].rows());
    std::copy(u.data(), u.data() + u.rows() * u.cols(), blocks[0].frames.row(offsets.back()));
  }
  StatsPass pass(&stats, &blocks);
  const int n = model.hmm.num_states;
  for (int iter = 1; iter <= options.iterations; ++iter) {
    const auto start = std::chrono::steady_clock::now();
    BaumWelchIteration report;
    report.iteration = iter;
    GMM_ASSIGN_OR_RETURN(const std::vector<FloatMatrix> scores, ScoreAll(scorer, model.gmm, utterances));
    std::vector<absl::StatusOr<HmmPosteriors>> posteriors = AllPosteriors(model.hmm, scores);
    std::vector<double> counts(int64_t{n} * n, 0.0), initial_counts(n, 0.0);
    double loglike = 0;
    blocks[0].pairs.clear();
    for (size_t u = 0; u < utterances.size(); ++u) {
      if (!posteriors[u].ok()) {
        report.skipped.push_back(static_cast<int>(u));
        continue;
      }
      const HmmPosteriors& post = *posteriors[u];
      loglike += post.log_likelihood;
      report.frames += utterances[u].rows();
      for (size_t k = 0; k < counts.size(); ++k) counts[k] += post.transition_counts[k];
      for (int i = 0; i < n; ++i) initial_counts[i] += post.gamma[i];
      for (int64_t t = 0; t < utterances[u].rows(); ++t) {
        for (int i = 0; i < n; ++i) {
          const double g = post.gamma[t * n + i];
          if (g > kMinPairWeight) {
            blocks[0].pairs.push_back({static_cast<int32_t>(offsets[u] + t), model.hmm.emissions[i], static_cast<float>(g)});
          }
        }
      }
    }
    if (report.frames == 0) return absl::FailedPreconditionError("no utterance can be produced by the HMM");
    report.loglike_per_frame = loglike / static_cast<double>(report.frames);
    if (options.update_transitions) {
      GMM_ASSIGN_OR_RETURN(model.hmm, ReestimateHmm(model.hmm, counts, initial_counts));
    }
    if (options.update_gmm) {
      GMM_ASSIGN_OR_RETURN(const DiagGmmModel current, model.gmm.ToModel());
      GMM_ASSIGN_OR_RETURN(const GmmStats gmm_stats, pass.Run(current));
      GMM_ASSIGN_OR_RETURN(model.gmm, MleUpdate(model.gmm, gmm_stats, options.mle, &report.update));
    }
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (on_iteration) on_iteration(report);
  }
  return model;
}

}  // namespace gmmscore
